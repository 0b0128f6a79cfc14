// An ES module consumer of trainmem, type-checked with `tsc --noEmit` (tests/js/types.test.js).
// Every line must compile; each @ts-expect-error line must NOT compile.
import { load, TrainmemError } from 'trainmem';
import type {
  CheckpointSizeRequest,
  CheckpointSizeResult,
  DType,
  OptimizerName,
  PlacementStrategy,
  Precision,
  Trainmem,
} from 'trainmem';
import trainmem from 'trainmem';

const tm: Trainmem = await load();
const version: string = tm.version;

const request: CheckpointSizeRequest = {
  model: { params: 6_738_415_616 },
  optimizer: 'adamw',
  weightDtype: 'fp16',
  masterWeights: true,
};
const size: CheckpointSizeResult = tm.checkpointSize(request);
const total: number = size.totalBytes + size.breakdown.optimizerState;
tm.checkpointSize({ model: { preset: 'llama-2-7b' }, optimizer: { name: 'adam', amsgrad: true } });
tm.checkpointSize({
  model: { tensors: [{ name: 'w', shape: [768, 3072], dtype: 'bf16' }] },
  optimizer: 'adafactor',
  format: 'torch',
});
tm.describeModel({ model: { config: { model_type: 'gpt2', n_layer: 12 } } });
tm.peakMemory({
  model: { preset: 'llama-2-7b' },
  microBatch: 4,
  seqLen: 2048,
  precision: 'amp-bf16',
  optimizer: 'adamw',
  checkpointing: 'full',
  gpu: 'a100-80gb',
});
// accumulation: the request's mode picks the result type (overloads), no narrowing needed.
const forward = tm.accumulation({ microBatch: 4, accumulationSteps: 8, dataParallel: 2 });
const effective: number = forward.effectiveBatch;
const plan = tm.accumulation({
  targetGlobalBatch: 64,
  model: { params: 3.4e8 },
  seqLen: 512,
  gpu: 'v100-16gb',
});
const recommended: number | undefined = plan.recommended?.microBatch;
const peak = tm.peakMemory({ model: { params: 1e9 }, microBatch: 1, seqLen: 128 });
// a traced model (python3 -m trainmem_trace): the file's text, or its object
const traced = tm.peakMemory({ model: { trace: '{"format":"trainmem-trace"}' }, microBatch: 8 });
const savedBytes: number | undefined = traced.trace?.savedBytes;
const fits: boolean | null = peak.fits;
const activationBytes: number = peak.breakdown.activations.bytes;
const placed = tm.placement({
  chain: {
    inputBytes: 1,
    layers: [{ forwardCost: 1, backwardCost: 1, outputBytes: 1, savedBytes: 1 }],
  },
  strategy: 'sqrt',
});
if ('plan' in placed) void placed.plan.includes('checkpoint');
const gpuIds: string[] = tm.presets().gpus.map((g) => g.id);
const pickerNames: string[] = tm.presets({ parameterCounts: false }).models.map((m) => m.name);
tm.placement({
  chain: {
    inputBytes: 1,
    layers: [{ forwardCost: 1, backwardCost: 1, outputBytes: 1, savedBytes: 1 }],
  },
  strategy: 'optimal',
  budgetBytes: 4,
});
// A chain as columns: typed arrays or arrays of numbers.
tm.placement({
  chain: {
    inputBytes: 1,
    layers: {
      name: ['a', 'b'],
      forwardCost: new Float64Array([1, 1]),
      backwardCost: [2, 2],
      outputBytes: new Uint32Array([1, 1]),
      savedBytes: new Float64Array([1, 1]),
    },
  },
  strategy: 'chen-greedy',
});
tm.call('checkpointSize', request);
await trainmem.load();

try {
  tm.checkpointSize({ model: { params: -5 }, optimizer: 'adam' });
} catch (e) {
  if (e instanceof TrainmemError) {
    const where: string = `${e.code} ${e.field} ${e.message}`;
    void where;
  }
}

const names: [DType, OptimizerName, Precision, PlacementStrategy] = [
  'bf16',
  'lion',
  'amp-fp16',
  'revolve',
];

// @ts-expect-error: an optimizer that does not exist
tm.checkpointSize({ model: { params: 1e9 }, optimizer: 'adamx' });
// @ts-expect-error: a dtype that does not exist
tm.checkpointSize({ model: { params: 1e9 }, optimizer: 'adam', weightDtype: 'fp12' });
// @ts-expect-error: the model is required
tm.checkpointSize({ optimizer: 'adam' });
// @ts-expect-error: a misspelt request key
tm.checkpointSize({ model: { params: 1e9 }, optimizer: 'adam', weightDtyp: 'fp16' });
// @ts-expect-error: parameterCounts is a boolean
tm.presets({ parameterCounts: 'no' });
// @ts-expect-error: not a precision
tm.peakMemory({ model: { params: 1e9 }, microBatch: 1, seqLen: 1, precision: 'fp16-amp' });
// @ts-expect-error: not a placement strategy
tm.placement({ strategy: 'sqrt-n' });
// @ts-expect-error: results are synchronous values, not promises
tm.checkpointSize(request).then(() => {});
// @ts-expect-error: a forward-mode result has no plans
void forward.plans;
// @ts-expect-error: peak-memory breakdown lines are { bytes, source }, not numbers
const wrongLine: number = peak.breakdown.weights;
void wrongLine;

export { version, total, names, effective, recommended, fits, activationBytes, gpuIds };
