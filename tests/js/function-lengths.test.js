// Small functions: no function of the product code (cpp/, web/lib, web/app) is longer than 120
// lines. The counter itself is checked first on hand-counted snippets, so that a counter that
// finds nothing cannot pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allFunctions, cppFunctions, jsFunctions } from '../../tools/function-lengths.mjs';

const kLongest = 120;

test('the C++ counter measures a namespace function and an inline method, braces in strings aside', () => {
  const text = [
    'namespace a {', // 1
    'int f(int x) {', // 2: f starts
    '  if (x) {',
    "    return '{';",
    '  }',
    '  return "}";',
    '}', // 7: f ends (6 lines)
    'struct S {',
    '  int g() const { return 2; }', // 9: one line
    '};',
    '}  // namespace a',
  ].join('\n');
  assert.deepEqual(cppFunctions(text), [
    { name: 'f', line: 2, lines: 6 },
    { name: 'g', line: 9, lines: 1 },
  ]);
});

test('the JS counter measures outermost functions only (a closure belongs to its function)', () => {
  const text = [
    'export function f(a) {', // 1
    '  const g = (b) => {',
    '    return b;',
    '  };',
    '  return g(a);',
    '}', // 6
    'const h = () => 1;', // 7
    'class C {',
    '  m() {', // 9
    '    return 1;',
    '  }', // 11
    '}',
  ].join('\n');
  assert.deepEqual(jsFunctions(text), [
    { name: 'f', line: 1, lines: 6 },
    { name: 'h', line: 7, lines: 1 },
    { name: 'm', line: 9, lines: 3 },
  ]);
});

test(`no product function is longer than ${kLongest} lines`, () => {
  const all = allFunctions();
  assert.ok(all.length > 1500, `only ${all.length} functions found: the counter is broken`);
  const long = all.filter((f) => f.lines > kLongest);
  assert.deepEqual(
    long.map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`),
    [],
  );
});
