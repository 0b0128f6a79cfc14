// The snapshot reader through the WASM module: the fixtures written by
// tools/snapshot_fixtures.py from real PyTorch CPU loops (expected figures: torch's own, in
// their *.expected.json), hostile files (each a TrainmemError naming what was wrong, the
// module usable after), the bytes forms JavaScript has, the CLI's compare-snapshot, and the
// skip path of the prepared GPU script.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, TrainmemError } from '../../web/lib/index.js';
import { main } from '../../web/lib/cli.js';
import { repoRoot, run } from './fixtures/packed.js';

const dir = join(repoRoot, 'tests/fixtures/snapshots');
const bytes = (name) => readFileSync(join(dir, `${name}.pickle`));
const expected = (name) => JSON.parse(readFileSync(join(dir, `${name}.expected.json`), 'utf8'));
const tm = await load();
const REQUEST = {
  mlp: { sizes: [64, 128, 128, 32] },
  microBatch: 32,
  optimizer: 'adam',
  runtime: 'pytorch-cpu',
};
const throwsCode = (fn, code, field, pattern) =>
  assert.throws(fn, (e) => {
    assert.ok(e instanceof TrainmemError, String(e));
    assert.equal(e.code, code, e.message);
    if (field !== undefined) assert.equal(e.field, field);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });

test('fixtures: steps, peak and kept gradients match what torch recorded', () => {
  for (const name of ['mlp_adam_keep_grads', 'mlp_adam_set_to_none']) {
    const ex = expected(name);
    const s = tm.readSnapshot(bytes(name), { points: 64 });
    assert.equal(s.events.total, ex.traceEntries, name);
    assert.equal(s.events.alloc, ex.allocs);
    assert.equal(s.steps.method, 'optimizer-frames');
    assert.equal(s.steps.count, ex.steps);
    assert.equal(s.peak.requestedBytes, ex.totalAllocatedAfterEntry[s.peak.event]);
    assert.equal(s.peak.requestedBytes, ex.maxTotalAllocated);
    assert.equal(s.peak.categories.gradients, ex.gradBytesRounded);
    assert.equal(s.peak.categories.optimizerState, ex.optimizerStateBytesRounded);
    assert.ok(s.series.points.length <= 64 && s.series.points.length > 1);
    const kept = s.causes.find((c) => c.code === 'gradients_kept_between_steps');
    if (ex.setToNone) assert.equal(kept, undefined);
    else assert.equal(kept.params.bytes, ex.gradBytesRounded);
  }
});

test('compareSnapshot: the difference per category and the cause', () => {
  const r = tm.compareSnapshot({ snapshot: bytes('mlp_adam_keep_grads'), request: REQUEST });
  const p = tm.peakMemory(REQUEST);
  assert.equal(r.predicted.allocatedPeakBytes, p.allocatedPeakBytes);
  const grads = r.categories.find((c) => c.category === 'gradients');
  assert.equal(grads.measuredBytes, expected('mlp_adam_keep_grads').gradBytesRounded);
  assert.equal(grads.predictedBytes, p.breakdown.gradients.bytes);
  assert.equal(grads.differenceBytes, grads.measuredBytes - grads.predictedBytes);
  assert.ok(r.causes.some((c) => c.code === 'gradients_kept_between_steps'));
  assert.equal(r.predictedSeries.length, p.timeline.length);
  const control = tm.compareSnapshot({ snapshot: bytes('mlp_adam_set_to_none'), request: REQUEST });
  assert.ok(!control.causes.some((c) => c.code === 'gradients_kept_between_steps'));
  // Figures alone, no file.
  const f = tm.compareSnapshot({ request: REQUEST, measured: { maxAllocatedBytes: 700000 } });
  assert.equal(f.measured, null);
  assert.equal(f.totals[0].differenceBytes, 700000 - p.allocatedPeakBytes);
});

