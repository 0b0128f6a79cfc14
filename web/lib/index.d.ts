// Type declarations of the trainmem npm module (hand-written; kept honest by
// tests/js/types.test.js, which type-checks every golden request and result against them).
// Units: bytes are plain numbers (exact up to 2^53 ≈ 9.0e15); "GB" means 10^9, "GiB" 2^30.

// ---------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------

/**
 * Element types and their storage sizes: fp64 8 B, fp32 4 B, fp16 / bf16 2 B (IEEE 754,
 * Google bfloat16), fp8 1 B (OCP FP8), int64 8 B, int32 4 B, int8 / uint8 1 B, int4 ½ B
 * (two values per byte, bitsandbytes / GPTQ packing), bool 1 B. Aliases as PyTorch spells
 * them are accepted too.
 */
export type DType =
  | 'fp32'
  | 'fp16'
  | 'bf16'
  | 'fp8'
  | 'int8'
  | 'int4'
  | 'uint8'
  | 'int32'
  | 'int64'
  | 'fp64'
  | 'bool'
  | 'float32'
  | 'float16'
  | 'bfloat16'
  | 'float64'
  | 'float'
  | 'double'
  | 'half'
  | 'float8'
  | 'long'
  | 'int';

/**
 * Optimizers with their per-parameter state (PyTorch `torch/optim/*.py`, HF `Adafactor`,
 * bitsandbytes): `sgd` none (momentum buffer when `momentum` ≠ 0), `sgd-momentum` one
 * buffer, `adam` / `adamw` `exp_avg` + `exp_avg_sq` (+ `max_exp_avg_sq` with amsgrad),
 * `adagrad` `sum`, `rmsprop` `square_avg` (+ `momentum_buffer`, `grad_avg`), `lion` `exp_avg`,
 * `adafactor` (HF) factored row/column second moment for ≥ 2-D tensors, `torch-adafactor`,
 * `adam-8bit` / `adamw-8bit` uint8 moments with fp32 per-block scales.
 */
export type OptimizerName =
  | 'sgd'
  | 'sgd-momentum'
  | 'adam'
  | 'adamw'
  | 'adagrad'
  | 'rmsprop'
  | 'adafactor'
  | 'adafactor-hf'
  | 'torch-adafactor'
  | 'lion'
  | 'adam-8bit'
  | 'adamw-8bit';

/** An optimizer with its state-shaping options (defaults as in PyTorch). */
export interface OptimizerOptions {
  name: OptimizerName;
  /** SGD / RMSprop momentum; a `momentum_buffer` is kept when ≠ 0. Default 0. */
  momentum?: number;
  /** SGD Nesterov momentum (no extra state). Default false. */
  nesterov?: boolean;
  /** Adam / AdamW `amsgrad`: adds `max_exp_avg_sq`. Default false. */
  amsgrad?: boolean;
  /** RMSprop `centered`: adds `grad_avg`. Default false. */
  centered?: boolean;
  /** HF Adafactor `beta1`: adds `exp_avg` when set. Default none. */
  beta1?: number;
  /** bitsandbytes 8-bit: values per absmax block. Default 2048. */
  blockSize?: number;
  /** bitsandbytes 8-bit: tensors smaller than this keep fp32 states. Default 4096. */
  min8bitSize?: number;
  /** Weight decay as a float (changes only the pickled size of `param_groups`). */
  weightDecay?: number;
}

/** An optimizer: its name, or its name with options. */
export type Optimizer = OptimizerName | OptimizerOptions;

/**
 * Training precision: `fp32`; `amp-fp16` / `amp-bf16` (torch.autocast: fp32 weights, master
 * copy and states, 16-bit compute and activations); `bf16` (pure bf16 weights and states).
 */
export type Precision = 'fp32' | 'amp-fp16' | 'amp-bf16' | 'bf16' | 'fp16';

