// @ts-check
// The form: which inputs each part of the page shows, in focus order, and the controls
// themselves. makeForm(ctx) reads the controller's live state through ctx:
// { t, st, presets, show, invalid, update, compute }.
import { h } from './dom.js';
import { FIELDS } from './state.js';
import { parseCount, parseNumber } from '../lib/units.js';

// Inputs of each part of the page, in focus order.
export const CONTEXT_FIELDS = [
  'modelSource',
  'params',
  'preset',
  'config',
  'optimizer',
  'gpu',
  'gpuGB',
  'microBatch',
  'seqLen',
];
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
};
// The question line at the top of the page: model, GPU, batch and sequence, then the optimizer.
export const ASK_FIELDS = [
  'modelSource',
  'params',
  'preset',
  'config',
  'gpu',
  'gpuGB',
  'microBatch',
  'seqLen',
  'optimizer',
];
// The advanced inputs of peak memory and the accumulation plans, behind one disclosure: what a
// one-GPU user changes to make a run fit (LoRA / QLoRA, offload), parallelism, the step's
// recipe options, the caching allocator, and a safety margin for the verdict.
export const ADVANCED_FIELDS = [
  'lora',
  'loraRank',
  'loraTargets',
  'zeroStage',
  'dataParallel',
  'offloadOptimizer',
  'offloadParams',
  'tensorParallel',
  'compile',
  'activationOffloading',
  'optimizerInBackward',
  'loss',
  'saveOps',
  'everyOtherMm',
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
  'marginGB',
];
// Which context inputs each calculator reads.
export const USES = {
  size: new Set(['modelSource', 'params', 'preset', 'config', 'optimizer']),
  peak: new Set(CONTEXT_FIELDS),
  accum: new Set(CONTEXT_FIELDS),
  place: new Set(['modelSource', 'params', 'preset', 'config', 'microBatch', 'seqLen']),
};
// A change of these re-lays out the form (other inputs update results in place).
export const STRUCTURAL = new Set([
  'modelSource',
  'lora',
  'gpu',
  'accMode',
  'chainSource',
  'strategy',
  'checkpointing',
  'tab',
  'lang',
]);

