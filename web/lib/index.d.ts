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
  | 'double'
  | 'float'
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
 * `adam-8bit` / `adamw-8bit` uint8 moments with fp32 per-block scales; `paged-adamw-8bit`
 * (bitsandbytes PagedAdamW8bit) the same state, its large tensors in CUDA managed memory:
 * outside torch.cuda's allocated and reserved bytes, inside what nvidia-smi shows.
 * torchao (`torchao/optim/adam.py`, `subclass_8bit.py` / `subclass_4bit.py` / `subclass_fp8.py`):
 * `torchao-adamw-8bit` uint8 codes + an fp32 scale per 256 values + a 256-entry qmap per state,
 * `torchao-adamw-4bit` two 4-bit codes per byte + an fp32 scale per 128 values,
 * `torchao-adamw-fp8` float8_e4m3fn codes + an fp32 scale per 256 values; a tensor under 4096
 * values, or whose size does not divide into blocks, keeps plain states in its own dtype.
 */
export type OptimizerName =
  | 'sgd'
  | 'sgd-momentum'
  | 'adam'
  | 'adamw'
  | 'adagrad'
  | 'rmsprop'
  | 'adafactor'
  | 'torch-adafactor'
  | 'lion'
  | 'adam-8bit'
  | 'adamw-8bit'
  | 'adafactor-hf'
  | 'paged-adamw-8bit'
  | 'torchao-adamw-8bit'
  | 'torchao-adamw-4bit'
  | 'torchao-adamw-fp8';

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
  /**
   * Values per quantisation block: bitsandbytes 8-bit absmax blocks (default 2048); torchao
   * scales (`block_size`: default 256, 128 for `torchao-adamw-4bit`, which needs it even).
   */
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
 * `gradient_checkpointing=True`); `attention-recompute` (Megatron-LM
 * `recompute_granularity="selective"`: only the attention core's s² tensors are recomputed,
 * Korthikanti et al. 2022 §5 — with SDPA/flash attention there are none, so it equals `none`);
 * `torchtitan-op` (torchtitan `activation_checkpoint.mode="selective"`,
 * `selective_ac_option="op"`: every block checkpointed, the outputs of its mm and SDPA ops kept
 * except every second mm — torchtitan/distributed/activation_checkpoint.py and
 * models/llama3/infra/parallelize.py `_op_sac_save_list`); `selective-op` (PyTorch ≥ 2.4
 * `create_selective_checkpoint_contexts` with a list of ops to save: give `saveOps`);
 * `selective-layer` (torchtitan `selective_ac_option="<k>"`: the blocks whose 1-based index is
 * a multiple of `k` are fully checkpointed); or any {@link PlacementStrategy}, applied to the
 * blocks by the placement engine. Op-level modes are modelled for Llama-family dense blocks
 * without tensor parallel, LoRA or compile. Plain `selective` is refused (`unknown_value`,
 * naming both meanings): it used to mean the Megatron mode.
 */
export type CheckpointingStrategy =
  | 'full'
  | 'attention-recompute'
  | 'selective-op'
  | 'torchtitan-op'
  | 'selective-layer'
  | PlacementStrategy;

/**
 * Ops a selective checkpointing policy can save (`saveOps`): `mm` (aten.mm: a linear without
 * bias), `sdpa` (the aten._scaled_dot_product_{flash,efficient,cudnn}_attention kernels: output
 * and fp32 logsumexp), `bmm` and `softmax` (eager attention's QKᵀ / PV and its fp32 softmax),
 * `silu` (the gated MLP's activation). Source: the ops of HF `LlamaDecoderLayer`, measured with
 * torch 1.13 (tools/measure_sac.py).
 */
export type SaveOp = 'mm' | 'sdpa' | 'bmm' | 'softmax' | 'silu';

/** FSDP's sharding strategies (torch.distributed.fsdp.ShardingStrategy): `fsdp.shardingStrategy`. */
export type FsdpShardingStrategy = 'FULL_SHARD' | 'SHARD_GRAD_OP' | 'HYBRID_SHARD' | 'NO_SHARD';

/** torchao float8 training recipes (Float8LinearRecipeName): `float8.recipe`. */
export type Float8Recipe = 'tensorwise' | 'rowwise' | 'rowwise_with_gw_hp';

/** How DeepSpeed ZeRO runs mixed precision: `zeroMixedPrecision`. */
export type ZeroMixedPrecision = 'model-dtype' | 'torch-autocast';

/** Checkpoint file containers. */
export type CheckpointFormat = 'raw' | 'torch' | 'safetensors';

/** Stable error codes of {@link TrainmemError} (`code`). */
export type ErrorCode =
  | 'invalid_json'
  | 'unknown_function'
  | 'missing_field'
  | 'invalid_type'
  | 'invalid_number'
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
// Models (every request that takes `model` accepts the five forms)
// ---------------------------------------------------------------------------------------

/** A model known only by its parameter count (the input of the rule of thumb). */
export interface ModelByParams {
  /** Number of parameters (whole number ≥ 1; tied weights counted once). */
  params: number;
  /** Display name. */
  name?: string;
  /**
   * With `hidden` and `heads`: a Llama-style decoder of that size stands in for activations
   * (results say `approximate: true`). Without them peak memory is a lower bound (`lowerBound`).
   */
  layers?: number;
  hidden?: number;
  heads?: number;
  /** Default: derived from `params` (an embedding and an untied head). */
  vocab?: number;
  /** Default 8 × hidden / 3 (a gated MLP). */
  intermediate?: number;
}
/** A model preset shipped with trainmem (`tm.presets()` lists them), e.g. `"llama-2-7b"`. */
export interface ModelByPreset {
  preset: string;
}
/**
 * A model from its HuggingFace `config.json`, pasted as HF writes it (snake_case keys such as
 * `hidden_size`, `num_attention_heads`, `model_type`). Give the file's text as a string to have
 * the core check it strictly (a duplicate key is an error naming `model.config.<key>`).
 */
export interface ModelByConfig {
  config: HuggingFaceConfig | DiffusersConfig | TorchTransformerConfig | string;
  /**
   * HF class to build when the config's `architectures` does not say (e.g.
   * `"BertForSequenceClassification"`, `"BertModel"`, `"LlamaForCausalLM"`).
   */
  architecture?: string;
  /** Display name. */
  name?: string;
}
/**
 * A HuggingFace `config.json` object (keys as HF writes them). `model_type` with an exact
 * tensor list (from transformers' `modeling_*.py`): `gpt2`, `bert`, `llama`, `mistral`,
 * `mixtral`, `qwen2`, `qwen3`, `qwen3_moe`, `gemma`, `gemma2`, `gemma3_text`, `phi3`,
 * `deepseek_v3`, `gpt_neox`, `t5`, `mt5`, and with their own activation recipes `falcon`
 * (multi-query and `new_decoder_architecture`), `phi` (phi-1, 1.5, 2: partial rotary, attention
 * and MLP side by side), `gptj`, `starcoder2`, `olmo`, `olmo2` (docs/models.md). A
 * `quantization_config` of `quant_method` `gptq` or `awq` (GEMM) packs the blocks' linears
 * (AutoGPTQ's QuantLinear, AutoAWQ's WQLinear_GEMM): peakMemory then needs `lora`, and the
 * weights line holds the packed bytes. Any other `model_type` needs `hidden_size`, `num_hidden_layers`,
 * `num_attention_heads`, `intermediate_size`, `vocab_size` (optional `num_key_value_heads`,
 * `head_dim`, `tie_word_embeddings`) and is built as a generic Llama-style decoder, marked
 * approximate in the result's `assumptions`.
 */
export interface HuggingFaceConfig {
  model_type: string;
  [key: string]: unknown;
}
/**
 * A diffusers `config.json` (its `_class_name`): `UNet2DConditionModel` (SD 1.x, 2.x, SDXL with
 * its added conditioning), `SD3Transformer2DModel` (SD3, SD3.5 with dual attention and
 * qk-norm), `FluxTransformer2DModel`, `DiTTransformer2DModel`, `PixArtTransformer2DModel`, and
 * `AutoencoderKL` (a frozen part: describeModel, checkpointSize and `pipeline.vae`, not trained).
 * Exact tensor lists (diffusers@58eb52c0); the activations follow diffusers' modules op by op
 * with the UNet's skip connections carried across the chain (docs/diffusion.md).
 */
export interface DiffusersConfig {
  _class_name: string;
  [key: string]: unknown;
}
/**
 * `torch.nn.Transformer` from its constructor's arguments (`d_model`, `nhead`,
 * `num_encoder_layers`, `num_decoder_layers`, `dim_feedforward`, `dropout`, `activation`
 * `"relu"` | `"gelu"`, `layer_norm_eps`, `bias`; `norm_first` is refused in training), with
 * `model_type: "nn.Transformer"`. It has no embeddings or head: peakMemory's `seqLen` is the
 * source length, `targetLen` the target's; the loss is a stand-in (the mean square of the output).
 */
