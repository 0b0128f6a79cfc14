// The PACKED npm module, as a user gets it: `npm pack` (runs prepack), install the tarball
// into an empty folder offline, then `import`, `require`, the CLI (npx), publint, the size
// budget and the `files` whitelist. Expected numbers are seed 003's hand calculations.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { publint } from 'publint';
import { packAndInstall, repoRoot, run } from './fixtures/packed.js';

const pkg = packAndInstall();
after(() => pkg.cleanup());
const fixtures = join(repoRoot, 'tests/js/fixtures/node-consumer');
cpSync(fixtures, pkg.dir, { recursive: true });
const node = (file) => {
  const r = run(process.execPath, [file], { cwd: pkg.dir });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
};
// The installed bin (what `npx trainmem` runs; one test goes through npx itself).
const bin = join(pkg.dir, 'node_modules', '.bin', 'trainmem');
const cli = (args, input) => run(bin, args, { cwd: pkg.dir, input });
const npx = (args) =>
  run('npx', ['--offline', '--no-install', 'trainmem', ...args], { cwd: pkg.dir });

const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));

test('the tarball holds the whitelist and nothing users do not need', () => {
  const files = pkg.info.files.map((f) => f.path).sort();
  const needed = [
    'package.json',
    'LICENSE', // package.json says MIT: the text travels with it
    'web/lib/index.js',
    'web/lib/index.cjs',
    'web/lib/index.d.ts',
    'web/lib/index.d.cts',
    'web/lib/errors.js',
    'web/lib/units.js',
    'web/lib/cli.js',
    'web/lib/cli/main.js',
    'web/lib/cli/args.js',
    'web/lib/cli/flags.js',
    'web/lib/cli/render.js',
    'web/lib/cli/commands/index.js',
    'web/lib/wasm/trainmem_wasm.mjs',
  ];
  for (const f of needed) assert.ok(files.includes(f), `${f} missing from the tarball`);
  // the CLI's modules: web/lib/cli/*.js and web/lib/cli/commands/*.js, nothing else
  const allowed = (f) =>
    needed.includes(f) ||
    /^web\/lib\/cli\/(commands\/)?[a-z-]+\.js$/.test(f) ||
    /^(README|LICEN[CS]E|CHANGELOG)(\.md)?$/i.test(f);
  assert.deepEqual(
    files.filter((f) => !allowed(f)),
    [],
    'tests, sources, build files stay out of the package',
  );
});

test('the tarball stays within its size budget (bench/size-budget.json)', () => {
  const budget = JSON.parse(readFileSync(join(repoRoot, 'bench/size-budget.json'), 'utf8'));
  assert.ok(pkg.bytes <= budget.tarballBytes, `tarball ${pkg.bytes} B > ${budget.tarballBytes} B`);
  assert.ok(
    pkg.info.unpackedSize <= budget.unpackedBytes,
    `unpacked ${pkg.info.unpackedSize} B > ${budget.unpackedBytes} B`,
  );
  // What a browser downloads: the one-file module, gzip-compressed by the server.
  const module = readFileSync(join(pkg.pkgDir, 'web/lib/wasm/trainmem_wasm.mjs'));
  const gz = gzipSync(module, { level: 9 }).length;
  assert.ok(
    gz <= budget.wasmModuleGzipBytes,
    `module ${gz} B gzip > ${budget.wasmModuleGzipBytes} B`,
  );
});

test('publint finds nothing to report in the tarball', async () => {
  const tarball = readFileSync(pkg.tgz);
  const { messages } = await publint({
    pack: {
      tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.length),
    },
    level: 'suggestion',
    strict: true,
  });
  assert.deepEqual(
    messages.map((m) => `${m.type} ${m.code} at ${m.path.join('.')}`),
    [],
  );
});

test('Node ESM: import { load } from "trainmem" in an empty folder', () => {
  const out = node('esm.mjs');
  assert.equal(out.version, packageJson.version);
  assert.equal(out.sameInstance, true, 'default export loads the same instance');
  assert.equal(out.sgd.totalBytes, 400e6); // seed 003: 1e8 x 1 copy x 4 B
  assert.deepEqual(out.error, {
    isTrainmemError: true,
    isError: true,
    name: 'TrainmemError',
    code: 'out_of_range',
    field: 'model.params',
  });
  assert.equal(out.adamAfterError.totalBytes, 600e6); // seed 003: 1e8 x 3 copies x 2 B
  for (const f of ['checkpointSize', 'describeModel', 'peakMemory', 'accumulation', 'placement']) {
    assert.ok(out.functions.includes(f), `tm.${f} exists`);
  }
});

test('Node CommonJS: require("trainmem") in an empty folder, sharing classes with ESM', () => {
  const out = node('cjs.cjs');
  assert.equal(out.version, packageJson.version);
  assert.equal(out.sgd.totalBytes, 400e6);
  assert.deepEqual(out.error, {
    isTrainmemError: true,
    code: 'invalid_type',
    field: 'model.params',
  });
  assert.equal(out.sameClass, true);
  assert.equal(out.sameInstance, true);
  assert.match(out.resolved, /node_modules[/\\]trainmem[/\\]web[/\\]lib[/\\]index\.cjs$/);
});

test('Node without process.getBuiltinModule (as Node 18 to 20.15) loads and computes', () => {
  assert.equal(node('old-node.mjs').sgd.totalBytes, 400e6);
});

test('CLI: npx trainmem checkpoint-size prints the result as JSON, exit 0', () => {
  // Seed 003, example 1 as the simple formula: 6,738,415,616 x (2 + 2 x 2) B.
  const r = npx([
    'checkpoint-size',
    '--params',
    '6738415616',
    '--optimizer',
    'adamw',
    '--weight-dtype',
    'fp16',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).totalBytes, 40430493696);
});

test('CLI: a request file on stdin (--json -)', () => {
  const r = cli(['checkpoint-size', '--json', '-'], '{"model":{"params":1e8},"optimizer":"sgd"}');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).totalBytes, 400e6);
});

test('CLI: bad input is an error JSON on stderr naming the flag, exit 2', () => {
  const r = cli(['checkpoint-size', '--params', '-5', '--optimizer', 'adam']);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  const { error } = JSON.parse(r.stderr);
  assert.deepEqual(
    { code: error.code, field: error.field, flag: error.flag },
    { code: 'out_of_range', field: 'model.params', flag: '--params' },
  );
});

test('CLI: --help lists the commands and examples', () => {
  const r = cli(['--help']);
  assert.equal(r.status, 0);
  for (const c of [
    'checkpoint-size',
    'describe-model',
    'peak-memory',
    'accumulation',
    'placement',
  ]) {
    assert.match(r.stdout, new RegExp(`trainmem ${c}`));
  }
});
