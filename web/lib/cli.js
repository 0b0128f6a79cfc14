#!/usr/bin/env node
// trainmem command line: `trainmem <command> [flags]`. Flags map onto request fields through
// the FLAGS table below (data, not code paths), so a new request field is one new row.
// Output: the result as JSON on stdout (exit 0), or as a table / Markdown (--format).
// Bad input: {"error":{code, field, flag, message}} on stderr, exit 2, naming the flag.
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load, TrainmemError } from './index.js';

// ---- Commands --------------------------------------------------------------------------
export const COMMANDS = {
  'checkpoint-size': {
    fn: 'checkpointSize',
    summary: 'size of a checkpoint: weights, master copy and optimizer state (seed 003)',
    examples: [
      'trainmem checkpoint-size --model llama-2-7b --optimizer adamw --weight-dtype fp16',
      'trainmem checkpoint-size --params 100M --optimizer sgd --weight-dtype fp32 --vs --optimizer adam --weight-dtype bf16',
      'trainmem checkpoint-size --params 6738415616 --optimizer adamw --weight-dtype fp16 --master-weights --format table',
    ],
  },
  'describe-model': {
    fn: 'describeModel',
    summary: 'parameter tensors, buffers and architecture of a model',
    examples: [
      'trainmem describe-model --model gpt2 --format table',
      'trainmem describe-model --config ./config.json',
    ],
  },
  'peak-memory': {
    fn: 'peakMemory',
    summary: 'peak memory of one training step, with breakdown and timeline',
    examples: [
      'trainmem peak-memory --model llama-2-7b --optimizer adamw --precision amp-bf16 --micro-batch 4 --seq-len 2048 --gpu a100-80gb',
    ],
  },
  accumulation: {
    fn: 'accumulation',
    summary:
      'effective batch of a gradient-accumulation setup, or the plan that fits a target batch',
    examples: [
      'trainmem accumulation --micro-batch 4 --accumulation-steps 8 --data-parallel 2 --seq-len 2048',
      'trainmem accumulation --target-global-batch 64 --model bert-large-uncased --seq-len 512 --optimizer adamw --precision fp32 --gpu v100-16gb',
    ],
  },
  placement: {
    fn: 'placement',
    summary: 'which layers to checkpoint (activation recompute) for a memory budget',
    examples: [
      'trainmem placement --chain chain.json --strategy sqrt',
      'trainmem placement --chain chain.json --strategy optimal --budget 6GiB',
    ],
  },
  'compare-snapshot': {
    fn: 'compareSnapshot',
    summary:
      'a PyTorch memory snapshot (or memory_stats() JSON) beside the prediction of the same run',
    examples: [
      'trainmem compare-snapshot snapshot.pickle --model gpt2 --micro-batch 8 --seq-len 1024 --optimizer adamw',
      'trainmem compare-snapshot snapshot.pickle --model bert-large-uncased --micro-batch 4 --seq-len 512 --json',
      'trainmem compare-snapshot --model llama-2-7b --micro-batch 1 --seq-len 2048 --max-allocated 60GiB --nvidia-smi-used 71GiB',
    ],
  },
  presets: {
    fn: 'presets',
    summary: 'the presets this build knows (models, GPUs, examples)',
    examples: ['trainmem presets'],
  },
};
const ALL = Object.keys(COMMANDS);
const MODEL_COMMANDS = [
  'checkpoint-size',
  'describe-model',
  'peak-memory',
  'accumulation',
  'placement',
];
const TRAINING = ['peak-memory', 'accumulation'];

