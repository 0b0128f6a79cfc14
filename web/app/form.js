// @ts-check
// The form: which inputs each part of the page shows, in focus order, and the controls
// themselves. Each control takes the controller's live state ctx first:
// { t, st, presets, show, invalid, update, compute }.
/** @import { ChoiceSpec, Ctx, FieldKey, FieldSpec, NumberSpec, State, Tab, TextSpec } from './types.js' */
import { h } from './dom.js';
import { FIELDS } from './state.js';
import { parseCount, parseNumber, westernDigits } from '../lib/units.js';
import { resolve } from './resolve.js';
import { modelInput, readsImage, isMoE } from './model-input.js';
import { BUDGET_STRATEGIES } from './vocabulary.js';

// Inputs of each part of the page, in focus order.
/** @type {FieldKey[]} */
export const CONTEXT_FIELDS = [
  'modelSource',
  'params',
  'preset',
  'config',
  'optimizer',
  'gpu',
  'gpuGiB',
  'microBatch',
  'seqLen',
  'imageSize',
  'numClasses',
  'method',
  'loraRank',
  'baseDtype',
];
/** @type {Record<Tab, FieldKey[]>} */
export const TAB_FIELDS = {
  size: ['weightDtype', 'stateDtype', 'masterWeights', 'format'],
  peak: [
    'precision',
    'checkpointing',
    'budgetGB',
    'accumSteps',
    'dataParallel',
    'zeroStage',
    'attention',
    'runtime',
    'optImpl',
  ],
  accum: [
    'accMode',
    'targetGlobalBatch',
    'accumSteps',
    'dataParallel',
    'precision',
    'checkpointing',
    'datasetSize',
    'attention',
    'runtime',
    'optImpl',
  ],
  place: [
    'chainSource',
    'layers',
    'layerMB',
    'precision',
    'strategy',
    'k',
    'segments',
    'snapshots',
    'budgetGB',
    'slots',
    'frontier',
  ],
  // the layout planner: the cluster and its global batch (the model, GPU, precision, optimizer
  // and sequence length are the shared context's)
  plan: ['gpus', 'gpusPerNode', 'targetGlobalBatch', 'planCp', 'planEp'],
};
// The question line at the top of the page: what people decide — the model, the GPU, what is
// trained (the method, with LoRA's rank), the precision (with the base's dtype for adapters),
// checkpointing, the optimizer, the micro-batch and the sequence length.
/** @type {FieldKey[]} */
export const ASK_FIELDS = [
  'modelSource',
  'params',
  'preset',
  'config',
  'gpu',
  'gpuGiB',
  'method',
  'loraRank',
  'precision',
  'baseDtype',
  'checkpointing',
  'optimizer',
  'microBatch',
  'seqLen',
  'imageSize',
  'numClasses',
];
// The advanced inputs of peak memory and the accumulation plans, behind one disclosure: what a
// one-GPU user changes to make a run fit (LoRA / QLoRA, offload), parallelism, the step's
// recipe options, the caching allocator, and a safety margin for the verdict.
/** @type {FieldKey[]} */
export const ADVANCED_FIELDS = [
  'loraTargets',
  'zeroStage',
  'dataParallel',
  'offloadOptimizer',
  'offloadParams',
  'tensorParallel',
  'sequenceParallel',
  'pipelineParallel',
  'schedule',
  'virtualStages',
  'contextParallel',
  'expertParallel',
  'expertTensorParallel',
  'compile',
  'activationOffloading',
  'optimizerInBackward',
  'loss',
  'saveOps',
  'everyOtherMm',
  'ddpBucketMb',
  'ddpBucketView',
  'fsdp',
  'fsdpGroup',
  'fsdpParamDtype',
  'fsdpReduceDtype',
  'zero3MaxLive',
  'zero3Prefetch',
  'float8',
  'packed',
  'sampleLengths',
  'targetLen',
  'allocConf',
  'simulateAllocator',
  'marginPct',
  'marginGB',
];
// Which context inputs each calculator reads.
/** @type {Record<Tab, Set<string>>} */
export const USES = {
  size: new Set(['modelSource', 'params', 'preset', 'config', 'optimizer']),
  peak: new Set(CONTEXT_FIELDS),
  accum: new Set(CONTEXT_FIELDS),
  plan: new Set([
    'modelSource',
    'params',
    'preset',
    'config',
    'optimizer',
    'gpu',
    'gpuGiB',
    'seqLen',
  ]),
  place: new Set([
    'modelSource',
    'params',
    'preset',
    'config',
    'microBatch',
    'seqLen',
    'imageSize',
    'numClasses',
  ]),
};
// A change of these re-lays out the form (other inputs update results in place).
export const STRUCTURAL = new Set([
  'modelSource',
  'method',
  'gpu',
  'precision',
  'accMode',
  'chainSource',
  'strategy',
  'checkpointing',
  'tab',
  'lang',
]);

