// The flag table: each request flag names the request field it sets, so a new request field
// is one new row here (data, not code paths), and the CLI's own options.
export const MODEL_COMMANDS = [
  'checkpoint-size',
  'describe-model',
  'peak-memory',
  'accumulation',
  'placement',
];
export const TRAINING = ['peak-memory', 'accumulation'];

// kind: string | number | count (7e9, 6.7B, 100M) | bytes (80GB, 80GiB, 1e9) | boolean |
// jsonFile (path or '-') | model (preset id or a count). `path` is the request field it sets,
// either one dotted path or an object { command: path } where commands differ. `modelForm`
// flags choose the form of `model` (one per request; the first replaces a --json file's).
export const FLAGS = [
  {
    flag: 'max-allocated',
    kind: 'bytes',
    path: 'measured.maxAllocatedBytes',
    commands: ['compare-snapshot'],
    help: 'torch.cuda.max_memory_allocated()',
  },
  {
    flag: 'max-reserved',
    kind: 'bytes',
    path: 'measured.maxReservedBytes',
    commands: ['compare-snapshot'],
    help: 'torch.cuda.max_memory_reserved()',
  },
  {
    flag: 'nvidia-smi-used',
    kind: 'bytes',
    path: 'measured.nvidiaSmiUsedBytes',
    commands: ['compare-snapshot'],
    help: "nvidia-smi's used memory of the process",
  },
  {
    flag: 'model',
    kind: 'model',
    modelForm: true,
    path: 'model',
    commands: MODEL_COMMANDS,
    help: 'model preset id (llama-2-7b, gpt2, ...) or a parameter count (7e9, 6.7B)',
  },
  {
    flag: 'params',
    kind: 'count',
    modelForm: true,
    path: 'model.params',
    commands: MODEL_COMMANDS,
  },
  {
    flag: 'config',
    // passed as the file's text: the core's strict reader checks it (duplicate keys, 1e400)
    kind: 'textFile',
    modelForm: true,
    path: 'model.config',
    commands: MODEL_COMMANDS,
    help: "the model's HuggingFace config.json (file, or - for stdin)",
  },
  {
    flag: 'tensors',
    kind: 'jsonFile',
    modelForm: true,
    path: 'model.tensors',
    commands: MODEL_COMMANDS,
    help: 'JSON list of parameter tensors [{name, shape, dtype?, tiedTo?}]',
  },
  {
    flag: 'architecture',
    kind: 'string',
    path: 'model.architecture',
    commands: MODEL_COMMANDS,
    help: 'with --config: the HF class, e.g. BertForSequenceClassification',
  },
  {
    flag: 'optimizer',
    kind: 'string',
    path: 'optimizer',
    commands: ['checkpoint-size', ...TRAINING],
    help: 'sgd | sgd-momentum | adam | adamw | adagrad | rmsprop | adafactor | torch-adafactor | lion | adam-8bit | adamw-8bit | paged-adamw-8bit',
  },
  {
    flag: 'weight-dtype',
    kind: 'string',
    path: 'weightDtype',
    commands: ['checkpoint-size'],
    help: 'fp32 | fp16 | bf16 | int8 | ...',
  },
  { flag: 'state-dtype', kind: 'string', path: 'stateDtype', commands: ['checkpoint-size'] },
  {
    flag: 'master-weights',
    kind: 'boolean',
    path: 'masterWeights',
    commands: ['checkpoint-size'],
    help: 'an fp32 master copy of the weights is saved (mixed precision)',
  },
  {
    flag: 'file-format',
    kind: 'string',
    path: 'format',
    commands: ['checkpoint-size'],
    help: 'raw | torch | safetensors',
  },
  {
    flag: 'include-optimizer',
    kind: 'boolean',
    path: 'includeOptimizer',
    commands: ['checkpoint-size'],
  },
  {
    flag: 'file-name',
    kind: 'string',
    path: 'fileName',
    commands: ['checkpoint-size'],
    help: 'file name inside the torch zip (default checkpoint.pt / model.safetensors)',
  },
  {
    flag: 'max-shard-size',
    kind: 'bytes',
    path: 'maxShardBytes',
    commands: ['checkpoint-size'],
    help: 'safetensors: largest shard file (HF max_shard_size)',
  },
  {
    flag: 'precision',
    kind: 'string',
    path: 'precision',
    commands: TRAINING,
    help: 'fp32 | amp-fp16 | amp-bf16 | bf16',
  },
  {
    flag: 'micro-batch',
    kind: 'number',
    path: 'microBatch',
    commands: TRAINING,
  },
  { flag: 'seq-len', kind: 'number', path: 'seqLen', commands: TRAINING },
  {
    flag: 'target-len',
    kind: 'number',
    path: 'targetLen',
    commands: TRAINING,
    help: 'decoder length of T5 / mT5 (default: --seq-len)',
  },
  { flag: 'gpu', kind: 'string', path: 'gpu', commands: TRAINING, help: 'GPU preset id' },
  { flag: 'gpu-memory', kind: 'bytes', path: 'gpuMemoryBytes', commands: TRAINING },
  {
    flag: 'checkpointing',
    kind: 'string',
    path: 'checkpointing',
    commands: TRAINING,
    help: 'none | full | selective | every-k | block | sequential | sqrt | chen-greedy | revolve | optimal-single-level | optimal (accumulation: also auto)',
  },
  {
    flag: 'accumulation-steps',
    kind: 'number',
    path: { 'peak-memory': 'gradientAccumulationSteps', accumulation: 'accumulationSteps' },
    commands: TRAINING,
  },
  { flag: 'data-parallel', kind: 'number', path: 'dataParallel', commands: TRAINING },
  { flag: 'zero-stage', kind: 'number', path: 'zeroStage', commands: TRAINING },
  { flag: 'tensor-parallel', kind: 'number', path: 'tensorParallel', commands: TRAINING },
  {
    flag: 'sequence-parallel',
    kind: 'boolean',
    path: 'sequenceParallel',
    commands: TRAINING,
  },
  {
    flag: 'offload-optimizer',
    kind: 'boolean',
    path: 'offload.optimizer',
    commands: TRAINING,
    help: 'ZeRO: optimizer state in CPU memory',
  },
  {
    flag: 'offload-params',
    kind: 'boolean',
    path: 'offload.params',
    commands: TRAINING,
    help: 'ZeRO-3: parameters in CPU memory',
  },
  {
    flag: 'lora-rank',
    kind: 'number',
    path: 'lora.rank',
    commands: TRAINING,
    help: 'train LoRA adapters of this rank (frozen base)',
  },
  {
    flag: 'lora-targets',
    kind: 'list',
    path: 'lora.targetModules',
    commands: TRAINING,
    help: 'with --lora-rank: PEFT target_modules, comma-separated (q_proj,v_proj) or all-linear',
  },
  {
    flag: 'qlora',
    kind: 'boolean',
    path: 'lora.qlora',
    commands: TRAINING,
    help: 'with --lora-rank: 4-bit base weights (QLoRA)',
  },
  {
    flag: 'attention',
    kind: 'string',
    path: 'attention',
    commands: TRAINING,
    help: 'eager | sdpa | flash',
  },
  {
    flag: 'runtime',
    kind: 'string',
    path: 'runtime',
    commands: TRAINING,
    help: 'pytorch-cuda | pytorch-2.5-cuda | pytorch-2.0-cuda | pytorch-1.13-cuda | pytorch-1.10-cuda | pytorch-cpu',
  },
  {
    flag: 'optimizer-impl',
    kind: 'string',
    path: 'optimizerImplementation',
    commands: TRAINING,
    help: "foreach | for-loop | fused | transformers (default: the runtime's)",
  },
  {
    flag: 'allocator',
    kind: 'string',
    path: 'allocator',
    commands: TRAINING,
    help: 'PYTORCH_CUDA_ALLOC_CONF, e.g. expandable_segments:True,max_split_size_mb:128',
  },
  {
    flag: 'zero-grad-set-to-none',
    kind: 'boolean',
    path: 'zeroGradSetToNone',
    commands: TRAINING,
    help: "false: every .grad stays allocated between steps (default: the runtime's)",
  },
  {
    flag: 'compile',
    kind: 'boolean',
    path: 'compile',
    commands: ['peak-memory'],
    help: 'torch.compile of each block (inductor, default mode)',
  },
  {
    flag: 'activation-offloading',
    kind: 'boolean',
    path: 'activationOffloading',
    commands: ['peak-memory'],
    help: 'torchtune activation offloading to CPU',
  },
  {
    flag: 'loss',
    kind: 'string',
    path: 'loss',
    commands: ['peak-memory'],
    help: 'cross-entropy | chunked (torchtune, 8 chunks) | liger-fused-linear',
  },
  {
    flag: 'optimizer-in-backward',
    kind: 'boolean',
    path: 'optimizerInBackward',
    commands: ['peak-memory'],
    help: 'step each parameter in its gradient hook (torchtune optimizer_in_bwd)',
  },
  {
    flag: 'ddp-bucket-cap-mb',
    kind: 'number',
    path: 'ddp.bucketCapMb',
    commands: TRAINING,
    help: 'DDP bucket size in MiB (default 25)',
  },
  {
    flag: 'ddp-gradient-as-bucket-view',
    kind: 'boolean',
    path: 'ddp.gradientAsBucketView',
    commands: TRAINING,
    help: 'DDP .grad tensors as views of the buckets (no second copy)',
  },
  {
    flag: 'simulate-allocator',
    kind: 'boolean',
    path: 'simulateAllocator',
    commands: TRAINING,
    help: 'simulate the CUDA caching allocator (default true on CUDA)',
  },
  {
    flag: 'runtime-overhead',
    kind: 'bytes',
    path: 'runtimeOverheadBytes',
    commands: TRAINING,
    help: 'the CUDA context outside the caching allocator (overrides the runtime default)',
  },
  {
    flag: 'utilization',
    kind: 'number',
    path: 'utilization',
    commands: ['accumulation'],
    help: 'fraction of the GPU peak reached (default 0.5)',
  },
  {
    flag: 'gpu-peak-tflops',
    kind: 'number',
    path: 'gpuPeakTflops',
    commands: ['accumulation'],
  },
  {
    flag: 'target-global-batch',
    kind: 'number',
    path: 'targetGlobalBatch',
    commands: ['accumulation'],
  },
  { flag: 'dataset-size', kind: 'number', path: 'datasetSize', commands: ['accumulation'] },
  {
    flag: 'chain',
    kind: 'jsonFile',
    path: 'chain',
    commands: ['placement'],
    help: 'layer chain {inputBytes, layers: [...]} (file, or - for stdin)',
  },
  {
    flag: 'strategy',
    kind: 'string',
    path: 'strategy',
    commands: ['placement'],
    help: 'none | manual | every-k | block | sequential | sqrt | chen-greedy | revolve | optimal-single-level | optimal',
  },
  { flag: 'budget', kind: 'bytes', path: 'budgetBytes', commands: ['placement'] },
  { flag: 'greedy-bytes', kind: 'bytes', path: 'greedyBytes', commands: ['placement'] },
  { flag: 'k', kind: 'number', path: 'k', commands: ['placement'] },
  { flag: 'segments', kind: 'number', path: 'segments', commands: ['placement'] },
  { flag: 'snapshots', kind: 'number', path: 'snapshots', commands: ['placement'] },
  { flag: 'slots', kind: 'number', path: 'slots', commands: ['placement'] },
  { flag: 'frontier', kind: 'boolean', path: 'frontier', commands: ['placement'] },
];

// Options of the CLI itself (not request fields).

export const OPTIONS = [
  { flag: 'json', help: 'request file (JSON object, or an array of requests); - reads stdin' },
  {
    flag: 'set',
    help: 'set any request field: --set path.to.field=value (value parsed as JSON when it is JSON)',
  },
  { flag: 'vs', help: 'start another scenario: the flags after it change a copy of the request' },
  { flag: 'format', help: 'json (default) | table | markdown' },
  { flag: 'help', help: 'this help (also: trainmem <command> --help)' },
  { flag: 'version', help: 'print the version' },
];

export const FLAG_BY_NAME = new Map(FLAGS.map((f) => [f.flag, f]));
export const OPTION_NAMES = new Set(OPTIONS.map((o) => o.flag));

// compare-snapshot takes every peak-memory flag (its request is a peakMemory request).
export const flagCommand = (def, command) =>
  command === 'compare-snapshot' && !def.commands.includes(command) ? 'peak-memory' : command;
export function flagPath(def, command) {
  const c = flagCommand(def, command);
  return typeof def.path === 'string' ? def.path : def.path[c];
}
