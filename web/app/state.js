// @ts-check
// The page state: every input, its default, its allowed values, and its URL key. The URL is
// parsed field by field against this schema (numbers must parse and lie in range, choices
// must be listed); anything else is dropped — URL text never reaches the DOM as markup.
/** @import { FieldKey, FieldSpec, State, Tab } from './types.js' */

import { FSDP_STRATEGIES, PIPELINE_SCHEDULES, PRECISIONS, RUNTIMES } from './vocabulary.js';

/** @type {Tab[]} */
export const TABS = ['size', 'peak', 'accum', 'place', 'plan'];
// Every name of the core's optimizer table (tm.vocabulary().optimizers; tests/js/vocabulary.test.js).
export const OPTIMIZERS = [
  'sgd',
  'sgd-momentum',
  'adam',
  'adamw',
  'adafactor',
  'adafactor-hf',
  'torch-adafactor',
  'lion',
  'adagrad',
  'rmsprop',
  'adam-8bit',
  'adamw-8bit',
  'paged-adamw-8bit',
  'torchao-adamw-8bit',
  'torchao-adamw-4bit',
  'torchao-adamw-fp8',
];
export const DTYPES = ['fp32', 'fp16', 'bf16', 'int8'];

// kind: 'int' | 'num' | 'choice' | 'bool' | 'text'
export const FIELDS = /** @satisfies {Record<string, FieldSpec>} */ ({
  lang: { kind: 'choice', values: ['en', 'ar'], default: '' },
  tab: { kind: 'choice', values: TABS, default: 'peak' },
  ex: { kind: 'text', max: 40, default: '' }, // worked example shown
  // shared context
  // First visit: LLaMA-2 7B (preset), so that every calculator answers at once.
  modelSource: {
    kind: 'choice',
    values: ['params', 'preset', 'config'],
    default: 'preset',
    url: 'ms',
  },
  params: { kind: 'int', min: 1, max: 1e15, default: 6738415616, url: 'p' },
  preset: { kind: 'text', max: 80, default: 'llama-2-7b', url: 'm' },
  config: { kind: 'text', max: 20000, default: '', url: 'cfg' },
  optimizer: { kind: 'choice', values: OPTIMIZERS, default: 'adamw', url: 'opt' },
  // First visit: the A100 80 GB preset (80 GiB, and the dense TFLOP/s that the accumulation
  // planner's step-time model needs: with a custom size alone that calculator had no answer).
  // '' is a custom size (gpuGiB: GiB, as the presets' "80 GB" and nvidia-smi's MiB count).
  gpu: { kind: 'text', max: 40, default: 'a100-80gb' },
  gpuGiB: { kind: 'num', min: 0.1, max: 1e5, default: 80, url: 'gib' },
  // What is trained: every weight (fine-tuning, or from scratch), or adapters on a frozen base.
  method: {
    kind: 'choice',
    values: ['full', 'lora', 'qlora', 'scratch'],
    default: 'full',
    url: 'mt',
  },
  microBatch: { kind: 'int', min: 1, max: 2 ** 24, default: 1, url: 'mb' }, // the core's limits
  seqLen: { kind: 'int', min: 1, max: 2 ** 24, default: 512, url: 'seq' },
  // vision and diffusion networks: the image's pixels per side and a classifier's outputs;
  // 0 = the model's own (its config's image_size, 224 for torchvision; its num_classes / labels)
  imageSize: { kind: 'int', min: 0, max: 16384, default: 0, url: 'img' },
  numClasses: { kind: 'int', min: 0, max: 2 ** 24, default: 0, url: 'nc' },
  // checkpoint size
  // '': the training precision's parameter dtype (resolve.js)
  weightDtype: { kind: 'choice', values: ['', ...DTYPES], default: '', url: 'wd' },
  stateDtype: { kind: 'choice', values: ['', ...DTYPES], default: '', url: 'sd' },
  masterWeights: { kind: 'bool', default: false, url: 'mw' },
  format: { kind: 'choice', values: ['', 'raw', 'torch', 'safetensors'], default: '', url: 'fmt' },
  // peak memory
  // '': mixed bf16 where the GPU computes in bf16, else mixed fp16 (resolve.js)
  precision: {
    kind: 'choice',
    values: ['', ...PRECISIONS],
    default: '',
    url: 'prec',
  },
  checkpointing: {
    kind: 'choice',
    values: [
      'none',
      'full',
      'torchtitan-op',
      'selective-layer',
      'attention-recompute',
      'selective-op',
      'sqrt',
      'every-k',
      'sequential',
      'optimal',
    ],
    default: 'none',
    url: 'ckpt',
  },
  accumSteps: { kind: 'int', min: 1, max: 2 ** 24, default: 1, url: 'gas' },
  dataParallel: { kind: 'int', min: 1, max: 2 ** 20, default: 1, url: 'dp' },
  zeroStage: { kind: 'choice', values: ['0', '1', '2', '3'], default: '0', url: 'zero' },
  attention: { kind: 'choice', values: ['', 'eager', 'sdpa'], default: '', url: 'attn' },
  runtime: {
    kind: 'choice',
    values: ['', ...RUNTIMES],
    default: '',
    url: 'rt',
  },
  optImpl: {
    kind: 'choice',
    values: ['', 'foreach', 'for-loop', 'fused', 'transformers'],
    default: '',
    url: 'oi',
  },
  // advanced (peak memory and the accumulation plans): LoRA / QLoRA, offload, parallelism,
  // the step's recipe options, the caching allocator, a safety margin
  // the dtype LoRA / QLoRA load the frozen base in ('': bf16 where the GPU has it, else fp16)
  baseDtype: { kind: 'choice', values: ['', 'bf16', 'fp16', 'fp32'], default: '', url: 'bd' },
  loraRank: { kind: 'int', min: 1, max: 4096, default: 16, url: 'lr' },
  loraTargets: { kind: 'text', max: 400, default: '', url: 'lt' },
  offloadOptimizer: { kind: 'bool', default: false, url: 'oo' },
  offloadParams: { kind: 'bool', default: false, url: 'op' },
  tensorParallel: { kind: 'int', min: 1, max: 4096, default: 1, url: 'tp' },
  sequenceParallel: { kind: 'bool', default: false, url: 'sp' },
  // pipeline parallelism: stages, the schedule, and interleaved 1F1B's model chunks per stage
  pipelineParallel: { kind: 'int', min: 1, max: 4096, default: 1, url: 'pp' },
  schedule: { kind: 'choice', values: PIPELINE_SCHEDULES, default: '1f1b', url: 'ps' },
  virtualStages: { kind: 'int', min: 2, max: 1024, default: 2, url: 'vs' },
  // context parallelism (ring attention); expert parallelism and its tensor split (MoE models)
  contextParallel: { kind: 'int', min: 1, max: 4096, default: 1, url: 'cp' },
  expertParallel: { kind: 'int', min: 1, max: 4096, default: 1, url: 'ep' },
  expertTensorParallel: { kind: 'int', min: 1, max: 4096, default: 1, url: 'etp' },
  compile: { kind: 'bool', default: false, url: 'cmp' },
  activationOffloading: { kind: 'bool', default: false, url: 'ao' },
  optimizerInBackward: { kind: 'bool', default: false, url: 'oib' },
  loss: {
    kind: 'choice',
    values: ['', 'chunked', 'liger-fused-linear'],
    default: '',
    url: 'loss',
  },
  // selective-op checkpointing: the ops each checkpointed block keeps ("mm, sdpa")
  saveOps: { kind: 'text', max: 100, default: 'mm, sdpa', url: 'so' },
  everyOtherMm: { kind: 'bool', default: false, url: 'eom' },
  // DDP's reducer (dataParallel > 1 without ZeRO or FSDP): bucket size in MiB (0 = 25) and
  // gradient_as_bucket_view
  ddpBucketMb: { kind: 'num', min: 0, max: 1e6, default: 0, url: 'dbm' },
  ddpBucketView: { kind: 'bool', default: false, url: 'dbv' },
  // FSDP over dataParallel ranks; HYBRID_SHARD shards within groups of fsdpGroup ranks
  fsdp: {
    kind: 'choice',
    values: ['', ...FSDP_STRATEGIES],
    default: '',
    url: 'fsdp',
  },
  fsdpGroup: { kind: 'int', min: 0, max: 2 ** 20, default: 0, url: 'fsg' },
  // FSDP's MixedPrecision policy: the dtype units are gathered in, and gradients reduced in
  fsdpParamDtype: { kind: 'choice', values: ['', 'bf16', 'fp16', 'fp32'], default: '', url: 'fpd' },
  fsdpReduceDtype: {
    kind: 'choice',
    values: ['', 'bf16', 'fp16', 'fp32'],
    default: '',
    url: 'frd',
  },
  // DeepSpeed ZeRO-3's coordinator limits, in elements; 0 = DeepSpeed's default
  zero3MaxLive: { kind: 'num', min: 0, max: 1e15, default: 0, url: 'z3l' },
  zero3Prefetch: { kind: 'num', min: 0, max: 1e15, default: 0, url: 'z3p' },
  float8: { kind: 'bool', default: false, url: 'f8' },
  packed: { kind: 'bool', default: false, url: 'pk' },
  // padded batches: the dataset's sample lengths in tokens ("512, 380, 1024")
  sampleLengths: { kind: 'text', max: 2000, default: '', url: 'sl' },
  // an encoder-decoder's decoder length; 0 = the encoder's (seqLen)
  targetLen: { kind: 'int', min: 0, max: 2 ** 24, default: 0, url: 'tl' },
  allocConf: { kind: 'text', max: 300, default: '', url: 'ac' },
  simulateAllocator: { kind: 'bool', default: true, url: 'sim' },
  // memory kept free on the GPU: the verdict says "fits" only with it left (a share of the
  // GPU's memory; marginGB, from links made before, in GB when set)
  marginPct: { kind: 'num', min: 0, max: 90, default: 5, url: 'mp' },
  marginGB: { kind: 'num', min: 0, max: 1e5, default: 0, url: 'mg' },
  // accumulation
  accMode: { kind: 'choice', values: ['plan', 'forward'], default: 'plan', url: 'am' },
  targetGlobalBatch: { kind: 'int', min: 1, max: 2 ** 31, default: 32, url: 'gbs' },
  datasetSize: { kind: 'int', min: 0, max: 1e12, default: 0, url: 'ds' },
  // the layout planner: the cluster (its GPU is the gpu preset, its global batch
  // targetGlobalBatch)
  gpus: { kind: 'int', min: 1, max: 2 ** 20, default: 16, url: 'gpus' },
  gpusPerNode: { kind: 'int', min: 1, max: 4096, default: 8, url: 'gpn' },
  // the largest context- and expert-parallel sizes the planner tries (planLayout's explore)
  planCp: { kind: 'int', min: 1, max: 4096, default: 1, url: 'pcp' },
  planEp: { kind: 'int', min: 1, max: 4096, default: 1, url: 'pep' },
  // placement
  chainSource: { kind: 'choice', values: ['uniform', 'model'], default: 'uniform', url: 'cs' },
  layers: { kind: 'int', min: 1, max: 100000, default: 32, url: 'n' },
  layerMB: { kind: 'num', min: 0.001, max: 1e7, default: 100, url: 'lmb' },
  strategy: {
    kind: 'choice',
    values: [
      'none',
      'sqrt',
      'every-k',
      'sequential',
      'chen-greedy',
      'revolve',
      'optimal-single-level',
      'optimal',
    ],
    default: 'sqrt',
    url: 'st',
  },
  k: { kind: 'int', min: 1, max: 100000, default: 4 },
  segments: { kind: 'int', min: 1, max: 100000, default: 4, url: 'seg' },
  snapshots: { kind: 'int', min: 1, max: 100000, default: 4, url: 'snap' },
  budgetGB: { kind: 'num', min: 0.000001, max: 1e6, default: 1, url: 'bud' },
  slots: { kind: 'int', min: 10, max: 5000, default: 500 },
  frontier: { kind: 'bool', default: true, url: 'fr' },
});