// Inputs shown for one model source, and for one placement strategy.
const SOURCE_FIELDS = ['params', 'preset', 'config'];
/** @type {Record<string, string>} */
const STRATEGY_OF = {
  k: 'every-k',
  segments: 'sequential',
  snapshots: 'revolve',
  slots: 'optimal',
};

/**
 * @param {State} st
 * @param {Tab} tab
 * @param {string} key
 */
export function visible(key, st, tab) {
  if (SOURCE_FIELDS.includes(key)) return st.modelSource === key;
  if (Object.hasOwn(STRATEGY_OF, key)) return st.strategy === STRATEGY_OF[key];
  switch (key) {
    case 'gpuGiB':
      return !st.gpu;
    // what the model reads: tokens, or an image (model-input.js)
    case 'seqLen':
      return modelInput(st) === 'tokens';
    case 'imageSize':
      return readsImage(st);
    case 'numClasses':
      return modelInput(st) === 'image';
    case 'loraRank':
    case 'loraTargets':
    case 'baseDtype':
      return st.method === 'lora' || st.method === 'qlora';
    // the pipeline's schedule with stages; interleaved 1F1B's chunks per stage (shown and hidden
    // in place as the stages are typed: toggled())
    case 'schedule':
      return st.pipelineParallel > 1;
    case 'virtualStages':
      return st.pipelineParallel > 1 && st.schedule === 'interleaved-1f1b';
    case 'expertParallel':
    case 'expertTensorParallel':
    case 'planEp':
      return isMoE(st) || st[key] > 1;
    case 'marginGB':
      return st.marginGB > 0; // from a link made before the margin was a share
    case 'budgetGB':
      return BUDGET_STRATEGIES.includes(tab === 'peak' ? st.checkpointing : st.strategy);
    case 'layers':
    case 'layerMB':
      return st.chainSource === 'uniform';
    case 'precision':
      return tab !== 'place' || st.chainSource === 'model';
    case 'targetGlobalBatch':
    case 'checkpointing':
    case 'attention':
    case 'runtime':
    case 'optImpl':
      return tab !== 'accum' || st.accMode === 'plan';
    case 'accumSteps':
    case 'datasetSize':
      return tab !== 'accum' || st.accMode === 'forward';
    default:
      return true;
  }
}

// ---- inputs ---------------------------------------------------------------------------
// Each takes the controller's live state ctx: { t, st, presets, show, invalid, update, compute }.
/**
 * @param {Ctx} ctx
 * @param {string} key a field, or another namespace of labels (col, row, phase)
 * @param {string} v
 */
export function optionLabel(ctx, key, v) {
  const k = `opt.${key}.${v}`;
  const s = ctx.t(k);
  return s === k ? v : s;
}

/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 */
export function helpFor(ctx, key) {
  const k = `help.${key}`;
  const s = ctx.t(k);
  return s === k ? '' : s;
}

/**
 * An input's element ids and help text.
 * @param {Ctx} ctx
 * @param {FieldKey} key
 */
function idsOf(ctx, key) {
  const id = `tm-${key}`;
  const help = helpFor(ctx, key);
  const helpId = help ? `${id}-help` : null;
  const errId = `${id}-err`;
  return { id, help, helpId, errId, describedBy: [helpId, errId].filter(Boolean).join(' ') };
}
/** @typedef {ReturnType<typeof idsOf>} Ids */

/** @param {Ids} ids */
const helpLine = (ids) =>
  ids.help ? h('small', { id: ids.helpId, class: 'help' }, ids.help) : null;
/** @param {Ids} ids */
const errorLine = (ids) =>
  h('small', { id: ids.errId, class: 'field-error', 'aria-live': 'polite' });

/**
 * An input with its label above it, its help and (for typed inputs) its error line.
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {Ids} ids
 * @param {HTMLElement} control
 * @param {HTMLElement | null} [err]
 */
function labelled(ctx, key, ids, control, err = null) {
  return h(
    'div',
    { class: `field tm-f-${key}` },
    h('label', { for: ids.id }, ctx.t(`field.${key}`)),
    control,
    helpLine(ids),
    err,
  );
}