// ---- Flags -----------------------------------------------------------------------------
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
    vocab: 'optimizers',
  },
  {
    flag: 'weight-dtype',
    kind: 'string',
    path: 'weightDtype',
    commands: ['checkpoint-size'],
    vocab: 'dtypes',
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
    vocab: 'checkpointFormats',
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
    vocab: 'precisions',
  },
  {
    flag: 'micro-batch',
    kind: 'number',
    path: 'microBatch',
    commands: TRAINING,
  },
  { flag: 'seq-len', kind: 'number', path: 'seqLen', commands: TRAINING },
  { flag: 'gpu', kind: 'string', path: 'gpu', commands: TRAINING, help: 'GPU preset id' },
  { flag: 'gpu-memory', kind: 'bytes', path: 'gpuMemoryBytes', commands: TRAINING },
  {
    flag: 'checkpointing',
    kind: 'string',
    path: 'checkpointing',
    commands: TRAINING,
    vocab: 'checkpointing',
    help: '(accumulation: also auto)',
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
    vocab: 'attention',
  },
  {
    flag: 'runtime',
    kind: 'string',
    path: 'runtime',
    commands: TRAINING,
    vocab: 'runtimes',
  },
  {
    flag: 'optimizer-impl',
    kind: 'string',
    path: 'optimizerImplementation',
    commands: TRAINING,
    vocab: 'optimizerImplementations',
    help: "(default: the runtime's)",
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
    help: 'torch.compile of each block (Llama-family models)',
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
    vocab: 'losses',
    help: '(chunked: torchtune, 8 chunks)',
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
    vocab: 'placementStrategies',
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
const OPTIONS = [
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

// ---- Errors ----------------------------------------------------------------------------
class UsageError extends Error {
  constructor(code, flag, message, field = '') {
    super(message);
    this.code = code;
    this.flag = flag;
    this.field = field;
  }
}

function levenshtein(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length];
}
function suggest(word, candidates) {
  let best = '';
  let bestD = Infinity;
  for (const c of candidates) {
    const dist = levenshtein(word, c);
    if (dist < bestD) [best, bestD] = [c, dist];
  }
  return bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : '';
}

// ---- Values ----------------------------------------------------------------------------
const NUMBER = /^[+-]?(\d[\d_]*)?(\.\d+)?(e[+-]?\d+)?$/i;
const COUNT_SUFFIX = { k: 3, K: 3, m: 6, M: 6, b: 9, B: 9, g: 9, G: 9, t: 12, T: 12 };
// Decimal (SI) and binary (IEC) byte units. Source: IEC 80000-13.
const BYTE_UNITS = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  pb: 1e15,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  pib: 2 ** 50,
};

// A decimal number text -> the nearest double (parsed as a whole string, so 6.7e9 is exact).
function parseNumber(text, flag) {
  const t = String(text).trim();
  if (!t || !NUMBER.test(t) || !/\d/.test(t)) {
    throw new UsageError('invalid_number', flag, `--${flag} needs a number, got "${text}"`);
  }
  return Number(t.replace(/_/g, ''));
}
function parseCount(text, flag) {
  const m = /^(.*?)([kKmMbBgGtT])$/.exec(String(text).trim());
  if (!m) return parseNumber(text, flag);
  const base = String(m[1]).trim().replace(/_/g, '');
  if (!NUMBER.test(base) || !/\d/.test(base)) {
    throw new UsageError(
      'invalid_number',
      flag,
      `--${flag} needs a count like 7e9 or 6.7B, got "${text}"`,
    );
  }
  // Shift the decimal exponent in the text, so "6.7B" parses exactly like "6.7e9".
  const [, mant, exp = '0'] = /^([^eE]*)(?:[eE](.*))?$/.exec(base);
  return Number(`${mant}e${Number(exp) + COUNT_SUFFIX[m[2]]}`);
}
function parseBytes(text, flag) {
  const m = /^(.*?)\s*([kKmMgGtTpP]i?[bB]|[bB])$/.exec(String(text).trim());
  if (!m) return parseNumber(text, flag);
  const unit = BYTE_UNITS[m[2].toLowerCase()];
  const n = parseNumber(m[1], flag);
  if (unit >= 1e3 && unit % 1000 === 0) {
    const [, mant, exp = '0'] = /^([^eE]*)(?:[eE](.*))?$/.exec(m[1].trim().replace(/_/g, ''));
    return Number(`${mant}e${Number(exp) + Math.round(Math.log10(unit))}`);
  }
  return n * unit; // binary units: exact for any value a double can hold
}
function parseBoolean(text, flag) {
  if (text === undefined || text === true) return true;
  const t = String(text).toLowerCase();
  if (['true', 'yes', '1', 'on'].includes(t)) return true;
  if (['false', 'no', '0', 'off'].includes(t)) return false;
  throw new UsageError('invalid_boolean', flag, `--${flag} is true or false, got "${text}"`);
}

