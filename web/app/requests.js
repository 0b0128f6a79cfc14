// @ts-check
// Requests for the core, built from the page state. Only documented request keys are sent;
// optional ones only when the user set them, so the core's documented defaults apply.
/** @import { AccumulationPlanRequest, DType, FsdpShardingStrategy, FunctionName, PeakMemoryRequest, PlacementRequest, Precision } from '../lib/index.js' */
/** @import { State, Tab } from './types.js' */
import { TrainmemError } from '../lib/errors.js';
import { traced } from './trace.js';
import { resolve, gpuBf16, presetOfHubId } from './resolve.js';
import { modelInput } from './model-input.js';
import { BUDGET_STRATEGIES } from './vocabulary.js';

/**
 * A problem the page finds in its own inputs before a core call: a TrainmemError whose words
 * the page has in each language (`key`, `params`), and, for a Hub id, the known model it names.
 */
export class InputError extends TrainmemError {
  /**
   * @param {string} code
   * @param {string} field
   * @param {string} message
   * @param {{ key: string, params?: Record<string, string>, preset?: string }} words
   */
  constructor(code, field, message, { key, params = {}, preset = '' }) {
    super(code, field, message);
    this.key = key;
    this.params = params;
    this.preset = preset;
  }
}

// A Hugging Face model id ("meta-llama/Llama-3.1-8B"), or its page's address, pasted where the
// config.json's text goes.
const HUB_ID = /^\s*(?:https?:\/\/huggingface\.co\/)?([A-Za-z0-9][\w.-]*\/[\w.-]+?)\/?\s*$/;

/**
 * The error for text that is not JSON: a Hub id (the known model it names), or where it broke.
 * @param {string} text
 * @param {{ message: string }} e JSON.parse's error
 */
function configError(text, e) {
  const hub = HUB_ID.exec(text);
  if (hub) {
    const known = presetOfHubId(hub[1]);
    const message = `"${hub[1]}" is a Hugging Face model id, not a config.json: paste the text of huggingface.co/${hub[1]}/blob/main/config.json${known ? `, or pick the known model ${known.name}` : ''}`;
    return new InputError('invalid_json', 'model.config', message, {
      key: known ? 'error.hubIdKnown' : 'error.hubId',
      params: { id: hub[1], name: known?.name || '' },
      preset: known?.id || '',
    });
  }
  const where = /position (\d+)/.exec(String(e.message))?.[1];
  return new InputError(
    'invalid_json',
    'model.config',
    `config.json is not valid JSON (${e.message})`,
    { key: where ? 'error.configAt' : 'error.config', params: { at: where || '' } },
  );
}

/** @param {State} st */
export function modelOf(st) {
  // a dropped trace of the user's own model replaces the form's model until it is removed
  if (traced.text) return { trace: traced.text };
  if (st.modelSource === 'preset' && st.preset) return { preset: st.preset };
  if (st.modelSource === 'config') {
    let config;
    try {
      config = JSON.parse(st.config);
    } catch (e) {
      throw configError(st.config, /** @type {SyntaxError} */ (e));
    }
    if (!config || typeof config !== 'object' || Array.isArray(config)) {
      throw new InputError(
        'invalid_type',
        'model.config',
        'config.json must hold one JSON object',
        {
          key: 'error.configObject',
        },
      );
    }
    // the core reads the text itself, strictly: JSON.parse keeps the last of two duplicate keys
    // and turns 1e400 into Infinity, which the core reports naming the field
    return { config: st.config };
  }
  return { params: st.params };
}

// seqLen for a model that reads token sequences; a traced model only when its inputs have a
// sequence length (the core refuses it). An image network refuses seqLen; a diffusion network's
// text tokens, Whisper's frames and wav2vec2's samples are the core's defaults.
// imageSize and numClasses (vision networks; imageSize for diffusion) only when set.
/** @param {State} st */
function seqLenOf(st) {
  if (traced.text) return traced.hasSeq ? { seqLen: st.seqLen } : {};
  const input = modelInput(st);
  if (input === 'tokens') return { seqLen: st.seqLen };
  /** @type {{ imageSize?: number, numClasses?: number }} */
  const r = {};
  if (input !== 'audio' && st.imageSize > 0) r.imageSize = st.imageSize;
  if (input === 'image' && st.numClasses > 0) r.numClasses = st.numClasses;
  return r;
}