/**
 * Checkpoint placement strategies (see docs/placement.md for each source):
 * `none`; `manual` (segments you give); `every-k` (Megatron "uniform"); `block` (Megatron
 * "block": first N layers); `sequential` (PyTorch `checkpoint_sequential`); `sqrt` (Chen et
 * al. 2016); `chen-greedy` (Chen Alg. 3 under a budget); `revolve` (Griewank & Walther
 * 2000); `optimal-single-level` (exact DP over torch.utils.checkpoint plans); `optimal`
 * (Rotor, Beaumont et al. 2019, multi-level).
 */
export type PlacementStrategy =
  | 'none'
  | 'manual'
  | 'every-k'
  | 'block'
  | 'sequential'
  | 'sqrt'
  | 'chen-greedy'
  | 'revolve'
  | 'optimal-single-level'
  | 'optimal';

/**
 * Activation checkpointing inside a training step: `none`; `full` (every block, HF
 * `gradient_checkpointing=True`); `selective` (Megatron: the attention core, Korthikanti et
 * al. 2022); `every-k`, `sqrt`, `sequential`, `optimal` as in {@link PlacementStrategy}.
 * `auto` (accumulation planner only): try `none` and `full`.
 */
export type CheckpointingStrategy =
  'auto' | 'none' | 'full' | 'selective' | 'every-k' | 'sqrt' | 'sequential' | 'optimal';

/** Checkpoint file containers. */
export type CheckpointFormat = 'raw' | 'torch' | 'safetensors';

/** Stable error codes of {@link TrainmemError} (`code`). */
export type ErrorCode =
  | 'invalid_json'
  | 'unknown_function'
  | 'missing_field'
  | 'invalid_type'
  | 'out_of_range'
  | 'not_integer'
  | 'unknown_key'
  | 'unknown_value'
  | 'unknown_preset'
  | 'inconsistent'
  | 'infeasible'
  | 'too_large'
  | 'unsupported'
  | 'internal';

// ---------------------------------------------------------------------------------------
// Models (every request that takes `model` accepts the four forms)
// ---------------------------------------------------------------------------------------

/** A model known only by its parameter count (seed 003's input). */
export interface ModelByParams {
  /** Number of parameters (whole number ≥ 1; tied weights counted once). */
  params: number;
  /** Display name. */
  name?: string;
}
/** A model preset shipped with trainmem (`tm.presets()` lists them), e.g. `"llama-2-7b"`. */
export interface ModelByPreset {
  preset: string;
}
/**
 * A model from its HuggingFace `config.json`, pasted as HF writes it (snake_case keys such as
 * `hidden_size`, `num_attention_heads`, `model_type`).
 */
export interface ModelByConfig {
  config: HuggingFaceConfig;
  /**
   * HF class to build when the config's `architectures` does not say (e.g.
   * `"BertForSequenceClassification"`, `"BertModel"`, `"LlamaForCausalLM"`).
   */
  architecture?: string;
  /** Display name. */
  name?: string;
}
/** A HuggingFace `config.json` object (keys as HF writes them). */
export interface HuggingFaceConfig {
  model_type: string;
  [key: string]: unknown;
}
/** One parameter tensor as in `model.state_dict()`. */
export interface TensorInput {
  /** state_dict key, e.g. `"h.0.attn.c_attn.weight"`. */
  name: string;
  /** PyTorch shape (whole numbers; `[]` for a scalar). */
  shape: number[];
  /** Storage dtype. Default fp32. */
  dtype?: DType;
  /** Name of the tensor this one shares storage with (stored once, counted once). */
  tiedTo?: string;
  /** Whether the optimizer trains it. Default true. */
  trainable?: boolean;
}
/** One buffer (BatchNorm running statistics, position ids, …). */
export interface BufferInput {
  name: string;
  shape: number[];
  dtype?: DType;
  /** Non-persistent buffers are not in `state_dict()`. Default true. */
  persistent?: boolean;
}
/** A model as an explicit tensor list. */
export interface ModelByTensors {
  tensors: TensorInput[];
  buffers?: BufferInput[];
  /**
   * Qualified names of every module (`[n for n, _ in model.named_modules()]`, root `""`
   * included): `torch.save` pickles them, so the `torch` format size depends on them.
   */
  modules?: string[];
  /** Display name. Default "custom model". */
  name?: string;
}
/** Any of the four model forms. */
export type ModelInput = ModelByParams | ModelByPreset | ModelByConfig | ModelByTensors;