test('bytes: Buffer, Uint8Array, ArrayBuffer, a DataView and memory_stats() text', () => {
  const b = bytes('mlp_adam_keep_grads');
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  const total = tm.readSnapshot(b).events.total;
  assert.equal(tm.readSnapshot(new Uint8Array(ab)).events.total, total);
  assert.equal(tm.readSnapshot(ab).events.total, total);
  assert.equal(tm.readSnapshot(new DataView(ab)).events.total, total);
  const stats = tm.readSnapshot(
    JSON.stringify({ 'allocated_bytes.all.peak': 1024, 'reserved_bytes.all.peak': 2048 }),
  );
  assert.equal(stats.source, 'memoryStats');
  assert.equal(stats.peak.allocatedBytes, 1024);
  throwsCode(() => tm.readSnapshot(42), 'invalid_type', 'snapshot');
  throwsCode(() => tm.compareSnapshot(null), 'invalid_type', '');
  throwsCode(() => tm.readSnapshot(new Uint8Array(0)), 'missing_field', 'snapshot');
});

test('hostile files: forbidden opcodes, truncation, huge lengths, nesting; usable after', () => {
  const forbidden = {
    GLOBAL: 0x63,
    STACK_GLOBAL: 0x93,
    REDUCE: 0x52,
    BUILD: 0x62,
    INST: 0x69,
    OBJ: 0x6f,
    NEWOBJ: 0x81,
    NEWOBJ_EX: 0x92,
    PERSID: 0x50,
    BINPERSID: 0x51,
    EXT1: 0x82,
    EXT2: 0x83,
    EXT4: 0x84,
  };
  for (const [name, op] of Object.entries(forbidden)) {
    throwsCode(
      () => tm.readSnapshot(new Uint8Array([0x80, 4, 0x4e, op, 0x2e])),
      'unsupported',
      'snapshot',
      new RegExp(`${name} at byte 3`),
    );
  }
  const real = bytes('mlp_adam_keep_grads');
  for (let n = 1; n < real.length; n += 4999) {
    throwsCode(() => tm.readSnapshot(real.subarray(0, n)), 'invalid_json', 'snapshot');
  }
  // BINUNICODE of 4 GiB - 1; 65 nested MARKs; 1,000,001 values on the stack.
  throwsCode(
    () => tm.readSnapshot(new Uint8Array([0x80, 4, 0x58, 255, 255, 255, 255])),
    'too_large',
  );
  throwsCode(
    () => tm.readSnapshot(new Uint8Array([0x80, 4, ...Array(65).fill(0x28)])),
    'too_large',
  );
  const many = new Uint8Array(1000003).fill(0x4e);
  many[0] = 0x80;
  many[1] = 4;
  throwsCode(() => tm.readSnapshot(many), 'too_large', 'snapshot', /1000000 values/);
  throwsCode(() => tm.readSnapshot(new TextEncoder().encode('hello')), 'invalid_json');
  assert.equal(tm.readSnapshot(real).events.total, expected('mlp_adam_keep_grads').traceEntries);
});

test('CLI: compare-snapshot prints a table with the cause, and JSON with --json', async () => {
  const file = join(dir, 'mlp_adam_keep_grads.pickle');
  const flags = ['--set', `mlp=${JSON.stringify(REQUEST.mlp)}`, '--micro-batch', '32'];
  const rest = ['--optimizer', 'adam', '--set', 'runtime=pytorch-cpu'];
  const capture = async (args) => {
    let out = '';
    let err = '';
    const status = await main(args, {
      out: (t) => (out += t),
      err: (t) => (err += t),
      stdin: () => '',
    });
    return { status, out, err };
  };
  const t = await capture(['compare-snapshot', file, ...flags, ...rest]);
  assert.equal(t.status, 0, t.err);
  assert.match(t.out, /gradients kept between steps/);
  assert.match(t.out, /^at the peak/m);
  const j = await capture(['compare-snapshot', file, ...flags, ...rest, '--json']);
  assert.equal(j.status, 0, j.err);
  assert.ok(JSON.parse(j.out).causes.some((c) => c.code === 'gradients_kept_between_steps'));
  const bad = await capture(['compare-snapshot', file, '--model', 'gpt2', '--micro-batch', '0']);
  assert.equal(bad.status, 2);
  const e = JSON.parse(bad.err).error;
  assert.equal(e.flag, '--micro-batch');
  assert.equal(e.field, 'request.microBatch');
});

test('tools/gpu_snapshots.py exits 0 with a message where there is no CUDA device', (t) => {
  if (!existsSync('/usr/bin/python3')) return t.skip('no /usr/bin/python3');
  const r = run('/usr/bin/python3', [
    join(repoRoot, 'tools/gpu_snapshots.py'),
    '--out',
    '/nonexistent/x',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /gpu_snapshots: skipped: /);
});
