// planLayout through the WASM module and the CLI: its layouts come fastest first, each one's
// memory is what peakMemory says for the settings it names, a given layout is judged beside
// the plan, and the fields it chooses itself are refused by name. (The hand-worked
// factorisations and step-time arithmetic: tests/cpp/test_layout_planner.cpp.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load, TrainmemError } from '../../web/lib/index.js';
import { main } from '../../web/lib/cli.js';

const tm = await load();
const base = {
  model: { preset: 'llama-3-8b' },
  gpu: 'a100-80gb',
  gpus: 16,
  gpusPerNode: 8,
  globalBatch: 64,
  seqLen: 4096,
  precision: 'amp-bf16',
  optimizer: 'adamw',
  top: 3,
};

test('planLayout: fastest first, each layout is peakMemory of its settings', () => {
  const r = tm.planLayout(base);
  assert.equal(r.layouts.length, 3);
  for (let i = 1; i < r.layouts.length; i++) {
    assert.ok(r.layouts[i].time.stepSeconds >= r.layouts[i - 1].time.stepSeconds);
  }
  // TP x PP x DP is the cluster; micro-batch x micro-batches x DP the global batch
  for (const l of [...r.layouts, ...r.fasterButRuledOut]) {
    assert.equal(l.tensorParallel * l.pipelineParallel * l.dataParallel, 16);
    assert.equal(l.microBatch * l.microBatches * l.dataParallel, 64);
  }
  const { top, gpus, gpusPerNode, globalBatch, ...peak } = base;
  const l = r.layouts[0];
  const p = tm.peakMemory({ ...peak, ...l.settings, timeline: false, searchMaxMicroBatch: false });
  assert.equal(l.peakBytes, p.deviceUsedBytes);
  assert.equal(p.fits, true);
  // the links come from the data file, with their source
  assert.equal(r.timeModel.intraNodeBytesPerSecond, 300e9);
  assert.match(r.timeModel.intraNodeSource, /NVLink/);
});

test('planLayout: a given layout is judged beside the plan', () => {
  const r = tm.planLayout({
    ...base,
    compare: { tensorParallel: 2, sharding: 'fsdp', checkpointing: 'full', microBatch: 1 },
  });
  assert.equal(r.compared.dataParallel, 8);
  assert.equal(r.compared.microBatches, 8);
  assert.ok(r.compared.time.stepSeconds >= r.layouts[0].time.stepSeconds);
  assert.ok(r.compared.fasterCandidates >= 1);
});

test('planLayout: the fields it chooses are refused by name', () => {
  assert.throws(
    () => tm.planLayout({ ...base, tensorParallel: 2 }),
    (e) => e instanceof TrainmemError && e.code === 'inconsistent' && e.field === 'tensorParallel',
  );
  assert.throws(
    () => tm.planLayout({ ...base, gpusPerNode: 3 }),
    (e) => e.code === 'inconsistent' && e.field === 'gpusPerNode',
  );
  // the module stays usable
  assert.equal(tm.planLayout(base).layouts.length, 3);
});

test('CLI: trainmem plan-layout', async () => {
  let out = '';
  const status = await main(
    [
      'plan-layout',
      '--model',
      'llama-3-8b',
      '--gpu',
      'a100-80gb',
      '--gpus',
      '16',
      '--gpus-per-node',
      '8',
      '--global-batch',
      '64',
      '--seq-len',
      '4096',
      '--precision',
      'amp-bf16',
      '--top',
      '2',
    ],
    { out: (t) => (out += t), err: () => {}, stdin: () => '' },
  );
  assert.equal(status, 0);
  assert.equal(JSON.parse(out).layouts.length, 2);
});