// ---------------------------------------------------------------------------------------
// checkpointSize
// ---------------------------------------------------------------------------------------

/** Request of {@link Trainmem.checkpointSize}. */
export interface CheckpointSizeRequest {
  model: ModelInput;
  /**
   * Optimizer whose state the checkpoint holds. Required unless `includeOptimizer` is false
   * (and for `safetensors`, which holds weights only).
   */
  optimizer?: Optimizer;
  /**
   * Dtype of the saved weights. Default: the model's tensor dtype — fp32 for a count, a
   * preset or a config (`from_pretrained` loads fp32 unless told; `torch_dtype` is not
   * applied), the listed `dtype` for a tensor list.
   */
  weightDtype?: DType;
  /**
   * Dtype of the optimizer states that follow the parameter. Default: the weight dtype
   * (PyTorch keeps states in the parameter dtype), fp32 when `masterWeights` is true
   * (mixed precision keeps states in fp32, seed 003). Fixed-dtype entries keep theirs
   * (Adam `step` fp32, 8-bit states uint8 with fp32 scales).
   */
  stateDtype?: DType;
  /** An fp32 master copy of the weights is saved too (mixed precision). Default false. */
  masterWeights?: boolean;
  /**
   * Container: `raw` tensor bytes only (default); `torch` the zip `torch.save` writes
   * (PyTorch 1.13 layout: 64-byte aligned records, pickle, zip directory); `safetensors`
   * (8-byte length + JSON header + data; weights only).
   */
  format?: CheckpointFormat;
  /**
   * Save the optimizer state_dict beside the model (`torch.save({'model': …, 'optimizer':
   * …})`). Default true; false for `safetensors`.
   */
  includeOptimizer?: boolean;
  /**
   * File name; `torch.save` writes it into every record name, so it changes the size.
   * Default `"checkpoint.pt"` (`"model.safetensors"` for safetensors).
   */
  fileName?: string;
  /**
   * `safetensors` only: split into shards of at most this many bytes, as
   * `huggingface_hub.split_torch_state_dict_into_shards` does (HF `max_shard_size`).
   * Default 0 (one file).
   */
  maxShardBytes?: number;
}

/** An integer of a result beyond 2^53, which a JavaScript number cannot hold exactly. */
export interface InexactNumber {
  /** Dotted path of the number in the result. */
  field: string;
  /** Its exact decimal digits. */
  exact: string;
}

/** Seed 003's simple formula: params × copies per parameter × bytes per copy. */
export interface SimpleCheckpointSize {
  totalBytes: number;
  breakdown: { weights: number; masterWeights: number; optimizerState: number };
  /** Copies per parameter: weights + optimizer states (+ master copy). */
  copies: number;
  bytesPerParam: number;
  formula: string;
  /** Adafactor: why the simple formula differs from the factored state. */
  note?: string;
}