/** @returns {State} */
export function defaults() {
  /** @type {Record<string, unknown>} */
  const st = {};
  for (const [k, f] of Object.entries(FIELDS)) st[k] = f.default;
  return /** @type {State} */ (st);
}

/** A field's key in the URL. @param {string} k */
const urlKey = (k) => /** @type {Record<string, FieldSpec>} */ (FIELDS)[k].url || k;

/**
 * One value from text, or undefined when it does not fit the field.
 * @param {string} key
 * @param {unknown} text
 * @returns {string | number | boolean | undefined}
 */
export function parseField(key, text) {
  const f = /** @type {Record<string, FieldSpec | undefined>} */ (FIELDS)[key];
  if (!f || typeof text !== 'string') return undefined;
  switch (f.kind) {
    case 'int': {
      if (!/^\d{1,16}$/.test(text.trim())) return undefined;
      const n = Number(text);
      return n >= f.min && n <= f.max ? n : undefined;
    }
    case 'num': {
      if (!/^\d{0,16}(\.\d{0,12})?$/.test(text.trim()) || text.trim() === '' || text.trim() === '.')
        return undefined;
      const n = Number(text);
      return Number.isFinite(n) && n >= f.min && n <= f.max ? n : undefined;
    }
    case 'choice':
      return f.values.includes(text) ? text : undefined;
    case 'bool':
      return text === '1' ? true : text === '0' ? false : undefined;
    case 'text':
      return text.length <= f.max ? text : undefined;
    default:
      return undefined;
  }
}