/**
 * @param {Ctx} ctx
 * @param {ChoiceSpec} f
 * @param {Ids} ids
 */
function modelSourceField(ctx, f, ids) {
  const { t, st, presets } = ctx;
  const radios = f.values.map((v) =>
    h(
      'label',
      { class: 'radio' },
      h('input', {
        type: 'radio',
        id: `${ids.id}-${v}`,
        name: `${ids.id}-r`,
        value: v,
        checked: st.modelSource === v,
        disabled: v === 'preset' && !presets.models.length,
        onchange: () => ctx.update({ modelSource: /** @type {State['modelSource']} */ (v) }),
      }),
      ' ',
      t(`opt.modelSource.${v}`),
    ),
  );
  return h(
    'fieldset',
    { class: 'field field-wide' },
    h('legend', {}, t('field.modelSource')),
    h('div', { class: 'radios' }, radios),
    !presets.models.length ? h('small', { class: 'help' }, t('help.noPresets')) : null,
  );
}

// A preset picker (Latin names: left to right in both languages, so that RTL does not clip
// their start).
/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {Ids} ids
 */
function presetControl(ctx, key, ids) {
  const { t, st, presets } = ctx;
  const list = key === 'preset' ? presets.models : presets.gpus;
  return h(
    'select',
    {
      id: ids.id,
      dir: 'ltr',
      onchange: (e) => ctx.update({ [key]: /** @type {HTMLSelectElement} */ (e.target).value }),
      'aria-describedby': ids.helpId,
    },
    h('option', { value: '' }, t(key === 'preset' ? 'opt.preset.none' : 'opt.gpu.custom')),
    list.map((m) => h('option', { value: m.id, selected: st[key] === m.id }, m.name || m.id)),
  );
}

/**
 * @param {Ctx} ctx
 * @param {Ids} ids
 */
function configField(ctx, ids) {
  const { t, st } = ctx;
  const { id } = ids;
  const area = h('textarea', {
    id,
    rows: 5,
    spellcheck: false,
    'aria-describedby': ids.describedBy,
    placeholder: '{ "model_type": "llama", "hidden_size": 4096, … }',
    oninput: (e) => ctx.update({ config: /** @type {HTMLInputElement} */ (e.target).value }),
  });
  area.value = st.config;
  const file = h('input', {
    type: 'file',
    id: `${id}-file`,
    accept: '.json,application/json',
    onchange: async (e) => {
      const text = await /** @type {HTMLInputElement} */ (e.target).files?.[0]?.text();
      if (typeof text === 'string') {
        area.value = text.slice(0, FIELDS.config.max);
        ctx.update({ config: area.value });
      }
    },
  });
  return h(
    'div',
    { class: 'field field-wide' },
    h('label', { for: id }, t('field.config')),
    area,
    h('label', { for: `${id}-file`, class: 'file-label' }, t('field.configFile')),
    file,
    helpLine(ids),
    // what the core read from the text (filled by the controller after each computation)
    h('p', { id: 'tm-config-parsed', class: 'parsed', 'aria-live': 'polite' }),
  );
}

// Free text sent to the core as it is (the core names the field when it cannot read it).
/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {TextSpec} f
 * @param {Ids} ids
 */
function textControl(ctx, key, f, ids) {
  return h('input', {
    id: ids.id,
    type: 'text',
    dir: 'ltr',
    autocomplete: 'off',
    spellcheck: false,
    value: String(ctx.st[key] ?? ''),
    placeholder: ctx.t(`placeholder.${key}`),
    'aria-describedby': ids.describedBy,
    oninput: (e) =>
      ctx.update(
        { [key]: /** @type {HTMLInputElement} */ (e.target).value.slice(0, f.max) },
        { typing: true },
      ),
  });
}

// Choices whose '' the page resolves for this run (resolve.js): their label says to what.
const AUTOMATIC = new Set(['precision', 'baseDtype', 'weightDtype']);

/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {string} v
 */
function choiceLabel(ctx, key, v) {
  if (v !== '' || !AUTOMATIC.has(key)) return optionLabel(ctx, key, v);
  const value = String(resolve({ ...ctx.st, method: 'lora' }).st[key]);
  // (the precision by its short name: the picker shows it whole on a phone)
  const auto =
    key === 'precision' ? ctx.t(`opt.precision.short.${value}`) : optionLabel(ctx, key, value);
  return ctx.t(`opt.${key}.`, { auto });
}

/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {ChoiceSpec} f
 * @param {Ids} ids
 */
