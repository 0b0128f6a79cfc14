// The JavaScript of the package and of the page, type-checked against the hand-written
// web/lib/index.d.ts (tsc --checkJs, config tools/tsconfig.checkjs.json): every file that starts
// with `// @ts-check` is checked, so a field the page reads that no result has, or a request
// field no request has, fails here. To check one more file, add `// @ts-check` at its top.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, run } from './fixtures/packed.js';

const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
const typecheck = (args) => run(process.execPath, [tsc, ...args], { cwd: repoRoot });

test('web/lib and web/app files marked // @ts-check type-check against index.d.ts', () => {
  const r = typecheck(['-p', 'tools/tsconfig.checkjs.json']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the check covers the package, the command line and the page modules', () => {
  const marked = (dir) =>
    readdirSync(join(repoRoot, dir))
      .filter((f) => f.endsWith('.js'))
      .filter((f) =>
        /^(#!.*\n)?\/\/ @ts-check\n/.test(readFileSync(join(repoRoot, dir, f), 'utf8')),
      )
      .map((f) => `${dir}/${f}`);
  const files = [
    ...marked('web/lib'),
    ...marked('web/lib/cli'),
    ...marked('web/lib/cli/commands'),
    ...marked('web/app'),
  ];
  for (const f of [
    'web/lib/index.js',
    'web/lib/errors.js',
    'web/lib/units.js',
    'web/lib/cli.js',
    'web/lib/cli/main.js',
    'web/lib/cli/args.js',
    'web/app/requests.js',
    'web/app/solver.js',
    'web/app/format.js',
    'web/app/state.js',
    'web/app/app.js',
    'web/app/sw.js',
  ]) {
    assert.ok(files.includes(f), `${f} is not type-checked`);
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