/** Result of {@link Trainmem.checkpointSize}. All sizes in bytes. */
export interface CheckpointSizeResult {
  /** Size of the checkpoint: the file size for `torch` / `safetensors` (all shards). */
  totalBytes: number;
  format: CheckpointFormat;
  breakdown: CheckpointBreakdown;
  /** Bytes per optimizer state entry (`exp_avg`, `exp_avg_sq`, `step`, `momentum_buffer`, …). */
  optimizerStates: Record<string, number>;
  /** Elements per optimizer state entry. */
  optimizerStateElements: Record<string, number>;
  /** Parameters (tied weights once). */
  params: number;
  trainableParams: number;
  /** totalBytes / params. */
  bytesPerParam: number;
  /** Canonical optimizer name (absent without the optimizer). */
  optimizer?: string;
  /** Dtype the weights were saved in. */
  weightDtype: string;
  includeOptimizer: boolean;
  /** `torch`: pickle, records, alignment; `safetensors`: header, alignment, shards. */
  container?: {
    pickleBytes?: number;
    records?: number;
    headerBytes?: number;
    alignmentPaddingBytes: number;
    overheadBytes: number;
    payloadBytes?: number;
    shards?: number;
  };
  /** The files written (one per shard). */
  files?: Array<{ name: string; bytes: number; tensors?: number }>;
  /** The same checkpoint by seed 003's simple formula, to compare. */
  simple: SimpleCheckpointSize;
  /** totalBytes − simple.totalBytes. */
  differenceFromSimple: number;
  /** True when computed from the exact tensor list; false for a bare count. */
  exact: boolean;
  notes: string[];
  /** How totalBytes was computed. */
  formula: string;
  inexact?: InexactNumber[];
}
/** Bytes per category of a checkpoint. */
export interface CheckpointBreakdown {
  /** Model weights (tied tensors once). */
  weights: number;
  /** Persistent buffers (BatchNorm statistics, …) in their own dtype. */
  buffers: number;
  /** fp32 master copy (0 without `masterWeights`). */
  masterWeights: number;
  /** Optimizer state (moments, buffers, steps, scales). */
  optimizerState: number;
  /** Container overhead: pickle, alignment, headers, zip directory (0 for `raw`). */
  container: number;
}

// ---------------------------------------------------------------------------------------
// describeModel
// ---------------------------------------------------------------------------------------

/** Request of {@link Trainmem.describeModel}. */
export interface DescribeModelRequest {
  model: ModelInput;
}
/** One parameter tensor of a described model, in `state_dict()` order. */
export interface TensorDescription {
  /** state_dict key, e.g. `"h.0.attn.c_attn.weight"`. */
  name: string;
  /** PyTorch shape. */
  shape: number[];
  /** Storage dtype name (`"fp32"`, `"bf16"`, …). */
  dtype: string;
  /** Elements (product of the shape). */
  numel: number;
  /** The tensor whose storage this one shares (tied weights: stored and counted once). */
  tiedTo?: string;
  /** Present (false) only for frozen tensors. */
  trainable?: false;
}
/** One buffer of a described model. */
export interface BufferDescription {
  name: string;
  shape: number[];
  dtype: string;
  numel: number;
  /** Non-persistent buffers are not in `state_dict()` (not saved). */
  persistent: boolean;
}
/**
 * Result of {@link Trainmem.describeModel}. Architecture fields are 0 / "" when unknown (a
 * model given only as a parameter count or a tensor list).
 */
