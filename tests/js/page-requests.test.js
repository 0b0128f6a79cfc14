// The page's advanced inputs (web/app/requests.js) become the documented peakMemory fields
// (web/lib/index.d.ts, PeakMemoryRequest), are sent only when set, and the core accepts each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';
import { defaults, fromQuery, toQuery } from '../../web/app/state.js';
import {
  peakMemoryRequest,
  accumulationRequest,
  adviseRequest,
  stateOfChange,
  modelOf,
  knowBaseDtype,
  knowsBaseDtype,
  BASE_DTYPE_PROBE,
} from '../../web/app/requests.js';
import { resolve, usePresets } from '../../web/app/resolve.js';
import { modelInput } from '../../web/app/model-input.js';
import { presetIndex } from '../../tools/preset-index.mjs';

const tm = await load();
usePresets(presetIndex());
const base = defaults(); // LLaMA-2 7B on the A100 80 GB preset

// Whether the core reads lora.baseDtype (a core built before it refuses the key), asked as
// the page asks it: the requests carry it only then.
function coreKnowsBaseDtype() {
  try {
    tm.peakMemory(BASE_DTYPE_PROBE);
    return true;
  } catch (e) {
    if (e.code === 'unknown_key') return false;
    throw e;
  }
}
knowBaseDtype(coreKnowsBaseDtype());

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
    [
      { method: 'lora', loraRank: 16, baseDtype: 'bf16' },
      { lora: { rank: 16, baseDtype: 'bf16' } },
    ],
    [
      { method: 'qlora', loraRank: 64, baseDtype: 'fp16' },
      { lora: { rank: 64, qlora: true, baseDtype: 'fp16' } },
    ],
    [
      { method: 'lora', loraRank: 8, baseDtype: 'bf16', loraTargets: 'q_proj, v_proj' },
      { lora: { rank: 8, baseDtype: 'bf16', targetModules: ['q_proj', 'v_proj'] } },
    ],
    [
      { method: 'lora', loraRank: 8, baseDtype: 'bf16', loraTargets: 'all-linear' },
      { lora: { rank: 8, baseDtype: 'bf16', targetModules: 'all-linear' } },
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
    if (want.lora && !knowsBaseDtype()) delete want.lora.baseDtype;
    const r = peakMemoryRequest({ ...base, ...patch });
    for (const [k, v] of Object.entries(want)) assert.deepEqual(r[k], v, JSON.stringify(patch));
    // the accumulation plans take the same peakMemory inputs
    const a = accumulationRequest({ ...base, ...patch });
    for (const [k, v] of Object.entries(want)) assert.deepEqual(a[k], v, JSON.stringify(patch));
  }
});

test('the core accepts every request the advanced inputs build', () => {
  for (const patch of [
    { method: 'lora', loraRank: 16 },
    { method: 'qlora', loraRank: 16, loraTargets: 'all-linear' },
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
    ...peakMemoryRequest({ ...base, method: 'lora', loraRank: 16 }),
    timeline: false,
  });
  assert.equal(r.trainableParams, 32 * 2 * 16 * (4096 + 4096));
});

test('the advanced inputs live in the URL and read back', () => {
  const st = {
    ...base,
    method: 'qlora',
    loraRank: 32,
    baseDtype: 'fp16',
    loraTargets: 'q_proj,v_proj',
    offloadOptimizer: true,
    tensorParallel: 4,
    simulateAllocator: false,
    marginPct: 2.5,
    allocConf: 'expandable_segments:True',
  };
  assert.deepEqual(fromQuery(toQuery(st)), st);
});

test('the precision follows the GPU: mixed bf16 on an A100, mixed fp16 on a T4 or a V100', () => {
  // NVIDIA's datasheets: bf16 from Ampere (A100) on; the T4 (Turing) and V100 (Volta) have none.
  assert.equal(peakMemoryRequest(base).precision, 'amp-bf16');
  assert.equal(peakMemoryRequest({ ...base, gpu: 't4' }).precision, 'amp-fp16');
  assert.equal(peakMemoryRequest({ ...base, gpu: 'v100-16gb' }).precision, 'amp-fp16');
  // a precision the user chose is kept
  assert.equal(peakMemoryRequest({ ...base, gpu: 't4', precision: 'fp32' }).precision, 'fp32');
  // LoRA's base is loaded in 16 bits as PEFT users load it: bf16, or fp16 without bf16
  assert.equal(resolve({ ...base, method: 'lora' }).st.baseDtype, 'bf16');
  assert.equal(resolve({ ...base, method: 'lora', gpu: 't4' }).st.baseDtype, 'fp16');
  // the checkpoint file follows the training precision: autocast trains fp32 weights
  assert.equal(resolve(base).st.weightDtype, 'fp32');
  assert.equal(resolve({ ...base, precision: 'bf16' }).st.weightDtype, 'bf16');
  assert.equal(resolve({ ...base, precision: 'bf16', weightDtype: 'fp16' }).st.weightDtype, 'fp16');
});

