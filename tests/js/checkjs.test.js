// The JavaScript of the package and of the page, type-checked against the hand-written
// web/lib/index.d.ts and web/app/types.d.ts (tsc, config tools/tsconfig.checkjs.json, strict:
// no implicit any): every module starts with `// @ts-check`, so a field the page reads that no
// result has, a request field no request has, or a parameter without a type fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { repoRoot, run } from './fixtures/packed.js';

const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
const typecheck = (args) => run(process.execPath, [tsc, ...args], { cwd: repoRoot });

test('web/lib and web/app type-check against index.d.ts', () => {
  const r = typecheck(['-p', 'tools/tsconfig.checkjs.json']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

// Every JavaScript module of the package (web/lib, its command line) and of the page (web/app),
// whether or not another test lists it: a file left out of the check, or opted out of it, fails
// here by name.
function modules() {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (rel !== 'web/lib/wasm') walk(rel);
      } else if (e.name.endsWith('.js')) out.push(rel);
    }
  };
  walk('web/lib');
  for (const f of readdirSync(join(repoRoot, 'web/app')))
    if (f.endsWith('.js')) out.push(`web/app/${f}`);
  return out;
}

test('every module of the package and the page is type-checked, strictly', () => {
  const { compilerOptions: o } = JSON.parse(
    readFileSync(join(repoRoot, 'tools/tsconfig.checkjs.json'), 'utf8'),
  );
  assert.equal(o.strict, true);
  // (strict includes noImplicitAny: a parameter or variable without a type is an error)
  assert.notEqual(o.noImplicitAny, false, 'noImplicitAny is turned off');
  const r = typecheck(['-p', 'tools/tsconfig.checkjs.json', '--listFilesOnly']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const listed = new Set(
    r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => relative(repoRoot, l).split(sep).join('/')),
  );
  const files = modules();
  // (the modules other tests name: a rename that leaves the walk empty fails too)
  for (const f of ['web/lib/index.js', 'web/lib/cli/main.js', 'web/app/app.js', 'web/app/sw.js'])
    assert.ok(files.includes(f), `${f} is missing`);
  for (const f of files) {
    assert.ok(listed.has(f), `${f} is not in the type check (tools/tsconfig.checkjs.json)`);
    const text = readFileSync(join(repoRoot, f), 'utf8');
    // tsc reads // @ts-check among the comments that open the file (checkJs is off: the
    // generated WebAssembly loader is imported but not checked)
    const head = /^(?:#!.*\n)?(?:(?:\/\/.*|\s*)\n)*/.exec(text)[0];
    assert.match(head, /^\/\/ @ts-check$/m, `${f} does not start with // @ts-check`);
    assert.doesNotMatch(text, /@ts-nocheck|@ts-ignore/, `${f} opts out of the check`);
  }
});

test('a read of a field that no result has is an error, at that line', () => {
  const r = typecheck([
    '--ignoreConfig',
    '--allowJs',
    '--checkJs',
    '--noEmit',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--types',
    '',
    'tests/js/types/page-reads.js',
  ]);
  assert.notEqual(r.status, 0, 'tsc accepted reads of fields that do not exist');
  const errors = r.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('tests/js/types/page-reads.js'));
  assert.deepEqual(
    errors.map((l) => /\((\d+),\d+\): error (TS\d+)/.exec(l)?.slice(1).join(' ')),
    ['9 TS2551', '10 TS2551'],
    r.stdout,
  );
});
