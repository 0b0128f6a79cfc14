// The trainmem page's controller: the state, the requests built from it, and the results.
// Four calculators share one model / optimizer / GPU context; the inputs are form.js's, the
// answer at the top verdict.js's, each calculator's result views.js's, the exports and embed
// codes export.js's. mountApp() serves the full page, the iframe mode and the
// <trainmem-calculator> element alike.
import { load } from '../lib/index.js';
import { h, put } from './dom.js';
import { loadStrings, makeTranslator, browserLang, prefetchStrings } from './i18n.js';
import { FIELDS, TABS, defaults } from './state.js';
import { BUILDERS, isHeavy, modelOf } from './requests.js';
import { Solver } from './solver.js';
import { snapshotPanel } from './snapshot.js';
import { EXAMPLES, findPreset } from './examples.js';
import { makeExports } from './export.js';
import { resetColors } from './charts.js';
import {
  CONTEXT_FIELDS,
  TAB_FIELDS,
  ASK_FIELDS,
  ADVANCED_FIELDS,
  USES,
  STRUCTURAL,
  makeForm,
} from './form.js';
import { makeViews } from './views.js';
import { makeVerdict } from './verdict.js';

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

  // The form, the verdict and the result views read the live state through these getters.
  const form = makeForm({
    get t() {
      return t;
    },
    get st() {
      return st;
    },
    get presets() {
      return presets;
    },
    show,
    invalid,
    update,
    compute: () => compute(),
  });
  const { optionLabel, fields } = form;
  const verdict = makeVerdict({
    get t() {
      return t;
    },
    get st() {
      return st;
    },
    tm,
    solver,
    invalid,
    get verdictEl() {
      return verdictEl;
    },
    get suggestEl() {
      return suggestEl;
    },
    get computeSeq() {
      return computeSeq;
    },
    update,
    optionLabel,
    errorBox: (e) => errorBox(e),
  });
  const { renderVerdict, verdictError, verdictInvalid, computeVerdict } = verdict;
  const views = makeViews({
    get t() {
      return t;
    },
    get st() {
      return st;
    },
    tm,
    solver,
    snapPanel,
    get verdictEl() {
      return verdictEl;
    },
    optionLabel,
    chartOpts,
    suggestionsLater: verdict.suggestionsLater,
    fitsWithMargin: verdict.fitsWithMargin,
  });
  const { RENDER, partLabel } = views;

  // ---- layout -------------------------------------------------------------------------
  let resultsEl;
  let verdictEl;
  let suggestEl;
  let statusEl;
  let exampleEl;
  let dialogEl;

  // The advanced inputs (peak memory and the accumulation plans) behind one disclosure, open
  // when one of them is set or the user opened it.
  let advancedOpen = false;
  function advanced(tab, shown = []) {
    if (tab !== 'peak' && !(tab === 'accum' && st.accMode === 'plan')) return null;
    const keys = ADVANCED_FIELDS.filter((k) => !shown.includes(k));
    const set = keys.some((k) => st[k] !== FIELDS[k].default);
    const box = h(
      'details',
      { class: 'advanced', id: 'tm-advanced', open: advancedOpen || set },
      h('summary', {}, t('adv.summary')),
      h('div', { class: 'fields' }, fields(keys, tab)),
    );
    box.addEventListener('toggle', () => {
      advancedOpen = box.open;
    });
    return box;
  }

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
          h(
            'div',
            { class: options.bare ? 'fields fields-compact' : 'fields' },
            fields(ctxKeys, tab),
          ),
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
          advanced('peak'),
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
      h(
        'div',
        { class: 'fields' },
        fields(
          TAB_FIELDS[tab].filter((k) => !(ask && ADVANCED_FIELDS.includes(k))),
          tab,
        ),
      ),
      ask ? null : advanced(tab, TAB_FIELDS[tab]),
      statusEl,
      resultsEl,
      exportBar(),
    );
    dialogEl = embed ? null : embedDialog();
    put(
      rootEl,
      // The iframe mode has no page header: the host page is the page, and the result has to
      // show within the embed code's height (900 px).
      options.bare ? null : header,
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
      t.lang !== 'en' && t.coreError(e.code) ? h('p', {}, t.coreError(e.code)) : null,
      h('p', { lang: 'en', dir: 'ltr' }, String(e.message)),
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
    // Every error offers a way out: the precision the GPU supports, or the input that is needed.
    const wayOut = (label, onclick) =>
      h(
        'p',
        { class: 'way-out' },
        t('error.fixIt'),
        ' ',
        h('button', { type: 'button', class: 'small', onclick }, label),
      );
    if (e.field === 'precision' && /amp-fp16/.test(String(e.message)))
      box.append(
        wayOut(t('error.useFp16'), () => {
          update({ precision: 'amp-fp16' }, { rebuild: true });
          rootEl.querySelector('#tm-verdict, #tm-results')?.focus?.();
        }),
      );
    else if (String(e.field || '').startsWith('gpuPeakTflops'))
      box.append(
        wayOut(t('error.usePreset'), () => {
          /** @type {HTMLElement | null} */ (rootEl.querySelector('#tm-gpu'))?.focus();
        }),
      );
    const fieldKey =
      e.field &&
      // (the accumulation planner's step times need a GPU preset's TFLOP/s: point at the picker)
      {
        'model.config': 'config',
        'model.params': 'params',
        gpuPeakTflops: 'gpu',
        'checkpointing.saveOps': 'saveOps',
        'fsdp.shardGroupSize': 'fsdpGroup',
        'fsdp.mixedPrecision': 'fsdpParamDtype',
        'zero3.maxLiveParameters': 'zero3MaxLive',
        'zero3.prefetchBucketSize': 'zero3Prefetch',
        'samples.lengths': 'sampleLengths',
      }[e.field.split('.').slice(0, 2).join('.')];
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
    showParsed();
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

  /** Under a pasted config.json: what the core read from it (model type, layers, parameters). */
  function showParsed() {
    const slot = rootEl.querySelector('#tm-config-parsed');
    if (!slot) return;
    if (st.modelSource !== 'config' || !st.config.trim()) return put(slot);
    try {
      const d = tm.describeModel({ model: modelOf(st) });
      put(
        slot,
        t('parsed.heading'),
        ' ',
        h('code', { class: 'parsed-type' }, String(d.modelType || d.architecture || '')),
        ' · ',
        h('span', { class: 'parsed-layers' }, t('parsed.layers', { n: t.int(d.layers) })),
        ' · ',
        h(
          'span',
          { class: 'parsed-params', 'data-params': String(d.params) },
          t('parsed.params', { n: t.int(d.params) }),
        ),
      );
    } catch {
      put(slot); // the error box says why
    }
  }

  function markFirst() {
    if (firstDone) return;
    firstDone = true;
    rootEl.setAttribute('data-ready', '1');
    mark('trainmem:first-result');
    // Then, in the background, the other languages' strings: the page works offline once loaded.
    setTimeout(prefetchStrings, 0);
  }

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