// Links made before a default changed keep meaning what they meant: a link that sets any input
// and has no version (v) takes these defaults.
const LEGACY_DEFAULTS = { weightDtype: 'fp16', precision: 'amp-bf16', marginPct: 0 };
export const LINK_VERSION = '2';
const NOT_INPUTS = new Set(['lang', 'tab', 'ex', 'embed', 'show', 'tabs', 'v']);

/**
 * State from a query string ("?p=1&opt=adam"), defaults for what is absent or invalid.
 * @param {string} search
 * @param {State} [base]
 * @returns {State}
 */
export function fromQuery(search, base = defaults()) {
  const q = new URLSearchParams(search);
  const legacy = !q.has('v') && [...q.keys()].some((k) => !NOT_INPUTS.has(k));
  /** @type {Record<string, unknown>} */
  const st = legacy ? { ...base, ...LEGACY_DEFAULTS } : { ...base };
  for (const key of Object.keys(FIELDS)) {
    const raw = q.get(urlKey(key));
    if (raw === null) continue;
    const v = parseField(key, raw);
    if (v !== undefined) st[key] = v;
  }
  // Links from before the GPU preset became the default: a custom size and no GPU.
  if ((q.has('gb') || q.has(urlKey('gpuGiB'))) && !q.has(urlKey('gpu'))) st.gpu = '';
  // Links from before the custom size was in GiB: gb was in GB (10^9 bytes).
  const gb = parseField('gpuGiB', q.get('gb') ?? '');
  if (gb !== undefined && !q.has(urlKey('gpuGiB')))
    st.gpuGiB = Math.round(((Number(gb) * 1e9) / 2 ** 30) * 1e6) / 1e6;
  // Links from before the method was its own input: lora=lora | qlora.
  const lora = q.get('lora');
  if ((lora === 'lora' || lora === 'qlora') && !q.has(urlKey('method'))) st.method = lora;
  return /** @type {State} */ (st);
}

/**
 * Query string holding every value that differs from its default.
 * @param {State} st
 */
export function toQuery(st) {
  const q = new URLSearchParams();
  for (const [key, f] of Object.entries(FIELDS)) {
    const v = /** @type {Record<string, unknown>} */ (st)[key];
    if (v === undefined || v === f.default) continue;
    q.set(urlKey(key), f.kind === 'bool' ? (v ? '1' : '0') : String(v));
  }
  if ([...q.keys()].some((k) => !NOT_INPUTS.has(k))) q.set('v', LINK_VERSION);
  const s = q.toString();
  return s ? `?${s}` : '';
}