// A preset, or a custom size in GiB (the presets' "80 GB" are 80 GiB, as nvidia-smi counts).
/** @param {State} st */
function gpuOf(st) {
  return st.gpu ? { gpu: st.gpu } : { gpuMemoryBytes: Math.round(st.gpuGiB * 2 ** 30) };
}

/** @param {State} st */
export function checkpointSizeRequest(st) {
  st = resolve(st).st;
  /** @type {import('../lib/index.js').CheckpointSizeRequest} */
  const r = {
    model: modelOf(st),
    optimizer: st.optimizer,
    weightDtype: /** @type {DType} */ (st.weightDtype), // (resolved)
  };
  if (st.stateDtype) r.stateDtype = st.stateDtype;
  if (st.masterWeights) r.masterWeights = true;
  if (st.format) r.format = st.format;
  return r;
}

/** @param {State} st */
export function peakMemoryRequest(st) {
  st = resolve(st).st;
  /** @type {import('../lib/index.js').PeakMemoryRequest} */
  const r = {
    model: modelOf(st),
    microBatch: st.microBatch,
    ...seqLenOf(st),
    precision: /** @type {Precision} */ (st.precision), // (resolved)
    optimizer: st.optimizer,
    checkpointing: st.checkpointing,
    ...gpuOf(st),
  };
  // the budget belongs to the strategy: checkpointing { strategy, budgetBytes }
  if (BUDGET_STRATEGIES.includes(st.checkpointing)) {
    r.checkpointing = { strategy: st.checkpointing, budgetBytes: Math.round(st.budgetGB * 1e9) };
  }
  if (st.checkpointing === 'selective-op') r.checkpointing = selectiveOp(st);
  if (st.accumSteps > 1) r.gradientAccumulationSteps = st.accumSteps;
  if (st.dataParallel > 1) r.dataParallel = st.dataParallel;
  if (st.zeroStage !== '0') r.zeroStage = /** @type {0 | 1 | 2 | 3} */ (Number(st.zeroStage));
  return /** @type {PeakMemoryRequest} */ (
    withParallel(/** @type {PeakMemoryRequest} */ (withRuntime(r, st)), st)
  );
}

// Pipeline, context and expert parallelism (peak memory's alone: the accumulation planner
// takes none of them), each sent only when set.
/**
 * @param {Partial<PeakMemoryRequest>} r
 * @param {State} st
 */
function withParallel(r, st) {
  if (st.pipelineParallel > 1) {
    r.pipelineParallel = st.pipelineParallel;
    r.schedule = st.schedule;
    if (st.schedule === 'interleaved-1f1b') r.virtualStages = st.virtualStages;
  }
  if (st.contextParallel > 1) r.contextParallel = st.contextParallel;
  if (st.expertParallel > 1) r.expertParallel = st.expertParallel;
  if (st.expertTensorParallel > 1) r.expertTensorParallel = st.expertTensorParallel;
  return r;
}

/**
 * The layout planner's request: the cluster (gpus of the GPU preset, gpusPerNode), the global
 * batch and the model's context. It chooses the parallel sizes, micro-batch, sharding and
 * checkpointing itself; the attention, runtime and optimizer implementation are sent when set.
 * @param {State} st
 */
export function planLayoutRequest(st) {
  st = resolve(st).st;
  /** @type {import('../lib/index.js').PlanLayoutRequest} */
  const r = {
    model: modelOf(st),
    gpu: st.gpu,
    gpus: st.gpus,
    gpusPerNode: Math.min(st.gpusPerNode, st.gpus),
    globalBatch: st.targetGlobalBatch,
    seqLen: st.seqLen,
    precision: /** @type {Precision} */ (st.precision), // (resolved)
    optimizer: st.optimizer,
  };
  if (st.attention) r.attention = st.attention;
  if (st.runtime) r.runtime = st.runtime;
  if (st.optImpl) r.optimizerImplementation = st.optImpl;
  if (st.planCp > 1 || st.planEp > 1) {
    r.explore = {};
    if (st.planCp > 1) r.explore.contextParallel = st.planCp;
    if (st.planEp > 1) r.explore.expertParallel = st.planEp;
  }
  return r;
}

/**
 * The inputs of the peak-memory calculator that run one of the planner's layouts: its peakMemory
 * settings (PlannedLayout.settings) as a state patch, every parallel input set (those it does not
 * name back to one).
 * @param {Partial<PeakMemoryRequest>} s
 * @returns {Partial<State>}
 */