// Standard input of the current run (read once, on first use; main() sets the reader).
let readStdin = () => readFileSync(0, 'utf8');
let stdinText = null;
// A file's text, unparsed (or stdin for '-').
function readTextArg(file, flag) {
  try {
    if (file === '-') {
      if (stdinText === null) stdinText = readStdin();
      return stdinText;
    }
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(
      'file_not_readable',
      flag,
      `--${flag}: cannot read "${file}": ${e.code || e.message}`,
    );
  }
}

function readJsonArg(file, flag) {
  let text;
  try {
    if (file === '-') {
      if (stdinText === null) stdinText = readStdin();
      text = stdinText;
    } else {
      text = readFileSync(file, 'utf8');
    }
  } catch (e) {
    throw new UsageError(
      'file_not_readable',
      flag,
      `--${flag}: cannot read "${file}": ${e.code || e.message}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      'invalid_json',
      flag,
      `--${flag}: "${file}" is not valid JSON: ${e.message}`,
    );
  }
}

// ---- Request building ------------------------------------------------------------------
function setPath(obj, path, value) {
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    if (cur[p] === null || typeof cur[p] !== 'object' || Array.isArray(cur[p])) cur[p] = {};
    cur = cur[p];
  }
  cur[parts[parts.length - 1]] = value;
}

const FLAG_BY_NAME = new Map(FLAGS.map((f) => [f.flag, f]));
const OPTION_NAMES = new Set(OPTIONS.map((o) => o.flag));

// compare-snapshot takes every peak-memory flag (its request is a peakMemory request).
const flagCommand = (def, command) =>
  command === 'compare-snapshot' && !def.commands.includes(command) ? 'peak-memory' : command;
function flagPath(def, command) {
  const c = flagCommand(def, command);
  return typeof def.path === 'string' ? def.path : def.path[c];
}

// Applies one request flag to a scenario: { request, origin: Map(path -> '--flag') }.
function applyFlag(scenario, def, command, raw) {
  const flag = def.flag;
  if (!def.commands.includes(flagCommand(def, command))) {
    throw new UsageError(
      'flag_not_for_command',
      flag,
      `--${flag} does not apply to "${command}" (it applies to: ${def.commands.join(', ')})`,
    );
  }
  if (raw === undefined && def.kind !== 'boolean') {
    throw new UsageError('missing_value', flag, `--${flag} needs a value`);
  }
  const path = flagPath(def, command);
  let value;
  let target = path;
  switch (def.kind) {
    case 'string':
      value = String(raw);
      break;
    case 'number':
      value = parseNumber(raw, flag);
      break;
    case 'list':
      // "a,b" -> ["a", "b"]; PEFT's shorthand "all-linear" stays a string
      value = String(raw).toLowerCase() === 'all-linear' ? String(raw) : String(raw).split(',');
      break;
    case 'count':
      value = parseCount(raw, flag);
      break;
    case 'bytes':
      value = parseBytes(raw, flag);
      break;
    case 'boolean':
      value = parseBoolean(raw, flag);
      break;
    case 'jsonFile':
      value = readJsonArg(raw, flag);
      break;
    case 'textFile':
      value = readTextArg(raw, flag);
      break;
    case 'model': {
      // A count (7e9, 6.7B) -> model.params; anything else is a preset id.
      let count = null;
      try {
        count = parseCount(raw, flag);
      } catch {
        count = null;
      }
      target = count === null ? `${path}.preset` : `${path}.params`;
      value = count === null ? String(raw) : count;
      break;
    }
    default:
      throw new Error(`flag table: unknown kind ${def.kind}`);
  }
  if (def.modelForm) {
    // One model form per request: the first model flag of a scenario replaces the model of
    // the --json file (or of the scenario before --vs); two different ones conflict.
    if (scenario.modelFlag && scenario.modelFlag !== flag) {
      throw new UsageError(
        'conflicting_flags',
        flag,
        `--${flag} and --${scenario.modelFlag} both describe the model: give one`,
      );
    }
    if (!scenario.modelFlag) {
      // Keep the model modifiers this scenario's flags already set (--architecture).
      const prev = scenario.request.model;
      const kept = {};
      if (prev && typeof prev === 'object') {
        for (const [k, v] of Object.entries(prev)) {
          if (scenario.setHere.has(`model.${k}`)) kept[k] = v;
        }
      }
      scenario.request.model = kept;
      for (const k of [...scenario.origin.keys()]) {
        if ((k === 'model' || k.startsWith('model.')) && !scenario.setHere.has(k)) {
          scenario.origin.delete(k);
        }
      }
    }
    scenario.modelFlag = flag;
  }
  setPath(scenario.request, target, value);
  scenario.origin.set(target, `--${flag}`);
  scenario.setHere.add(target);
}

function applySet(scenario, raw) {
  if (raw === undefined || !String(raw).includes('=')) {
    throw new UsageError('invalid_set', 'set', '--set needs path=value, e.g. --set zeroStage=2');
  }
  const text = String(raw);
  const eq = text.indexOf('=');
  const path = text.slice(0, eq).trim();
  const valueText = text.slice(eq + 1);
  if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(path)) {
    throw new UsageError('invalid_set', 'set', `--set: "${path}" is not a dotted field path`);
  }
  let value;
  try {
    value = JSON.parse(valueText);
  } catch {
    value = valueText; // a bare word is a string: --set attention=sdpa
  }
  setPath(scenario.request, path, value);
  scenario.origin.set(path, '--set');
  scenario.setHere.add(path);
}

// argv -> { command, format, help, version, scenarios: [{ request, origin }] }
function parseArgs(argv) {
  const out = {
    command: null,
    format: 'json',
    help: false,
    version: false,
    scenarios: [],
    file: null,
  };
  const tokens = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      throw new UsageError('unexpected_argument', '', 'no positional arguments after --');
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      let name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      let value = eq > 0 ? a.slice(eq + 1) : undefined;
      let negated = false;
      if (name.startsWith('no-') && FLAG_BY_NAME.get(name.slice(3))?.kind === 'boolean') {
        name = name.slice(3);
        negated = true;
      }
      const def = FLAG_BY_NAME.get(name);
      const isOption = OPTION_NAMES.has(name);
      if (!def && !isOption) {
        const near = suggest(name, [...FLAG_BY_NAME.keys(), ...OPTION_NAMES]);
        throw new UsageError(
          'unknown_flag',
          name,
          `unknown flag --${name}${near ? ` (did you mean --${near}?)` : ''}`,
        );
      }
      const takesValue = isOption
        ? ['json', 'set', 'format'].includes(name)
        : def.kind !== 'boolean';
      if (negated) value = 'false';
      else if (value === undefined && takesValue) {
        const next = argv[i + 1];
        if (next !== undefined && (next === '-' || !next.startsWith('--'))) {
          value = next;
          i++;
        }
      } else if (value === undefined && !isOption && def.kind === 'boolean') {
        // A boolean takes an explicit true/false as its next word, nothing else.
        const next = argv[i + 1];
        if (next !== undefined && /^(true|false|yes|no|on|off)$/i.test(next)) {
          value = next;
          i++;
        }
      }
      tokens.push({ name, value, def });
    } else if (a === '-h') {
      tokens.push({ name: 'help' });
    } else if (out.command === null && tokens.length === 0) {
      out.command = a;
    } else if (out.command === 'compare-snapshot' && out.file === null) {
      out.file = a;
    } else {
      throw new UsageError(
        'unexpected_argument',
        '',
        `unexpected argument "${a}" (flags start with --)`,
      );
    }
  }
  for (const t of tokens) {
    if (t.name === 'help') out.help = true;
    if (t.name === 'version') out.version = true;
  }
  if (out.help || out.version) return out;
  if (out.command === null) {
    throw new UsageError(
      'missing_command',
      '',
      `name a command: ${ALL.join(' | ')} (trainmem --help shows examples)`,
    );
  }
  if (!COMMANDS[out.command]) {
    const near = suggest(out.command, ALL);
    throw new UsageError(
      'unknown_command',
      '',
      `unknown command "${out.command}"${near ? ` (did you mean "${near}"?)` : ''}; commands: ${ALL.join(', ')}`,
    );
  }

  // Scenarios: the base (--json file or {}), then one more after each --vs.
  let base = [{}];
  const baseTokens = [];
  const groups = [[]];
  for (const t of tokens) {
    if (t.name === 'vs') groups.push([]);
    else if (t.name === 'json' && out.command === 'compare-snapshot' && t.value === undefined) {
      out.format = 'json'; // compare-snapshot: a bare --json prints JSON (the default is a table)
      out.formatSet = true;
    } else if (t.name === 'json') {
      if (groups.length > 1) {
        throw new UsageError('invalid_vs', 'json', '--json goes before the first --vs');
      }
      if (t.value === undefined)
        throw new UsageError('missing_value', 'json', '--json needs a file (or -)');
      const data = readJsonArg(t.value, 'json');
      base = Array.isArray(data) ? data : [data];
      if (base.length === 0)
        throw new UsageError('invalid_json', 'json', '--json: the list of requests is empty');
      baseTokens.push(t);
    } else if (t.name === 'format') {
      if (!['json', 'table', 'markdown'].includes(t.value)) {
        throw new UsageError(
          'invalid_format',
          'format',
          `--format is json, table or markdown, got "${t.value ?? ''}"`,
        );
      }
      out.format = t.value;
      out.formatSet = true;
    } else groups[groups.length - 1].push(t);
  }
  if (out.command === 'compare-snapshot') {
    if (!out.formatSet) out.format = 'table';
    if (groups.length > 1 || base.length > 1) {
      throw new UsageError('invalid_vs', 'vs', 'compare-snapshot compares one request');
    }
  }
  if (groups.length > 1 && base.length > 1) {
    throw new UsageError('invalid_vs', 'vs', '--vs needs a single base request, not a --json list');
  }
  const apply = (scenario, group) => {
    for (const t of group) {
      if (t.name === 'set') applySet(scenario, t.value);
      else applyFlag(scenario, t.def, out.command, t.value);
    }
  };
  for (const req of base) {
    if (req === null || typeof req !== 'object' || Array.isArray(req)) {
      throw new UsageError('invalid_json', 'json', '--json: a request is a JSON object');
    }
    const scenario = {
      request: structuredClone(req),
      origin: new Map(),
      modelFlag: null,
      setHere: new Set(),
    };
    apply(scenario, groups[0]);
    out.scenarios.push(scenario);
  }
  for (const group of groups.slice(1)) {
    const prev = out.scenarios[out.scenarios.length - 1];
    const scenario = {
      request: structuredClone(prev.request),
      origin: new Map(prev.origin),
      modelFlag: null,
      setHere: new Set(),
    };
    apply(scenario, group);
    out.scenarios.push(scenario);
  }
  return out;
}

// The flag that set a field (or the closest enclosing field): "model.config.hidden_size"
// came from --config when --config set "model.config".
function flagForField(origin, field) {
  let f = field;
  while (f) {
    if (origin.has(f)) return origin.get(f);
    const cut = Math.max(f.lastIndexOf('.'), f.lastIndexOf('['));
    if (cut < 0) break;
    f = f.slice(0, cut);
  }
  return null;
}

// ---- Output ----------------------------------------------------------------------------
const isBytesKey = (path) => {
  const last = path
    .split('.')
    .pop()
    .replace(/\[\d+\]$/, '');
  if (/perParam|PerParam|fraction|Fraction/.test(last)) return false;
  return (
    /Bytes$|^bytes$|^differenceFromSimple$/.test(last) ||
    /(^|\.)(breakdown|optimizerStates)(\.|$)/.test(path)
  );
};
// Bytes in both unit systems, as the page shows them: decimal (GB = 10^9) and binary
// (GiB = 2^30), at the scale of the value.
const SCALES = [
  [1e12, 'TB', 2 ** 40, 'TiB'],
  [1e9, 'GB', 2 ** 30, 'GiB'],
  [1e6, 'MB', 2 ** 20, 'MiB'],
  [1e3, 'kB', 2 ** 10, 'KiB'],
];
const humanBytes = (n) => {
  const s = SCALES.find(([d]) => Math.abs(n) >= d);
  if (!s) return '';
  return `${(n / s[0]).toFixed(2)} ${s[1]}, ${(n / s[2]).toFixed(2)} ${s[3]}`;
};

function flatten(value, path, rows) {
  if (Array.isArray(value)) {
    if (value.every((v) => v === null || typeof v !== 'object') && value.length <= 16) {
      rows.push([path, JSON.stringify(value)]);
    } else if (
      value.length > 16 ||
      value.some(
        (v) => v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 8,
      )
    ) {
      rows.push([path, `(${value.length} entries: see --format json)`]);
    } else {
      value.forEach((v, i) => flatten(v, `${path}[${i}]`, rows));
    }
  } else if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) rows.push([path, '{}']);
    for (const k of keys) flatten(value[k], path ? `${path}.${k}` : k, rows);
  } else {
    rows.push([path, value]);
  }
}

function tableRows(results) {
  const perResult = results.map((r) => {
    const rows = [];
    flatten(r, '', rows);
    return new Map(rows);
  });
  const paths = [];
  for (const m of perResult) for (const p of m.keys()) if (!paths.includes(p)) paths.push(p);
  return paths.map((p) => {
    const cells = perResult.map((m) => (m.has(p) ? m.get(p) : ''));
    const bytes = isBytesKey(p);
    return { path: p, cells, bytes };
  });
}

const cellText = (v, bytes) => {
  if (typeof v === 'number') {
    const plain = Number.isInteger(v) ? v.toLocaleString('en-US') : String(v);
    const human = bytes ? humanBytes(v) : '';
    return human ? `${plain} (${human})` : plain;
  }
  return String(v);
};

// Plain tables: numbers right-aligned, text left-aligned and cut at TEXT_WIDTH characters
// (--format json or markdown keep every character).
const TEXT_WIDTH = 72;
function renderTable(results, markdown) {
  const heads = ['field', ...results.map((_, i) => (results.length > 1 ? `#${i + 1}` : 'value'))];
  const rows = tableRows(results);
  if (markdown) {
    const esc = (s) => String(s).replace(/\|/g, '\\|');
    const body = rows.map((r) => [r.path, ...r.cells.map((c) => cellText(c, r.bytes))]);
    return [
      `| ${heads.join(' | ')} |`,
      `| ${heads.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
      ...body.map((r) => `| ${r.map(esc).join(' | ')} |`),
    ].join('\n');
  }
  const cut = (t) => (t.length > TEXT_WIDTH ? `${t.slice(0, TEXT_WIDTH - 1)}…` : t);
  const body = rows.map((r) => [
    { text: r.path, right: false },
    ...r.cells.map((c) => ({ text: cut(cellText(c, r.bytes)), right: typeof c === 'number' })),
  ]);
  const widths = heads.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].text.length)));
  const line = (r) =>
    r
      .map((c, i) => (c.right ? c.text.padStart(widths[i]) : c.text.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [
    line(heads.map((text) => ({ text, right: false }))),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(line),
  ].join('\n');
}

// compare-snapshot's table: totals, the difference per category, the steps, the peak, causes.
function renderComparison(r, markdown) {
  const b = (n) => (n === null || n === undefined ? '—' : cellText(n, true));
  const sections = [];
  const table = (heads, rows) => {
    if (markdown) {
      return [
        `| ${heads.join(' | ')} |`,
        `| ${heads.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
        ...rows.map((row) => `| ${row.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`),
      ].join('\n');
    }
    const widths = heads.map((h, i) =>
      Math.max(h.length, ...rows.map((row) => String(row[i]).length)),
    );
    const line = (row) =>
      row
        .map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i])))
        .join('  ')
        .trimEnd();
    return [line(heads), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
  };
  sections.push(
    table(
      ['total', 'measured', 'predicted', 'difference'],
      r.totals.map((t) => [t.what, b(t.measuredBytes), b(t.predictedBytes), b(t.differenceBytes)]),
    ),
  );
  sections.push(
    table(
      ['at the peak', 'measured', 'predicted', 'difference'],
      r.categories.map((c) => [
        c.category,
        b(c.measuredBytes),
        b(c.predictedBytes),
        b(c.differenceBytes),
      ]),
    ),
  );
  const m = r.measured;
  if (m && m.source === 'snapshot') {
    const phase = m.peak.phase ? `, ${m.peak.phase}` : '';
    const step =
      m.peak.step >= 0 ? `step ${m.peak.step + 1} of ${m.steps.count}` : 'outside a step';
    sections.push(
      [
        `steps: ${m.steps.count} (${m.steps.method}); peak at trace entry ${m.peak.event} (${step}${phase})`,
        ...m.peak.topFrames
          .slice(0, 5)
          .map(
            (f) =>
              `  ${b(f.bytes).padStart(28)}  ${f.filename ? `${f.filename}:${f.line} ` : ''}${f.name} [${f.category}]`,
          ),
      ].join('\n'),
    );
  }
  sections.push(
    r.causes.length
      ? ['likely causes:', ...r.causes.map((c) => `  - ${c.message} [${c.code}]`)].join('\n')
      : 'likely causes: none found',
  );
  return sections.join('\n\n');
}

