// The page's multi-GPU inputs (web/app/requests.js, state.js, form.js): pipeline, context and
// expert parallelism become the documented peakMemory fields only when set, the core accepts
// them, they live in the URL, the core's errors on them lead back to their input, and a layout
// of the planner loaded into the peak-memory calculator asks for the memory the planner found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';
import { defaults, fromQuery, toQuery } from '../../web/app/state.js';
import {
  peakMemoryRequest,
  accumulationRequest,
  planLayoutRequest,
  stateOfLayout,
} from '../../web/app/requests.js';
import { usePresets } from '../../web/app/resolve.js';
import { isMoE } from '../../web/app/model-input.js';
import { visible } from '../../web/app/form.js';
import { inputOf } from '../../web/app/errors-view.js';
import { presetIndex } from '../../tools/preset-index.mjs';

const tm = await load();
usePresets(presetIndex());
const base = defaults(); // LLaMA-2 7B on the A100 80 GB preset
const PARALLEL = [
  'sequenceParallel',
  'pipelineParallel',
  'schedule',
  'virtualStages',
  'contextParallel',
  'expertParallel',
  'expertTensorParallel',
];
const peak = (patch) =>
  tm.peakMemory({ ...peakMemoryRequest({ ...base, ...patch }), timeline: false });

test('unset parallel inputs add no field; set ones map to their PeakMemoryRequest fields', () => {
  const r = peakMemoryRequest(base);
  for (const k of PARALLEL) assert.ok(!(k in r), k);
  const cases = [
    [
      { tensorParallel: 2, sequenceParallel: true },
      { tensorParallel: 2, sequenceParallel: true },
    ],
    // the schedule goes with the stages; virtual stages only with interleaved 1F1B
    [{ pipelineParallel: 4 }, { pipelineParallel: 4, schedule: '1f1b', virtualStages: undefined }],
    [
      { pipelineParallel: 1, schedule: 'gpipe' },
      { pipelineParallel: undefined, schedule: undefined },
    ],
    [
      { pipelineParallel: 4, schedule: 'interleaved-1f1b', virtualStages: 2 },
      { pipelineParallel: 4, schedule: 'interleaved-1f1b', virtualStages: 2 },
    ],
    [{ pipelineParallel: 4, schedule: 'zb-v', virtualStages: 4 }, { virtualStages: undefined }],
    [{ contextParallel: 2 }, { contextParallel: 2 }],
    [
      { expertParallel: 8, expertTensorParallel: 2 },
      { expertParallel: 8, expertTensorParallel: 2 },
    ],
  ];
  for (const [patch, want] of cases) {
    const got = peakMemoryRequest({ ...base, ...patch });
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, JSON.stringify(patch));
  }
  // the accumulation planner takes none of pipeline, context or expert parallelism
  const a = accumulationRequest({ ...base, pipelineParallel: 4, contextParallel: 2 });
  assert.ok(!('pipelineParallel' in a) && !('contextParallel' in a));
});

test('the core accepts what the inputs build: 4 stages of 1F1B hold 4, 3, 2, 1 micro-batches', () => {
  // LLaMA-2 7B has 32 blocks (its config.json num_hidden_layers): 8 per stage. PipeDream-flush
  // (1F1B) keeps p − s micro-batches in flight on stage s of p (Narayanan et al. 2021, §2.2),
  // with 8 micro-batches per step.
  const r = peak({ pipelineParallel: 4, accumSteps: 8 });
  const stages = r.pipelineParallel.perStage;
  assert.deepEqual(
    stages.map((s) => s.blocks),
    [8, 8, 8, 8],
  );
  assert.deepEqual(
    stages.map((s) => s.inFlightMicroBatches),
    [4, 3, 2, 1],
  );
  // GPipe keeps all 8 on every stage (Huang et al. 2019: every forward before any backward)
  const g = peak({ pipelineParallel: 4, schedule: 'gpipe', accumSteps: 8 });
  assert.deepEqual(
    g.pipelineParallel.perStage.map((s) => s.inFlightMicroBatches),
    [8, 8, 8, 8],
  );
  for (const patch of [
    { tensorParallel: 2, sequenceParallel: true },
    { pipelineParallel: 4, schedule: 'interleaved-1f1b', virtualStages: 2, accumSteps: 8 },
    { pipelineParallel: 2, schedule: 'zb-v', accumSteps: 4 },
    { contextParallel: 2, attention: 'sdpa', seqLen: 4096 },
    { preset: 'mixtral-8x7b', dataParallel: 8, expertParallel: 8 },
    { preset: 'mixtral-8x7b', dataParallel: 8, expertParallel: 4, expertTensorParallel: 2 },
  ])
    assert.equal(typeof peak(patch).peakBytes, 'number', JSON.stringify(patch));
});

test('the parallel inputs and the cluster live in the URL and read back', () => {
  const st = {
    ...base,
    tab: 'plan',
    tensorParallel: 2,
    sequenceParallel: true,
    pipelineParallel: 8,
    schedule: 'interleaved-1f1b',
    virtualStages: 3,
    contextParallel: 2,
    expertParallel: 4,
    expertTensorParallel: 2,
    gpus: 64,
    gpusPerNode: 4,
  };
  assert.deepEqual(fromQuery(toQuery(st)), st);
  // a schedule the core does not have is dropped
  assert.equal(fromQuery('?ps=interleaved').schedule, '1f1b');
});

