// The trainmem page: four calculators sharing one model / optimizer / GPU context, the seeds'
// worked examples, pictures, exports and embed codes. mountApp() serves the full page, the
// iframe mode and the <trainmem-calculator> element alike.
import { load } from '../lib/index.js';
import { h, put } from './dom.js';
import { loadStrings, makeTranslator, browserLang, prefetchStrings } from './i18n.js';
import { FIELDS, TABS, defaults } from './state.js';
import { BUILDERS, isHeavy, InputError, modelOf } from './requests.js';
import { Solver } from './solver.js';
import { snapshotPanel } from './snapshot.js';
import { frontierData } from './frontier.js';
import { EXAMPLES, findPreset } from './examples.js';
import { makeExports } from './export.js';
import { flatten, isBytesKey, breakdownParts, partBytes } from './format.js';
import { parseCount, parseNumber } from '../lib/units.js';
import { stackedBars, lines, resetColors } from './charts.js';
import { placementDiagram, accumulationDiagram } from './diagrams.js';

// Inputs of each part of the page, in focus order.
const CONTEXT_FIELDS = [
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
const TAB_FIELDS = {
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
const ASK_FIELDS = [
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
// Which context inputs each calculator reads.
const USES = {
  size: new Set(['modelSource', 'params', 'preset', 'config', 'optimizer']),
  peak: new Set(CONTEXT_FIELDS),
  accum: new Set(CONTEXT_FIELDS),
  place: new Set(['modelSource', 'params', 'preset', 'config', 'microBatch', 'seqLen']),
};
// A change of these re-lays out the form (other inputs update results in place).
const STRUCTURAL = new Set([
  'modelSource',
  'gpu',
  'accMode',
  'chainSource',
  'strategy',
  'checkpointing',
  'tab',
  'lang',
]);

function visible(key, st, tab) {
  switch (key) {
    case 'params':
      return st.modelSource === 'params';
    case 'preset':
      return st.modelSource === 'preset';
    case 'config':
      return st.modelSource === 'config';
    case 'gpuGB':
      return !st.gpu;
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

// Start-up phases for bench/page.mjs (User Timing; a no-op where marks are unsupported).
function mark(name) {
  try {
    performance.mark(name);
  } catch {
    /* marks unsupported */
  }
}

function normalizePresets(raw) {
  const list = (v) =>
    Array.isArray(v)
      ? v.filter((x) => x && typeof x.id === 'string')
      : v && typeof v === 'object'
        ? Object.entries(v).map(([id, x]) => ({ id, ...(x && typeof x === 'object' ? x : {}) }))
        : [];
  return { models: list(raw?.models), gpus: list(raw?.gpus) };
}

export async function mountApp(root, options = {}) {
  const embed = !!options.embed;
  const show = options.show || null; // Set of input keys to show (embeds)
  const tabs = options.tabs?.length ? options.tabs : TABS;
  let st = { ...defaults(), ...options.state };
  if (!tabs.includes(st.tab)) st.tab = tabs[0];
  const lang0 = st.lang || options.lang || browserLang();
  const [tm, en, strings] = await Promise.all([load(), loadStrings('en'), loadStrings(lang0)]);
  mark('trainmem:core-ready');
  let t = makeTranslator(lang0, strings, en);
  const solver = new Solver(tm);
  // The snapshot comparison has a worker of its own: a placement solve does not cancel it.
  const snapPanel = snapshotPanel({
    get t() {
      return t;
    },
    solver: new Solver(tm),
    chartOpts: (slot) => chartOpts(slot),
    partLabel: (k) => partLabel(k),
    optionLabel: (k, v) => optionLabel(k, v),
  });
  let presets = { models: [], gpus: [] };
  try {
    // The page bundle carries the pickers' ids and names, read from the data files at build
    // time (tools/preset-index.mjs): asking the core at start-up parsed every data file and
    // delayed the first result. Unbundled (sources served as they are), ask the core.
    presets = normalizePresets(
      typeof __TRAINMEM_PRESET_INDEX__ === 'object'
        ? __TRAINMEM_PRESET_INDEX__
        : tm.presets({ parameterCounts: false }),
    );
  } catch {
    /* presets not in this build: the model picker offers a parameter count and config.json */
  }
  const knownTmp = {
    llama: findPreset(presets, ['llama27bhf', 'llama27b', 'llama2-7b']),
    gpt2: findPreset(presets, ['gpt2', 'gpt2small', 'gpt2124m']),
    v100: presets.gpus.find((g) => /v100.*16/i.test(g.id))?.id || '',
  };
  const known = knownTmp;
  // An unknown GPU id (a stale link, a build without GPU presets): the custom size (gpuGB).
  if (st.gpu && !presets.gpus.some((g) => g.id === st.gpu)) st = { ...st, gpu: '' };
  // The default model is the LLaMA-2 7B preset; a core built without presets falls back to
  // its parameter count.
  if (st.modelSource === 'preset' && !presets.models.some((m) => m.id === st.preset)) {
    st = { ...st, modelSource: 'params', preset: '' };
  }

  const rootEl = h('div', { class: `tm${embed ? ' tm-embed' : ''}` });
  root.append(rootEl);
  let last = null; // { tab, fn, request, result } of the shown result
  let exampleOut = null; // explanation of the active worked example
  let firstDone = false;
  const invalid = new Map(); // key -> message for inputs that do not parse
  // Charts kept across updates (charts.js draw()), and the results' width, kept by a
  // ResizeObserver so that drawing a chart does not force a layout of the results just built.
  const chartCache = new Map();
  let resultsWidth = 0;
  const resultsSize =
    typeof ResizeObserver === 'function'
      ? new ResizeObserver((entries) => {
          resultsWidth = entries[entries.length - 1].contentRect.width;
        })
      : null;
  const chartOpts = (slot) => ({ available: resultsWidth, reuse: { cache: chartCache, slot } });

  function setLangAttrs() {
    rootEl.setAttribute('lang', t.lang);
    rootEl.setAttribute('dir', t.dir);
    if (!embed && options.ownsDocument) {
      document.documentElement.lang = t.lang;
      document.documentElement.dir = t.dir;
      document.title = t('page.title');
    }
  }

  // The state goes to options.onState (the page writes it into the URL). While a number is
  // being typed, once it pauses for 200 ms: history.replaceState cost 2-6 ms a keystroke
  // (bench/page-update.mjs). Any other change writes at once.
  let stateTimer = 0;
  function publishState({ typing = false } = {}) {
    clearTimeout(stateTimer);
    if (typing) stateTimer = setTimeout(() => options.onState?.(st), 200);
    else options.onState?.(st);
  }

  function update(patch, { rebuild = false, fromExample = false, typing = false } = {}) {
    const structural = Object.keys(patch).some((k) => STRUCTURAL.has(k));
    st = { ...st, ...patch };
    if (!fromExample && !('ex' in patch) && Object.keys(patch).some((k) => k !== 'tab')) st.ex = '';
    publishState({ typing: typing && !rebuild && !structural });
    if (rebuild || structural) build();
    else compute();
  }

  // ---- inputs -------------------------------------------------------------------------
  function optionLabel(key, v) {
    const k = `opt.${key}.${v}`;
    const s = t(k);
    return s === k ? v : s;
  }

  function helpFor(key) {
    const k = `help.${key}`;
    const s = t(k);
    return s === k ? '' : s;
  }

  function field(key, tab) {
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
    if (key === 'preset') {
      control = h(
        'select',
        // (Latin names: left to right in both languages, so that RTL does not clip their start)
        {
          id,
          dir: 'ltr',
          onchange: (e) => update({ preset: e.target.value }),
          'aria-describedby': helpId,
        },
        h('option', { value: '' }, t('opt.preset.none')),
        presets.models.map((m) =>
          h('option', { value: m.id, selected: st.preset === m.id }, m.name || m.id),
        ),
      );
    } else if (key === 'gpu') {
      control = h(
        'select',
        {
          id,
          dir: 'ltr',
          onchange: (e) => update({ gpu: e.target.value }),
          'aria-describedby': helpId,
        },
        h('option', { value: '' }, t('opt.gpu.custom')),
        presets.gpus.map((g) =>
          h('option', { value: g.id, selected: st.gpu === g.id }, g.name || g.id),
        ),
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
    return keys
      .filter((k) => visible(k, st, tab) && (!show || show.has(k)))
      .map((k) => field(k, tab));
  }

  // ---- layout -------------------------------------------------------------------------
  let resultsEl;
  let verdictEl;
  let suggestEl;
  let statusEl;
  let exampleEl;
  let dialogEl;

  function build() {
    const focused = root.activeElement?.id || document.activeElement?.id;
    invalid.clear();
    setLangAttrs();
    const tab = st.tab;
    const header = h(
      'header',
      { class: 'top' },
      h(
        'div',
        { class: 'brand' },
        h(embed ? 'p' : 'h1', { class: 'title' }, 'trainmem'),
        h('p', { class: 'tagline' }, t('page.tagline')),
      ),
      h(
        'div',
        { class: 'top-controls' },
        h('label', { for: 'tm-lang', class: 'sr-only' }, t('field.lang')),
        h(
          'select',
          { id: 'tm-lang', onchange: (e) => switchLang(e.target.value) },
          h('option', { value: 'en', selected: t.lang === 'en', lang: 'en' }, 'English'),
          h('option', { value: 'ar', selected: t.lang === 'ar', lang: 'ar' }, 'العربية'),
        ),
        embed
          ? null
          : h(
              'button',
              { type: 'button', id: 'tm-embed-btn', onclick: openEmbed },
              t('embed.button'),
            ),
      ),
    );
    const examples =
      embed && !options.showExamples
        ? null
        : h(
            'section',
            { class: 'examples', 'aria-labelledby': 'tm-ex-h' },
            h('h2', { id: 'tm-ex-h' }, t('ex.heading')),
            h(
              'div',
              { class: 'ex-buttons' },
              EXAMPLES.map((ex) =>
                h(
                  'button',
                  {
                    type: 'button',
                    id: `tm-ex-${ex.id}`,
                    class: `ex-btn${st.ex === ex.id ? ' active' : ''}`,
                    'data-example': ex.id,
                    'aria-pressed': st.ex === ex.id ? 'true' : 'false',
                    onclick: () => runExample(ex.id),
                  },
                  t(`ex.${ex.id}.title`),
                ),
              ),
            ),
          );
    exampleEl = h('section', { class: 'example-out', 'aria-live': 'polite', id: 'tm-example' });
    const ctxKeys = CONTEXT_FIELDS.filter(
      (k) => USES[tab].has(k) && !(tab === 'place' && st.chainSource === 'uniform'),
    );
    const context = !ctxKeys.length
      ? null
      : h(
          'section',
          { class: 'context', 'aria-labelledby': 'tm-ctx-h' },
          h('h2', { id: 'tm-ctx-h' }, t('ctx.heading')),
          h('div', { class: 'fields' }, fields(ctxKeys, tab)),
        );
    // The full page leads with the question every first visit asks, and its answer.
    verdictEl = null;
    const ask = embed
      ? null
      : h(
          'section',
          { class: 'ask', 'aria-labelledby': 'tm-ask-h' },
          h('h2', { id: 'tm-ask-h', class: 'ask-q' }, t('ask.heading')),
          h('div', { class: 'fields fields-compact' }, fields(ASK_FIELDS, 'peak')),
          (verdictEl = h('div', { class: 'verdict', id: 'tm-verdict', tabindex: '-1' })),
          (suggestEl = h('div', { class: 'verdict-suggest', id: 'tm-suggest' })),
        );
    const tabList = h(
      'div',
      { role: 'tablist', class: 'tabs', 'aria-label': t('tabs.label') },
      tabs.map((id) =>
        h(
          'button',
          {
            type: 'button',
            role: 'tab',
            id: `tm-tab-${id}`,
            'aria-selected': id === tab ? 'true' : 'false',
            'aria-controls': 'tm-panel',
            tabindex: id === tab ? '0' : '-1',
            onclick: () => update({ tab: id }),
            onkeydown: (e) => {
              const i = tabs.indexOf(id);
              const dirSign = t.dir === 'rtl' ? -1 : 1;
              let j = null;
              if (e.key === 'ArrowRight') j = i + dirSign;
              else if (e.key === 'ArrowLeft') j = i - dirSign;
              else if (e.key === 'Home') j = 0;
              else if (e.key === 'End') j = tabs.length - 1;
              if (j === null) return;
              e.preventDefault();
              const next = tabs[(j + tabs.length) % tabs.length];
              update({ tab: next });
              rootEl.querySelector(`#tm-tab-${next}`)?.focus();
            },
          },
          t(`tab.${id}`),
        ),
      ),
    );
    statusEl = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' });
    resultsEl = h('div', { class: 'results', id: 'tm-results' });
    resultsSize?.disconnect();
    resultsSize?.observe(resultsEl);
    const panel = h(
      'section',
      { role: 'tabpanel', id: 'tm-panel', 'aria-labelledby': `tm-tab-${tab}`, class: 'panel' },
      h('p', { class: 'panel-intro' }, t(`tab.${tab}.intro`)),
      h('div', { class: 'fields' }, fields(TAB_FIELDS[tab], tab)),
      statusEl,
      resultsEl,
      exportBar(),
    );
    dialogEl = embed ? null : embedDialog();
    put(
      rootEl,
      header,
      h(
        'main',
        { class: 'layout' },
        ask,
        ask ? null : context,
        tabs.length > 1 ? tabList : null,
        panel,
        examples,
        exampleEl,
      ),
      embed ? null : h('footer', { class: 'foot' }, h('p', {}, t('foot.text'))),
      dialogEl,
    );
    if (focused) rootEl.querySelector(`#${CSS.escape(focused)}`)?.focus();
    compute();
  }

  async function switchLang(lang) {
    let strs;
    try {
      strs = await loadStrings(lang);
    } catch (e) {
      // e.g. offline before the language file was fetched: stay in the current language
      rootEl.querySelector('#tm-lang').value = t.lang;
      put(statusEl, t('error.langLoad', { message: e.message }));
      return;
    }
    t = makeTranslator(lang, strs, en);
    st = { ...st, lang };
    publishState();
    build();
  }

  // ---- computing ----------------------------------------------------------------------
  let computeSeq = 0;

  function errorBox(e) {
    const unsupported = e.code === 'unsupported';
    const box = h(
      'div',
      { class: unsupported ? 'notice' : 'error', role: 'alert', 'data-code': e.code || '' },
      h('strong', {}, unsupported ? t('error.unsupportedTitle') : t('error.title')),
      h('p', { lang: 'en' }, String(e.message)),
      unsupported ? h('p', { class: 'muted' }, t('error.unsupported')) : null,
      e.field
        ? h(
            'p',
            { class: 'muted' },
            t('error.field'),
            ' ',
            h('code', {}, String(e.field)),
            e.code ? [' · ', h('code', {}, String(e.code))] : null,
          )
        : null,
      // infeasible placement budget: the core's minimum, and one click to use it (rounded up
      // to whole MB so that it is not below the minimum)
      typeof e.minimumBudgetBytes === 'number'
        ? h(
            'p',
            { class: 'minimum-budget' },
            t('error.minimumBudget'),
            ' ',
            t.both(e.minimumBudgetBytes),
            ' ',
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                onclick: () =>
                  update(
                    { budgetGB: Math.ceil(e.minimumBudgetBytes / 1e6) / 1e3 },
                    { rebuild: true },
                  ),
              },
              t('error.useMinimum'),
            ),
          )
        : null,
    );
    const fieldKey =
      e.field &&
      // (the accumulation planner's step times need a GPU preset's TFLOP/s: point at the picker)
      { 'model.config': 'config', 'model.params': 'params', gpuPeakTflops: 'gpu' }[
        e.field.split('.').slice(0, 2).join('.')
      ];
    const bad = fieldKey && rootEl.querySelector(`#tm-${fieldKey}`);
    if (bad) {
      bad.setAttribute('aria-invalid', 'true');
      bad.setAttribute('data-core-invalid', '1'); // cleared by the next computation
    }
    return box;
  }

  function compute() {
    const tab = st.tab;
    const seq = ++computeSeq;
    // An input the core called invalid last time is valid until the core says otherwise.
    for (const el of rootEl.querySelectorAll('[data-core-invalid]')) {
      el.removeAttribute('data-core-invalid');
      el.setAttribute('aria-invalid', 'false');
    }
    solver.cancel();
    if (invalid.size) {
      verdictInvalid();
      put(statusEl);
      put(
        resultsEl,
        h(
          'div',
          { class: 'error', role: 'alert' },
          h('strong', {}, t('error.title')),
          h('p', {}, [...invalid.values()][0]),
        ),
      );
      markFirst();
      return;
    }
    const [fn, builder] = BUILDERS[tab];
    let request;
    try {
      request = builder(st);
    } catch (e) {
      put(statusEl);
      last = null;
      put(resultsEl, errorBox(e));
      if (tab === 'peak') verdictError(e);
      else computeVerdict();
      markFirst();
      renderExample();
      return;
    }
    computeVerdict();
    const done = (result) => {
      if (seq !== computeSeq) return;
      put(statusEl);
      last = { tab, fn, request, result };
      put(resultsEl);
      try {
        if (tab === 'peak') renderVerdict(result, request);
        RENDER[tab](resultsEl, result, request);
      } catch (e) {
        resultsEl.append(errorBox({ code: 'internal', message: `display: ${e.message}` }));
      }
      markFirst();
    };
    const fail = (e) => {
      if (seq !== computeSeq || e.code === 'cancelled') return;
      put(statusEl);
      last = null;
      put(resultsEl, errorBox(e));
      if (tab === 'peak') verdictError(e);
      markFirst();
    };
    if (isHeavy(tab, st)) {
      const started = performance.now();
      const bar = h('progress', { 'aria-label': t('status.solving') });
      const timer = h('span', { class: 'muted' });
      put(
        statusEl,
        h(
          'div',
          { class: 'solving' },
          bar,
          ' ',
          t('status.solving'),
          ' ',
          timer,
          ' ',
          h(
            'button',
            {
              type: 'button',
              class: 'small',
              onclick: () => {
                solver.cancel();
                put(statusEl, t('status.cancelled'));
              },
            },
            t('status.cancel'),
          ),
        ),
      );
      const tick = setInterval(() => {
        if (seq !== computeSeq || !statusEl.isConnected || !statusEl.firstChild)
          return clearInterval(tick);
        timer.textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`;
      }, 100);
      solver
        .runHeavy(fn, request)
        .then(done, fail)
        .finally(() => clearInterval(tick));
    } else {
      try {
        done(solver.run(fn, request));
      } catch (e) {
        fail(e);
      }
    }
    renderExample();
  }

  function markFirst() {
    if (firstDone) return;
    firstDone = true;
    rootEl.setAttribute('data-ready', '1');
    mark('trainmem:first-result');
    // Then, in the background, the other languages' strings: the page works offline once loaded.
    setTimeout(prefetchStrings, 0);
  }

  // ---- result views -------------------------------------------------------------------
  function headline(labelKey, bytes, extra) {
    return h(
      'div',
      { class: 'headline' },
      h('span', { class: 'headline-label' }, t(labelKey)),
      h('span', { class: 'headline-value', 'data-bytes': String(bytes) }, t.both(bytes)),
      h('span', { class: 'headline-exact' }, t.n(t.bytes(bytes))),
      extra,
    );
  }

  function partLabel(k) {
    const key = `part.${k}`;
    const s = t(key);
    return s === key ? k : s;
  }

  function breakdownTable(breakdown, peakPhase = '') {
    const parts = breakdownParts(breakdown);
    if (!parts.length) return null;
    const total = parts.reduce((a, [, v]) => a + v, 0);
    const sources = parts.some(([, , src]) => src);
    return h(
      'table',
      { class: 'data stack' },
      h('caption', {}, t('result.breakdown')),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, t('result.part')),
          h('th', { scope: 'col' }, 'GB (10⁹)'),
          h('th', { scope: 'col' }, 'GiB (2³⁰)'),
          h('th', { scope: 'col' }, t('unit.bytes')),
          h('th', { scope: 'col' }, '%'),
          sources ? h('th', { scope: 'col' }, t('result.source')) : null,
        ),
      ),
      h(
        'tbody',
        {},
        parts.map(([k, v, src]) =>
          // At an optimizer-step peak the activations are gone (a few bytes): "0.00 GB" would
          // read as "not counted".
          k === 'activations' && peakPhase === 'optimizer' && v < 5e6
            ? h(
                'tr',
                { class: 'part-none' },
                h('th', { scope: 'row' }, partLabel(k)),
                h(
                  'td',
                  { colspan: sources ? 5 : 4, 'data-label': '' },
                  t('part.activationsNone'),
                  ' ',
                  t.n(`(${t.int(v)} ${t('unit.bytes')})`),
                ),
              )
            : h(
                'tr',
                {},
                h('th', { scope: 'row' }, partLabel(k)),
                h('td', { 'data-label': 'GB (10⁹)' }, t.n(t.fixed2(v / 1e9))),
                h('td', { 'data-label': 'GiB (2³⁰)' }, t.n(t.fixed2(v / 2 ** 30))),
                h('td', { 'data-label': t('unit.bytes') }, t.n(t.int(v))),
                h('td', { 'data-label': '%' }, t.n(t.num((100 * v) / total))),
                sources
                  ? h(
                      'td',
                      { class: 'source', 'data-label': t('result.source') },
                      h('span', { lang: 'en', dir: 'ltr' }, src),
                    )
                  : null,
              ),
        ),
      ),
    );
  }

  function breakdownChart(el, scenarios) {
    // scenarios: [{ label, breakdown }]
    const keys = [];
    for (const sc of scenarios)
      for (const [k] of breakdownParts(sc.breakdown)) if (!keys.includes(k)) keys.push(k);
    if (!keys.length) return;
    const parts = keys.map((k) => ({
      key: k,
      label: partLabel(k),
      values: scenarios.map((sc) => partBytes(sc.breakdown?.[k]) || 0),
    }));
    const holder = h('div', { class: 'chart-holder' });
    el.append(holder);
    stackedBars(holder, {
      label: t('result.breakdownChart'),
      scenarios: scenarios.map((s) => s.label),
      parts,
      t,
      ...chartOpts('breakdown'),
    });
  }

  function details(result) {
    // Collapsed at first: its table (every field of the result) is built when it is opened,
    // not on every keystroke.
    const box = h('details', { class: 'details' }, h('summary', {}, t('result.details')));
    box.addEventListener('toggle', function fill() {
      if (!box.open) return;
      box.removeEventListener('toggle', fill);
      box.append(detailsTable(result));
    });
    return box;
  }

  function detailsTable(result) {
    const rows = flatten(result).filter(([, v]) => v !== null && v !== undefined && v !== '');
    return h(
      'table',
      { class: 'data' },
      h(
        'tbody',
        {},
        rows.map(([k, v]) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, h('code', {}, k)),
            h(
              'td',
              {},
              typeof v === 'number'
                ? isBytesKey(k)
                  ? [t.n(t.int(v)), ' = ', t.both(v)]
                  : t.n(Number.isInteger(v) ? t.int(v) : t.num(v))
                : String(v),
            ),
          ),
        ),
      ),
    );
  }

  function renderSize(el, res, req) {
    el.append(
      headline('size.total', res.totalBytes, [
        typeof res.bytesPerParam === 'number'
          ? h(
              'span',
              { class: 'chip' },
              t('size.perParam', { n: '' }),
              t.n(t.num(res.bytesPerParam)),
            )
          : null,
      ]),
    );
    if (res.formula)
      el.append(
        h('p', { class: 'formula' }, t('size.formula'), ' ', h('code', {}, String(res.formula))),
      );
    const scenarios = [{ label: t('size.thisConfig'), breakdown: res.breakdown }];
    // The core returns the seed's simple formula beside the exact answer (res.simple).
    if (res.simple && typeof res.simple.totalBytes === 'number') {
      scenarios.unshift({ label: t('size.simpleFormula'), breakdown: res.simple.breakdown });
      el.append(
        h(
          'p',
          {},
          t('size.simpleVsExact'),
          ' ',
          t.both(res.simple.totalBytes),
          ' → ',
          t.both(res.totalBytes),
          typeof res.differenceFromSimple === 'number'
            ? [
                ' (',
                t.n(
                  `${res.differenceFromSimple >= 0 ? '+' : ''}${t.int(res.differenceFromSimple)} ${t('unit.bytes')}`,
                ),
                ')',
              ]
            : null,
        ),
      );
    }
    const notes = Array.isArray(res.notes) ? res.notes.filter((n) => typeof n === 'string') : [];
    if (notes.length)
      el.append(
        h(
          'ul',
          { class: 'notes', lang: 'en' },
          notes.map((n) => h('li', {}, n)),
        ),
      );
    breakdownChart(el, scenarios);
    el.append(breakdownTable(res.breakdown) || '', details(res));
  }

  function timelineValues(timeline) {
    const keys = ['totalBytes', 'bytes', 'allocatedBytes', 'liveBytes', 'memoryBytes', 'peakBytes'];
    const key = keys.find((k) => timeline.some((e) => typeof e?.[k] === 'number'));
    return key ? timeline.map((e) => (typeof e[key] === 'number' ? e[key] : null)) : null;
  }

  function timelineChart(el, timeline, titleKey) {
    if (!Array.isArray(timeline) || timeline.length < 2) return;
    const vals = timelineValues(timeline);
    if (!vals) return;
    const x = vals.map((_, i) => i);
    const phases = [...new Set(timeline.map((e) => e.phase || 'step'))];
    const series = phases.map((ph, i) => ({
      key:
        {
          forward: 'weights',
          backward: 'gradients',
          recompute: 'activations',
          optimizer: 'optimizerState',
        }[ph] || 'runtime',
      label: optionLabel('phase', ph),
      values: vals.map((v, j) =>
        (timeline[j].phase || 'step') === ph ||
        (timeline[j + 1] && (timeline[j + 1].phase || 'step') === ph)
          ? v / 2 ** 30
          : null,
      ),
    }));
    let peak = 0;
    vals.forEach((v, i) => {
      if (v > vals[peak]) peak = i;
    });
    const holder = h('div', { class: 'chart-holder' }, h('h3', {}, t(titleKey)));
    el.append(holder);
    lines(holder, {
      label: t(titleKey),
      x,
      xLabel: t('chart.event'),
      yLabel: 'GiB',
      series,
      mark: { index: peak, value: vals[peak] / 2 ** 30, label: t('chart.peak') },
      t,
      ...chartOpts(titleKey),
    });
  }

  /** The three numbers users compare with, and which tool reports which. */
  function deviceNumbers(res) {
    const a = res.allocator;
    if (!a || typeof res.deviceUsedBytes !== 'number') return '';
    const row = (key, bytes) => h('li', {}, t(key), ' ', t.both(bytes));
    return h(
      'div',
      { class: 'device-numbers' },
      h('h3', {}, t('peak.tools')),
      h(
        'ul',
        {},
        row('peak.smi', res.deviceUsedBytes),
        row('peak.reserved', res.reservedPeakBytes),
        row('peak.allocated', res.allocatedPeakBytes),
        row('peak.fragmentation', a.fragmentationBytes),
        row('peak.largest', a.largestRequestBytes),
        row('peak.firstStep', a.firstStepAllocatedBytes),
      ),
      a.outOfMemory ? h('p', { class: 'badge bad' }, t('peak.oom')) : null,
      h('p', { class: 'note' }, t('peak.simulated')),
    );
  }

  function renderPeak(el, res, req) {
    const fits = res.fits;
    const device = typeof res.deviceUsedBytes === 'number';
    el.append(
      headline(
        device ? 'peak.device' : 'peak.total',
        device ? res.deviceUsedBytes : res.peakBytes,
        [
          typeof fits === 'boolean'
            ? h(
                'span',
                { class: `badge ${fits ? 'ok' : 'bad'}` },
                fits ? t('peak.fits') : t('peak.noFit'),
              )
            : null,
          res.peakPhase
            ? h(
                'span',
                { class: 'chip' },
                t('peak.phase'),
                ' ',
                optionLabel('phase', res.peakPhase),
              )
            : null,
        ],
      ),
    );
    if (typeof res.headroomBytes === 'number')
      el.append(h('p', {}, t('peak.headroom'), ' ', t.both(res.headroomBytes)));
    if (typeof res.maxMicroBatch === 'number')
      el.append(h('p', {}, t('peak.maxMicroBatch'), ' ', t.n(t.int(res.maxMicroBatch))));
    el.append(deviceNumbers(res));
    if (fits === false && !verdictEl) el.append(suggestionsLater(req));
    breakdownChart(el, [{ label: t('size.thisConfig'), breakdown: res.breakdown }]);
    el.append(breakdownTable(res.breakdown, res.peakPhase) || '');
    timelineChart(el, res.timeline, 'peak.timeline');
    el.append(details(res));
    el.append(snapPanel.element(req));
  }

  // The suggestions take six more core calls: they are filled in the task after the one that
  // shows the result, so that a keystroke's frame holds only the result itself; a newer
  // update before then replaces them (computeSeq).
  function suggestionsLater(req) {
    const slot = h('div', { class: 'suggest-slot' });
    const seq = computeSeq;
    setTimeout(() => {
      if (seq === computeSeq && slot.isConnected) slot.append(suggestions(req));
    }, 0);
    return slot;
  }

  /**
   * When the run does not fit: the changes (one at a time, then combined) that make it fit,
   * those that fit first; each applies its change to the inputs with one click.
   */
  function suggestions(req) {
    // [label, request patch, state patch]
    const variants = [
      ['sug.ckpt', { checkpointing: 'full' }, { checkpointing: 'full' }],
      [
        'sug.micro1',
        {
          microBatch: 1,
          gradientAccumulationSteps: (req.gradientAccumulationSteps || 1) * req.microBatch,
        },
        { microBatch: 1, accumSteps: (st.accumSteps || 1) * st.microBatch },
      ],
      ['sug.adam8', { optimizer: 'adam-8bit' }, { optimizer: 'adam-8bit' }],
      // PyTorch 2's foreach step holds a temporary as large as the optimizer state.
      // (not when the step already runs one tensor at a time: for-loop, fused, transformers, or
      // a runtime whose default is for-loop)
      ...(['for-loop', 'fused', 'transformers'].includes(req.optimizerImplementation) ||
      ['pytorch-cpu', 'pytorch-1.13-cuda', 'pytorch-1.10-cuda'].includes(req.runtime)
        ? []
        : [['sug.forloop', { optimizerImplementation: 'for-loop' }, { optImpl: 'for-loop' }]]),
      ['sug.bf16', { precision: 'bf16' }, { precision: 'bf16' }],
      [
        'sug.zero3',
        { zeroStage: 3, dataParallel: Math.max(8, req.dataParallel || 1) },
        { zeroStage: '3', dataParallel: Math.max(8, st.dataParallel || 1) },
      ],
      [
        'sug.combo',
        { checkpointing: 'full', optimizer: 'adam-8bit', precision: 'bf16' },
        { checkpointing: 'full', optimizer: 'adam-8bit', precision: 'bf16' },
      ],
    ];
    const found = [];
    for (const [key, patch, statePatch] of variants) {
      // a change the run already has is no suggestion
      if (
        Object.entries(patch).every(
          ([k, v]) => (req[k] ?? { gradientAccumulationSteps: 1 }[k]) === v,
        )
      )
        continue;
      try {
        // Only the peak and the verdict are shown: no timeline, no micro-batch search (each
        // keystroke computes all six).
        const r = tm.peakMemory({ ...req, ...patch, timeline: false, searchMaxMicroBatch: false });
        found.push({ key, r, statePatch });
      } catch {
        /* that change is not modelled for this request */
      }
    }
    // Those that fit first, each group in the order above (the smaller change first).
    found.sort((a, b) => Number(!!b.r.fits) - Number(!!a.r.fits));
    const items = found.map(({ key, r, statePatch }) =>
      h(
        'li',
        { class: r.fits ? 'fit' : 'nofit' },
        h(
          'button',
          {
            type: 'button',
            class: 'sug-apply',
            'data-suggestion': key.slice(4),
            onclick: () => {
              update(statePatch, { rebuild: true });
              verdictEl?.focus();
            },
          },
          h(
            'span',
            { class: `badge ${r.fits ? 'ok' : 'bad'}` },
            r.fits ? t('peak.fits') : t('peak.noFit'),
          ),
          ' ',
          h('span', { class: 'sug-label' }, t(key)),
          ': ',
          t.both(typeof r.deviceUsedBytes === 'number' ? r.deviceUsedBytes : r.peakBytes),
        ),
      ),
    );
    return items.length
      ? h(
          'div',
          { class: 'suggest' },
          h('h3', {}, t('sug.heading')),
          h('p', { class: 'help' }, t('sug.apply')),
          h('ul', {}, items),
        )
      : '';
  }

  // ---- the answer: does it fit, and how fast ------------------------------------------
  function verdictError(e) {
    if (!verdictEl) return;
    const box = errorBox(e);
    box.removeAttribute('role'); // the results below announce it
    put(verdictEl, box);
    put(suggestEl);
  }

  function verdictInvalid() {
    if (!verdictEl) return;
    put(verdictEl, h('div', { class: 'error' }, h('p', {}, [...invalid.values()][0])));
    put(suggestEl);
  }

  /** The peak result as a verdict: fits or not, what nvidia-smi shows, where the peak is. */
  function renderVerdict(res, req) {
    if (!verdictEl) return;
    const fits = res.fits;
    const used = typeof res.deviceUsedBytes === 'number' ? res.deviceUsedBytes : res.peakBytes;
    const capacity = typeof res.headroomBytes === 'number' ? used + res.headroomBytes : null;
    const where =
      res.peakPhase &&
      [
        optionLabel('phase', res.peakPhase),
        typeof res.peakLayer === 'number' && res.peakLayer >= 0
          ? t('ask.layer', { n: res.peakLayer + 1 })
          : '',
      ]
        .filter(Boolean)
        .join(', ');
    const timeSlot = h('li', { class: 'verdict-time' });
    put(
      verdictEl,
      h(
        'p',
        { class: 'verdict-line' },
        typeof fits === 'boolean'
          ? h(
              'span',
              { class: `badge verdict-badge ${fits ? 'ok' : 'bad'}` },
              fits ? t('peak.fits') : t('peak.noFit'),
            )
          : null,
        ' ',
        h(
          'span',
          { class: 'verdict-text' },
          t(typeof res.deviceUsedBytes === 'number' ? 'ask.smi' : 'ask.peak'),
          ' ',
          h('strong', { class: 'verdict-value', 'data-bytes': String(used) }, t.both(used)),
          capacity ? [' ', t('ask.of'), ' ', t.both(capacity)] : null,
        ),
      ),
      h(
        'ul',
        { class: 'verdict-facts' },
        where ? h('li', {}, t('peak.phase'), ' ', where) : null,
        typeof res.allocatedPeakBytes === 'number'
          ? h(
              'li',
              { class: 'verdict-more' },
              t('ask.allocated'),
              ' ',
              h('code', {}, 'max_memory_allocated()'),
              ' ',
              t.both(res.allocatedPeakBytes),
              typeof res.reservedPeakBytes === 'number'
                ? ['; ', h('code', {}, 'max_memory_reserved()'), ' ', t.both(res.reservedPeakBytes)]
                : null,
            )
          : null,
        fits && typeof res.maxMicroBatch === 'number'
          ? h('li', {}, t('peak.maxMicroBatch'), ' ', t.n(t.int(res.maxMicroBatch)))
          : null,
        timeSlot,
      ),
    );
    put(suggestEl, fits === false ? suggestionsLater(req) : '');
    stepTimeLater(timeSlot);
  }

  // The time per step comes from the accumulation planner (it needs a GPU preset's TFLOP/s):
  // the plan for this micro-batch and global batch, computed in the task after the verdict.
  function stepTimeLater(slot) {
    const seq = computeSeq;
    if (!st.gpu || st.checkpointing === 'optimal') return;
    setTimeout(() => {
      if (seq !== computeSeq || !slot.isConnected) return;
      try {
        const dp = st.dataParallel || 1;
        const steps = st.accumSteps || 1;
        const res = tm.accumulation(
          BUILDERS.accum[1]({
            ...st,
            accMode: 'plan',
            targetGlobalBatch: st.microBatch * steps * dp,
          }),
        );
        const plans = Array.isArray(res.plans) ? res.plans : [];
        const p =
          plans.find(
            (x) =>
              x.microBatch === st.microBatch &&
              x.accumulationSteps === steps &&
              (!x.checkpointing || x.checkpointing === st.checkpointing),
          ) || plans.find((x) => x.microBatch === st.microBatch && x.accumulationSteps === steps);
        if (!p || typeof p.stepSeconds !== 'number') return;
        put(
          slot,
          t('ask.time', { global: t.int(st.microBatch * steps * dp) }),
          ' ',
          t.n(`${t.num(p.stepSeconds)} s`),
          typeof p.samplesPerSecond === 'number'
            ? [' (', t.n(t('ask.samples', { n: t.num(p.samplesPerSecond) })), ')']
            : null,
        );
      } catch {
        /* no step time for this run (a custom GPU size, a model the planner cannot time) */
      }
    }, 0);
  }

  /** The verdict for the current inputs, from the peak result when the peak tab shows it. */
  function computeVerdict() {
    if (!verdictEl || st.tab === 'peak') return;
    if (invalid.size) return verdictInvalid();
    let req;
    try {
      req = BUILDERS.peak[1](st);
    } catch (e) {
      return verdictError(e);
    }
    if (isHeavy('peak', st)) {
      put(verdictEl, h('p', { class: 'muted' }, t('ask.heavy')));
      put(suggestEl);
      return;
    }
    try {
      renderVerdict(solver.run('peakMemory', { ...req, timeline: false }), req);
    } catch (e) {
      verdictError(e);
    }
  }

  /** A table of plans / comparison rows: the scalar fields, bytes in GB, times in seconds. */
  function planTable(list, caption, rec, lead = []) {
    const cols = [...lead];
    for (const p of list)
      for (const [k, v] of Object.entries(p))
        if (
          ['number', 'boolean', 'string'].includes(typeof v) &&
          !cols.includes(k) &&
          k !== 'exact'
        )
          cols.push(k);
    const cell = (c, v) =>
      typeof v === 'boolean'
        ? v
          ? '✓'
          : '✗'
        : typeof v === 'number'
          ? t.n(isBytesKey(c) ? t.gb(v) : /Seconds$/.test(c) ? `${t.num(v)} s` : t.num(v))
          : typeof v === 'string'
            ? optionLabel(c === 'id' ? 'row' : c, v)
            : '';
    return h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { class: 'data plans stack' },
        h('caption', {}, caption),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            cols.map((c) => h('th', { scope: 'col' }, optionLabel('col', c))),
          ),
        ),
        h(
          'tbody',
          {},
          list.map((p) =>
            h(
              'tr',
              {
                class:
                  p === rec ||
                  (rec &&
                    p.microBatch === rec.microBatch &&
                    p.accumulationSteps === rec.accumulationSteps &&
                    p.checkpointing === rec.checkpointing)
                    ? 'rec'
                    : '',
              },
              cols.map((c, i) =>
                h(
                  i === 0 ? 'th' : 'td',
                  i === 0 ? { scope: 'row' } : { 'data-label': optionLabel('col', c) },
                  cell(c, p[c]),
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  function renderAccum(el, res, req) {
    const plans = Array.isArray(res.plans) ? res.plans : null;
    if (!plans) {
      if (typeof res.effectiveBatch === 'number') {
        el.append(
          h(
            'div',
            { class: 'headline' },
            h('span', { class: 'headline-label' }, t('acc.effective')),
            h('span', { class: 'headline-value' }, t.n(t.int(res.effectiveBatch))),
          ),
        );
      }
      accumulationDiagram(el, {
        micro: req.microBatch || 1,
        steps: req.accumulationSteps || 1,
        dp: req.dataParallel || 1,
        t,
      });
      el.append(details(res));
      return;
    }
    const rec =
      typeof res.recommended === 'number'
        ? plans[res.recommended]
        : res.recommended && typeof res.recommended === 'object'
          ? res.recommended
          : plans.find((p) => p.recommended);
    if (rec) {
      el.append(
        h(
          'div',
          { class: 'headline' },
          h('span', { class: 'headline-label' }, t('acc.recommended')),
          h(
            'span',
            { class: 'headline-value' },
            t.n(
              `${t.int(rec.microBatch)} × ${t.int(rec.accumulationSteps)}${req.dataParallel > 1 ? ` × ${t.int(req.dataParallel)}` : ''}`,
            ),
          ),
          typeof rec.peakBytes === 'number' ? t.both(rec.peakBytes) : null,
        ),
      );
    }
    const notes = [
      res.checkpointing?.message,
      ...(Array.isArray(res.warnings) ? res.warnings.map((w) => w?.message) : []),
    ].filter((m) => typeof m === 'string');
    if (notes.length)
      el.append(
        h(
          'ul',
          { class: 'notes', lang: 'en' },
          notes.map((m) => h('li', {}, m)),
        ),
      );
    const rows = Array.isArray(res.comparison?.rows) ? res.comparison.rows : null;
    if (rows) {
      el.append(planTable(rows, t('acc.comparison'), null, ['id']));
      breakdownChart(
        el,
        rows
          .filter((r) => r.breakdown)
          .map((r) => ({ label: optionLabel('row', r.id), breakdown: r.breakdown })),
      );
    }
    el.append(planTable(plans.slice(0, 60), t('acc.plans'), rec));
    // Figure 2 shows accumulation: the recommended plan, or the fastest fitting plan that accumulates.
    const shown =
      rec?.accumulationSteps > 1
        ? rec
        : plans.find((p) => p.fits && p.accumulationSteps > 1) || rec;
    if (shown)
      accumulationDiagram(el, {
        micro: shown.microBatch,
        steps: shown.accumulationSteps,
        dp: req.dataParallel || 1,
        t,
      });
    el.append(details(res));
  }

  function renderPlace(el, res, req) {
    el.append(
      headline('place.peak', res.peakActivationBytes, [
        typeof res.overheadFraction === 'number'
          ? h(
              'span',
              { class: 'chip' },
              t('place.overhead'),
              ' ',
              t.n(`${t.num(100 * res.overheadFraction)} %`),
            )
          : null,
      ]),
    );
    if (typeof res.storedBytes === 'number')
      el.append(h('p', {}, t('place.stored'), ' ', t.both(res.storedBytes)));
    const segs = Array.isArray(res.checkpointed) ? res.checkpointed : [];
    el.append(
      h(
        'p',
        {},
        t('place.segments', { n: segs.length }),
        ' ',
        t.n(
          segs
            .slice(0, 40)
            .map(([a, b]) => `${a + 1}–${b + 1}`)
            .join(', ') + (segs.length > 40 ? ' …' : ''),
          'num-list',
        ),
      ),
    );
    const n =
      req.chain?.layers?.length ||
      res.layers ||
      (Array.isArray(res.timeline)
        ? Math.max(0, ...res.timeline.map((e) => e.layer ?? -1)) + 1
        : 0);
    if (n > 0) placementDiagram(el, { n, segments: segs, t });
    timelineChart(el, res.timeline, 'place.timeline');
    if (st.frontier) {
      const holder = h('div', { class: 'chart-holder' }, h('h3', {}, t('place.frontier')));
      el.append(holder);
      // The best plans as the reference: Rotor's (multi-level) for 'optimal', otherwise the
      // exact single-level optimum's over every budget; the chosen plan is marked where it lies.
      const rotor = req.strategy === 'optimal';
      const { strategy, k, segments, snapshots, budgetBytes, slots, ...chainOnly } = req;
      const frontierReq = rotor
        ? { ...req, frontier: true, timeline: false }
        : { ...chainOnly, strategy: 'optimal-single-level', frontier: true, timeline: false };
      solver
        .runHeavy('placement', frontierReq)
        .then((fr) => {
          const data = frontierData(fr?.frontier, res);
          if (!data.x.length) return;
          const label = t(rotor ? 'place.frontierRotor' : 'place.frontierBest');
          lines(holder, {
            label: t('place.frontier'),
            x: data.x,
            xLabel: 'GiB',
            yLabel: t('place.costAxis'),
            series: [{ key: 'activations', label, values: data.y }],
            mark: { index: data.index, value: data.value, label: t('place.chosen') },
            stepped: true,
            t,
            ...chartOpts('frontier'),
          });
        })
        .catch((e) => {
          if (e.code !== 'cancelled')
            holder.append(
              h(
                'p',
                { class: 'muted' },
                e.code === 'unsupported' ? t('error.unsupported') : String(e.message),
              ),
            );
        });
    }
    el.append(details(res));
  }

  const RENDER = { size: renderSize, peak: renderPeak, accum: renderAccum, place: renderPlace };

  // ---- worked examples ----------------------------------------------------------------
  function runExample(id) {
    const ex = EXAMPLES.find((e) => e.id === id);
    if (!ex) return;
    update(
      { ...ex.state(known), tab: tabs.includes(ex.tab) ? ex.tab : st.tab, ex: id },
      { rebuild: true, fromExample: true },
    );
  }

  function renderExample() {
    if (!exampleEl) return;
    const ex = EXAMPLES.find((e) => e.id === st.ex);
    if (!ex) return put(exampleEl);
    let out;
    try {
      out = ex.explain(tm, t, known);
    } catch (e) {
      out = { steps: [], result: errorBox(e) };
    }
    if (out.patch && Object.entries(out.patch).some(([k, v]) => st[k] !== v)) {
      st = { ...st, ...out.patch };
      publishState();
      queueMicrotask(build);
    }
    exampleOut = out;
    put(
      exampleEl,
      h(
        'article',
        { class: 'example' },
        h('h2', {}, t(`ex.${ex.id}.title`)),
        h('p', {}, t(`ex.${ex.id}.question`)),
        h('h3', {}, t('ex.steps')),
        h('ol', {}, out.steps),
        h('h3', {}, t('ex.result')),
        out.result || '',
      ),
    );
  }

  // ---- export & embed -----------------------------------------------------------------
  const exp = makeExports({
    get last() {
      return last;
    },
    get t() {
      return t;
    },
    get st() {
      return st;
    },
    tm,
    rootEl,
    embed,
  });
  const { exporters, exportBar, embedCodes, embedDialog } = exp;

  function openEmbed() {
    dialogEl.fill();
    dialogEl.showModal();
  }

  // Charts take their colours when drawn: redraw when the system switches light/dark.
  window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', () => {
    resetColors(rootEl);
    compute();
  });
  build();
  return {
    get state() {
      return st;
    },
    setState: (patch) => update(patch, { rebuild: true }),
    runExample,
    exportText: (kind) => exporters[kind](),
    embedCodes,
    element: rootEl,
  };
}

export { modelOf };