export function stateOfLayout(s) {
  const fsdp = s.fsdp || null;
  return /** @type {Partial<State>} */ ({
    tab: 'peak',
    microBatch: s.microBatch ?? 1,
    accumSteps: s.gradientAccumulationSteps ?? 1,
    dataParallel: s.dataParallel ?? 1,
    tensorParallel: s.tensorParallel ?? 1,
    sequenceParallel: !!s.sequenceParallel,
    pipelineParallel: s.pipelineParallel ?? 1,
    schedule: s.schedule ?? '1f1b',
    virtualStages: s.virtualStages ?? 2,
    contextParallel: s.contextParallel ?? 1,
    expertParallel: s.expertParallel ?? 1,
    expertTensorParallel: s.expertTensorParallel ?? 1,
    checkpointing: s.checkpointing ?? 'none',
    zeroStage: String(s.zeroStage ?? 0),
    fsdp: fsdp ? fsdp.shardingStrategy || 'FULL_SHARD' : '',
    fsdpGroup: 0,
    fsdpParamDtype: fsdp?.mixedPrecision?.paramDtype ?? '',
    fsdpReduceDtype: fsdp?.mixedPrecision?.reduceDtype ?? '',
    ddpBucketMb: 0,
    ddpBucketView: false,
  });
}

// A list typed as words or numbers separated by commas or spaces.
/** @param {string} text */
const listOf = (text) =>
  String(text || '')
    .split(/[\s,]+/)
    .filter(Boolean);

// selective-op checkpointing: the ops to keep, as typed (the core names an unknown one).
/** @param {State} st */
function selectiveOp(st) {
  /** @type {import('../lib/index.js').CheckpointingOptions} */
  const c = {
    strategy: 'selective-op',
    saveOps: /** @type {import('../lib/index.js').SaveOp[]} */ (listOf(st.saveOps)),
  };
  if (st.everyOtherMm) c.everyOtherMm = true;
  return c;
}

/** @param {State} st */
function fsdpOf(st) {
  /** @type {NonNullable<import('../lib/index.js').PeakMemoryRequest['fsdp']>} */
  const f = { shardingStrategy: /** @type {FsdpShardingStrategy} */ (st.fsdp) }; // (set)
  if (st.fsdpGroup > 0) f.shardGroupSize = st.fsdpGroup;
  if (st.fsdpParamDtype || st.fsdpReduceDtype) {
    f.mixedPrecision = {};
    if (st.fsdpParamDtype) f.mixedPrecision.paramDtype = st.fsdpParamDtype;
    if (st.fsdpReduceDtype) f.mixedPrecision.reduceDtype = st.fsdpReduceDtype;
  }
  return f;
}

// Whether the core reads lora.baseDtype (a core built before it refuses the key): asked once,
// after the first result (app.js), and left out of the requests until then.
let baseDtypeKnown = false;
/**
 * Whether the core refused (false) or took (true) lora.baseDtype.
 * @param {boolean} known
 */
export function knowBaseDtype(known) {
  baseDtypeKnown = known;
}
export const knowsBaseDtype = () => baseDtypeKnown;
/**
 * The smallest request that tells whether the core reads lora.baseDtype.
 * @type {PeakMemoryRequest}
 */
export const BASE_DTYPE_PROBE = {
  model: {
    config:
      '{"model_type":"llama","hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":1,"vocab_size":8}',
  },
  microBatch: 1,
  seqLen: 1,
  lora: { rank: 1, baseDtype: 'bf16' },
  simulateAllocator: false,
  timeline: false,
  searchMaxMicroBatch: false,
};

// What the step's peak depends on besides the model and batch: the attention implementation,
// the runtime (CUDA context) and the optimizer's implementation (its step temporaries), and the
// advanced inputs (LoRA / QLoRA, offload, tensor parallelism, the recipe options, the caching
// allocator). Each is sent only when set, so that the core's documented defaults apply.
/**
 * @param {Partial<PeakMemoryRequest> | Partial<AccumulationPlanRequest>} r
 * @param {State} st
 * @param {boolean} [planner] the layout planner's request (no padded lengths)
 */
