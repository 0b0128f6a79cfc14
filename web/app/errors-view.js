// @ts-check
// Errors as users read them, in the page's language: what is wrong (the core's sentence when
// its message catalog spells it, else the error code's sentence with the input's label), what
// to do, and a way out: a button to the input at fault (opening its section), the precision the
// GPU supports, the smallest feasible budget. The core's own English text follows, folded away,
// on a page in another language. Each function takes the controller's live state ctx first.
/** @import { MessageCodes } from '../lib/index.js' */
/** @import { Ctx, PageError } from './types.js' */
import { h } from './dom.js';
import { traced, tracedLine } from './trace.js';

/** The page input behind a request field (the first one or two parts of its path). */
const FIELD_INPUTS = {
  model: 'preset',
  'model.config': 'config',
  'model.params': 'params',
  'model.preset': 'preset',
  optimizer: 'optimizer',
  microBatch: 'microBatch',
  seqLen: 'seqLen',
  imageSize: 'imageSize',
  'imageSize[0]': 'imageSize',
  'imageSize[1]': 'imageSize',
  numClasses: 'numClasses',
  targetLen: 'targetLen',
  precision: 'precision',
  checkpointing: 'checkpointing',
  'checkpointing.saveOps': 'saveOps',
  gradientAccumulationSteps: 'accumSteps',
  dataParallel: 'dataParallel',
  zeroStage: 'zeroStage',
  attention: 'attention',
  runtime: 'runtime',
  optimizerImplementation: 'optImpl',
  lora: 'method',
  'lora.rank': 'loraRank',
  'lora.targetModules': 'loraTargets',
  'lora.baseDtype': 'baseDtype',
  offload: 'offloadOptimizer',
  'offload.optimizer': 'offloadOptimizer',
  'offload.params': 'offloadParams',
  tensorParallel: 'tensorParallel',
  sequenceParallel: 'sequenceParallel',
  pipelineParallel: 'pipelineParallel',
  schedule: 'schedule',
  virtualStages: 'virtualStages',
  stageBlocks: 'pipelineParallel',
  contextParallel: 'contextParallel',
  contextParallelism: 'contextParallel',
  expertParallel: 'expertParallel',
  expertTensorParallel: 'expertTensorParallel',
  expertParallelism: 'expertParallel',
  gpus: 'gpus',
  gpusPerNode: 'gpusPerNode',
  'explore.contextParallel': 'planCp',
  'explore.expertParallel': 'planEp',
  globalBatch: 'targetGlobalBatch',
  compile: 'compile',
  activationOffloading: 'activationOffloading',
  optimizerInBackward: 'optimizerInBackward',
  loss: 'loss',
  float8: 'float8',
  samples: 'packed',
  'samples.lengths': 'sampleLengths',
  allocator: 'allocConf',
  simulateAllocator: 'simulateAllocator',
  gpu: 'gpu',
  gpuMemoryBytes: 'gpuGiB',
  gpuPeakTflops: 'gpu',
  ddp: 'ddpBucketMb',
  'ddp.bucketCapMb': 'ddpBucketMb',
  fsdp: 'fsdp',
  'fsdp.shardGroupSize': 'fsdpGroup',
  'fsdp.mixedPrecision': 'fsdpParamDtype',
  zero3: 'zero3MaxLive',
  'zero3.maxLiveParameters': 'zero3MaxLive',
  'zero3.prefetchBucketSize': 'zero3Prefetch',
  targetGlobalBatch: 'targetGlobalBatch',
  budgetBytes: 'budgetGB',
  'checkpointing.budgetBytes': 'budgetGB',
};

/**
 * The page input behind an error's field, or ''.
 * @param {string} field
 */
export function inputOf(field) {
  const parts = String(field || '').split('.');
  const two = parts.slice(0, 2).join('.');
  /** @type {Record<string, string>} */
  const inputs = FIELD_INPUTS;
  return inputs[two] || inputs[parts[0]] || '';
}

// An infeasible placement budget: the core's minimum, and one click to use it (rounded up to
// whole MB so that it is not below the minimum).
/**
 * @param {Ctx} ctx
 * @param {PageError} e
 */
function minimumBudget(ctx, e) {
  const { t } = ctx;
  return h(
    'p',
    { class: 'minimum-budget' },
    t('error.minimumBudget'),
    ' ',
    t.both(/** @type {number} */ (e.minimumBudgetBytes)),
    ' ',
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        onclick: () =>
          ctx.update(
            { budgetGB: Math.ceil(/** @type {number} */ (e.minimumBudgetBytes) / 1e6) / 1e3 },
            { rebuild: true },
          ),
      },
      t('error.useMinimum'),
    ),
  );
}