export interface DescribeModelResult {
  /** Which form the model came from. */
  source: 'params' | 'preset' | 'config' | 'tensors';
  /** Preset id, for presets. */
  presetId?: string;
  /** Display name. */
  name: string;
  /** Distinct parameters (tied weights counted once). */
  params: number;
  /** Parameters the optimizer trains. */
  trainableParams: number;
  /** The parameter count published for the preset (model card / model index). */
  publishedParams?: number;
  /** Where the preset's numbers come from. */
  sourceNote?: string;
  /** HF class built (e.g. `"LlamaForCausalLM"`). */
  architecture?: string;
  tensors: TensorDescription[];
  /** Tensors with their own storage (tied ones excluded). */
  storedTensors: number;
  buffers: BufferDescription[];
  /** HF `model_type` (`"gpt2"`, `"bert"`, `"llama"`, …). */
  modelType: string;
  /** Transformer blocks (decoder blocks for encoder-decoder models). */
  layers: number;
  /** d_model. */
  hidden: number;
  /** Attention heads. */
  heads: number;
  /** Key/value heads (grouped-query attention); equals `heads` without GQA. */
  kvHeads: number;
  /** Dimension per head. */
  headDim: number;
  /** MLP inner size (per expert for mixture-of-experts). */
  intermediate: number;
  /** Vocabulary size. */
  vocab: number;
  /** Maximum positions (0: unlimited, rotary / relative). */
  maxPositions: number;
  /** Experts per layer (0: dense). */
  numExperts: number;
  /** Experts each token is routed to. */
  expertsPerToken: number;
  /** SwiGLU / GeGLU MLP (three matrices). */
  gatedMlp: boolean;
  /** Activation function (`"gelu"`, `"gelu_new"`, `"silu"`, …). */
  activation: string;
  /** `"layernorm"` or `"rmsnorm"`. */
  norm: string;
  /** Output embedding tied to the input embedding. */
  tiedEmbeddings: boolean;
  /** BERT-like encoder (no causal mask). */
  encoderOnly: boolean;
  /** Encoder blocks of encoder-decoder models (T5). */
  encoderLayers: number;
  /** Classification labels of a sequence-classification head (0: none). */
  numLabels: number;
  /** Hidden dropout probability (masks are saved in training when > 0). */
  hiddenDropout: number;
  /** Attention dropout probability. */
  attentionDropout: number;
  /** Modules (`named_modules()`), when known; 0 otherwise. */
  modules: number;
  inexact?: InexactNumber[];
}

// ---------------------------------------------------------------------------------------
// peakMemory
// ---------------------------------------------------------------------------------------