function withRuntime(r, st, planner = false) {
  if (st.attention) r.attention = st.attention;
  if (st.runtime) r.runtime = st.runtime;
  if (st.optImpl) r.optimizerImplementation = st.optImpl;
  if (st.method === 'lora' || st.method === 'qlora') {
    /** @type {NonNullable<import('../lib/index.js').PeakMemoryRequest['lora']>} */
    const lora = { rank: st.loraRank };
    if (st.method === 'qlora') lora.qlora = true;
    if (st.baseDtype && baseDtypeKnown) lora.baseDtype = st.baseDtype;
    const targets = String(st.loraTargets || '')
      .split(/[\s,]+/)
      .filter(Boolean);
    if (targets.length)
      lora.targetModules = targets.includes('all-linear') ? 'all-linear' : targets;
    r.lora = lora;
  }
  if (st.offloadOptimizer || st.offloadParams) {
    r.offload = {};
    if (st.offloadOptimizer) r.offload.optimizer = true;
    if (st.offloadParams) r.offload.params = true;
  }
  if (st.tensorParallel > 1) r.tensorParallel = st.tensorParallel;
  if (st.sequenceParallel) r.sequenceParallel = true;
  if (st.compile) r.compile = true;
  if (st.activationOffloading) r.activationOffloading = true;
  if (st.optimizerInBackward) r.optimizerInBackward = true;
  if (st.loss) r.loss = st.loss;
  if (st.ddpBucketMb > 0 || st.ddpBucketView) {
    r.ddp = {};
    if (st.ddpBucketMb > 0) r.ddp.bucketCapMb = st.ddpBucketMb;
    if (st.ddpBucketView) r.ddp.gradientAsBucketView = true;
  }
  if (st.fsdp) r.fsdp = fsdpOf(st);
  if (st.zero3MaxLive > 0 || st.zero3Prefetch > 0) {
    r.zero3 = {};
    if (st.zero3MaxLive > 0) r.zero3.maxLiveParameters = st.zero3MaxLive;
    if (st.zero3Prefetch > 0) r.zero3.prefetchBucketSize = st.zero3Prefetch;
  }
  if (st.float8) r.float8 = { recipe: 'tensorwise' };
  if (st.packed) r.samples = { packed: true };
  // padded lengths are the peak's alone (the planner refuses them; their help says so)
  const lengths = planner ? [] : listOf(st.sampleLengths).map(Number);
  if (lengths.length) r.samples = { ...r.samples, lengths };
  if (st.targetLen > 0) r.targetLen = st.targetLen;
  if (st.allocConf && st.allocConf.trim()) r.allocator = st.allocConf.trim();
  if (st.simulateAllocator === false) r.simulateAllocator = false;
  return r;
}

/** @param {State} st */
export function accumulationRequest(st) {
  st = resolve(st).st;
  if (st.accMode === 'forward') {
    /** @type {import('../lib/index.js').AccumulationRequest} */
    const r = {
      microBatch: st.microBatch,
      accumulationSteps: st.accumSteps,
      dataParallel: st.dataParallel,
      seqLen: st.seqLen,
    };
    if (st.datasetSize > 0) r.datasetSize = st.datasetSize;
    return r;
  }
  /** @type {Partial<AccumulationPlanRequest>} */
  const plan = {
    targetGlobalBatch: st.targetGlobalBatch,
    model: modelOf(st),
    ...seqLenOf(st),
    precision: /** @type {Precision} */ (st.precision), // (resolved)
    optimizer: st.optimizer,
    // "whether checkpointing pays": without a strategy chosen, the planner compares none with
    // full (the core's "auto")
    checkpointing:
      st.checkpointing === 'none'
        ? 'auto'
        : st.checkpointing === 'selective-op'
          ? selectiveOp(st)
          : st.checkpointing,
    dataParallel: st.dataParallel,
    ...(st.zeroStage !== '0'
      ? { zeroStage: /** @type {0 | 1 | 2 | 3} */ (Number(st.zeroStage)) }
      : {}),
    ...gpuOf(st),
  };
  return /** @type {AccumulationPlanRequest} */ (withRuntime(plan, st, true));
}

/**
 * A uniform chain: n equal layers (Chen et al.'s setting), costs forward 1, backward 2.
 * @param {number} n
 * @param {number} layerBytes
 */
export function uniformChain(n, layerBytes) {
  const layer = {
    forwardCost: 1,
    backwardCost: 2,
    outputBytes: layerBytes,
    savedBytes: layerBytes,
  };
  return { inputBytes: layerBytes, layers: Array.from({ length: n }, () => ({ ...layer })) };
}