/**
 * @param {Ctx} ctx
 * @param {string} label
 * @param {() => void} onclick
 */
const wayOutLine = (ctx, label, onclick, cls = '') =>
  h(
    'p',
    { class: 'way-out' },
    ctx.t('error.fixIt'),
    ' ',
    h('button', { type: 'button', class: `small${cls ? ` ${cls}` : ''}`, onclick }, label),
  );

// Every error offers a way out: the precision the GPU supports, the GPU picker for TFLOP/s, or
// the input that is at fault (opened and focused).
/**
 * @param {Ctx} ctx
 * @param {PageError} e
 * @param {HTMLElement | null} input
 */
function wayOut(ctx, e, input) {
  const { t, rootEl } = ctx;
  if (e.field === 'precision' && /amp-fp16/.test(String(e.message)))
    return wayOutLine(ctx, t('error.useFp16'), () => {
      ctx.update({ precision: 'amp-fp16' }, { rebuild: true });
      rootEl.querySelector(/** @type {'div'} */ ('#tm-verdict, #tm-results'))?.focus?.();
    });
  if (e.preset)
    return wayOutLine(ctx, t('error.usePresetModel', { name: e.params?.name || e.preset }), () =>
      ctx.update(
        { modelSource: 'preset', preset: /** @type {string} */ (e.preset) },
        { rebuild: true },
      ),
    );
  if (!input) return null;
  const go = () => {
    const section = input.closest('details');
    if (section) section.open = true;
    input.scrollIntoView?.({ block: 'center' });
    /** @type {HTMLElement} */ (input).focus();
  };
  const key = input.id.replace(/^tm-/, '');
  return wayOutLine(ctx, t(`field.${key}`), go, 'go-to-input');
}

/**
 * What is wrong, in the page's language: the core's sentence from its catalog's codes, a
 * sentence of the page's own (InputError with a key), or the error code's sentence naming the
 * input.
 * @param {Ctx} ctx
 * @param {PageError} e
 * @param {string} key the input at fault, or ''
 */
function whatIsWrong(ctx, e, key) {
  const { t } = ctx;
  if (e.key) return t(e.key, e.params || {});
  /** @type {{ messages: MessageCodes }} */
  const holder = { messages: { message: e.messages || [] } };
  if (Array.isArray(e.messages) && (t.lang === 'en' || t.covers(holder, 'message')))
    return t.core(holder, 'message', String(e.message), 'span');
  if (t.lang === 'en') return String(e.message);
  const code = t.coreError(String(e.code)) || t.coreError('internal');
  return key ? t('error.inInput', { input: t(`field.${key}`), what: code }) : code;
}

/**
 * @param {Ctx} ctx
 * @param {PageError} e
 */
export function errorBox(ctx, e) {
  const { t } = ctx;
  const unsupported = e.code === 'unsupported';
  const key = inputOf(String(e.field ?? ''));
  const input = key ? ctx.rootEl.querySelector(/** @type {'input'} */ (`#tm-${key}`)) : null;
  const what = whatIsWrong(ctx, e, key);
  const todo = t(`fix.${e.code}`) !== `fix.${e.code}` ? t(`fix.${e.code}`) : t('fix.internal');
  const box = h(
    'div',
    { class: unsupported ? 'notice' : 'error', role: 'alert', 'data-code': e.code || '' },
    h('strong', {}, unsupported ? t('error.unsupportedTitle') : t('error.title')),
    h('p', { class: 'error-what' }, what),
    h('p', { class: 'error-todo' }, todo),
    typeof e.minimumBudgetBytes === 'number' ? minimumBudget(ctx, e) : null,
    // the core's own words, for a report or a search, where the page said them in its language
    t.lang !== 'en' && !e.key
      ? h(
          'details',
          { class: 'error-detail' },
          h('summary', {}, t('error.detail')),
          h('p', { lang: 'en', dir: 'ltr' }, String(e.message)),
          e.field ? h('p', {}, h('bdi', { dir: 'ltr' }, h('code', {}, String(e.field)))) : null,
        )
      : null,
  );
  const out = wayOut(ctx, e, input);
  if (out) box.append(out);
  // with a traced model: which model the error is about, and the way back to the presets
  if (traced.text && ctx.tracePanel) box.append(tracedLine(ctx, ctx.tracePanel.clear));
  if (input) {
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('data-core-invalid', '1'); // cleared by the next computation
  }
  return box;
}