/** Request of {@link Trainmem.peakMemory}. */
export interface PeakMemoryRequest {
  model: ModelInput;
  /** Samples per micro-step (per GPU), whole number ≥ 1. */
  microBatch: number;
  /** Tokens per sample, whole number ≥ 1 (at most the model's positions). */
  seqLen: number;
  /** Default fp32. */
  precision?: Precision;
  /** Default adamw. */
  optimizer?: Optimizer;
  /** Activation checkpointing. Default none. */
  checkpointing?: CheckpointingStrategy;
  /** Gradients persist across micro-steps. Default 1. */
  gradientAccumulationSteps?: number;
  /** DeepSpeed ZeRO stage 0–3. Default 0. */
  zeroStage?: 0 | 1 | 2 | 3;
  /** Data-parallel ranks sharding ZeRO state. Default 1. */
  dataParallel?: number;
  /** Megatron tensor parallelism. Default 1. */
  tensorParallel?: number;
  /** GPU preset id (`tm.presets()`), e.g. `"a100-80gb"`. */
  gpu?: string;
  /** GPU memory in bytes (instead of, or overriding, the preset's). */
  gpuMemoryBytes?: number;
  /** Memory model of the runtime. Default `pytorch-cuda`. */
  runtime?: 'pytorch-cuda' | 'pytorch-cpu';
  [option: string]: unknown;
}
/** Result of {@link Trainmem.peakMemory}. Sizes in bytes. */
export interface PeakMemoryResult {
  /** Highest memory of the step. */
  peakBytes: number;
  /** Where the peak happens (forward, backward, optimizer step). */
  peakPhase: string;
  breakdown: {
    weights: number;
    masterWeights: number;
    gradients: number;
    optimizerState: number;
    activations: number;
    temporaries: number;
    runtime: number;
    [category: string]: number;
  };
  /** Memory over the step, for a chart. */
  timeline: Array<{ phase: string; bytes: number; [extra: string]: unknown }>;
  /** Whether the peak fits the GPU (when one was given). */
  fits?: boolean;
  /** GPU memory minus the peak (negative: short by that much). */
  headroomBytes?: number;
  /** The largest micro-batch that fits the GPU. */
  maxMicroBatch?: number;
  [extra: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// accumulation
// ---------------------------------------------------------------------------------------

/** Forward mode of {@link Trainmem.accumulation}: the batch arithmetic of a given setup. */
export interface AccumulationRequest {
  /** Samples per micro-step per GPU, whole number ≥ 1. */
  microBatch: number;
  /** Micro-steps per optimizer step (`gradient_accumulation_steps`), whole number ≥ 1. */
  accumulationSteps: number;
  /** Data-parallel ranks. Default 1. */
  dataParallel?: number;
  /** Tokens per sample: adds tokensPerStep. */
  seqLen?: number;
  /** Samples in the dataset: adds optimizer steps per epoch. */
  datasetSize?: number;
}
/** Planner mode of {@link Trainmem.accumulation}: every split of a target batch that fits. */
export interface AccumulationPlanRequest {
  /** Global batch (samples per optimizer step, all ranks). */
  targetGlobalBatch: number;
  model: ModelInput;
  /** Tokens per sample. */
  seqLen: number;
  /** Default fp32. */
  precision?: Precision;
  /** Default adamw. */
  optimizer?: Optimizer;
  /** Strategies to try. Default `auto` (none and full). */
  checkpointing?: CheckpointingStrategy;
  /** Data-parallel ranks. Default 1. */
  dataParallel?: number;
  /** GPU preset id. One of `gpu` or `gpuMemoryBytes` is needed. */
  gpu?: string;
  /** GPU memory in bytes. */
  gpuMemoryBytes?: number;
  /** GPU dense peak, TFLOP/s (needed without a preset). */
  gpuPeakTflops?: number;
  /** GPU memory bandwidth, GB/s (10^9 B/s). */
  gpuMemoryBandwidthGBps?: number;
  /** Interconnect bandwidth per GPU, GB/s, for the gradient all-reduce. Default 0 (not modelled). */
  interconnectGBps?: number;
  /** Fraction of peak throughput reached at large micro-batches. Default 0.5. */
  utilization?: number;
  /** Fixed cost per block and micro-step, seconds. Default 0.00089. */
  overheadPerLayerSeconds?: number;
  /** Micro-batch of the "accumulation" row of the comparison. Default 1 (seed 000). */
  compareMicroBatch?: number;
  /** Extra fields passed to every peak-memory computation. */
  peakMemory?: Partial<PeakMemoryRequest>;
}
/** Result of {@link Trainmem.accumulation} (forward mode fields, or the plans). */
export interface AccumulationResult {
  /** micro-batch × steps × data-parallel ranks (HF Trainer "Total train batch size"). */
  effectiveBatch?: number;
  /** effectiveBatch × seqLen. */
  tokensPerStep?: number;
  /** With datasetSize. */
  optimizerStepsPerEpoch?: number;
  [extra: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// placement
// ---------------------------------------------------------------------------------------

/** One layer of a chain. Costs in any time unit (FLOPs, ms); sizes in bytes. */
export interface ChainLayer {
  name?: string;
  /** Forward time; recomputation costs the same. */
  forwardCost: number;
  /** Backward time. */
  backwardCost: number;
  /** Bytes of the layer's output activation. */
  outputBytes: number;
  /** Bytes kept for the backward when run normally (output included). */
  savedBytes: number;
  /** Transient bytes during its forward. Default 0. */
  forwardTempBytes?: number;
  /** Transient bytes during its backward. Default 0. */
  backwardTempBytes?: number;
}
/** A chain of layers. */
export interface Chain {
  /** Bytes of the chain's input. */
  inputBytes: number;
  layers: ChainLayer[];
}
/** Request of {@link Trainmem.placement}. */
export interface PlacementRequest {
  /** The chain (or give `model`, `microBatch`, `seqLen` to derive one). */
  chain?: Chain;
  model?: ModelInput;
  microBatch?: number;
  seqLen?: number;
  /** Default none. */
  strategy?: PlacementStrategy;
  /** `manual`: checkpointed segments as inclusive 0-based [first, last] layer ranges. */
  checkpointed?: Array<[number, number]>;
  /** `every-k`: layers per checkpointed chunk; `block`: first k layers. */
  k?: number;
  /** `sequential`: segments (PyTorch `checkpoint_sequential`). */
  segments?: number;
  /** `revolve`: snapshots. */
  snapshots?: number;
  /** `chen-greedy`, `optimal-single-level`, `optimal`: activation budget in bytes. */
  budgetBytes?: number;
  /** `optimal`: budget discretisation. Default 500. */
  slots?: number;
  /** Return the memory–time Pareto frontier. Default false. */
  frontier?: boolean;
  [option: string]: unknown;
}
/** Result of {@link Trainmem.placement}. Bytes; costs in the request's time unit. */
export interface PlacementResult {
  /** Checkpointed segments, inclusive 0-based [first, last]. */
  checkpointed: Array<[number, number]>;
  /** Activation bytes held at the end of the forward pass. */
  storedBytes: number;
  /** Highest activation bytes over forward and backward. */
  peakActivationBytes: number;
  /** Extra forward work. */
  recomputeCost: number;
  /** forward + backward + recompute. */
  totalCost: number;
  /** recomputeCost / (forward + backward). */
  overheadFraction: number;
  [extra: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// presets
// ---------------------------------------------------------------------------------------

/** Request of {@link Trainmem.presets}. */
export interface PresetsRequest {
  [option: string]: unknown;
}
/** Result of {@link Trainmem.presets}: the preset data of this build. */
export interface PresetsResult {
  [kind: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------------------

/** Request and result types of every function, by name. */
export interface Functions {
  checkpointSize: [CheckpointSizeRequest, CheckpointSizeResult];
  describeModel: [DescribeModelRequest, DescribeModelResult];
  peakMemory: [PeakMemoryRequest, PeakMemoryResult];
  accumulation: [AccumulationRequest | AccumulationPlanRequest, AccumulationResult];
  placement: [PlacementRequest, PlacementResult];
  presets: [PresetsRequest, PresetsResult];
}
export type FunctionName = keyof Functions;

/** The loaded WebAssembly core. Every function is synchronous and throws {@link TrainmemError}. */
export interface Trainmem {
  /** Version of the core (equals the npm package version). */
  readonly version: string;
  /** Size of a checkpoint file: weights, master copy, optimizer state (seed 003). */
  checkpointSize(request: CheckpointSizeRequest): CheckpointSizeResult;
  /** Parameter tensors, buffers and architecture of a model. */
  describeModel(request: DescribeModelRequest): DescribeModelResult;
  /** Peak memory of one training step, with breakdown and timeline. */
  peakMemory(request: PeakMemoryRequest): PeakMemoryResult;
  /** Effective batch of an accumulation setup, or the plans that fit a target batch. */
  accumulation(request: AccumulationRequest | AccumulationPlanRequest): AccumulationResult;
  /** Which layers to checkpoint for a memory budget. */
  placement(request: PlacementRequest): PlacementResult;
  /** Presets (models, GPUs, examples) of this build. */
  presets(request?: PresetsRequest): PresetsResult;
  /** Any function by name (the CLI uses this). */
  call<K extends FunctionName>(name: K, request: Functions[K][0]): Functions[K][1];
}

/**
 * An invalid request. The same instance keeps working after it.
 * @example
 * try { tm.checkpointSize({ model: { params: -5 }, optimizer: 'adam' }) }
 * catch (e) { if (e instanceof TrainmemError) console.log(e.code, e.field) } // out_of_range model.params
 */
export declare class TrainmemError extends Error {
  constructor(code: ErrorCode | (string & {}), field: string, message: string);
  readonly name: 'TrainmemError';
  /** Stable error code. */
  readonly code: ErrorCode | (string & {});
  /** Dotted path of the offending input, e.g. `"model.params"`, `"chain.layers[3].savedBytes"`; `""` for the whole request. */
  readonly field: string;
}

/**
 * Loads the WebAssembly core (once; later calls return the same instance). Works in Node ≥ 18,
 * browsers, Web Workers and bundlers without configuration: the module is one file.
 */
export declare function load(): Promise<Trainmem>;

declare const trainmem: { load: typeof load; TrainmemError: typeof TrainmemError };
export default trainmem;