// ---- Help ------------------------------------------------------------------------------
const ARG_LABEL = {
  model: 'id|count',
  count: 'count',
  jsonFile: 'file|-',
  textFile: 'file|-',
  bytes: 'bytes',
  number: 'number',
  string: 'value',
  list: 'a,b|all-linear',
};

// `vocabulary`: the core's tables (tm.vocabulary()); a flag with `vocab` lists that table.
function helpText(command, vocabulary) {
  const lines = [];
  if (command && COMMANDS[command]) {
    const c = COMMANDS[command];
    lines.push(
      `trainmem ${command}: ${c.summary}`,
      '',
      `usage: trainmem ${command}${command === 'compare-snapshot' ? ' [snapshot.pickle | memory_stats.json]' : ''} [flags]`,
      '',
      'flags (request field they set):',
    );
    for (const f of FLAGS.filter((d) => d.commands.includes(flagCommand(d, command)))) {
      const path = f.kind === 'model' ? 'model.preset | model.params' : flagPath(f, command);
      const arg = f.kind === 'boolean' ? '' : ` <${ARG_LABEL[f.kind]}>`;
      const names = f.vocab ? vocabulary[f.vocab].join(' | ') : '';
      const help = [names, f.help].filter(Boolean).join(' ');
      lines.push(`  --${f.flag}${arg}`.padEnd(34) + ` ${path}${help ? `: ${help}` : ''}`);
    }
  } else {
    lines.push(
      'trainmem: training memory, exactly (checkpoint size, peak memory, accumulation, checkpoint placement)',
      '',
      'usage: trainmem <command> [flags]',
      '',
      'commands:',
      ...ALL.map((k) => `  ${k.padEnd(18)} ${COMMANDS[k].summary}`),
      '',
      'request flags: trainmem <command> --help lists the flags of a command.',
    );
  }
  lines.push('', 'options:');
  for (const o of OPTIONS) lines.push(`  --${o.flag}`.padEnd(34) + ` ${o.help}`);
  lines.push(
    '',
    'numbers: counts take k/M/B/T (6.7B = 6.7e9); bytes take B, kB, MB, GB, TB (10^3 steps) or KiB, MiB, GiB, TiB (2^10 steps).',
    'output: the result as JSON on stdout (exit 0); bad input: {"error":{code, field, flag, message}} on stderr (exit 2).',
    '',
    'examples:',
  );
  const examples =
    command && COMMANDS[command]
      ? COMMANDS[command].examples
      : ALL.flatMap((k) => COMMANDS[k].examples.slice(0, 1));
  for (const e of examples) lines.push(`  ${e}`);
  if (!command)
    lines.push(
      '  trainmem checkpoint-size --json request.json',
      '  echo \'{"model":{"params":7e9},"optimizer":"adam"}\' | trainmem checkpoint-size --json -',
    );
  return lines.join('\n') + '\n';
}