export interface TorchTransformerConfig {
  model_type: 'nn.Transformer';
  d_model?: number;
  nhead?: number;
  num_encoder_layers?: number;
  num_decoder_layers?: number;
  dim_feedforward?: number;
  dropout?: number;
  activation?: 'relu' | 'gelu';
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
/**
 * A model read from a trace of its own training step, written by the Python tracer
 * (`python3 -m trainmem_trace MODULE:CALLABLE --input … --out FILE`, package `trainmem_trace`
 * in `python/`; format: docs/trace.md). Give the file's text as a string to have the core check
 * it as strictly as a request. Every calculator reads it: its parameters and buffers are the
 * model's, its chain layers the module calls the tracer found, and its activations the step's
 * own storages, evaluated at the request's `microBatch` (and `seqLen` when the trace has a
 * sequence length: then `seqLen` defaults to the traced one; a trace without one refuses
 * `seqLen`). A traced model answers `fp32`, `bf16` and `fp16`; `amp-*`, `compile`, `float8`,
 * tensor parallelism, other losses and the op-level checkpointing modes are errors naming their
 * field. A malformed file is an error naming the field inside it, e.g.
 * `model.trace.tensors[12].free`.
 */
export interface ModelByTrace {
  trace: TraceFile | string;
}
/**
 * A trace file (format `trainmem-trace`, version 1) as the tracer writes it: the fields most
 * callers read are typed here; docs/trace.md describes every field.
 */
export interface TraceFile {
  format: 'trainmem-trace';
  version: 1;
  /** The model's name (the tracer's `--name`, else its MODULE:CALLABLE). */
  name?: string;
  /** The torch version the step ran on. */
  torch?: string;
  /** Where the step ran: `meta` (no memory; ops without a meta kernel ran on CPU) or `cpu`. */
  device: 'meta' | 'cpu' | 'cuda';
  /** The traced batch, and the sequence length when an input has one. */
  sizes: { batch: number; seq?: number; probes?: { batch: number[]; seq?: number[] } };
  /** Chain layers: forward op ranges [start, end), the tensor each hands on. */
  layers: Array<{ name: string; start: number; end: number; output: number }>;
  /** What the tracer says about this trace (ops that fell back to CPU, …). */
  notes?: string[];
  [key: string]: unknown;
}
/** Any of the five model forms. */
export type ModelInput =
  ModelByParams | ModelByPreset | ModelByConfig | ModelByTensors | ModelByTrace;

/** A text encoder of a diffusion pipeline. */
export interface TextEncoderInput {
  /**
   * `"clip-vit-large-patch14"` (123,060,480), `"clip-vit-h-14"` (SD 2.x, 340,387,840),
   * `"clip-vit-bigG-14"` (SDXL's second, with projection, 694,659,840), `"t5-v1_1-xxl-encoder"`
   * (4,762,310,656). Or give `params`.
   */
  preset?: string;
  /** Its parameter count when it is no preset (no encode cost is then counted). */
  params?: number;
  /** Default: the precision's weight dtype (the scripts' `weight_dtype`). */
  dtype?: 'fp32' | 'bf16' | 'fp16';
  /** Tokens it encodes (CLIP 77; T5: the denoiser's text tokens, SD3's less CLIP's 77). */
  tokens?: number;
  /**
   * `"lora"` (or `true`): LoRA on its q, k, v and out_proj, as `--train_text_encoder` of the
   * DreamBooth LoRA scripts (CLIP presets only). Default `"none"`: frozen.
   */
  train?: 'none' | 'lora' | boolean;
  /** LoRA rank of this encoder. Default the request's `lora.rank`, else 4. */
  rank?: number;
}

/**
 * A diffusion training pipeline (peakMemory and accumulation): the network that trains
 * (`denoiser`: full, or LoRA with the request's `lora`) and what stays frozen on the device
 * beside it. Defaults follow diffusers' `examples/dreambooth/train_dreambooth_lora*.py`: the VAE
 * in fp32 for SDXL and SD3, in the weight dtype otherwise; SDXL, SD3 and Flux precompute the
 * prompt embeddings when no text encoder trains, and SD3 and Flux then free the text encoders;
 * the text encoders of the denoiser's pipeline (SD 1.x: CLIP-L; 2.x: OpenCLIP-H; SDXL: CLIP-L
 * and bigG; SD3: both and T5-XXL; Flux: CLIP-L and T5-XXL; PixArt: T5-XXL). `microBatch` counts
 * instance images; `maxMicroBatch` too.
 */
export interface DiffusionPipeline {
  /** The network that trains: a UNet2DConditionModel, SD3, Flux, DiT or PixArt preset or config. */
  denoiser: ModelByPreset | ModelByConfig;
  /** The AutoencoderKL (default: sd-vae, or flux-vae for SD3 and Flux); `false`: none on the device (cached latents). */
  vae?: ((ModelByPreset | ModelByConfig) & { dtype?: 'fp32' | 'bf16' | 'fp16' }) | false;
  /** The text encoders (default: the pipeline's); `[]` for none on the device. */
  textEncoders?: TextEncoderInput[];
  /**
   * `latents`: `--cache_latents` (encoded once, the VAE deleted). `textEmbeddings`: prompt
   * embeddings computed once (no per-step encode). Defaults as the scripts.
   */
  precomputed?: { latents?: boolean; textEmbeddings?: boolean };
  /** DreamBooth's `--with_prior_preservation`: each step runs microBatch instance and microBatch class images. */
  priorPreservation?: boolean;
}
/** `model` of peakMemory / accumulation as a diffusion pipeline. */
export interface ModelByPipeline {
  pipeline: DiffusionPipeline;
}

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
   * (mixed precision keeps states in fp32). Fixed-dtype entries keep theirs
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

/**
 * One clause of a sentence the core wrote into a result: its code in the core's message
 * catalog (`cpp/data/messages.json`) and the values of its `{name}` parameters, so that a page
 * can show the sentence in its own language. A parameter given as a list is itself clauses of
 * the catalog, rendered in place.
 */
export interface MessagePart {
  code: string;
  /** A value as the core wrote it, or a sentence of its own as clauses of the catalog (an
   * error inside a pasted file, a phrase the sentence takes). */
  params: Record<string, string | MessagePart[]>;
}
/**
 * The sentences of a result as codes, keyed by their path in the result
 * (`"breakdown.weights.source"`, `"assumptions[0]"`): one part per clause (clauses are joined
 * by "; "). Only sentences the catalog spells are listed; names and user input are not.
 */
export type MessageCodes = Record<string, MessagePart[]>;

/** The rule of thumb: params × copies per parameter × bytes per copy. */
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
  /** The same checkpoint by the rule of thumb (params × copies × bytes per copy), to compare. */
  simple: SimpleCheckpointSize;
  /** totalBytes − simple.totalBytes. */
  differenceFromSimple: number;
  /**
   * True when computed from the exact tensor list; false for a bare count, and for the torch
   * format of a tensor list given without `modules` (its pickle lists every module).
   */
  exact: boolean;
  notes: string[];
  /** How totalBytes was computed. */
  formula: string;
  inexact?: InexactNumber[];
  messages?: MessageCodes;
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
/** What describeModel says of a traced model's trace (`model.trace`). */
export interface TraceDescription {
  /** The torch version that traced it. */
  torch: string;
  /** The device it was traced on. */
  device: string;
  /** The batch and sequence length of the traced run. */
  tracedBatch: number;
  tracedSeqLen?: number;
  /** Operations recorded. */
  ops: number;
  /** The chain's layers: module name, parameters and operations of each. */
  layers: Array<{ name: string; params: number; ops: number }>;
  /** Tensor sizes the tracer's probes contradicted (not polynomial in batch and length). */
  inexactSizes: number;
  /** What the tracer says about this trace. */
  notes: string[];
}

export interface DescribeModelResult {
  /** Which form the model came from. */
  source: 'params' | 'preset' | 'config' | 'tensors' | 'trace';
  /** A traced model's trace. */
  trace?: TraceDescription;
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
  /**
   * HF `model_type`. Exact recipes (transformers' modeling files): `gpt2`, `bert`, `llama`,
   * `mistral`, `mixtral`, `qwen2`, `qwen3`, `qwen3_moe`, `gemma2`, `gemma3_text`, `phi3`,
   * `deepseek_v3`, `gpt_neox`, `t5`, `mt5`; any other type with the standard decoder fields is
   * built as a generic Llama-style decoder (see `assumptions`).
   */
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
  /** Shared experts every token uses besides its routed ones (DeepSeek `n_shared_experts`; 0: none). */
  sharedExperts: number;
  /**
   * What the description assumes; e.g. a `model_type` without an exact recipe is built as a
   * generic Llama-style decoder, and says so here (and in peakMemory's `assumptions`,
   * checkpointSize's `notes`). Empty for the exact recipes.
   */
  assumptions: string[];
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

// ---------------------------------------------------------------------------------------
// peakMemory
// ---------------------------------------------------------------------------------------

/** A plain MLP (a chain of Linear layers) instead of a model, e.g. for CPU calibration. */
export interface MlpInput {
  /** Layer widths, input first: `[784, 1024, 10]` is two Linear layers. At least 2. */
  sizes: number[];
  /** Activation between layers. Default `relu`. */
  activation?: 'relu' | 'gelu' | 'none';
  /** Linear layers have a bias. Default true. */
  bias?: boolean;
}

/** Activation checkpointing with its strategy options (the placement engine's). */
export interface CheckpointingOptions {
  strategy: CheckpointingStrategy;
  /**
   * `every-k`: blocks per checkpointed chunk (default 1); `block`: the first k blocks;
   * `selective-layer`: every k-th block (default 2, torchtitan's `selective_ac_option`).
   */
  k?: number;
  /**
   * `selective-op` (required): the ops whose outputs each checkpointed block keeps
   * (PyTorch `create_selective_checkpoint_contexts` with `CheckpointPolicy.MUST_SAVE` for
   * them, `PREFER_RECOMPUTE` for the rest). An op the blocks never call is named in
   * `assumptions`.
   */
  saveOps?: SaveOp[];
  /**
   * `selective-op`: recompute every second `mm` of a block although `mm` is listed
   * (torchtitan's rule, `_get_custom_policy`). Default false.
   */
  everyOtherMm?: boolean;
  /** `sequential`: segments (PyTorch `checkpoint_sequential`). */
  segments?: number;
  /** `revolve`: snapshots. */
  snapshots?: number;
  /** `optimal` / `optimal-single-level` / `chen-greedy`: activation budget, bytes. */
  budgetBytes?: number;
  /** `optimal`: budget discretisation. Default 500. */
  slots?: number;
  /** `manual`: checkpointed blocks as inclusive 0-based [first, last] ranges. */
  checkpointed?: Array<[number, number]>;
}

/** Request of {@link Trainmem.peakMemory}. Every default is documented in docs/peak-memory.md. */
export interface PeakMemoryRequest {
  /** The model (any form, or a diffusion pipeline). Give `model` or `mlp`. */
  model?: ModelInput | ModelByPipeline;
  /** A plain MLP instead of `model`. */
  mlp?: MlpInput;
  /** Samples per micro-step per GPU, whole number from 1 to 16,777,216 (2^24). */
  microBatch: number;
  /**
   * Tokens per sample, whole number from 1 to 16,777,216 (2^24), at most the model's positions
   * (not for `mlp`). For an encoder-decoder model (T5, mT5) the encoder's input length
   * (`input_ids`).
   */
  seqLen?: number;
  /**
   * Vision networks (torchvision presets, HF vision configs) with a classifier: its outputs;
   * default the config's (1000 for torchvision). Their image is `imageSize` (pixels per side,
   * default the config's `image_size`, 224 for torchvision); an image network refuses `seqLen`.
   * Whisper and wav2vec2 read `seqLen` (mel frames: exactly 3000; audio samples) and `targetLen`
   * (decoder tokens; CTC labels).
   */
  numClasses?: number;
  /**
   * Encoder-decoder models (T5, mT5) only: the decoder's length (`labels`; the decoder reads them
   * shifted right), whole number ≥ 1; default `seqLen`. T5ForConditionalGeneration takes
   * `input_ids` and `labels` of their own lengths (transformers modeling_t5.py): activations,
   * cross-attention scores (targetLen × seqLen), the loss and the time model use both. Any other
   * model: an error naming `targetLen`.
   */
  targetLen?: number;
  /**
   * Diffusion networks only: the image in pixels, a side or `[height, width]` (a multiple of
   * the VAE's factor 8 times the UNet's downsampling or the transformer's 2×2 patch); default
   * the config's `sample_size` × 8. Latents are 1/8 of it; SD3, DiT, PixArt and Flux tokens
   * 1/16 per side. For these networks `seqLen` is the text tokens (default 77, SD3 333, Flux
   * 512, PixArt 120; DiT has none).
   */
  imageSize?: number | [number, number];
  /** Default fp32. */
  precision?: Precision;
  /** Default adamw. */
  optimizer?: Optimizer;
  /** Activation checkpointing: a strategy name or options. Default none. */
  checkpointing?: CheckpointingStrategy | CheckpointingOptions;
  /** Micro-steps per optimizer step: gradients persist across them, 1 to 16,777,216 (2^24). Default 1. */
  gradientAccumulationSteps?: number;
  /** DeepSpeed ZeRO stage 0–3. Default 0. */
  zeroStage?: 0 | 1 | 2 | 3;
  /** Data-parallel ranks sharding ZeRO state, 1 to 1,048,576 (2^20). Default 1. */
  dataParallel?: number;
  /**
   * How DeepSpeed runs `amp-bf16` / `amp-fp16` under ZeRO (needs zeroStage ≥ 1 and an amp
   * precision). `model-dtype` (default): its `bf16` / `fp16` config section converts the model,
   * so parameters, gradients and activations are 16-bit and the optimizer partition holds fp32
   * master weights. `torch-autocast`: its `torch_autocast` section keeps every parameter fp32
   * (`deepspeed/runtime/torch_autocast.py`) and computes under torch.autocast.
   */
  zeroMixedPrecision?: ZeroMixedPrecision;
  /**
   * ZeRO-3 as DeepSpeed's parameter coordinator fetches (needs zeroStage 3; defaults from
   * `deepspeed/runtime/zero/config.py`). Without it, the gathered parameters are DeepSpeed's
   * estimator: the largest layer twice.
   */
  zero3?: {
    /** `stage3_prefetch_bucket_size`: elements fetched ahead of use. Default 5e7. */
    prefetchBucketSize?: number;
    /** `stage3_max_live_parameters`: gathered elements before prefetching stops. Default 1e9. */
    maxLiveParameters?: number;
    /** `stage3_max_reuse_distance`: a layer used again within this many fetched elements stays gathered. Default 1e9. */
    maxReuseDistance?: number;
    /** `stage3_param_persistence_threshold`: tensors this small stay whole on every rank. Default 1e5. */
    paramPersistenceThreshold?: number;
  };
  /**
   * DeepSpeed's `zero_optimization` gradient buckets (needs zeroStage ≥ 1; defaults from
   * `deepspeed/runtime/zero/config.py`). With `contiguousGradients` each gradient is copied into
   * a bucket of `reduceBucketSize` elements in the trainable parameters' dtype: ZeRO-1/2 allocate
   * it at each backward's first gradient and release it at the backward's end (two with
   * `overlapComm`); ZeRO-3 allocates one when the optimizer is set up and holds it. In the
   * breakdown: `gradients.parts.reduceBuckets`.
   */
  zero?: {
    /** `reduce_bucket_size` in elements. Default 5e8 (1 GB in bf16). */
    reduceBucketSize?: number;
    /** `allgather_bucket_size` (ZeRO-1/2 only): no memory of its own (the updated partitions are all-gathered into the parameters in place). Default 5e8. */
    allgatherBucketSize?: number;
    /** `overlap_comm`: ZeRO-1/2 keep two buckets. Default: true for stage 3, false otherwise. */
    overlapComm?: boolean;
    /** `contiguous_gradients`. Default true; false: no bucket. */
    contiguousGradients?: boolean;
  };
  /** ZeRO-Offload: optimizer state (needs zeroStage ≥ 1) / parameters (zeroStage 3) in CPU memory. */
  offload?: { optimizer?: boolean; params?: boolean };
  /** Megatron tensor parallelism (must divide the heads). Default 1. */
  tensorParallel?: number;
  /** Megatron sequence parallelism (needs tensorParallel > 1). Default false. */
  sequenceParallel?: boolean;
  /**
   * Pipeline-parallel stages. Default 1. With more, every stage is evaluated (its layers, the
   * activations of its in-flight micro-batches, the activation it receives) and the result's
   * figures are the stage that needs the most memory; `pipelineParallel` lists every stage.
   * The micro-batches of a step are `gradientAccumulationSteps`.
   */
  pipelineParallel?: number;
  /** The pipeline schedule (needs pipelineParallel > 1). Default '1f1b'. */
  schedule?: PipelineSchedule;
  /** Interleaved 1F1B: model chunks per stage (needs schedule 'interleaved-1f1b'). Default 2. */
  virtualStages?: number;
  /** An uneven split: transformer blocks per model chunk, in pipeline order (sums to the blocks). */
  stageBlocks?: number[];
  /**
   * Context parallelism: ranks that share each sequence with ring attention (torch
   * `context_parallel`, Megatron-CP). Default 1. Decoder-only language models with attention
   * 'sdpa'; `seqLen` is the whole sequence and must be a multiple of 2 × contextParallel
   * (zig-zag) or of contextParallel. A rank keeps the activations of seqLen / contextParallel
   * tokens, plus ring attention's exchanged keys and values and fp32 merge and gradient buffers
   * per block; parameters are replicated over these ranks, and gradients are reduced and
   * ZeRO / FSDP shards split over dataParallel × contextParallel ranks.
   */
  contextParallel?: number;
  /** How ring attention runs (needs contextParallel > 1). */
  contextParallelism?: {
    /** 'zigzag' (default): 2 × cp chunks, rank r holds chunks r and 2cp − 1 − r; 'none'. */
    loadBalance?: 'zigzag' | 'none';
    /**
     * How keys and values travel: 'allgather' (torchtitan's default: every rank's K/V gathered
     * once per block) or 'alltoall' (one rank's K/V received per ring step).
     */
    rotate?: 'allgather' | 'alltoall';
  };
  /**
   * Expert parallelism: ranks that share the routed experts of a mixture-of-experts model
   * (Megatron-Core `expert_model_parallel_size`). Default 1. Must divide the experts and
   * dataParallel × contextParallel × tensorParallel. A rank holds experts / expertParallel of
   * each MoE layer (the router and shared experts whole) and the dispatch and combine
   * all-to-all buffers; not modelled with zeroStage, fsdp or lora yet.
   */
  expertParallel?: number;
  /** Ranks that split each expert's MLP (Megatron-Core `expert_tensor_parallel_size`). Default 1. */
  expertTensorParallel?: number;
  /** The routing assumed for expert parallelism (a stated assumption in the result). */
  expertParallelism?: {
    /**
     * Tokens an expert takes at most, as a multiple of its even share (padded to capacity);
     * null or absent: dropless routing.
     */
    capacityFactor?: number | null;
    /**
     * Dropless: the busiest rank's routed tokens over the mean (≥ 1). Default 1 (even routing).
     */
    routingImbalance?: number;
  };
  /** LoRA / QLoRA: frozen base, trainable adapters (needs an architecture). */
  lora?: {
    /** Adapter rank. Default 8. */
    rank?: number;
    /** 4-bit NF4 base weights (QLoRA). Default false. */
    qlora?: boolean;
    /** LoRA dropout probability. Default 0.05. */
    dropout?: number;
    /**
     * Linear layers adapted, as PEFT's `target_modules` (peft `tuners_utils.py`
     * `check_target_module_exists`): a module is adapted when its name equals an entry or ends
     * with `"." + entry`, in every block (T5's `q`, `v` also match the decoder's cross-attention).
     * `"all-linear"` (PEFT's `INCLUDE_LINEAR_LAYERS_SHORTHAND`, `_maybe_include_all_linear_layers`):
     * every linear except the output head. Names of the newer families: `qkv_proj`,
     * `gate_up_proj` (Phi-3), `q_a_proj`, `q_b_proj`, `kv_a_proj_with_mqa`, `kv_b_proj`
     * (DeepSeek MLA), and `experts` (trainmem's name for every linear of the routed experts).
     * Default: PEFT's `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING` entry for the model
     * type (an error where PEFT has none, e.g. phi3, qwen3_moe, deepseek_v3); for diffusion
     * networks the DreamBooth LoRA scripts' (diffusers examples/dreambooth): `to_k`, `to_q`,
     * `to_v`, `to_out.0` (UNet, DiT, PixArt), SD3's `attn.*` projections with the context
     * stream's `add_*_proj` and `to_add_out`, Flux's those and both feed-forwards.
     */
    targetModules?: string[] | 'all-linear';
    /**
     * The dtype the frozen base is loaded in (`from_pretrained(torch_dtype=…)`; QLoRA: the
     * weights it does not quantise). PEFT users load it in bf16. Default: the precision's
     * parameter dtype (fp32 for `fp32` and `amp-*`).
     */
    baseDtype?: 'fp32' | 'bf16' | 'fp16';
    /**
     * PEFT `LoraConfig(autocast_adapter_dtype=True)`: the adapters are fp32 whatever the base,
     * and so are their gradients and optimizer state. false: the base's dtype (torchtune's
     * LoRA, made under the recipe's default dtype). Default true.
     */
    autocastAdapterDtype?: boolean;
  };
  /**
   * DDP with `torch.distributed.optim.ZeroRedundancyOptimizer`: each rank keeps the optimizer
   * state of the parameters assigned to it (largest first, each to the least loaded rank); the
   * rank holding the most binds. Needs dataParallel ≥ 2, not with zeroStage or fsdp. Default false.
   */
  zeroRedundancyOptimizer?: boolean;
  /** Attention: `eager` keeps the s×s probabilities; `sdpa` / `flash` do not. Default sdpa (eager on pytorch-cpu). */
  attention?: 'eager' | 'sdpa' | 'flash';
  /**
   * Runtime profile: one per PyTorch line (`cpp/data/runtime-*.json`), holding that line's
   * defaults: `zero_grad(set_to_none)` (False before torch 2.0, so every `.grad` stays
   * allocated between steps), the optimizer implementation (for-loop in 1.13, foreach in 2.x),
   * the default attention, the cuBLAS workspace and the CUDA context; before 1.11 softmax also
   * keeps its input for the backward (`pytorch-1.10-cuda`). `pytorch-cuda` is the
   * current line (2.5+). `pytorch-cpu` is the CPU calibration runtime (no caching allocator).
   * Default `pytorch-cuda`.
   */
  runtime?: Runtime;
  /**
   * The CUDA context outside the caching allocator, bytes (overrides the runtime's, which is
   * per GPU and PyTorch line: `cpp/data/runtime-*.json` `contextBytesByGpu`, each measured or
   * derived with its source).
   */
  runtimeOverheadBytes?: number;
  /**
   * `PYTORCH_CUDA_ALLOC_CONF` for the caching-allocator simulation, as the environment
   * variable's text (`"expandable_segments:True,max_split_size_mb:128"`) or as an object.
   * `max_split_size_mb` must be above 20 (c10/cuda/CUDAAllocatorConfig.cpp);
   * `garbage_collection_threshold` in (0, 1); `roundup_power2_divisions` a power of 2 ≤ 64.
   */
  allocator?: string | AllocatorOptions;
  /** Simulate the caching allocator over three steps (CUDA runtimes only). Default true on CUDA. */
  simulateAllocator?: boolean;
  /** `zero_grad(set_to_none=…)`: false keeps every `.grad` allocated between steps. Default: the runtime's. */
  zeroGradSetToNone?: boolean;
  /**
   * Optimizer in backward (torchtune `optimizer_in_bwd`; torch's `_apply_optimizer_in_backward`):
   * each parameter steps in its post-accumulate-grad hook and its `.grad` is dropped at once,
   * so the full gradient set never exists. Not with gradient accumulation. Default false.
   */
  optimizerInBackward?: boolean;
  /**
   * torch.compile of each block (inductor, default mode; torchtune `compile: True`): the
   * min-cut partitioner (torch/_functorch/partitioners.py) recomputes casts, copies and
   * pointwise duplicates in the backward and keeps matmul, attention and reduction outputs; a
   * compiled chunked loss keeps its 16-bit logits. Every block recipe: Llama-family blocks are
   * checked against torchtune's published rows; GPT-2, BERT and T5 blocks follow the same rules
   * (a tensor a backward matmul reads stays saved; gelu_new's pointwise ops, RMSNorm's fp32 copy
   * and the gated branch's activation are recomputed; dropout keeps a 1-byte mask), derived,
   * not measured, as `assumptions` says. Default false.
   */
  compile?: boolean;
  /**
   * torchtune `enable_activation_offloading`: saved tensors of 1 KiB or more go to pinned CPU
   * memory once five newer ones exist and come back before their layer's backward, in the
   * step's allocation trace (every figure). Default false.
   */
  activationOffloading?: boolean;
  /**
   * torchao float8 training (`convert_to_float8_training`, dynamic `tensorwise` scaling, the
   * default recipe of torchao/float8/config.py): every block Linear casts its input and weight
   * to 1-byte float8 for the forward matmul and grad_output, weight and input in the backward
   * (float8_linear.py `matmul_with_hp_or_float8_args`); these casts are transients, the tensors
   * saved for the backward stay in their 16-bit dtype. Llama-family models, no LoRA. Needs a
   * GPU of compute capability 8.9 or higher (torch._scaled_mm, aten/src/ATen/native/cuda/Blas.cpp):
   * an error on an A100 or older. `rowwise` recipes are not modelled (an error).
   */
  float8?: { recipe?: Float8Recipe };
  /**
   * How the rows are filled. `{ packed: true }`: torchtune's PackedDataset packs samples into
   * rows of exactly seqLen tokens (padding the rest), so memory is that of seqLen; attention
   * per document changes FLOPs, not saved bytes. `{ lengths }`: padded batches (torchtune
   * `padded_collate_sft`, HF `DataCollatorWithPadding`) pad each micro-batch to its longest
   * sample: memory at the longest sample (truncated to seqLen), and the result's `samples`
   * gives the mean padded length over random micro-batches (what the step time follows) and
   * the padding fraction. `lengths` is for peakMemory only (the planner refuses it).
   */
  samples?: { packed?: boolean; lengths?: number[] };
  /**
   * The language-model loss: `cross-entropy` (HF: over the full logits, upcast to fp32),
   * `chunked` (torchtune's `CEWithChunkedOutputLoss`: the output projection and the loss per
   * chunk, 8 by default; the fp32 copy of the logits exists one chunk at a time), or
   * `liger-fused-linear` (Liger's fused linear cross-entropy: logits one chunk at a time,
   * grad_input and grad_weight computed in the forward and kept). Default cross-entropy.
   */
  loss?:
    | 'cross-entropy'
    | 'chunked'
    | 'liger-fused-linear'
    | { type: 'cross-entropy' | 'chunked' | 'liger-fused-linear'; chunks?: number };
  /**
   * DDP (dataParallel > 1 without ZeRO; torch/nn/parallel/distributed.py): the reducer's
   * buckets (`bucket_cap_mb`, default 25; the first 1 MiB) hold a flat copy of every gradient,
   * unless `gradient_as_bucket_view` makes the `.grad` tensors views of them.
   */
  ddp?: { bucketCapMb?: number; gradientAsBucketView?: boolean };
  /**
   * FSDP over `dataParallel` ranks (not with `zeroStage` or `ddp`): FSDP1
   * (`torch/distributed/fsdp/_flat_param.py`) or FSDP2 `fully_shard`
   * (`torch/distributed/fsdp/_fully_shard/`). One unit per transformer block; the embeddings and
   * head are the root unit, which stays gathered (FSDP2 `_fully_shard.py`: `reshard_after_forward`
   * is `False` for the root). Each rank keeps 1/S of the parameters, gradients and optimizer
   * state in their own dtype; a unit's parameters are all-gathered in `paramDtype` while it and the
   * next `prefetch` units run; in the backward its unsharded gradients (and a `reduceDtype` copy
   * when it differs) exist until the reduce-scatter.
   */
  fsdp?: {
    /** 1 (FSDP1) or 2 (`fully_shard`). Default 2. */
    version?: 1 | 2;
    /**
     * FULL_SHARD (default), SHARD_GRAD_OP (gathered parameters kept from the forward to the
     * backward), HYBRID_SHARD (sharded within `shardGroupSize` ranks, replicated across groups),
     * NO_SHARD (replicated, like DDP).
     */
    shardingStrategy?: FsdpShardingStrategy;
    /** HYBRID_SHARD only (required there): ranks in a shard group; must divide dataParallel. */
    shardGroupSize?: number;
    /**
     * FSDP2's name for the strategy: true for FULL_SHARD / HYBRID_SHARD, false for SHARD_GRAD_OP.
     * Or, FSDP2 only, one setting per unit (`fully_shard(module, reshard_after_forward=...)`):
     * `blocks` (every block, as the boolean, or a list of one boolean per block in order),
     * `lastBlock` (default: `blocks`; not with a list; older torchtitan passed false for it,
     * since FSDP would prefetch it again at once), `root` (the embeddings + head unit; default
     * false: the root stays gathered from its forward to its backward, as `fully_shard` does
     * when the root's setting is left at None; true: an explicit True on the root frees it
     * after the forward, so it is not held at the loss), and `embedding` / `head`: given, that
     * module (the embeddings; the final norm + head) is a unit of its own with this setting,
     * as torchtitan's `apply_fsdp` makes them (`{ embedding: true, head: false }`); untied
     * weights and one pipeline stage only.
     */
    reshardAfterForward?:
      | boolean
      | {
          blocks?: boolean | boolean[];
          lastBlock?: boolean;
          root?: boolean;
          embedding?: boolean;
          head?: boolean;
        };
    /**
     * FSDP1 only: `limit_all_gathers` (the rate limiter, default true: at most two all-gathers
     * in flight). False lets the CPU issue all-gathers ahead of the GPU: the same tensors in the
     * same order, and `reservedPeakBytes` becomes the bound for a CPU a whole pass ahead (no layer reuses
     * another layer's gathered blocks). With version 2 it is an error.
     */
    limitAllGathers?: boolean;
    /** Units all-gathered ahead of the one computing (forward and backward prefetch). Default 1. */
    prefetch?: number;
    /** `MixedPrecision` / `MixedPrecisionPolicy`: gathered parameters and gradient reduction. */
    mixedPrecision?: {
      paramDtype?: 'fp32' | 'bf16' | 'fp16';
      reduceDtype?: 'fp32' | 'bf16' | 'fp16';
    };
    /** `CPUOffload(offload_params=True)` / `CPUOffloadPolicy`: sharded parameters, gradients and the optimizer step on the CPU. Default false. */
    cpuOffload?: boolean;
  };
  /** GPU preset id (`tm.presets()`), e.g. `"a100-80gb"`. Not with `gpuMemoryBytes`. */
  gpu?: string;
  /** GPU memory in bytes. Not with `gpu`. */
  gpuMemoryBytes?: number;
  /**
   * How `optimizer.step()` runs: `foreach` (torch 2.x default on CUDA: one `_foreach_sqrt` list
   * as large as the parameters), `for-loop` (torch 1.13 default: two temporaries of one tensor
   * at a time), `fused` (`fused=True`: none), `transformers` (transformers.AdamW, the HF
   * Trainer's `adamw_hf` default before transformers 4.32: one temporary per tensor).
   * Default: the runtime's.
   */
  optimizerImplementation?: 'foreach' | 'for-loop' | 'fused' | 'transformers';
  /** With a GPU: search the largest micro-batch that fits. Default true. */
  searchMaxMicroBatch?: boolean;
  /** Include the timeline. Default true. */
  timeline?: boolean;
}

/** Runtime profiles (one per PyTorch line). */
/** Pipeline schedules: 1F1B (PipeDream-flush), GPipe, interleaved 1F1B (virtualStages), zero-bubble ZB-H1 and ZB-V. */
export type PipelineSchedule = '1f1b' | 'gpipe' | 'interleaved-1f1b' | 'zb-h1' | 'zb-v';

export type Runtime =
  | 'pytorch-cuda'
  | 'pytorch-2.5-cuda'
  | 'pytorch-2.1-cuda'
  | 'pytorch-2.0-cuda'
  | 'pytorch-1.13-cuda'
  | 'pytorch-1.10-cuda'
  | 'pytorch-cpu';

/** `PYTORCH_CUDA_ALLOC_CONF` options (c10/cuda/CUDAAllocatorConfig.cpp). */
export interface AllocatorOptions {
  /** Blocks above this many MiB are never split; null = unlimited (the default). Above 20. */
  max_split_size_mb?: number | null;
  /** One growing segment per pool and stream (torch ≥ 2.1). Default false. */
  expandable_segments?: boolean;
  /** Free cached blocks before reserving past this fraction of the GPU, in (0, 1). */
  garbage_collection_threshold?: number;
  /** Round requests up to this many divisions per power of two (a power of 2 ≤ 64). */
  roundup_power2_divisions?: number;
}

/** What the caching-allocator simulation found (CUDA runtimes). */
export interface AllocatorSimulation {
  /** reservedPeakBytes − allocatedPeakBytes: what the cache (fragmentation, cached free blocks) adds. */
  fragmentationBytes: number;
  /** The largest single request, rounded: what an OOM message names first. */
  largestRequestBytes: number;
  /** The optimizer step (1-based) in which reserved memory peaked. */
  reservedPeakStep: number;
  /** The phase in which it peaked: load, forward, loss, recompute, backward, optimizer, zero_grad. */
  reservedPeakPhase: string;
  /** The chain layer in which it peaked (−1 outside layers). */
  reservedPeakLayer: number;
  /** Step 1 differs: it creates the optimizer state. Its allocated and reserved peaks. */
  firstStepAllocatedBytes: number;
  firstStepReservedBytes: number;
  /** The allocated peak of the later (steady) steps. */
  steadyAllocatedBytes: number;
  stepsSimulated: number;
  /** Segments (cudaMalloc blocks) at the end. */
  segments: number;
  /** cudaMalloc failures answered by freeing the cache and retrying. */
  allocRetries: number;
  /** The simulated run ran out of the GPU's memory. */
  outOfMemory: boolean;
  /** NCCL communicator buffers counted in deviceUsedBytes (distributed runs). */
  ncclBytes: number;
  /** CUDA managed memory outside the allocator (bitsandbytes paged states), in deviceUsedBytes. */
  managedBytes: number;
  /** Which tool reports which number. */
  source: string;
}

/** One line of a breakdown: bytes and the source of its formula. */
export interface SourcedBytes {
  bytes: number;
  source: string;
}

/** A breakdown line of several kinds of tensors: the bytes of each kind at the peak. */
export interface SourcedParts<K extends string> extends SourcedBytes {
  parts: Record<K, number>;
}

/**
 * One part of the optimizer step that holds the allocated peak (a layer's forward,
 * recomputation or backward, the loss, the optimizer step, zero_grad), at its highest moment.
 */
export interface TimelinePoint {
  /** `forward`, `recompute`, `backward`, `loss`, `optimizer`, `zero_grad`. */
  phase: string;
  /** Layer index (−1 outside layers). */
  layer: number;
  name: string;
  /** The allocator's live bytes then; the highest of the timeline is allocatedPeakBytes. */
  totalBytes: number;
  /** Of which the batch, saved tensors and tensors passed between layers. */
  activationBytes: number;
  /** Of which the `.grad` tensors (and DDP's buckets). */
  gradientBytes: number;
  /** Of which the temporaries line's kinds. */
  temporaryBytes: number;
  /** Of which ZeRO-3 / FSDP's unsharded parameters (and FSDP's unsharded gradients). */
  gatheredBytes: number;
}

/** Result of {@link Trainmem.peakMemory}. Sizes in bytes. */
export interface PeakMemoryResult {
  /** allocatedPeakBytes plus the memory outside the allocator (the runtime line; paged states). */
  peakBytes: number;
  /**
   * The most bytes the allocator's blocks held at once in the step's allocation trace
   * (`torch.cuda.max_memory_allocated`); on the CPU, the most bytes of live tensors. The
   * breakdown's lines inside the allocator sum exactly to it.
   */
  allocatedPeakBytes: number;
  /** Highest memory reserved by the caching allocator (`torch.cuda.max_memory_reserved`); null without the simulation. */
  reservedPeakBytes: number | null;
  /** What nvidia-smi shows: reserved + CUDA context (+ NCCL buffers when distributed); null without the simulation. `fits` judges this. */
  deviceUsedBytes: number | null;
  /** The caching-allocator simulation (CUDA runtimes). */
  allocator?: AllocatorSimulation;
  /** Where the peak happens (forward, backward, optimizer; `encode` with a pipeline that encodes its batch). */
  peakPhase: string;
  /** The layer at the peak (−1 outside layers). */
  peakLayer: number;
  /**
   * What is live at the allocated peak, by line, each with its source. Every line but
   * `runtime` and `pagedOptimizerState` is inside the caching allocator: those sum to
   * allocatedPeakBytes exactly.
   */
  breakdown: {
    weights: SourcedBytes;
    masterWeights: SourcedBytes;
    gradients: SourcedParts<'grads' | 'ddpBuckets' | 'reduceBuckets'>;
    optimizerState: SourcedBytes;
    activations: SourcedParts<'batch' | 'saved' | 'boundaries'>;
    temporaries: SourcedParts<
      | 'activationGradients'
      | 'opTransients'
      | 'autocastCopies'
      | 'gatheredParameters'
      | 'optimizerTemporaries'
      | 'gradientPartition'
    >;
    /** The cuBLAS workspace (allocated through the caching allocator at the first matmul). */
    workspace: SourcedBytes;
    /** The allocator's blocks beyond the tensors' own bytes (rounding to 512 B, unsplit blocks). */
    allocatorRounding: SourcedBytes;
    /** Outside the allocator: the CUDA context (+ NCCL's buffers when distributed). */
    runtime: SourcedBytes;
    /** bitsandbytes paged optimizer states: CUDA managed memory, outside the allocator. */
    pagedOptimizerState?: SourcedBytes;
  };
  params: number;
  trainableParams: number;
  /** Activations held at the end of the forward pass. */
  storedActivationBytes: number;
  /** Extra forward work of recomputation, as a fraction of the forward. */
  recomputeFraction: number;
  /** Saved-for-backward bytes of one transformer block, derived per op, and Korthikanti et al.'s formula beside it. */
  activationsPerLayer: {
    derivedBytes: number;
    korthikantiBytes: number;
    korthikantiSource: string;
  };
  assumptions: string[];
  /**
   * With `samples`: the sequence length the memory uses (`memorySeqLen`), and for `lengths`
   * the sample count, how many were truncated to seqLen, the mean sample length, the expected
   * padded length of a random micro-batch (E[max of microBatch lengths]) and the padding share.
   */
  samples?: {
    packed: boolean;
    memorySeqLen: number;
    count?: number;
    truncated?: number;
    meanLength?: number;
    expectedPaddedLength?: number;
    paddingFraction?: number;
  };
  /**
   * With a traced model (`model.trace`): the trace, and what its step leaves for the backward at
   * this request's sizes.
   */
  trace?: {
    name: string;
    torch: string;
    device: string;
    tracedBatch: number;
    tracedSeqLen?: number;
    /** Chain layers and forward ops the trace holds. */
    layers: number;
    ops: number;
    /**
     * What autograd keeps for the backward (what `saved_tensors_hooks` see, distinct storages,
     * parameters and buffers excluded, the batch's tensors a layer keeps included).
     */
    savedBytes: number;
    /** Alive at the forward's end only because the step's code holds it (output, loss). */
    heldBytes: number;
    /** The batch (inputs and the loss's target). */
    inputBytes: number;
    /** Sizes the tracer's check point contradicted (taken from the fit). */
    inexactSizes: number;
    notes: string[];
  };
  /** Whether the run fits the GPU (device-used memory when simulated, else peakBytes); null without a GPU. */
  fits: boolean | null;
  /** GPU memory minus the judged peak (negative: short by that much); null without a GPU. */
  headroomBytes: number | null;
  /** Largest micro-batch that fits (0: none); null without a GPU, with `searchMaxMicroBatch: false` or for a bare parameter count. */
  maxMicroBatch: number | null;
  /**
   * Present when the maxMicroBatch search stopped at its work bound (a model of tens of
   * thousands of tensors): the smallest micro-batch known not to fit; the largest that fits
   * lies between `maxMicroBatch` and this. Absent when `maxMicroBatch` is exact.
   */
  maxMicroBatchBelow?: number;
  /** A bare parameter count: the model states alone, activations unknown (a lower bound). */
  lowerBound?: boolean;
  /** A parameter count with layers / hidden / heads: a stand-in decoder of that size. */
  approximate?: boolean;
  /** Memory over the step (absent with `timeline: false`); at most 10,001 points. */
  timeline?: TimelinePoint[];
  /** Present when the timeline was thinned (every k-th point and the highest): its full count. */
  timelinePoints?: number;
  /**
   * With `model.pipeline`: each part on the device (its dtype and bytes, whether it stays
   * resident and encodes every step, a text encoder's LoRA rank), their resident bytes, the
   * text encoders' LoRA parameters and activations, the largest encode's working set (the VAE's
   * encoder or a text encoder under no_grad, before the forward) and the images' pixels, and
   * the samples a step runs (2 × microBatch with prior preservation).
   */
  /** contextParallel > 1: the sequence each rank holds and the gradient group. */
  contextParallel?: {
    ranks: number;
    /** The whole sequence (the request's seqLen). */
    seqLen: number;
    /** Tokens of the sequence each rank holds (seqLen / ranks). */
    rankSeqLen: number;
    loadBalance: 'zigzag' | 'none';
    rotate: 'allgather' | 'alltoall';
    /** The request's dataParallel. */
    dataParallel: number;
    /** Ranks gradients are reduced over and ZeRO / FSDP shard over: dataParallel × ranks. */
    gradientGroupRanks: number;
  };
  /** expertParallel or expertTensorParallel > 1: the rank's experts and the routing assumed. */
  expertParallel?: {
    ranks: number;
    expertTensorParallel: number;
    /** Routed experts per MoE layer, and those on each rank. */
    experts: number;
    expertsPerRank: number;
    /** Experts each token is routed to. */
    topK: number;
    dropless: boolean;
    /** Routed token copies the rank's experts run, over the even share (imbalance or capacity). */
    routedTokensFactor: number;
    capacityFactor: number | null;
  };
  /** pipelineParallel > 1: every stage's figures, the schedule's in-flight counts and bubble. */
  pipelineParallel?: {
    schedule: PipelineSchedule;
    stages: number;
    /** Model chunks per stage: virtualStages (interleaved), 2 (zb-v), else 1. */
    chunksPerStage: number;
    /** Micro-batches per step (gradientAccumulationSteps). */
    microBatches: number;
    /** The share of the step a stage idles in the fill and drain (equal pass times). */
    bubbleFraction: number;
    /** The stage the top-level figures are (the most device memory). */
    peakStage: number;
    perStage: Array<{
      stage: number;
      /** Chain layers of each chunk (0: the embeddings; the last: the head and loss). */
      chunks: number[][];
      blocks: number;
      /** Micro-batch chunks whose activations the stage holds at once. */
      inFlightChunks: number;
      /** inFlightChunks / chunksPerStage. */
      inFlightMicroBatches: number;
      peakBytes: number;
      allocatedPeakBytes: number;
      params: number;
      weightsBytes: number;
      gradientsBytes: number;
      /** Optimizer state and master weights. */
      optimizerStateBytes: number;
      activationsBytes: number;
      peakPhase: string;
      deviceUsedBytes?: number;
      fits?: boolean;
      headroomBytes?: number;
    }>;
  };
  pipeline?: {
    parts: {
      role: string;
      /** What it is, e.g. "CLIP ViT-L/14 text encoder (CLIPTextModel; …)". */
      name: string;
      params: number;
      dtype: 'fp32' | 'bf16' | 'fp16';
      bytes: number;
      resident: boolean;
      encodes: boolean;
      loraRank?: number;
    }[];
    residentBytes: number;
    textEncoderLoraParams: number;
    textEncoderActivationBytes: number;
    encodeBytes: number;
    encodePart: string;
    pixelBytes: number;
    priorPreservation: boolean;
    samplesPerStep: number;
  };
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

// ---------------------------------------------------------------------------------------
// accumulation
// ---------------------------------------------------------------------------------------

/** Forward mode of {@link Trainmem.accumulation}: the batch arithmetic of a given setup. */
export interface AccumulationRequest {
  /**
   * Samples per micro-step per GPU (HF `per_device_train_batch_size`), whole number from 1 to
   * 16,777,216 (2^24).
   */
  microBatch: number;
  /**
   * Micro-steps per optimizer step (HF `gradient_accumulation_steps`), whole number from 1 to
   * 16,777,216 (2^24).
   */
  accumulationSteps: number;
  /** Data-parallel ranks (PyTorch DDP world size), 1 to 1,048,576 (2^20). Default 1. */
  dataParallel?: number;
  /** Tokens per sample, 1 to 16,777,216 (2^24): adds `tokensPerStep`. */
  seqLen?: number;
  /** Samples in the dataset: adds the per-epoch counts. */
  datasetSize?: number;
}
/**
 * Plan mode of {@link Trainmem.accumulation}: every (microBatch, accumulationSteps) split of a
 * target batch, each with its peak memory and step time. Takes any peakMemory input (passed to
 * peakMemory's own parser, same defaults); the planner picks the micro-batch and steps.
 */
export interface AccumulationPlanRequest extends Omit<
  PeakMemoryRequest,
  'microBatch' | 'gradientAccumulationSteps' | 'checkpointing' | 'timeline' | 'searchMaxMicroBatch'
> {
  /**
   * Global batch: micro × steps × dataParallel to reach, samples; ≥ dataParallel, at most
   * 2,147,483,648 (2^31).
   */
  targetGlobalBatch: number;
  /** Tokens per sample (required, except for `mlp`). */
  seqLen?: number;
  /**
   * Strategies compared: `auto` (default) compares `none` with `full` (every block, HF
   * `gradient_checkpointing`); a peakMemory strategy compares `none` with it.
   */
  checkpointing?: 'auto' | CheckpointingStrategy | CheckpointingOptions;
  /** GPU dense peak, TFLOP/s (overrides the preset's for the precision). */
  gpuPeakTflops?: number;
  /** GPU memory bandwidth, GB/s (10^9 B/s), to time the optimizer step. Default: the preset's. */
  gpuMemoryBandwidthGBps?: number;
  /** Interconnect bandwidth per GPU, GB/s, for the ring all-reduce. Default: not modelled. */
  interconnectGBps?: number;
  /** Share of the dense peak reached at large micro-batches. Default 0.5 (docs/accumulation.md). */
  utilization?: number;
  /** Fixed cost per block and micro-step, seconds. Default 0.00089 (calibrated on HF's V100 runs). */
  overheadPerLayerSeconds?: number;
  /** Micro-batch of the comparison's accumulation rows, 1 to 16,777,216 (2^24). Default 1. */
  compareMicroBatch?: number;
}

/** Result of the forward mode. */
export interface AccumulationForwardResult {
  mode: 'forward';
  microBatch: number;
  accumulationSteps: number;
  dataParallel: number;
  /** microBatch × accumulationSteps × dataParallel (HF Trainer "Total train batch size"). */
  effectiveBatch: number;
  /** microBatch × accumulationSteps. */
  perDeviceBatch: number;
  microStepsPerOptimizerStep: number;
  formula: string;
  /** effectiveBatch × seqLen (with seqLen). */
  tokensPerStep?: number;
  /** With datasetSize: ⌈N / DP⌉ (DistributedSampler pads). */
  samplesPerRank?: number;
  /** Samples the sampler repeats to fill the ranks. */
  paddedSamples?: number;
  /** ⌈samplesPerRank / microBatch⌉ (DataLoader drop_last=False). */
  microBatchesPerEpoch?: number;
  /** ⌈microBatchesPerEpoch / steps⌉ (transformers ≥ 4.46 steps on the short last one). */
  optimizerStepsPerEpoch?: number;
  /** ⌊microBatchesPerEpoch / steps⌋. */
  fullOptimizerStepsPerEpoch?: number;
  /** Micro-batches of the last, short accumulation. */
  remainderMicroBatches?: number;
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

/** Step time of one plan (seconds, FLOPs). */
export interface StepTime {
  flopsPerMicroStep: number;
  recomputeFlopsPerMicroStep: number;
  computeSecondsPerMicroStep: number;
  overheadSecondsPerMicroStep: number;
  microStepSeconds: number;
  optimizerSeconds: number;
  allReduceSeconds: number;
  /** One optimizer step: steps × micro-step + optimizer + all-reduce. */
  stepSeconds: number;
  /** Global samples (all ranks) per second. */
  samplesPerSecond: number;
  tokensPerSecond: number;
  /** PaLM's MFU (useful FLOPs / peak × time). */
  modelFlopsUtilization: number;
  /** Including recompute. */
  hardwareFlopsUtilization: number;
}

/** One (microBatch, accumulationSteps, checkpointing) candidate. */
export interface AccumulationPlan {
  microBatch: number;
  accumulationSteps: number;
  /** micro × steps × dataParallel. */
  globalBatch: number;
  /** globalBatch equals the target. */
  exact: boolean;
  checkpointing: string;
  /** From peakMemory (the allocated bytes; the replay's where it ran). */
  peakBytes: number;
  fits: boolean;
  /**
   * How `fits` was decided: `allocator` (the caching allocator was replayed), `allocated-bytes`
   * (the tensors alone exceed the GPU, so it cannot fit), `neighbours` (peak memory grows with
   * the micro-batch: it lies between a micro-batch that fits and one that does not, found by
   * bisection), `over-limits` (its bytes would exceed 2^63: it does not fit; `peakBytes` 0, only
   * in a comparison row: such plans are counted in `omittedPlans`).
   */
  fitsFrom: 'allocator' | 'allocated-bytes' | 'neighbours' | 'over-limits';
  stepSeconds: number;
  samplesPerSecond: number;
  time: StepTime;
}

/** A row of the comparison of accumulation and checkpointing, computed for the request. */
export interface ComparisonRow extends AccumulationPlan {
  /** `baseline`, `accumulation`, `checkpointing`, `accumulationAndCheckpointing`. */
  id: string;
  /** Peak memory by category, bytes. */
  breakdown: {
    weights: number;
    masterWeights: number;
    gradients: number;
    optimizerState: number;
    activations: number;
    temporaries: number;
    runtime: number;
  };
  /** Step time relative to the baseline. */
  relativeTime: number;
  /** Step time relative to the accumulation row. */
  relativeToAccumulation: number;
}

/** Result of the plan mode. */
export interface AccumulationPlanResult {
  mode: 'plan';
  targetGlobalBatch: number;
  dataParallel: number;
  seqLen: number;
  /**
   * Per strategy compared, every split of the per-device batch (ascending micro-batch); when
   * there are more than 64, the 64 ending with the first one or two that do not fit.
   */
  plans: AccumulationPlan[];
  /** Splits not listed (of more than 64; or whose bytes would exceed 2^63). */
  omittedPlans: number;
  /** The fastest plan that fits (exact plans first, fewer steps on ties); null if none fits. */
  recommended: AccumulationPlan | null;
  /** Index of `recommended` in `plans`. */
  recommendedIndex?: number;
  /** What checkpointing buys here. */
  checkpointing: {
    largestMicroBatchWithout: number;
    largestMicroBatchWith: number;
    enablesLargerMicroBatch: boolean;
    checkpointingRequired: boolean;
    fasterThanMoreAccumulation: boolean;
    speedupOverBestWithout: number;
    message: string;
  };
  /** Accumulation beside checkpointing (batch, memory, time of each), computed for the request. */
  comparison: {
    microBatch: number;
    accumulationMicroBatch: number;
    accumulationSteps: number;
    checkpointing: string;
    rows: ComparisonRow[];
    techniques: Array<{
      technique: string;
      strategy?: string;
      actsOn: string;
      memoryActsOn: string;
      memorySavedBytes: number;
      extraSeconds: number;
      extraTimeFraction: number;
      extraFlops: number;
      cost: string;
    }>;
    /** What the rows show that comparison tables often get wrong: accumulation saves activation memory, not gradient memory. */
    tableNote: string;
  };
  /** Forward FLOPs per token and how they were counted. */
  flops: {
    forwardPerToken: number;
    trainingPerToken: number;
    blockMatmulPerToken: number;
    attentionPerToken: number;
    headPerToken: number;
    layers: number;
    method: string;
    assumptions: string[];
  };
  gpu: {
    id: string;
    memoryBytes: number;
    peakFlops: number;
    throughputPrecision: string;
    memoryBandwidthBytesPerSecond: number;
  };
  timeModel: {
    utilization: number;
    overheadPerLayerSeconds: number;
    optimizerBytesPerStep: number;
    formula: string;
  };
  /** `target-not-divisible`, `batchnorm-per-micro-batch`, `loss-averaging`, … */
  warnings: Array<{ code: string; message: string }>;
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

/** Result of {@link Trainmem.accumulation}: by `mode`. */
export type AccumulationResult = AccumulationForwardResult | AccumulationPlanResult;

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
/** Numbers of a columnar chain: a typed array (not BigInt) or an array of numbers. */
export type ChainColumn = ArrayLike<number>;
/**
 * The layers of a chain as one array per field, each holding one value per layer (the same
 * chain as {@link ChainLayer}[], the same answer). The numeric columns cross into the core as
 * one `Float64Array` instead of JSON text: the fast way in for long chains (100,000 layers).
 * Errors name the column and the value, e.g. `chain.layers.savedBytes[3]`.
 */
export interface ChainColumns {
  /** Names, one per layer. */
  name?: string[];
  /** Forward time of each layer; recomputation costs the same. */
  forwardCost: ChainColumn;
  /** Backward time of each layer. */
  backwardCost: ChainColumn;
  /** Bytes of each layer's output activation. */
  outputBytes: ChainColumn;
  /** Bytes each layer keeps for the backward when run normally (output included). */
  savedBytes: ChainColumn;
  /** Transient bytes during each layer's forward. Default 0. */
  forwardTempBytes?: ChainColumn;
  /** Transient bytes during each layer's backward. Default 0. */
  backwardTempBytes?: ChainColumn;
}
/** A chain of layers. */
export interface Chain {
  /** Bytes of the chain's input. */
  inputBytes: number;
  /** One object per layer, or the same as columns ({@link ChainColumns}). */
  layers: ChainLayer[] | ChainColumns;
}
/** Request of {@link Trainmem.placement}. Every strategy is measured by one simulator. */
export interface PlacementRequest {
  /** The chain of layers; or give `model` instead. */
  chain?: Chain;
  /**
   * Instead of `chain`: a model, one layer per block from the peak-memory activation model
   * (costs in FLOPs, backward = 2 x forward), at `microBatch` (default 1), `seqLen` (required
   * but for a traced model; a diffusion network's text tokens), `targetLen` (encoder-decoder),
   * `imageSize` (vision and diffusion), `precision` (default fp32) and `attention` (default sdpa).
   */
  model?: ModelInput;
  microBatch?: number;
  seqLen?: number;
  targetLen?: number;
  imageSize?: number | [number, number];
  precision?: Precision;
  attention?: 'eager' | 'sdpa';
  /** Default none. */
  strategy?: PlacementStrategy;
  /** `manual`: checkpointed segments as inclusive 0-based [first, last] layer ranges. */
  checkpointed?: Array<[number, number]>;
  /** `every-k`: layers per checkpointed chunk; `block` (required): the first k layers. */
  k?: number;
  /** `sequential`: segments, as PyTorch `checkpoint_sequential(functions, segments)`. */
  segments?: number;
  /**
   * `revolve`: snapshots c (Griewank & Walther 2000). The schedule is built and simulated for
   * chains of at most 4,096 layers whose schedule has at most 2,097,152 (2^21) operations
   * (2 l + 1 + t(l, c)); longer chains get the closed-form costs only (`PlacementCostResult`).
   */
  snapshots?: number;
  /** `optimal`: budget discretisation (Rotor). Default 500. */
  slots?: number;
  /** `chen-greedy`, `optimal-single-level`, `optimal`: activation budget, bytes. */
  budgetBytes?: number;
  /** `chen-greedy`: the threshold x of Chen et al. Alg. 3, bytes (else searched). */
  greedyBytes?: number;
  /** Also return the memory–time Pareto frontier. Default false. */
  frontier?: boolean;
  /** Include the timeline. Default true. */
  timeline?: boolean;
}

/** One point of the memory–time Pareto frontier. */
export interface FrontierPoint {
  /** Simulated activation peak (the budget the plan needs), bytes. */
  peakActivationBytes: number;
  totalCost: number;
  recomputeCost: number;
  /** Single-level plans: the checkpointed segments. */
  checkpointed: Array<[number, number]>;
  /** The strategy parameter that produced it (e.g. `{ slotBudgetBytes }`). */
  parameter?: Record<string, unknown>;
}

/** One step of the simulated plan. */
export interface PlacementEvent {
  /** `forward`, `recompute`, `backward`, `loss`. */
  phase: string;
  op: string;
  layer: number;
  /** Activation bytes live at the highest point of this step. */
  liveBytes: number;
}

/** A plan, measured by the simulator. Bytes; costs in the request's time unit. */
export interface PlacementPlanResult {
  strategy: PlacementStrategy;
  /** Per layer: `store` (runs normally), `checkpoint` (keeps its input, recomputed), `drop`. */
  plan: Array<'store' | 'checkpoint' | 'drop'>;
  /** Checkpointed segments, inclusive 0-based [first, last]. */
  checkpointed: Array<[number, number]>;
  /** Activation bytes held at the end of the forward pass. */
  storedBytes: number;
  /** Highest activation bytes over forward and backward. */
  peakActivationBytes: number;
  peakPhase: string;
  peakLayer: number;
  forwardCost: number;
  backwardCost: number;
  /** Extra forward work. */
  recomputeCost: number;
  /** forward + backward + recompute. */
  totalCost: number;
  /** recomputeCost / (forward + backward). */
  overheadFraction: number;
  /**
   * Absent with `timeline: false`. At most `Vocabulary.limits.timelineEvents` (10,000) events:
   * a longer timeline lists the highest event of each of that many equal runs of events (the
   * peak among them), and `timelineEvents` gives how many there were.
   */
  timeline?: PlacementEvent[];
  /** Events of the whole timeline, when `timeline` lists fewer of them. */
  timelineEvents?: number;
  /**
   * Multi-level strategies (`optimal`, `revolve`): the operation sequence. `optimal` solved on
   * stages of several layers (`details.stageLayers`) lists its stages' ops, each with the range
   * of layers it runs, `layers: [first, last]` (forward ops run them in order; forward-check
   * keeps the first's input and runs the others without theirs; backward runs them from the
   * last).
   */
  schedule?: Array<{ op: string; layer?: number; layers?: [number, number] }>;
  /**
   * Strategy details. `optimal`: slots, slotBytes, exactGrid, predictedTotalCost; with
   * `stageLayers` when the chain was too long for its table within the work bound and was
   * solved on stages of that many layers (bounded, not exact); `storesEverything` when the
   * budget holds every activation. `optimal-single-level`: `exact`; when false, `blockLayers`
   * (the cheapest plan whose segments start and end at multiples of that many layers, improved
   * by local moves: never worse than it) or `lowestPeak` (docs/placement.md, "Bounded answers").
   */
  details?: Record<string, unknown>;
  /** With budgetBytes. */
  budgetBytes?: number;
  /** With budgetBytes: peakActivationBytes ≤ budgetBytes. */
  fits?: boolean;
  /** With `frontier: true`. */
  frontier?: FrontierPoint[];
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

/** `frontier: true` for a budgeted strategy without a budget: the frontier only. */
export interface PlacementFrontierResult {
  strategy: PlacementStrategy;
  frontier: FrontierPoint[];
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

/** Result of {@link Trainmem.placement}. */
/**
 * `revolve` on a chain too long for its schedule (over 4,096 layers or 2^21 operations): the
 * costs from Griewank & Walther's closed form (ACM TOMS Algorithm 799, 2000): each layer runs
 * one taping forward and one backward, plus t(l, c) = r l − C(c + r, c + 1) forward steps,
 * r minimal with C(c + r, c) ≥ l. No plan, peak, timeline or schedule; `budgetBytes` is refused.
 */
export interface PlacementCostResult {
  strategy: 'revolve';
  scheduled: false;
  forwardCost: number;
  backwardCost: number;
  /** t(l, c) × forwardCost. */
  recomputeCost: number;
  totalCost: number;
  overheadFraction: number;
  /** snapshots, repetitions (r), extraForwardSteps (t), scheduleLayerLimit, scheduleOperationLimit. */
  details: Record<string, number>;
  inexact?: InexactNumber[];
}

export type PlacementResult = PlacementPlanResult | PlacementFrontierResult | PlacementCostResult;

// ---------------------------------------------------------------------------------------
// presets
// ---------------------------------------------------------------------------------------

/** Request of {@link Trainmem.presets}. */
export interface PresetsRequest {
  /**
   * Build every model preset to report `params`, `publishedParams`, `architecture`, `layers`
   * and `hidden` (default true). With false the models are listed from their data files alone
   * (`id`, `name`, `modelType`, `source`): much faster, e.g. to fill a model picker.
   */
  parameterCounts?: boolean;
}

/** A model preset (its config lives in cpp/data/models/). */
export interface ModelPreset {
  /** The id for `model: { preset }`, e.g. `"llama-2-7b"`. */
  id: string;
  name: string;
  /** Parameters computed from the config (tied weights once). Absent with `parameterCounts: false`. */
  params?: number;
  /** The count published by the model's authors, when there is one. */
  publishedParams?: number;
  modelType: string;
  /** HF class built. Absent with `parameterCounts: false`. */
  architecture?: string;
  /** Absent with `parameterCounts: false`. */
  layers?: number;
  /** Absent with `parameterCounts: false`. */
  hidden?: number;
  /** Where the config was copied from. */
  source: string;
}

/** A GPU preset (cpp/data/gpus/). */
export interface GpuPreset {
  /** The id for `gpu`, e.g. `"a100-80gb"`. */
  id: string;
  name: string;
  /** Memory, bytes. */
  memoryBytes: number;
  /** Dense peak throughput by precision, TFLOP/s (10^12 FLOP/s); null where the GPU has none. */
  peakTflops: Partial<Record<'fp32' | 'tf32' | 'fp16' | 'bf16' | 'fp8' | 'int8', number | null>>;
  /** Memory bandwidth, bytes/s. */
  memoryBandwidthBytesPerSecond: number;
  /** Datasheet the numbers come from. */
  source: string;
  /** Data file it came from. */
  file: string;
  [field: string]: unknown;
}

/** Result of {@link Trainmem.presets}: the preset data of this build. */
export interface PresetsResult {
  models: ModelPreset[];
  gpus: GpuPreset[];
  /** Worked examples shipped as data (requests with their source). */
  examples: Array<Record<string, unknown>>;
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

// ---------------------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------------------

/** Request and result types of every function, by name. */
// ------------------------------------------------------------------ memory snapshots

/**
 * A file's bytes: a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot("x.pickle")`,
 * pickle protocols 2–5), or `torch.cuda.memory_stats()` saved as JSON (text or bytes).
 */
export type SnapshotBytes = Uint8Array | ArrayBuffer | ArrayBufferView | string;

/** Options of {@link Trainmem.readSnapshot}. */
export interface ReadSnapshotOptions {
  /** Which device's trace to read (default: the one with the most trace entries). */
  device?: number;
  /** Points of the downsampled series, 2–10,000 (default 400); each keeps its bucket's highest value. */
  points?: number;
  /** Stack frames listed for the blocks live at the peak, 1–100 (default 10). */
  topFrames?: number;
}

/** What the blocks live at a moment were, from the frames that allocated them (docs/snapshot.md). */
export type SnapshotCategory =
  'weights' | 'gradients' | 'optimizerState' | 'activations' | 'temporaries' | 'unattributed';

/** Codes of the likely causes; `params` holds their numbers, `message` an English sentence. */
export type SnapshotCauseCode =
  | 'gradients_kept_between_steps'
  | 'reserved_over_allocated'
  | 'out_of_memory_recorded'
  | 'few_steps_recorded'
  | 'extra_weight_copy'
  | 'activations_over_prediction'
  | 'optimizer_state_differs';

/** A likely cause of what was measured, e.g. `{ code: "gradients_kept_between_steps", params: { bytes, step } }`. */
export interface SnapshotCause {
  code: SnapshotCauseCode;
  /** Bytes, ratios, counts (plain numbers). */
  params: Record<string, number>;
  /** English; the page translates by `code`. */
  message: string;
}

/** One point of the measured series (the highest of its bucket). */
export interface SnapshotSeriesPoint {
  /** Microseconds since the first trace entry (`time_us`), else the entry's index. */
  x: number;
  /** Index of the trace entry. */
  event: number;
  /** Live bytes, each request rounded to 512 B as the caching allocator does (memory_allocated's unit). */
  allocatedBytes: number;
  /** Live requested bytes of blocks allocated inside the trace (unrounded). */
  requestedBytes: number;
  /** Bytes of segments (memory_reserved). */
  reservedBytes: number;
}

/** One step found in the trace: it ends with its optimizer step. */
export interface SnapshotStep {
  startEvent: number;
  endEvent: number;
  startX: number;
  endX: number;
  peakAllocatedBytes: number;
  /** First allocation of the step's forward pass (-1: none seen). */
  forwardEvent: number;
  /** Gradients of earlier steps still live when this step's forward begins. */
  gradientBytesAtForward: number;
}

/** A frame (the innermost one outside torch/) and the bytes live at the peak that it allocated. */
export interface SnapshotTopFrame {
  filename: string;
  line: number;
  name: string;
  bytes: number;
  blocks: number;
  category: SnapshotCategory;
}

/** What {@link Trainmem.readSnapshot} returns. Bytes are plain numbers of bytes. */
export interface SnapshotSummary {
  /** `"snapshot"` (a pickle) or `"memoryStats"` (memory_stats() JSON: peaks only). */
  source: 'snapshot' | 'memoryStats';
  format: { protocol: number; fileBytes: number };
  device: number;
  devices: number;
  hasFrames: boolean;
  hasTime: boolean;
  events: {
    total: number;
    alloc: number;
    freeRequested: number;
    freeCompleted: number;
    segmentAlloc: number;
    segmentFree: number;
    segmentMap: number;
    segmentUnmap: number;
    snapshot: number;
    oom: number;
    other: number;
  };
  allocatorSettings: {
    present: boolean;
    conf: string;
    expandableSegments: boolean;
    /** null: unlimited (the default) or not recorded. */
    maxSplitSizeBytes: number | null;
    garbageCollectionThreshold: number;
  };
  /** The segments when the snapshot was taken. */
  segments: { count: number; reservedBytes: number; allocatedBytes: number };
  /** Live when recording began (blocks the trace frees or leaves live but never allocates). */
  baseline: { allocatedBytes: number; reservedBytes: number };
  series: { x: 'timeUs' | 'event'; points: SnapshotSeriesPoint[] };
  peak: {
    allocatedBytes: number;
    requestedBytes: number;
    /** Reserved bytes at the allocated peak. */
    reservedBytes: number;
    event: number;
    x: number;
    timeUs: number;
    /** Index into `steps.list` (-1: outside every step). */
    step: number;
    /** forward | backward | recompute | optimizer | zero_grad | weights | unknown */
    phase: string;
    categories: Record<SnapshotCategory, number>;
    topFrames: SnapshotTopFrame[];
  };
  reservedPeak: { bytes: number; event: number };
  steps: {
    /** How steps were found: optimizer frames (torch/optim/), the period of the allocation sizes, or not at all. */
    method: 'optimizer-frames' | 'periodicity' | 'none';
    periodEvents: number;
    count: number;
    list: SnapshotStep[];
  };
  /** The most gradient bytes live at a later step's forward start, and that step (index). */
  keptGradients: { bytes: number; step: number };
  memoryStats?: {
    allocatedPeakBytes: number;
    reservedPeakBytes: number;
    numAllocRetries: number;
    numOoms: number;
  };
  /** The trace replayed through the allocator simulator (null: no allocations in the trace). */
  simulatorReplay: SnapshotReplay | null;
  /** Causes the measurement alone shows. */
  causes: SnapshotCause[];
  notes: string[];
}

/**
 * The trace replayed through trainmem's caching-allocator simulator (blocks live before
 * recording first): recorded vs simulated peaks and segment counts (null: no allocations).
 */
export interface SnapshotReplay {
  recordedReservedBytes: number;
  simulatedReservedBytes: number;
  recordedAllocatedBytes: number;
  simulatedAllocatedBytes: number;
  recordedSegments: number;
  simulatedSegments: number;
}

/** Request of {@link Trainmem.compareSnapshot}. */
export interface CompareSnapshotRequest extends ReadSnapshotOptions {
  /** The snapshot (or memory_stats() JSON); optional when `measured` gives a figure. */
  snapshot?: SnapshotBytes;
  /** The same run as a peakMemory request. */
  request: PeakMemoryRequest;
  /** Figures you have in hand, in bytes. */
  measured?: {
    /** torch.cuda.max_memory_allocated() */
    maxAllocatedBytes?: number;
    /** torch.cuda.max_memory_reserved() */
    maxReservedBytes?: number;
    /** nvidia-smi's used memory of the process (includes the CUDA context). */
    nvidiaSmiUsedBytes?: number;
  };
}

/** A measured figure beside its prediction (`predictedBytes` null: not modelled). */
export interface SnapshotTotal {
  what: 'allocatedPeak' | 'reservedPeak' | 'nvidiaSmiUsed';
  measuredBytes: number;
  measuredSource: string;
  predictedBytes: number | null;
  /** measured − predicted (negative: less was measured). */
  differenceBytes: number | null;
}

/** One category at the measured peak beside trainmem's breakdown at its peak. */
export interface SnapshotCategoryRow {
  category: SnapshotCategory | 'cacheFragmentation';
  measuredBytes: number | null;
  predictedBytes: number | null;
  differenceBytes: number | null;
}

/** What {@link Trainmem.compareSnapshot} returns. */
export interface CompareSnapshotResult {
  /** The summary of the snapshot (null when only figures were given). */
  measured: SnapshotSummary | null;
  /** peakMemory's result for `request`. */
  predicted: PeakMemoryResult;
  totals: SnapshotTotal[];
  categories: SnapshotCategoryRow[];
  /** The predicted step on the measured series' axis (spread over the step holding the peak). */
  predictedSeries: { x: number; allocatedBytes: number; phase: string }[];
  /** What the measurement shows, then what the difference shows. */
  causes: SnapshotCause[];
  /** The measured trace replayed through the allocator simulator (null: no snapshot trace). */
  simulatorReplay: SnapshotReplay | null;
  notes: string[];
}

/**
 * What {@link Trainmem.vocabulary} returns: the core's own tables, one list per request field
 * that takes a name (in the order error messages list them), and its numeric limits.
 */
export interface Vocabulary {
  /** Names of the core's functions (each is a method of {@link Trainmem}). */
  functions: FunctionName[];
  /** {@link OptimizerName}s. */
  optimizers: OptimizerName[];
  /** The state layout each optimizer name selects (an alias names another's layout). */
  optimizerLayouts: Record<OptimizerName, OptimizerName>;
  /** {@link DType}s, as error messages list them. */
  dtypes: DType[];
  /** Every dtype spelling accepted (also float, half, double, long, int, float8, float64). */
  dtypeSpellings: string[];
  /** {@link CheckpointingStrategy} names (peakMemory, accumulation). */
  checkpointing: CheckpointingStrategy[];
  /** The extra name accumulation's `checkpointing` takes: `auto`. */
  accumulationCheckpointing: 'auto';
  /** {@link PlacementStrategy} names (placement). */
  placementStrategies: PlacementStrategy[];
  /**
   * The strategies that plan under a `budgetBytes` (chen-greedy when given; optimal and
   * optimal-single-level always): peakMemory accepts a budget with these only, and a form asks
   * for one exactly when its strategy is listed here.
   */
  budgetStrategies: PlacementStrategy[];
  /** Per strategy: what it takes. */
  strategies: Record<
    CheckpointingStrategy,
    {
      /** The placement calculator runs it (full and the selective modes are not placements). */
      placement: boolean;
      /** `required`: it cannot plan without budgetBytes; `optional`: it plans under one if given. */
      budget: 'none' | 'optional' | 'required';
      /** Its own request fields (k, segments, snapshots, slots, checkpointed, saveOps, ...). */
      parameters: string[];
    }
  >;
  /** {@link Precision}s. */
  precisions: Precision[];
  /** peakMemory's `attention` names. */
  attention: string[];
  /** placement's `attention` names (model form). */
  placementAttention: string[];
  /** {@link Runtime}s. */
  runtimes: Runtime[];
  /** peakMemory's `optimizerImplementation` names. */
  optimizerImplementations: string[];
  /** peakMemory's `loss` names. */
  losses: string[];
  /** peakMemory's {@link PipelineSchedule}s. */
  pipelineSchedules: PipelineSchedule[];
  /** checkpointSize's `format` names. */
  checkpointFormats: string[];
  /** peakMemory's `mlp.activation` names. */
  mlpActivations: string[];
  /** {@link SaveOp}s (`checkpointing.saveOps`). */
  saveOps: SaveOp[];
  /** {@link FsdpShardingStrategy} names. */
  fsdpStrategies: FsdpShardingStrategy[];
  /** {@link Float8Recipe} names. */
  float8Recipes: Float8Recipe[];
  /** {@link ZeroMixedPrecision} names. */
  zeroMixedPrecision: ZeroMixedPrecision[];
  /** {@link ErrorCode}s with their meaning. */
  errorCodes: { code: ErrorCode; meaning: string }[];
  /** Numeric limits of requests (all whole numbers, inclusive). */
  limits: {
    /** `microBatch` (peakMemory, accumulation, placement): 16,777,216 (2^24). */
    microBatch: number;
    /** `gradientAccumulationSteps`, `accumulationSteps`: 16,777,216 (2^24). */
    accumulationSteps: number;
    /** `targetGlobalBatch`: 2,147,483,648 (2^31). */
    globalBatch: number;
    /** `seqLen`: 16,777,216 (2^24). */
    seqLen: number;
    /** `dataParallel`, `tensorParallel`, ...: 1,048,576 (2^20). */
    ranks: number;
    /** Layers of a placement chain: 100,000. */
    chainLayers: number;
    /** Events of a placement `timeline`: 10,000 (beyond: the highest of each of 10,000 runs). */
    timelineEvents: number;
    /** Bytes of a snapshot file (readSnapshot, compareSnapshot): 1,073,741,824 (1 GiB). */
    snapshotBytes: number;
    /** Largest integer a JSON number holds exactly: 9,007,199,254,740,992 (2^53). */
    exactJsonInteger: number;
    /** Request text: 16,777,216 bytes (16 MiB). */
    requestBytes: number;
    /** Request nesting depth: 64. */
    requestDepth: number;
    /** JSON values in one request: 1,000,000. */
    requestValues: number;
  };
}

// ---------------------------------------------------------------------------------------
// planLayout

/**
 * Request of {@link Trainmem.planLayout}: a cluster of `gpus` GPUs of one preset and a global
 * batch; every other field is a peakMemory input (model, precision, optimizer, runtime…). The
 * planner chooses tensorParallel, pipelineParallel (with schedule), dataParallel with its
 * sharding, microBatch, gradientAccumulationSteps and checkpointing: giving one is an error.
 */
export interface PlanLayoutRequest extends Omit<
  PeakMemoryRequest,
  | 'microBatch'
  | 'gradientAccumulationSteps'
  | 'dataParallel'
  | 'tensorParallel'
  | 'sequenceParallel'
  | 'pipelineParallel'
  | 'schedule'
  | 'virtualStages'
  | 'stageBlocks'
  | 'zeroStage'
  | 'fsdp'
  | 'ddp'
  | 'checkpointing'
  | 'timeline'
  | 'searchMaxMicroBatch'
> {
  /** GPUs in all, 1 to 1,048,576 (2^20). */
  gpus: number;
  /** GPUs per node (tensor parallelism stays inside one). Default 8 (or `gpus` when fewer). */
  gpusPerNode?: number;
  /** Sequences per optimizer step, all GPUs together, 1 to 2^31. */
  globalBatch: number;
  /** Tokens per sequence (required). */
  seqLen: number;
  /** A GPU preset id (required: its memory, dense peak and links). */
  gpu: string;
  /** GB/s per GPU and direction inside a node. Default: cpp/data/interconnects.json. */
  intraNodeGBps?: number;
  /** GB/s per GPU and direction across nodes. Default: cpp/data/interconnects.json. */
  interNodeGBps?: number;
  /** Share of the dense peak reached. Default 0.5 (docs/accumulation.md). */
  utilization?: number;
  /** Fixed cost per block and micro-batch, seconds. Default 0.00089. */
  overheadPerLayerSeconds?: number;
  /** Layouts that fit to list, 1 to 100. Default 10. */
  top?: number;
  /** Layouts whose memory is evaluated at most, 1 to 10,000. Default 400. */
  maxEvaluations?: number;
  /**
   * The largest size to try for each parallel dimension beyond TP, PP and DP, by its
   * peakMemory field: `contextParallel` (GPUs of its own: gpus = tp × pp × dp × cp; sizes whose
   * 2 × cp divides seqLen) and `expertParallel` (carved out of dp × cp × tp, sizes dividing the
   * experts; expertTensorParallel 1). Default 1: not tried.
   */
  explore?: { contextParallel?: number; expertParallel?: number };
  /** A layout to judge beside the plan (the one you run): `compared` in the result. */
  compare?: {
    tensorParallel?: number;
    pipelineParallel?: number;
    contextParallel?: number;
    expertParallel?: number;
    schedule?: '1f1b' | 'interleaved-1f1b' | 'zb-h1' | 'zb-v';
    sharding?: 'zero1' | 'fsdp';
    checkpointing?: 'none' | 'attention-recompute' | 'full';
    microBatch?: number;
  };
}

/** The estimated time of one optimizer step of a layout (docs/parallelism.md "Layout planner"). */
export interface LayoutStepTime {
  stepSeconds: number;
  /** FLOPs of the rank's micro-batches over the GPU's peak × utilization. */
  computeSeconds: number;
  /** Fixed cost per block and micro-batch. */
  overheadSeconds: number;
  /** Tensor-parallel all-reduces (or all-gather + reduce-scatter) inside the node. */
  tensorParallelSeconds: number;
  /** Activations and gradients sent between pipeline stages. */
  pipelineSendSeconds: number;
  /** Share of the pipeline's time idle in fill and drain. */
  bubbleFraction: number;
  bubbleSeconds: number;
  /** Context parallelism's all-gather of keys and values and reduce-scatter of their gradients. */
  contextParallelSeconds: number;
  /** Expert parallelism's dispatch and combine all-to-alls, forward and backward. */
  expertParallelSeconds: number;
  /**
   * Gradient reduce-scatter / all-reduce (and FSDP's parameter gathers) across the DP × CP
   * ranks; the routed experts' across their expert-data-parallel group.
   */
  dataParallelSeconds: number;
  optimizerSeconds: number;
  tokensPerSecondPerGpu: number;
  /** Model FLOPs over the cluster's peak (PaLM's MFU). */
  modelFlopsUtilization: number;
}

/** One layout the planner considered. */
export interface PlannedLayout {
  tensorParallel: number;
  pipelineParallel: number;
  dataParallel: number;
  /** Context-parallel ranks (1 unless `explore` allows more): gpus = tp × pp × dp × cp. */
  contextParallel: number;
  /** Expert-parallel ranks (1 unless `explore` allows more), out of dp × cp × tp. */
  expertParallel: number;
  /** The pipeline schedule, `none` without a pipeline. */
  schedule: PipelineSchedule | 'none';
  /** `zero1` (sharded optimizer state, Megatron's distributed optimizer) or `fsdp` (FSDP2). */
  sharding: 'zero1' | 'fsdp';
  checkpointing: 'none' | 'attention-recompute' | 'full';
  /** Sequences per micro-batch and data-parallel rank. */
  microBatch: number;
  /** Micro-batches per step on each data-parallel rank (the pipeline's m). */
  microBatches: number;
  /** `fits`, `does_not_fit`, `pruned` (ruled out by one that does not fit) or `error`. */
  status: 'fits' | 'does_not_fit' | 'pruned' | 'error';
  /** Device memory of the binding rank (nvidia-smi terms when the allocator is simulated). */
  peakBytes?: number;
  /** That rank's pipeline stage. */
  peakStage?: number;
  /** Why it does not fit or was not evaluated. */
  reason?: string;
  time: LayoutStepTime;
  /** The peakMemory fields that give this layout's memory when added to the request. */
  settings: Partial<PeakMemoryRequest>;
}

/** Result of {@link Trainmem.planLayout}. */
export interface PlanLayoutResult {
  /** The layouts that fit, fastest first (at most `top`). */
  layouts: PlannedLayout[];
  /** Faster layouts that do not fit or were ruled out, fastest first (at most 100). */
  fasterButRuledOut: PlannedLayout[];
  counts: {
    candidates: number;
    evaluated: number;
    peakEvaluations: number;
    pruned: number;
    notFitting: number;
    /** Slower than the listed layouts (or past the evaluation bound): not evaluated. */
    notEvaluated: number;
    evaluationBoundReached: boolean;
  };
  timeModel: {
    intraNodeBytesPerSecond: number;
    interNodeBytesPerSecond: number;
    intraNodeSource: string;
    interNodeSource: string;
    peakFlops: number;
    utilization: number;
    overheadPerLayerSeconds: number;
  };
  gpus: number;
  gpusPerNode: number;
  globalBatch: number;
  seqLen: number;
  gpuMemoryBytes: number;
  assumptions: string[];
  /** The request's `compare` layout, and how many candidates the time model ranks before it. */
  compared?: PlannedLayout & { fasterCandidates: number };
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

// advise
// ---------------------------------------------------------------------------------------

/**
 * Request of {@link Trainmem.advise}: a {@link PeakMemoryRequest} (the run) and how to judge it.
 */
export interface AdviseRequest extends PeakMemoryRequest {
  /** Memory to keep free on the GPU, in bytes: the verdict is `fits` only with this much left. */
  marginBytes?: number;
  /** The same as a fraction of the GPU's memory (0 to 0.9), e.g. 0.05. Default 0 (no margin). */
  marginFraction?: number;
  /** Pre-training rather than fine-tuning: LoRA and QLoRA are not offered as changes. Default false. */
  fromScratch?: boolean;
  /** Compute the changes that make the run fit (when it does not, or is tight). Default true. */
  changes?: boolean;
  /** The dtype a LoRA / QLoRA change loads the frozen base in (`lora.baseDtype`). Default: the core's. */
  loraBaseDtype?: 'fp32' | 'bf16' | 'fp16';
}

/**
 * `fits`: the GPU holds the run with the margin left free; `tight`: it holds it, with less than
 * the margin left; `doesNotFit`; `noDevice`: no GPU given.
 */
export type AdviseStatus = 'fits' | 'tight' | 'doesNotFit' | 'noDevice';

/** The verdict: what the GPU will hold against what it has. */
export interface AdviseVerdict {
  status: AdviseStatus;
  /** Whether the run fits the GPU at all (`fits` or `tight`); null without a GPU. */
  fits: boolean | null;
  /** The memory judged: what nvidia-smi shows when the allocator is simulated, else `peakBytes`. */
  usedBytes: number;
  /** Which memory `usedBytes` is: nvidia-smi's used memory, or the peak of allocated bytes (+ runtime). */
  usedMemory: 'nvidia-smi' | 'allocated';
  /** The GPU's memory (0 without a GPU). */
  capacityBytes: number;
  /** capacityBytes − usedBytes (negative: short by that much). */
  headroomBytes: number;
  /** The safety margin in bytes. */
  marginBytes: number;
}

/** Time of one optimizer step, as the accumulation planner times a plan; `note` says why not. */
export interface AdviseStepTime {
  /** microBatch × gradientAccumulationSteps × dataParallel. */
  globalBatch: number;
  /** Why the step is not timed (a custom GPU size, tensor parallelism); absent when timed. */
  note?: string;
  stepSeconds?: number;
  microStepSeconds?: number;
  /** The optimizer step's memory traffic over the GPU's bandwidth (0 when offloaded). */
  optimizerSeconds?: number;
  samplesPerSecond?: number;
  tokensPerSecond?: number;
  /** The dtype whose dense TFLOP/s the matmuls run at. */
  throughputPrecision?: string;
  /** The optimizer states are in CPU memory: the CPU's optimizer step is not in `stepSeconds`. */
  optimizerOnCpu?: boolean;
  /** A checkpointing strategy without a plan: its recompute taken as one forward of every block. */
  recomputeUpperBound?: boolean;
}

/** How the core resolved the run (request fields, the runtime's defaults). */
export interface AdviseSettings {
  method: 'full' | 'lora' | 'qlora' | 'from-scratch';
  precision: Precision;
  attention: 'eager' | 'sdpa';
  runtime: Runtime;
  optimizerImplementation: 'foreach' | 'for-loop' | 'fused' | 'transformers';
  checkpointing: string;
  microBatch: number;
  gradientAccumulationSteps: number;
  dataParallel: number;
  seqLen: number;
  loraRank?: number;
}

/** One change of the run, with its verdict and time. */
export interface AdviseChange {
  /** `checkpointing`, `micro-batch-1`, `mixed-precision`, `bf16`, `bf16-checkpointing`, `adam-8bit`, `for-loop`, `zero2-offload`, `lora`, `qlora`, `tensor-parallel`, `zero3`. */
  id: string;
  /** The request fields the change sets (objects merge into the request's). */
  set: Partial<PeakMemoryRequest>;
  /** GPUs the run needs with the change. */
  gpus: number;
  /** Full fine-tuning becomes LoRA / QLoRA. */
  changesMethod: boolean;
  status: AdviseStatus;
  fits: boolean | null;
  usedBytes: number;
  usedMemory: 'nvidia-smi' | 'allocated';
  headroomBytes: number;
  /** Its step time (absent when it does not fit). */
  time?: AdviseStepTime;
}

/** Result of {@link Trainmem.advise}. */
export interface AdviseResult {
  /** The run's whole {@link PeakMemoryResult} (with its timeline unless `timeline: false`). */
  peak: PeakMemoryResult;
  verdict: AdviseVerdict;
  settings: AdviseSettings;
  stepTime: AdviseStepTime;
  /** When the run does not fit or is tight: the changes, those that fit first (one GPU, the run's method, faster first). */
  changes: AdviseChange[];
  inexact?: InexactNumber[];
  messages?: MessageCodes;
}

export interface Functions {
  checkpointSize: [CheckpointSizeRequest, CheckpointSizeResult];
  describeModel: [DescribeModelRequest, DescribeModelResult];
  peakMemory: [PeakMemoryRequest, PeakMemoryResult];
  accumulation: [AccumulationRequest | AccumulationPlanRequest, AccumulationResult];
  placement: [PlacementRequest, PlacementResult];
  presets: [PresetsRequest, PresetsResult];
  advise: [AdviseRequest, AdviseResult];
  planLayout: [PlanLayoutRequest, PlanLayoutResult];
  vocabulary: [Record<string, never>, Vocabulary];
}
export type FunctionName = keyof Functions;

/** The loaded WebAssembly core. Every function is synchronous and throws {@link TrainmemError}. */
export interface Trainmem {
  /** Version of the core (equals the npm package version). */
  readonly version: string;
  /** Size of a checkpoint file: weights, master copy, optimizer state. */
  checkpointSize(request: CheckpointSizeRequest): CheckpointSizeResult;
  /** Parameter tensors, buffers and architecture of a model. */
  describeModel(request: DescribeModelRequest): DescribeModelResult;
  /** Peak memory of one training step, with breakdown and timeline. */
  peakMemory(request: PeakMemoryRequest): PeakMemoryResult;
  /** Effective batch of an accumulation setup (forward mode). */
  accumulation(request: AccumulationRequest): AccumulationForwardResult;
  /** Every split of a target batch, with peak memory and step time (plan mode). */
  accumulation(request: AccumulationPlanRequest): AccumulationPlanResult;
  /** Which layers to checkpoint for a memory budget. */
  placement(request: PlacementRequest): PlacementResult;
  /**
   * Will the run fit, and how fast? Its peak memory, the verdict against the GPU with a safety
   * margin, its time per optimizer step, and — when it does not fit — the changes that make it
   * fit, each with its verdict and time, ranked: one call for what the page's answer shows.
   * @example
   * const a = tm.advise({ model: { preset: 'llama-2-7b' }, gpu: 'a100-80gb', microBatch: 1, seqLen: 512, optimizer: 'adamw', marginFraction: 0.05 });
   * console.log(a.verdict.status, a.changes.filter((c) => c.fits).map((c) => c.id));
   */
  advise(request: AdviseRequest): AdviseResult;
  /**
   * The layouts of a cluster that fit — tensor × pipeline (with its schedule) × data parallel,
   * micro-batch, checkpointing and sharding — ranked by estimated step time, each with its
   * binding rank's memory, and the faster ones ruled out with the reason.
   * @example
   * const p = tm.planLayout({ model: { preset: 'llama-3-70b' }, gpu: 'h100-80gb', gpus: 64, gpusPerNode: 8, globalBatch: 1024, seqLen: 4096, precision: 'amp-bf16', optimizer: 'adamw' });
   * console.log(p.layouts[0].settings, p.layouts[0].time.stepSeconds);
   */
  planLayout(request: PlanLayoutRequest): PlanLayoutResult;
  /** Presets (models, GPUs, examples) of this build. */
  presets(request?: PresetsRequest): PresetsResult;
  /** Every name each request field accepts, the core's functions and its numeric limits. */
  vocabulary(request?: Record<string, never>): Vocabulary;
  /**
   * Reads a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`) or memory_stats() JSON:
   * allocated and reserved memory over time, the steps, the peak and what was live then.
   * Plain data only: a pickle that would import or call code is refused (code `unsupported`).
   * @example
   * const s = tm.readSnapshot(readFileSync('snapshot.pickle'));
   * console.log(s.peak.allocatedBytes, s.steps.count, s.causes.map((c) => c.code));
   */
  readSnapshot(bytes: SnapshotBytes, options?: ReadSnapshotOptions): SnapshotSummary;
  /**
   * The measured run beside trainmem's prediction of it: totals, the difference per category,
   * the predicted curve on the measured axes, and the likely causes, named.
   * @example
   * tm.compareSnapshot({ snapshot: bytes, request: { model: { preset: 'gpt2' }, microBatch: 8, seqLen: 1024 } });
   */
  compareSnapshot(request: CompareSnapshotRequest): CompareSnapshotResult;
  /**
   * Any function by name (the CLI uses this). The request may also be its JSON text: the core's
   * strict reader then checks what JavaScript's JSON.parse lets through (a duplicate key, a
   * number such as 1e400), naming the field.
   */
  call<K extends FunctionName>(name: K, request: Functions[K][0] | string): Functions[K][1];
  /**
   * JSON text read by the core's strict reader, as the requests are: a key twice in one object,
   * nesting over 64 levels, over 1,000,000 values or 16 MiB, or a number beyond a double is a
   * {@link TrainmemError} naming the field. The command line reads its `--json` files with it.
   */
  parseJson(text: string): unknown;
}

/**
 * An invalid request. The same instance keeps working after it. It is the one error class of
 * the package: the ES module and the CommonJS entry export the same class (`instanceof` holds
 * whichever way it was loaded), and the command line's errors extend it (adding the flag at
 * fault), so a program that catches `TrainmemError` catches every input error.
 * @example
 * try { tm.checkpointSize({ model: { params: -5 }, optimizer: 'adam' }) }
 * catch (e) { if (e instanceof TrainmemError) console.log(e.code, e.field) } // out_of_range model.params
 */
export declare class TrainmemError extends Error {
  constructor(
    code: ErrorCode | (string & {}),
    field: string,
    message: string,
    details?: { minimumBudgetBytes?: number; messages?: MessagePart[] },
  );
  readonly name: 'TrainmemError';
  /** Stable error code. */
  readonly code: ErrorCode | (string & {});
  /** Dotted path of the offending input, e.g. `"model.params"`, `"chain.layers[3].savedBytes"`; `""` for the whole request. */
  readonly field: string;
  /**
   * Code `"infeasible"` (placement with `budgetBytes`): the smallest budget, in bytes, that admits
   * a plan of the requested strategy (with `slots`, for `optimal`). Absent for other errors.
   */
  readonly minimumBudgetBytes?: number;
  /**
   * The message as codes and parameters of the core's message catalog (`cpp/data/messages.json`),
   * when it is one of its sentences, so that a page can say it in its own language; absent
   * otherwise.
   */
  readonly messages?: MessagePart[];
}

/**
 * Loads the WebAssembly core (once; later calls return the same instance). Works in Node ≥ 18
 * (`require` of the CommonJS entry: Node 20.19, 22.12 or later),
 * browsers, Web Workers and bundlers without configuration: the module is one file.
 */
export declare function load(): Promise<Trainmem>;

declare const trainmem: { load: typeof load; TrainmemError: typeof TrainmemError };
export default trainmem;
