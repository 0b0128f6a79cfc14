// The page's advanced inputs (web/app/requests.js) become the documented peakMemory fields
// (web/lib/index.d.ts, PeakMemoryRequest), are sent only when set, and the core accepts each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';
import { defaults, fromQuery, toQuery } from '../../web/app/state.js';
import { peakMemoryRequest, accumulationRequest } from '../../web/app/requests.js';

const tm = await load();
const base = defaults(); // LLaMA-2 7B on the A100 80 GB preset

test('unset advanced inputs add no field (the core keeps its documented defaults)', () => {
  const r = peakMemoryRequest(base);
  for (const k of [
    'lora',
    'offload',
    'tensorParallel',
    'compile',
    'activationOffloading',
    'optimizerInBackward',
    'loss',
    'ddp',
    'fsdp',
    'zero3',
    'float8',
    'samples',
    'targetLen',
    'allocator',
    'simulateAllocator',
    'zeroStage',
  ])
    assert.ok(!(k in r), k);
});

test('each advanced input maps to its PeakMemoryRequest field', () => {
  const cases = [
    [{ lora: 'lora', loraRank: 16 }, { lora: { rank: 16 } }],
    [{ lora: 'qlora', loraRank: 64 }, { lora: { rank: 64, qlora: true } }],
    [
      { lora: 'lora', loraRank: 8, loraTargets: 'q_proj, v_proj' },
      { lora: { rank: 8, targetModules: ['q_proj', 'v_proj'] } },
    ],
    [
      { lora: 'lora', loraRank: 8, loraTargets: 'all-linear' },
      { lora: { rank: 8, targetModules: 'all-linear' } },
    ],
    [
      { zeroStage: '2', offloadOptimizer: true },
      { zeroStage: 2, offload: { optimizer: true } },
    ],
    [{ tensorParallel: 2 }, { tensorParallel: 2 }],
    [{ compile: true }, { compile: true }],
    [{ activationOffloading: true }, { activationOffloading: true }],
    [{ optimizerInBackward: true }, { optimizerInBackward: true }],
    [{ loss: 'chunked' }, { loss: 'chunked' }],
    [
      { fsdp: 'FULL_SHARD', dataParallel: 8 },
      { fsdp: { shardingStrategy: 'FULL_SHARD' }, dataParallel: 8 },
    ],
    [
      { dataParallel: 8, ddpBucketMb: 100, ddpBucketView: true },
      { ddp: { bucketCapMb: 100, gradientAsBucketView: true } },
    ],
    [
      { fsdp: 'HYBRID_SHARD', dataParallel: 16, fsdpGroup: 8 },
      { fsdp: { shardingStrategy: 'HYBRID_SHARD', shardGroupSize: 8 }, dataParallel: 16 },
    ],
    [
      { fsdp: 'FULL_SHARD', dataParallel: 8, fsdpParamDtype: 'bf16', fsdpReduceDtype: 'fp32' },
      {
        fsdp: {
          shardingStrategy: 'FULL_SHARD',
          mixedPrecision: { paramDtype: 'bf16', reduceDtype: 'fp32' },
        },
      },
    ],
    [
      { zeroStage: '3', dataParallel: 8, zero3MaxLive: 3e8, zero3Prefetch: 1e7 },
      { zeroStage: 3, zero3: { maxLiveParameters: 3e8, prefetchBucketSize: 1e7 } },
    ],
    [
      { checkpointing: 'selective-op', saveOps: 'mm, sdpa', everyOtherMm: true },
      { checkpointing: { strategy: 'selective-op', saveOps: ['mm', 'sdpa'], everyOtherMm: true } },
    ],
    [{ float8: true }, { float8: { recipe: 'tensorwise' } }],
    [{ packed: true }, { samples: { packed: true } }],
    [{ targetLen: 128 }, { targetLen: 128 }],
    [{ allocConf: ' expandable_segments:True ' }, { allocator: 'expandable_segments:True' }],
    [{ simulateAllocator: false }, { simulateAllocator: false }],
  ];
  // padded lengths: the peak's alone (the accumulation planner refuses them)
  assert.deepEqual(peakMemoryRequest({ ...base, sampleLengths: '512, 380 1024' }).samples, {
    lengths: [512, 380, 1024],
  });
  assert.ok(!('samples' in accumulationRequest({ ...base, sampleLengths: '512' })));
  for (const [patch, want] of cases) {
    const r = peakMemoryRequest({ ...base, ...patch });
    for (const [k, v] of Object.entries(want)) assert.deepEqual(r[k], v, JSON.stringify(patch));
    // the accumulation plans take the same peakMemory inputs
    const a = accumulationRequest({ ...base, ...patch });
    for (const [k, v] of Object.entries(want)) assert.deepEqual(a[k], v, JSON.stringify(patch));
  }
});

test('the core accepts every request the advanced inputs build', () => {
  for (const patch of [
    { lora: 'lora', loraRank: 16 },
    { lora: 'qlora', loraRank: 16, loraTargets: 'all-linear' },
    { zeroStage: '2', offloadOptimizer: true },
    { zeroStage: '3', dataParallel: 8, offloadOptimizer: true, offloadParams: true },
    { tensorParallel: 2 },
    { compile: true },
    { activationOffloading: true },
    { optimizerInBackward: true },
    { loss: 'chunked' },
    { fsdp: 'FULL_SHARD', dataParallel: 8 },
    { fsdp: 'NO_SHARD', dataParallel: 2 },
    { dataParallel: 8, ddpBucketMb: 100, ddpBucketView: true },
    { fsdp: 'HYBRID_SHARD', dataParallel: 16, fsdpGroup: 8 },
    { fsdp: 'FULL_SHARD', dataParallel: 8, fsdpParamDtype: 'bf16', fsdpReduceDtype: 'fp32' },
    { zeroStage: '3', dataParallel: 8, zero3MaxLive: 3e8, zero3Prefetch: 1e7 },
    { checkpointing: 'selective-op', saveOps: 'mm, sdpa', everyOtherMm: true },
    { sampleLengths: '512, 380, 1024', seqLen: 1024 },
    { float8: true, gpu: 'h100-80gb' },
    { packed: true },
    { preset: 't5-small', seqLen: 512, targetLen: 128 },
    { allocConf: 'expandable_segments:True' },
    { simulateAllocator: false },
  ]) {
    const r = tm.peakMemory({ ...peakMemoryRequest({ ...base, ...patch }), timeline: false });
    assert.equal(typeof r.peakBytes, 'number', JSON.stringify(patch));
  }
});

test('LoRA on a frozen LLaMA-2 7B trains far fewer parameters than the model has', () => {
  // rank 16 on q_proj and v_proj (PEFT's default for llama): 32 blocks × 2 × 16 × (4096 + 4096)
  // = 8,388,608 trainable parameters (LoRA adds r × (in + out) per adapted linear); PEFT's
  // print_trainable_parameters() shows "trainable params: 8,388,608" for this setup.
  const r = tm.peakMemory({
    ...peakMemoryRequest({ ...base, lora: 'lora', loraRank: 16 }),
    timeline: false,
  });
  assert.equal(r.trainableParams, 32 * 2 * 16 * (4096 + 4096));
});

test('the advanced inputs live in the URL and read back', () => {
  const st = {
    ...base,
    lora: 'qlora',
    loraRank: 32,
    loraTargets: 'q_proj,v_proj',
    offloadOptimizer: true,
    tensorParallel: 4,
    simulateAllocator: false,
    marginGB: 2.5,
    allocConf: 'expandable_segments:True',
  };
  assert.deepEqual(fromQuery(toQuery(st)), st);
});