export function visible(key, st, tab) {
  switch (key) {
    case 'params':
      return st.modelSource === 'params';
    case 'preset':
      return st.modelSource === 'preset';
    case 'config':
      return st.modelSource === 'config';
    case 'gpuGB':
      return !st.gpu;
    case 'loraRank':
    case 'loraTargets':
      return !!st.lora;
    case 'budgetGB':
      return tab === 'peak'
        ? st.checkpointing === 'optimal'
        : ['chen-greedy', 'optimal-single-level', 'optimal'].includes(st.strategy);
    case 'k':
      return st.strategy === 'every-k';
    case 'segments':
      return st.strategy === 'sequential';
    case 'snapshots':
      return st.strategy === 'revolve';
    case 'slots':
      return st.strategy === 'optimal';
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

/** @param {any} ctx */
export function makeForm(ctx) {
  /** @type {(patch: Record<string, any>, opts?: Record<string, boolean>) => void} */
  const update = (patch, opts) => ctx.update(patch, opts);
  const compute = () => ctx.compute();
  // ---- inputs -------------------------------------------------------------------------
  function optionLabel(key, v) {
    const { t } = ctx;
    const k = `opt.${key}.${v}`;
    const s = t(k);
    return s === k ? v : s;
  }

  function helpFor(key) {
    const { t } = ctx;
    const k = `help.${key}`;
    const s = t(k);
    return s === k ? '' : s;
  }

  function field(key, tab) {
    const { t, st, presets, invalid } = ctx;
    const f = FIELDS[key];
    const id = `tm-${key}`;
    const help = helpFor(key);
    const helpId = help ? `${id}-help` : null;
    const errId = `${id}-err`;
    let control;
    if (key === 'modelSource') {
      const radios = f.values.map((v) =>
        h(
          'label',
          { class: 'radio' },
          h('input', {
            type: 'radio',
            id: `${id}-${v}`,
            name: `${id}-r`,
            value: v,
            checked: st.modelSource === v,
            disabled: v === 'preset' && !presets.models.length,
            onchange: () => update({ modelSource: v }),
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
    if (key === 'preset' || key === 'gpu') {
      // a preset picker (Latin names: left to right in both languages, so that RTL does not
      // clip their start)
      const list = key === 'preset' ? presets.models : presets.gpus;
      control = h(
        'select',
        {
          id,
          dir: 'ltr',
          onchange: (e) => update({ [key]: e.target.value }),
          'aria-describedby': helpId,
        },
        h('option', { value: '' }, t(key === 'preset' ? 'opt.preset.none' : 'opt.gpu.custom')),
        list.map((m) => h('option', { value: m.id, selected: st[key] === m.id }, m.name || m.id)),
      );
    } else if (key === 'config') {
      const area = h('textarea', {
        id,
        rows: 5,
        spellcheck: false,
        'aria-describedby': [helpId, errId].filter(Boolean).join(' '),
        placeholder: '{ "model_type": "llama", "hidden_size": 4096, … }',
        oninput: (e) => update({ config: e.target.value }),
      });
      area.value = st.config;
      const file = h('input', {
        type: 'file',
        id: `${id}-file`,
        accept: '.json,application/json',
        onchange: async (e) => {
          const text = await e.target.files?.[0]?.text();
          if (typeof text === 'string') {
            area.value = text.slice(0, FIELDS.config.max);
            update({ config: area.value });
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
        help ? h('small', { id: helpId, class: 'help' }, help) : null,
        // what the core read from the text (filled by the controller after each computation)
        h('p', { id: 'tm-config-parsed', class: 'parsed', 'aria-live': 'polite' }),
      );
    } else if (f.kind === 'text') {
      // free text sent to the core as it is (the core names the field when it cannot read it)
      control = h('input', {
        id,
        type: 'text',
        dir: 'ltr',
        autocomplete: 'off',
        spellcheck: false,
        value: String(st[key] ?? ''),
        placeholder: t(`placeholder.${key}`),
        'aria-describedby': [helpId, errId].filter(Boolean).join(' '),
        oninput: (e) => update({ [key]: e.target.value.slice(0, f.max) }, { typing: true }),
      });
      return h(
        'div',
        { class: `field tm-f-${key}` },
        h('label', { for: id }, t(`field.${key}`)),
        control,
        help ? h('small', { id: helpId, class: 'help' }, help) : null,
        h('small', { id: errId, class: 'field-error', 'aria-live': 'polite' }),
      );
    } else if (f.kind === 'choice') {
      control = h(
        'select',
        { id, 'aria-describedby': helpId, onchange: (e) => update({ [key]: e.target.value }) },
        f.values.map((v) =>
          h('option', { value: v, selected: st[key] === v }, optionLabel(key, v)),
        ),
      );
    } else if (f.kind === 'bool') {
      control = h('input', {
        id,
        type: 'checkbox',
        checked: !!st[key],
        'aria-describedby': helpId,
        onchange: (e) => update({ [key]: e.target.checked }),
      });
      return h(
        'div',
        { class: 'field field-check' },
        control,
        h('label', { for: id }, t(`field.${key}`)),
        help ? h('small', { id: helpId, class: 'help' }, help) : null,
      );
    } else {
      const err = h('small', { id: errId, class: 'field-error', 'aria-live': 'polite' });
      control = h('input', {
        id,
        type: 'text',
        inputmode: f.kind === 'int' ? 'numeric' : 'decimal',
        autocomplete: 'off',
        value: key === 'params' ? t.int(st[key]) : String(st[key]),
        'aria-describedby': [helpId, errId].filter(Boolean).join(' '),
        oninput: (e) => {
          const raw = e.target.value;
          const n = f.kind === 'int' ? parseCount(raw) : parseNumber(raw);
          const ok =
            raw.trim() !== '' &&
            Number.isFinite(n) &&
            n >= f.min &&
            n <= f.max &&
            (f.kind !== 'int' || Number.isInteger(n));
          e.target.setAttribute('aria-invalid', ok ? 'false' : 'true');
          if (ok) {
            invalid.delete(key);
            err.textContent = '';
            update({ [key]: n }, { typing: true });
          } else {
            const fraction =
              f.kind === 'int' && Number.isFinite(parseFloat(raw)) && /\.\d*[1-9]/.test(raw);
            const msg = t(fraction ? 'error.integer' : 'error.number', {
              min: t.int(f.min),
              max: t.int(f.max),
            });
            invalid.set(key, msg);
            err.textContent = msg;
            compute();
          }
        },
      });
      return h(
        'div',
        { class: `field tm-f-${key}` },
        h('label', { for: id }, t(`field.${key}`)),
        control,
        help ? h('small', { id: helpId, class: 'help' }, help) : null,
        err,
      );
    }
    return h(
      'div',
      { class: `field tm-f-${key}` },
      h('label', { for: id }, t(`field.${key}`)),
      control,
      help ? h('small', { id: helpId, class: 'help' }, help) : null,
    );
  }

  function fields(keys, tab) {
    const { st, show } = ctx;
    return keys
      .filter((k) => visible(k, st, tab) && (!show || show.has(k)))
      .map((k) => field(k, tab));
  }
  return { optionLabel, helpFor, field, fields };
}