test('the schedule, virtual stages and expert inputs show only where they apply', () => {
  assert.equal(visible('schedule', base, 'peak'), false);
  assert.equal(visible('schedule', { ...base, pipelineParallel: 2 }, 'peak'), true);
  const interleaved = { ...base, pipelineParallel: 2, schedule: 'interleaved-1f1b' };
  assert.equal(visible('virtualStages', { ...base, pipelineParallel: 2 }, 'peak'), false);
  assert.equal(visible('virtualStages', interleaved, 'peak'), true);
  // Mixtral routes to 8 experts (num_local_experts), DeepSeek-V3 to 256 (n_routed_experts),
  // Qwen3-30B-A3B to 128 (num_experts); LLaMA-2 has none
  for (const preset of ['mixtral-8x7b', 'deepseek-v3', 'qwen3-30b-a3b'])
    assert.equal(isMoE({ ...base, preset }), true, preset);
  assert.equal(isMoE(base), false);
  assert.equal(visible('expertParallel', base, 'peak'), false);
  assert.equal(visible('expertParallel', { ...base, preset: 'mixtral-8x7b' }, 'peak'), true);
  const config = (c) => ({ ...base, modelSource: 'config', config: JSON.stringify(c) });
  assert.equal(isMoE(config({ model_type: 'mixtral', num_local_experts: 8 })), true);
  assert.equal(isMoE(config({ model_type: 'llama' })), false);
  assert.equal(isMoE({ ...base, modelSource: 'config', config: '{ not json' }), false);
});

test("the core's errors on the parallel inputs name a field that leads to that input", () => {
  const fieldOf = (patch) => {
    try {
      peak(patch);
    } catch (e) {
      return e.field;
    }
    return null;
  };
  // 64 stages for 32 blocks; 3 experts' ranks for Mixtral's 8; context parallel without SDPA;
  // sequence parallelism without tensor parallelism
  for (const [patch, input] of [
    [{ pipelineParallel: 64 }, 'pipelineParallel'],
    [{ preset: 'mixtral-8x7b', dataParallel: 8, expertParallel: 3 }, 'expertParallel'],
    [{ contextParallel: 2, attention: 'eager' }, 'contextParallel'],
    [{ sequenceParallel: true }, 'sequenceParallel'],
  ]) {
    const field = fieldOf(patch);
    assert.ok(field, JSON.stringify(patch));
    assert.equal(inputOf(field), input, `${JSON.stringify(patch)}: ${field}`);
  }
  assert.equal(inputOf('expertParallelism.routingImbalance'), 'expertParallel');
  assert.equal(inputOf('globalBatch'), 'targetGlobalBatch');
  assert.equal(inputOf('gpusPerNode'), 'gpusPerNode');
});

test('a planned layout loaded into the peak-memory calculator needs the memory the planner found', () => {
  // LLaMA-3 8B on 16 A100 80 GB, 8 per node, 64 sequences of 4096 tokens per step
  const st = {
    ...base,
    preset: 'llama-3-8b',
    gpus: 16,
    gpusPerNode: 8,
    targetGlobalBatch: 64,
    seqLen: 4096,
  };
  const plan = tm.planLayout(planLayoutRequest(st));
  assert.ok(plan.layouts.length >= 2);
  for (const l of plan.layouts.slice(0, 3)) {
    const loaded = { ...st, ...stateOfLayout(l.settings) };
    const r = tm.peakMemory({ ...peakMemoryRequest(loaded), timeline: false });
    assert.equal(r.deviceUsedBytes, l.peakBytes, JSON.stringify(l.settings));
    // the layout's sizes are the inputs' (all 16 GPUs)
    assert.equal(loaded.tensorParallel * loaded.pipelineParallel * loaded.dataParallel, 16);
  }
  // GPUs per node above the cluster's GPUs: the cluster is one node
  assert.equal(planLayoutRequest({ ...st, gpus: 4 }).gpusPerNode, 4);
});

test("the plan tab's largest context- and expert-parallel sizes reach planLayout's explore", () => {
  // Mixtral 8x7B (8 experts) on 16 H100s, 8 per node, 64 sequences of 8192 tokens per step
  const st = {
    ...base,
    preset: 'mixtral-8x7b',
    gpu: 'h100-80gb',
    gpus: 16,
    gpusPerNode: 8,
    targetGlobalBatch: 64,
    seqLen: 8192,
  };
  assert.equal(planLayoutRequest(st).explore, undefined);
  const r = planLayoutRequest({ ...st, planCp: 2, planEp: 8 });
  assert.deepEqual(r.explore, { contextParallel: 2, expertParallel: 8 });
  const plan = tm.planLayout(r);
  // every listed layout uses the 16 GPUs: tp x pp x dp x cp, with EP carved out of dp x cp x tp
  for (const l of plan.layouts) {
    assert.equal(l.tensorParallel * l.pipelineParallel * l.dataParallel * l.contextParallel, 16);
    assert.ok(l.contextParallel <= 2 && 8 % l.expertParallel === 0);
  }
  // the planner's error on a dimension the model lacks leads to the plan tab's input
  assert.equal(inputOf('explore.expertParallel'), 'planEp');
  assert.equal(inputOf('explore.contextParallel'), 'planCp');
});
