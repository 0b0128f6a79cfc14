// FSDP and ZeRO-3 through the WASM module and the CLI, against hand counts of Llama-2-7b
// (config.json: hidden 4096, intermediate 11008, 32 layers, vocab 32000): a block is
// 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 parameters, the root unit
// (embed_tokens + lm_head + final norm) 262,148,096, the whole model 6,738,415,616.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load, TrainmemError } from '../../web/lib/index.js';
import { main } from '../../web/lib/cli.js';

const tm = await load();
const P = 6738415616;
const BLOCK = 202383360;
const ROOT = 262148096;
const base = {
  model: { preset: 'llama-2-7b' },
  microBatch: 1,
  seqLen: 512,
  precision: 'amp-bf16',
  dataParallel: 8,
  simulateAllocator: false,
  searchMaxMicroBatch: false,
};
// the unsharded parameters (and FSDP's unsharded gradients) live at a timeline point
const transient = (r, phase, layer) =>
  r.timeline.find((x) => x.phase === phase && x.layer === layer).gatheredBytes;

test('FSDP FULL_SHARD over 8 ranks: sharded fp32 weights, bf16 units gathered with one prefetch', () => {
  const r = tm.peakMemory({ ...base, fsdp: { mixedPrecision: { paramDtype: 'bf16' } } });
  assert.equal(r.breakdown.weights.bytes, (4 * P) / 8);
  assert.equal(transient(r, 'forward', 1), 2 * (ROOT + 2 * BLOCK));
});

test('FSDP CPU offload leaves no parameters, gradients or optimizer state on the GPU', () => {
  const r = tm.peakMemory({ ...base, fsdp: { cpuOffload: true } });
  for (const k of ['weights', 'gradients', 'optimizerState']) assert.equal(r.breakdown[k].bytes, 0);
});

test('FSDP errors name their field', () => {
  assert.throws(
    () => tm.peakMemory({ ...base, fsdp: { shardingStrategy: 'HYBRID_SHARD', shardGroupSize: 3 } }),
    (e) => e instanceof TrainmemError && e.field === 'fsdp.shardGroupSize',
  );
  assert.throws(
    () => tm.peakMemory({ ...base, zeroStage: 3, fsdp: {} }),
    (e) => e instanceof TrainmemError && e.field === 'fsdp',
  );
});

test('ZeRO-3 with DeepSpeed defaults: the running block plus a 5e7-element prefetch', () => {
  const r = tm.peakMemory({ ...base, zeroStage: 3, optimizer: 'sgd', zero3: {} });
  assert.equal(transient(r, 'forward', 1), 2 * (BLOCK + 5e7));
});

test('CLI: --fsdp-* flags build the fsdp object', async () => {
  let out = '';
  const status = await main(
    [
      'peak-memory',
      '--model',
      'llama-2-7b',
      '--seq-len',
      '512',
      '--micro-batch',
      '1',
      '--precision',
      'amp-bf16',
      '--data-parallel',
      '16',
      '--fsdp-sharding',
      'HYBRID_SHARD',
      '--fsdp-shard-group-size',
      '4',
      '--simulate-allocator',
      'false',
    ],
    { out: (t) => (out += t), err: () => {}, stdin: () => '' },
  );
  assert.equal(status, 0);
  assert.equal(JSON.parse(out).breakdown.weights.bytes, (4 * P) / 4);
});

test('FSDP2 per-unit reshardAfterForward: the last block kept, the root freed for the loss', () => {
  const fsdp = (raf) => ({ mixedPrecision: { paramDtype: 'bf16' }, reshardAfterForward: raf });
  // fully_shard's root stays gathered at the loss unless given an explicit True
  assert.equal(transient(tm.peakMemory({ ...base, fsdp: fsdp(true) }), 'loss', -1), 2 * ROOT);
  assert.equal(transient(tm.peakMemory({ ...base, fsdp: fsdp({ root: true }) }), 'loss', -1), 0);
  // torchtitan's last block (reshard_after_forward=False): block 32 held from its forward on
  const t = tm.peakMemory({ ...base, fsdp: fsdp({ lastBlock: false }) });
  assert.equal(transient(t, 'loss', -1), 2 * (ROOT + BLOCK));
  assert.throws(
    () => tm.peakMemory({ ...base, fsdp: { version: 1, reshardAfterForward: { root: true } } }),
    (e) => e instanceof TrainmemError && e.field === 'fsdp.reshardAfterForward',
  );
});

test('CLI: --zero-reduce-bucket-size, --zero-overlap-comm and --fsdp-limit-all-gathers', async () => {
  const cli = async (args) => {
    let out = '';
    const argv = ['peak-memory', '--model', 'llama-2-7b', '--seq-len', '512', '--micro-batch', '1'];
    const rest = [
      '--precision',
      'amp-bf16',
      '--data-parallel',
      '8',
      '--simulate-allocator',
      'false',
    ];
    const status = await main([...argv, ...rest, ...args], {
      out: (x) => (out += x),
      err: () => {},
      stdin: () => '',
    });
    assert.equal(status, 0);
    return JSON.parse(out);
  };
  // ZeRO-2's gradient buckets: 2 x 1,048,576 bf16 elements with overlap_comm, live in the
  // backward (stage_1_and_2.py setup_buckets)
  const z = await cli([
    '--zero-stage',
    '2',
    '--zero-reduce-bucket-size',
    '1048576',
    '--zero-overlap-comm',
    'true',
  ]);
  const bwd = z.timeline.filter((p) => p.phase === 'backward');
  assert.ok(bwd.length > 0);
  const noBuckets = await cli(['--zero-stage', '2', '--set', 'zero.contiguousGradients=false']);
  const bwd0 = noBuckets.timeline.filter((p) => p.phase === 'backward');
  assert.equal(bwd[5].gradientBytes - bwd0[5].gradientBytes, 2 * 2 * 1048576);
  const f = await cli(['--fsdp-version', '1', '--fsdp-limit-all-gathers', 'false']);
  assert.ok(f.assumptions.some((a) => a.startsWith('FSDP1 without its rate limiter')));
});