/** @param {State} st */
export function placementRequest(st) {
  st = resolve(st).st;
  /** @type {Record<string, unknown>} the chain form or the model form (PlacementRequest / the model's) */
  const r =
    st.chainSource === 'model'
      ? {
          model: modelOf(st),
          microBatch: st.microBatch,
          ...seqLenOf(st),
          precision: /** @type {Precision} */ (st.precision), // (resolved)
        }
      : { chain: uniformChain(st.layers, Math.round(st.layerMB * 1e6)) };
  r.strategy = st.strategy;
  if (st.strategy === 'every-k') r.k = st.k;
  if (st.strategy === 'sequential') r.segments = st.segments;
  if (st.strategy === 'revolve') r.snapshots = st.snapshots;
  if (BUDGET_STRATEGIES.includes(st.strategy)) {
    r.budgetBytes = Math.round(st.budgetGB * 1e9);
  }
  if (st.strategy === 'optimal') r.slots = st.slots;
  return r;
}

/** @type {Record<Tab, [FunctionName, (st: State) => object]>} */
export const BUILDERS = {
  size: ['checkpointSize', checkpointSizeRequest],
  peak: ['peakMemory', peakMemoryRequest],
  accum: ['accumulation', accumulationRequest],
  place: ['placement', placementRequest],
  plan: ['planLayout', planLayoutRequest],
};

/**
 * Calls of tens of milliseconds: the accumulation planner replays the caching allocator over
 * three training steps for each of its plans, advise for the run and each change that makes it
 * fit (bench/RESULTS.md). They run in a worker that stays alive, so that typing is not held up.
 * @param {Tab} tab
 */
export function isSlow(tab) {
  // the planner; and advise, the peak tab's call: the run, its changes and their times
  return tab === 'accum' || tab === 'peak';
}

/**
 * Solves that may take long run in the Web Worker.
 * @param {Tab} tab
 * @param {State} st
 */
export function isHeavy(tab, st) {
  // the planner evaluates up to hundreds of layouts' memory: seconds for a large cluster
  if (tab === 'plan') return true;
  if (tab === 'place') return BUDGET_STRATEGIES.includes(st.strategy) || st.frontier;
  if (tab === 'peak' || tab === 'accum') return BUDGET_STRATEGIES.includes(st.checkpointing);
  return false;
}

/**
 * The advise request of a state: its peakMemory request, the safety margin (a share of the GPU's
 * memory, or GB from an older link), whether it trains from scratch (adapters are then no way
 * out), and the dtype LoRA changes load the base in.
 * @param {State} st
 * @param {{ timeline?: boolean }} [options]
 */
export function adviseRequest(st, { timeline = true } = {}) {
  /** @type {import('../lib/index.js').AdviseRequest} */
  const r = peakMemoryRequest(st);
  if (st.marginGB > 0) r.marginBytes = Math.round(st.marginGB * 1e9);
  else if (st.marginPct > 0) r.marginFraction = st.marginPct / 100;
  if (st.method === 'scratch') r.fromScratch = true;
  if (baseDtypeKnown) r.loraBaseDtype = st.baseDtype || (gpuBf16(st) ? 'bf16' : 'fp16');
  if (!timeline) r.timeline = false;
  return r;
}

/**
 * The inputs a change of advise sets (its request fields, AdviseChange.set), as a state patch.
 * @param {Partial<PeakMemoryRequest>} set
 * @param {State} st the state it changes
 * @returns {Partial<State>}
 */
export function stateOfChange(set, st) {
  /** @type {Record<string, unknown>} */
  const p = {};
  if (set.lora) {
    p.method = set.lora.qlora ? 'qlora' : 'lora';
    if (set.lora.rank) p.loraRank = set.lora.rank;
    // a base dtype the page would pick anyway stays automatic
    if (set.lora.baseDtype && set.lora.baseDtype !== (gpuBf16(st) ? 'bf16' : 'fp16'))
      p.baseDtype = set.lora.baseDtype;
  }
  const direct = {
    checkpointing: 'checkpointing',
    microBatch: 'microBatch',
    gradientAccumulationSteps: 'accumSteps',
    dataParallel: 'dataParallel',
    tensorParallel: 'tensorParallel',
    sequenceParallel: 'sequenceParallel',
    pipelineParallel: 'pipelineParallel',
    schedule: 'schedule',
    virtualStages: 'virtualStages',
    contextParallel: 'contextParallel',
    expertParallel: 'expertParallel',
    optimizer: 'optimizer',
    optimizerImplementation: 'optImpl',
    precision: 'precision',
  };
  for (const [k, key] of Object.entries(direct))
    if (k in set) p[key] = /** @type {Record<string, unknown>} */ (set)[k];
  if ('zeroStage' in set) p.zeroStage = String(set.zeroStage);
  if (set.offload?.optimizer) p.offloadOptimizer = true;
  return /** @type {Partial<State>} */ (p);
}