test('the advise request: the margin as a share of the GPU, from scratch, one call', () => {
  const r = adviseRequest(base);
  assert.equal(r.marginFraction, 0.05);
  assert.ok(!('fromScratch' in r));
  assert.equal(adviseRequest({ ...base, method: 'scratch' }).fromScratch, true);
  assert.equal(adviseRequest({ ...base, marginGB: 2 }).marginBytes, 2e9);
  assert.equal(adviseRequest(base, { timeline: false }).timeline, false);
});

test('each change the core offers, applied to the inputs, asks for what the change sets', () => {
  const advice = tm.advise({ ...adviseRequest(base), timeline: false });
  assert.ok(advice.changes.length >= 5);
  const within = (want, got, path) => {
    if (want && typeof want === 'object')
      for (const [k, v] of Object.entries(want)) within(v, got?.[k], `${path}.${k}`);
    else assert.deepEqual(got, want, path);
  };
  for (const c of advice.changes) {
    const st = { ...base, ...stateOfChange(c.set, base) };
    const r = peakMemoryRequest(st);
    within(c.set, r, c.id);
  }
});

test('a Hub id pasted as config.json names the model, and the known one', () => {
  for (const text of [
    'meta-llama/Llama-3.1-8B',
    'https://huggingface.co/meta-llama/Llama-3.1-8B',
  ]) {
    assert.throws(
      () => modelOf({ ...base, modelSource: 'config', config: text }),
      (e) =>
        e.key === 'error.hubIdKnown' && e.preset === 'llama-3.1-8b' && e.field === 'model.config',
    );
  }
  assert.throws(
    () => modelOf({ ...base, modelSource: 'config', config: 'someone/some-model' }),
    (e) => e.key === 'error.hubId' && e.params.id === 'someone/some-model',
  );
  assert.throws(
    () => modelOf({ ...base, modelSource: 'config', config: '{"model_type": "llama",' }),
    (e) => e.key === 'error.configAt' && e.code === 'invalid_json',
  );
});

test('what a model reads decides seqLen / imageSize / numClasses, as the core reads them', () => {
  // every preset: the page sends seqLen exactly to the models that read tokens; the core takes
  // each request (an image network refuses seqLen, so a page that sent it would be refused)
  for (const m of presetIndex().models) {
    const st = { ...base, preset: m.id, imageSize: 0, numClasses: 0 };
    const r = peakMemoryRequest(st);
    const input = modelInput(st);
    assert.equal('seqLen' in r, input === 'tokens', m.id);
    if (input === 'image') {
      assert.throws(
        () => tm.peakMemory({ ...r, seqLen: 512, timeline: false }),
        (e) => e.field === 'seqLen',
        m.id,
      );
    }
  }
  // ResNet-50 at 160 px with 10 classes: the fields reach the request, and change the answer
  const rn = { ...base, preset: 'torchvision/resnet50', precision: 'fp32', optimizer: 'sgd' };
  const r160 = peakMemoryRequest({ ...rn, imageSize: 160, numClasses: 10 });
  assert.equal(r160.imageSize, 160);
  assert.equal(r160.numClasses, 10);
  const a = tm.peakMemory({ ...peakMemoryRequest(rn), timeline: false });
  const b = tm.peakMemory({ ...r160, timeline: false });
  // fc: 2048 x 1000 + 1000 parameters become 2048 x 10 + 10 (torchvision resnet.py)
  assert.equal(a.params - b.params, 2049 * 990);
  // activations scale with the pixels: (160 / 224)^2 ~ 0.51 of them
  const ratio = b.storedActivationBytes / a.storedActivationBytes;
  assert.ok(ratio > 0.45 && ratio < 0.56, String(ratio));
  // a pasted HF ViT config and a diffusion preset read imageSize; Whisper reads neither field
  const vit = JSON.stringify({ model_type: 'vit', architectures: ['ViTForImageClassification'] });
  assert.equal(modelInput({ modelSource: 'config', config: vit }), 'image');
  const sd = { ...base, preset: 'sd-1.5-unet', imageSize: 256, numClasses: 10 };
  assert.deepEqual(
    [peakMemoryRequest(sd).imageSize, 'numClasses' in peakMemoryRequest(sd)],
    [256, false],
  );
  const whisper = { modelSource: 'config', config: '{"model_type":"whisper"}', imageSize: 224 };
  assert.equal(modelInput(whisper), 'audio');
  assert.ok(!('imageSize' in peakMemoryRequest({ ...base, ...whisper })));
});