// ---- Main ------------------------------------------------------------------------------
const processIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  stdin: () => readFileSync(0, 'utf8'),
};

/**
 * Runs the CLI on `argv` (without node and the script). Returns the exit code: 0 result on
 * `io.out`; 2 bad input, 1 internal error, each as {"error":{...}} on `io.err`.
 */
export async function main(argv, io = processIo) {
  readStdin = io.stdin;
  stdinText = null;
  const fail = (err, code = 2) => {
    io.err(`${JSON.stringify({ error: err })}\n`);
    return code;
  };
  try {
    let args;
    try {
      args = parseArgs(argv);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      return fail({
        code: e.code,
        field: e.field,
        flag: e.flag ? `--${e.flag}` : null,
        message: e.message,
      });
    }
    const tm = await load();
    if (args.help) {
      io.out(helpText(args.command, tm.vocabulary()));
      return 0;
    }
    if (args.version) {
      io.out(`${tm.version}\n`);
      return 0;
    }
    const fn = COMMANDS[args.command].fn;
    const results = [];
    let snapshot;
    if (args.command === 'compare-snapshot' && args.file !== null) {
      try {
        snapshot = readFileSync(args.file);
      } catch (e) {
        return fail({ code: 'unreadable_file', field: 'snapshot', flag: null, message: e.message });
      }
    }
    for (const [i, s] of args.scenarios.entries()) {
      try {
        if (args.command === 'compare-snapshot') {
          const { measured, ...request } = s.request;
          const r = { request };
          if (measured !== undefined) r.measured = measured;
          if (snapshot !== undefined) r.snapshot = snapshot;
          results.push(tm.compareSnapshot(r));
        } else results.push(tm[fn](s.request));
      } catch (e) {
        if (!(e instanceof TrainmemError)) throw e;
        // compare-snapshot: the flags set `request.*` (the peakMemory request) and `measured.*`.
        const field =
          args.command === 'compare-snapshot' && e.field.startsWith('request.')
            ? e.field.slice('request.'.length)
            : e.field;
        const err = {
          code: e.code,
          field: e.field,
          flag: e.field === 'snapshot' ? null : flagForField(s.origin, field),
          message: e.message,
        };
        if (args.scenarios.length > 1) err.scenario = i + 1;
        return fail(err, e.code === 'internal' ? 1 : 2);
      }
    }
    const text =
      args.format === 'json'
        ? JSON.stringify(results.length === 1 ? results[0] : results, null, 2)
        : args.command === 'compare-snapshot'
          ? renderComparison(results[0], args.format === 'markdown')
          : renderTable(results, args.format === 'markdown');
    io.out(`${text}\n`);
    return 0;
  } catch (e) {
    return fail({ code: 'internal', field: '', flag: null, message: String(e?.stack ?? e) }, 1);
  }
}

// Run when executed (also through the npm bin symlink), not when imported by the tests.
const self = fileURLToPath(import.meta.url);
const invoked = process.argv[1] ? realpathSync(process.argv[1]) : '';
if (invoked === self || invoked === realpathSync(self)) {
  process.exitCode = await main(process.argv.slice(2));
}