function choiceControl(ctx, key, f, ids) {
  return h(
    'select',
    {
      id: ids.id,
      'aria-describedby': ids.helpId,
      onchange: (e) => ctx.update({ [key]: /** @type {HTMLSelectElement} */ (e.target).value }),
    },
    f.values.map((v) =>
      h('option', { value: v, selected: ctx.st[key] === v }, choiceLabel(ctx, key, v)),
    ),
  );
}

/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {Ids} ids
 */
function boolField(ctx, key, ids) {
  const control = h('input', {
    id: ids.id,
    type: 'checkbox',
    checked: !!ctx.st[key],
    'aria-describedby': ids.helpId,
    onchange: (e) => ctx.update({ [key]: /** @type {HTMLInputElement} */ (e.target).checked }),
  });
  return h(
    'div',
    { class: 'field field-check' },
    control,
    h('label', { for: ids.id }, ctx.t(`field.${key}`)),
    helpLine(ids),
  );
}

// A number typed in: checked against the field's range as it is typed; a value out of range
// is held back (ctx.invalid) with its message under the input.
/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 * @param {NumberSpec} f
 * @param {Ids} ids
 */
function numberField(ctx, key, f, ids) {
  const { t, st, invalid } = ctx;
  const err = errorLine(ids);
  const control = h('input', {
    id: ids.id,
    type: 'text',
    inputmode: f.kind === 'int' ? 'numeric' : 'decimal',
    autocomplete: 'off',
    value: key === 'params' ? t.int(st[key]) : String(st[key]),
    'aria-describedby': ids.describedBy,
    oninput: (e) => {
      const raw = westernDigits(/** @type {HTMLInputElement} */ (e.target).value); // ١٦ is 16
      const n = f.kind === 'int' ? parseCount(raw) : parseNumber(raw);
      const ok =
        raw.trim() !== '' &&
        Number.isFinite(n) &&
        n >= f.min &&
        n <= f.max &&
        (f.kind !== 'int' || Number.isInteger(n));
      /** @type {HTMLInputElement} */ (e.target).setAttribute(
        'aria-invalid',
        ok ? 'false' : 'true',
      );
      if (ok) {
        invalid.delete(key);
        err.textContent = '';
        ctx.update({ [key]: n }, { typing: true });
      } else {
        const fraction =
          f.kind === 'int' && Number.isFinite(parseFloat(raw)) && /\.\d*[1-9]/.test(raw);
        const msg = t(fraction ? 'error.integer' : 'error.number', {
          min: t.int(f.min),
          max: t.int(f.max),
        });
        invalid.set(key, msg);
        err.textContent = msg;
        ctx.compute();
      }
    },
  });
  return labelled(ctx, key, ids, control, err);
}

/**
 * @param {Ctx} ctx
 * @param {FieldKey} key
 */
export function field(ctx, key) {
  const f = /** @type {FieldSpec} */ (FIELDS[key]);
  const ids = idsOf(ctx, key);
  if (key === 'modelSource') return modelSourceField(ctx, FIELDS.modelSource, ids);
  if (key === 'preset' || key === 'gpu')
    return labelled(ctx, key, ids, presetControl(ctx, key, ids));
  if (key === 'config') return configField(ctx, ids);
  if (f.kind === 'text')
    return labelled(ctx, key, ids, textControl(ctx, key, f, ids), errorLine(ids));
  if (f.kind === 'choice') return labelled(ctx, key, ids, choiceControl(ctx, key, f, ids));
  if (f.kind === 'bool') return boolField(ctx, key, ids);
  return numberField(ctx, key, f, ids);
}

// Inputs shown or hidden in place when a number they follow is typed (a rebuild would move the
// caret of the input being typed in).
const TOGGLED = new Set(['schedule', 'virtualStages']);

/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 * @param {readonly FieldKey[]} keys
 */
export function fields(ctx, keys, tab) {
  const { st, show } = ctx;
  return keys
    .filter((k) => (TOGGLED.has(k) || visible(k, st, tab)) && (!show || show.has(k)))
    .map((k) => {
      const el = field(ctx, k);
      if (TOGGLED.has(k)) el.hidden = !visible(k, st, tab);
      return el;
    });
}

/**
 * Shows or hides the inputs of TOGGLED for the state, where they are.
 * @param {State} st
 * @param {Tab} tab
 * @param {HTMLElement} rootEl
 */
export function toggled(rootEl, st, tab) {
  for (const k of TOGGLED) {
    const el = rootEl.querySelector(/** @type {'div'} */ (`.tm-f-${k}`));
    if (el) el.hidden = !visible(k, st, tab);
  }
}
