// The hand-written types (web/lib/index.d.ts, index.d.cts) against the runtime, with the
// TypeScript compiler (npm `typescript`, `tsc --noEmit`):
// - a consumer fixture (ESM and CommonJS) compiles, and its @ts-expect-error misuses do not;
// - one deliberate misuse file must fail, at the expected places;
// - every golden request, and the result the WASM core actually returns for it, type-checks
//   as that function's request / result type (types cannot drift from the runtime unseen);
// - the error codes of the type equal the codes of cpp/include/trainmem/error.hpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from '../../web/lib/index.js';
import { repoRoot, run } from './fixtures/packed.js';

const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
const fixture = join(repoRoot, 'tests/js/types');
const typecheck = (args, cwd = fixture) => run(process.execPath, [tsc, ...args], { cwd });
const FLAGS = ['--ignoreConfig', '--noEmit', '--strict', '--module', 'nodenext'];
const FLAGS_TAIL = ['--moduleResolution', 'nodenext', '--target', 'es2022', '--types', ''];

test('the consumer fixture (ESM + CommonJS) type-checks; its @ts-expect-error lines fail', () => {
  const r = typecheck(['-p', 'tsconfig.json']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the ESM consumer also type-checks under moduleResolution "bundler" (Vite, webpack)', () => {
  const flags = ['--ignoreConfig', '--noEmit', '--strict', '--module', 'esnext'];
  const r = typecheck([
    ...flags,
    '--moduleResolution',
    'bundler',
    '--target',
    'es2022',
    '--types',
    '',
    'consumer.mts',
  ]);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('a deliberate misuse does not compile, at the misused places', () => {
  const r = typecheck([...FLAGS, ...FLAGS_TAIL, 'misuse.mts']);
  assert.notEqual(r.status, 0, 'tsc accepted a misuse');
  const errors = r.stdout.trim().split('\n');
  assert.equal(errors.length, 2, r.stdout);
  assert.match(errors[0], /^misuse\.mts\(6,\d+\): error TS\d+: Type '"adamx"' is not assignable/);
  assert.match(errors[1], /^misuse\.mts\(7,\d+\): error TS\d+:/);
});

test('error codes in the types are exactly those of the core (error.hpp)', () => {
  const header = readFileSync(join(repoRoot, 'cpp/include/trainmem/error.hpp'), 'utf8');
  const core = [...header.matchAll(/constexpr const char\* k\w+ = "(\w+)"/g)].map((m) => m[1]);
  const dts = readFileSync(join(repoRoot, 'web/lib/index.d.ts'), 'utf8');
  const union = /export type ErrorCode =([^;]*);/.exec(dts)[1];
  const typed = [...union.matchAll(/'(\w+)'/g)].map((m) => m[1]);
  assert.ok(core.length >= 10);
  assert.deepEqual([...typed].sort(), [...core].sort());
});

test('every golden request (and more variants) and the result the core returns match the declared types', async () => {
  const golden = JSON.parse(readFileSync(join(repoRoot, 'tests/fixtures/golden.json'), 'utf8'));
  const tm = await load();
  const lines = [
    "import type { Functions, ErrorCode } from 'trainmem';",
    'type Req<K extends keyof Functions> = Functions[K][0];',
    'type Res<K extends keyof Functions> = Functions[K][1];',
  ];
  golden.cases.forEach((c, i) => {
    const fn = JSON.stringify(c.function);
    lines.push(`// ${c.name.replace(/\n/g, ' ')}`);
    lines.push(`export const request${i}: Req<${fn}> = ${JSON.stringify(c.request)};`);
    // A case the core rejects is golden.test.js's failure to report; its request is still checked.
    let result;
    try {
      result = tm[c.function](c.request);
    } catch {
      return;
    }
    lines.push(`export const result${i}: Res<${fn}> = ${JSON.stringify(result)};`);
  });
  // More result variants (fixtures/type-shapes.json): every one must run and type-check.
  const shapes = JSON.parse(
    readFileSync(join(repoRoot, 'tests/js/fixtures/type-shapes.json'), 'utf8'),
  );
  shapes.cases.forEach((c, i) => {
    const fn = JSON.stringify(c.function);
    lines.push(`export const shapeRequest${i}: Req<${fn}> = ${JSON.stringify(c.request)};`);
    const result = tm[c.function](c.request);
    lines.push(`export const shapeResult${i}: Res<${fn}> = ${JSON.stringify(result)};`);
  });
  golden.errors.forEach((c, i) => {
    lines.push(`export const code${i}: ErrorCode = ${JSON.stringify(c.code)};`);
  });
  // Inside the repository, 'trainmem' resolves to this package by self-reference (exports map).
  mkdirSync(join(repoRoot, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(repoRoot, '.tmp', 'types-golden-'));
  try {
    writeFileSync(join(dir, 'golden.mts'), `${lines.join('\n')}\n`);
    const r = typecheck([...FLAGS, ...FLAGS_TAIL, 'golden.mts'], dir);
    assert.equal(r.status, 0, `types drifted from the runtime:\n${r.stdout}${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
