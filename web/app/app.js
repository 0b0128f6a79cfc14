// @ts-check
// The trainmem page's controller: the state, the requests built from it, and the results.
// Four calculators share one model / optimizer / GPU context; the inputs are form.js's, the
// answer at the top verdict.js's, each calculator's result views.js's, the exports and embed
// codes export.js's. mountApp() serves the full page, the iframe mode and the
// <trainmem-calculator> element alike.
/** @import { AdviseRequest, AdviseResult, FunctionName, Trainmem, TrainmemError } from '../lib/index.js' */
/** @import { Ctx, MountOptions, PageError, PickerPresets, PreviousVerdict, State, Tab } from './types.js' */
import { load } from '../lib/index.js';
import { h, put } from './dom.js';
import { loadStrings, makeTranslator, browserLang, prefetchStrings } from './i18n.js';
import { FIELDS, TABS, defaults } from './state.js';
import {
  BUILDERS,
  isHeavy,
  isSlow,
  modelOf,
  adviseRequest,
  knowBaseDtype,
  BASE_DTYPE_PROBE,
} from './requests.js';
import { Solver, markCall } from './solver.js';
import { snapshotPanel } from './snapshot.js';
import { tracePanel } from './trace.js';
import { EXAMPLES, findPreset } from './examples.js';
import { examplesEl, exampleState, renderExample } from './examples-view.js';
import { errorBox } from './errors-view.js';
import { usePresets } from './resolve.js';
import { modelInput, isMoE } from './model-input.js';
import { exportersOf, exportBar, embedCodes, embedDialog } from './export.js';
import {
  CONTEXT_FIELDS,
  TAB_FIELDS,
  ASK_FIELDS,
  ADVANCED_FIELDS,
  USES,
  STRUCTURAL,
  fields,
  toggled,
} from './form.js';
import { RENDER } from './views.js';
import {
  renderVerdict,
  verdictError,
  verdictInvalid,
  computeVerdict,
  peakOf,
  showChanges,
} from './verdict.js';

// Start-up phases for bench/page.mjs (User Timing; a no-op where marks are unsupported).
/** @param {string} name */
function mark(name) {
  try {
    performance.mark(name);
  } catch {
    /* marks unsupported */
  }
}

/**
 * @param {{ models?: unknown, gpus?: unknown } | undefined} raw
 * @returns {PickerPresets}
 */
function normalizePresets(raw) {
  /** @type {(v: unknown) => PickerPresets['models']} */
  const list = (v) =>
    Array.isArray(v)
      ? v.filter((x) => x && typeof x.id === 'string')
      : v && typeof v === 'object'
        ? Object.entries(v).map(([id, x]) => ({ id, ...(x && typeof x === 'object' ? x : {}) }))
        : [];
  return { models: list(raw?.models), gpus: list(raw?.gpus) };
}

// The presets the pickers offer. The page bundle carries their ids and names, read from the
// data files at build time (tools/preset-index.mjs): asking the core at start-up parsed every
// data file and delayed the first result. Unbundled (sources served as they are), ask the core.
/** @param {Trainmem} tm */
function loadPresets(tm) {
  try {
    return normalizePresets(
      typeof __TRAINMEM_PRESET_INDEX__ === 'object'
        ? __TRAINMEM_PRESET_INDEX__
        : tm.presets({ parameterCounts: false }),
    );
  } catch {
    /* presets not in this build: the model picker offers a parameter count and config.json */
    return { models: [], gpus: [] };
  }
}

// The state a link or the embedding gave, checked against the presets of this build.
/**
 * @param {State} st
 * @param {PickerPresets} presets
 * @returns {State}
 */
function checkedState(st, presets) {
  // An unknown GPU id (a stale link, a build without GPU presets): the custom size (gpuGiB).
  if (st.gpu && !presets.gpus.some((g) => g.id === st.gpu)) st = { ...st, gpu: '' };
  // The default model is the LLaMA-2 7B preset; a core built without presets falls back to
  // its parameter count.
  if (st.modelSource === 'preset' && !presets.models.some((m) => m.id === st.preset)) {
    st = { ...st, modelSource: 'params', preset: '' };
  }
  return st;
}

// ---- the controller's context -----------------------------------------------------------
// One object, shared by the form, the verdict, the result views and the exports: the live
// state (st, t, the last result, the elements of the current layout) and the functions that
// act on it. The functions below take it first.
/**
 * @param {HTMLElement | ShadowRoot} root
 * @param {MountOptions} options
 * @returns {Promise<Ctx>}
 */
async function startContext(root, options) {
  const embed = !!options.embed;
  const tabs = options.tabs?.length ? options.tabs : TABS;
  /** @type {State} */
  let st = { ...defaults(), ...options.state };
  if (!tabs.includes(st.tab)) st.tab = tabs[0];
  const lang0 = st.lang || options.lang || browserLang();
  const [tm, en, strings] = await Promise.all([load(), loadStrings('en'), loadStrings(lang0)]);
  mark('trainmem:core-ready');
  /**
   * The context. Besides what is set here: the shown result (`last`: { tab, fn, request,
   * result }), whether the first result is shown (`firstDone`), the advanced disclosure's
   * state (`advancedOpen`), the pending URL write (`stateTimer`), the ResizeObserver of the
   * results (`resultsSize`), the snapshot panel (`snapPanel`), the traced-model panel
   * (`tracePanel`), the presets (`presets`,
   * `known`), the callbacks (`update`, `compute`, `errorBox`), and the current layout's
   * elements (build(): resultsEl, verdictEl, suggestEl, statusEl, exampleEl, dialogEl).
   * (types.d.ts Ctx; the rest is set below and by build() before it is read)
   */
  const ctx = /** @type {Ctx} */ ({
    root,
    options,
    embed,
    show: options.show || null, // Set of input keys to show (embeds)
    tabs,
    st,
    en,
    t: makeTranslator(lang0, strings, en),
    tm,
    solver: new Solver(tm),
    rootEl: h('div', { class: `tm${embed ? ' tm-embed' : ''}` }),
    invalid: new Map(), // key -> message for inputs that do not parse
    // The results' width, kept by a ResizeObserver so that drawing a chart does not force a
    // layout of the results just built.
    resultsWidth: 0,
    computeSeq: 0,
  });

  // The snapshot comparison has a worker of its own: a placement solve does not cancel it.
  ctx.snapPanel = snapshotPanel(Object.assign(Object.create(ctx), { solver: new Solver(tm) }));
  // A dropped trace of the user's own model (read in a worker of its own).
  ctx.tracePanel = tracePanel(Object.assign(Object.create(ctx), { solver: new Solver(tm) }));
  ctx.presets = loadPresets(tm);
  usePresets(ctx.presets);
  ctx.known = {
    llama: findPreset(ctx.presets, ['llama27bhf', 'llama27b', 'llama2-7b']),
    gpt2: findPreset(ctx.presets, ['gpt2', 'gpt2small', 'gpt2124m']),
    v100: ctx.presets.gpus.find((g) => /v100.*16/i.test(g.id))?.id || '',
  };
  ctx.st = checkedState(ctx.st, ctx.presets);
  // What the form, the verdict and the results call back.
  ctx.update = (patch, opts) => update(ctx, patch, opts);
  ctx.compute = () => compute(ctx);
  ctx.errorBox = (e) => errorBox(ctx, e);
  ctx.runExample = (id) => runExample(ctx, id);
  ctx.publish = () => publishState(ctx);
  ctx.rebuild = () => build(ctx);
  ctx.askAdvice = (...args) => askAdvice(ctx, ...args);
  root.append(ctx.rootEl);
  if (typeof ResizeObserver === 'function')
    ctx.resultsSize = new ResizeObserver((entries) => {
      ctx.resultsWidth = entries[entries.length - 1].contentRect.width;
    });
  return ctx;
}

/** @param {Ctx} ctx */
function setLangAttrs(ctx) {
  const { rootEl, t } = ctx;
  rootEl.setAttribute('lang', t.lang);
  rootEl.setAttribute('dir', t.dir);
  if (!ctx.embed && ctx.options.ownsDocument) {
    document.documentElement.lang = t.lang;
    document.documentElement.dir = t.dir;
    document.title = t('page.title');
  }
}

// The state goes to options.onState (the page writes it into the URL). While a number is
// being typed, once it pauses for 200 ms: history.replaceState cost 2-6 ms a keystroke
// (bench/page-update.mjs). Any other change writes at once.
/** @param {Ctx} ctx */
function publishState(ctx, { typing = false } = {}) {
  clearTimeout(ctx.stateTimer);
  if (typing) ctx.stateTimer = setTimeout(() => ctx.options.onState?.(ctx.st), 200);
  else ctx.options.onState?.(ctx.st);
}

/**
 * @param {Ctx} ctx
 * @param {Partial<State>} patch
 * @param {{ rebuild?: boolean, fromExample?: boolean, typing?: boolean }} [opts]
 */
function update(ctx, patch, { rebuild = false, fromExample = false, typing = false } = {}) {
  const input = modelInput(ctx.st);
  const moe = isMoE(ctx.st);
  ctx.st = { ...ctx.st, ...patch };
  // (a model that reads other inputs, images or tokens, or has experts, shows other fields)
  const structural =
    Object.keys(patch).some((k) => STRUCTURAL.has(k)) ||
    modelInput(ctx.st) !== input ||
    isMoE(ctx.st) !== moe;
  if (!fromExample && !('ex' in patch) && Object.keys(patch).some((k) => k !== 'tab'))
    ctx.st.ex = '';
  publishState(ctx, { typing: typing && !rebuild && !structural });
  if (rebuild || structural) return build(ctx);
  toggled(ctx.rootEl, ctx.st, ctx.st.tab);
  compute(ctx);
}

// ---- layout -------------------------------------------------------------------------------
// The advanced inputs (peak memory and the accumulation plans) behind one disclosure, open
// when one of them is set or the user opened it.
/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 */
function advanced(ctx, tab, /** @type {readonly string[]} */ shown = []) {
  const { st, t } = ctx;
  if (tab !== 'peak' && !(tab === 'accum' && st.accMode === 'plan')) return null;
  const keys = ADVANCED_FIELDS.filter((k) => !shown.includes(k));
  const set = keys.some((k) => st[k] !== FIELDS[k].default);
  const box = h(
    'details',
    { class: 'advanced', id: 'tm-advanced', open: ctx.advancedOpen || set },
    h('summary', {}, t('adv.summary')),
    h('div', { class: 'fields' }, fields(ctx, keys, tab)),
  );
  box.addEventListener('toggle', () => {
    ctx.advancedOpen = box.open;
  });
  return box;
}

/** @param {Ctx} ctx */
function headerEl(ctx) {
  const { t } = ctx;
  return h(
    'header',
    { class: 'top' },
    h(
      'div',
      { class: 'brand' },
      h(ctx.embed ? 'p' : 'h1', { class: 'title' }, 'trainmem'),
      h('p', { class: 'tagline' }, t('page.tagline')),
    ),
    h(
      'div',
      { class: 'top-controls' },
      h('label', { for: 'tm-lang', class: 'sr-only' }, t('field.lang')),
      h(
        'select',
        {
          id: 'tm-lang',
          onchange: (e) => switchLang(ctx, /** @type {HTMLSelectElement} */ (e.target).value),
        },
        h('option', { value: 'en', selected: t.lang === 'en', lang: 'en' }, 'English'),
        h('option', { value: 'ar', selected: t.lang === 'ar', lang: 'ar' }, 'العربية'),
      ),
      ctx.embed
        ? null
        : h(
            'button',
            { type: 'button', id: 'tm-embed-btn', onclick: () => openEmbed(ctx) },
            t('embed.button'),
          ),
    ),
  );
}

/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 */
function contextEl(ctx, tab) {
  const ctxKeys = CONTEXT_FIELDS.filter(
    (k) => USES[tab].has(k) && !(tab === 'place' && ctx.st.chainSource === 'uniform'),
  );
  if (!ctxKeys.length) return null;
  return h(
    'section',
    { class: 'context', 'aria-labelledby': 'tm-ctx-h' },
    h('h2', { id: 'tm-ctx-h' }, ctx.t('ctx.heading')),
    h(
      'div',
      { class: ctx.options.bare ? 'fields fields-compact' : 'fields' },
      fields(ctx, ctxKeys, tab),
    ),
  );
}

// The full page leads with the question every first visit asks, and its answer: the question
// line (model, GPU, method, precision, checkpointing, optimizer, batch and length), the verdict
// with what it assumed, the changes, then the advanced inputs (closed unless one is set).
/**
 * @param {Ctx} ctx
 * @param {PreviousVerdict | null} previous
 */
function askEl(ctx, previous) {
  ctx.verdictEl = h('div', { class: 'verdict', id: 'tm-verdict', tabindex: '-1' });
  ctx.suggestEl = h('div', { class: 'verdict-suggest', id: 'tm-suggest' });
  // The answer before the rebuild stays, marked busy, until the new one comes (from the
  // worker): the page does not blink, and a focus given to the verdict has somewhere to go.
  if (previous?.lang === ctx.t.lang) {
    ctx.verdictEl.append(...previous.verdict.childNodes);
    ctx.suggestEl.append(...previous.suggest.childNodes);
    ctx.verdictEl.setAttribute('aria-busy', 'true');
  }
  // The verdict said by a screen reader once typing settles (verdict.js announce).
  ctx.liveEl = h('p', { class: 'sr-only', id: 'tm-verdict-live', 'aria-live': 'polite' });
  return h(
    'section',
    { class: 'ask', 'aria-labelledby': 'tm-ask-h' },
    h('h2', { id: 'tm-ask-h', class: 'ask-q' }, ctx.t('ask.heading')),
    h('div', { class: 'fields fields-compact fields-ask' }, fields(ctx, ASK_FIELDS, 'peak')),
    ctx.verdictEl,
    ctx.liveEl,
    ctx.suggestEl,
    advanced(ctx, 'peak', ASK_FIELDS),
  );
}

// The arrow keys move between the tabs (mirrored right to left), Home and End to the ends.
/**
 * @param {Ctx} ctx
 * @param {KeyboardEvent} e
 * @param {Tab} id
 */
function tabKeydown(ctx, e, id) {
  const { tabs } = ctx;
  const i = tabs.indexOf(id);
  const dirSign = ctx.t.dir === 'rtl' ? -1 : 1;
  /** @type {number | null} */
  let j = null;
  if (e.key === 'ArrowRight') j = i + dirSign;
  else if (e.key === 'ArrowLeft') j = i - dirSign;
  else if (e.key === 'Home') j = 0;
  else if (e.key === 'End') j = tabs.length - 1;
  if (j === null) return;
  e.preventDefault();
  const next = tabs[(j + tabs.length) % tabs.length];
  update(ctx, { tab: next });
  ctx.rootEl.querySelector(/** @type {'button'} */ (`#tm-tab-${next}`))?.focus();
}

/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 */
function tabListEl(ctx, tab) {
  return h(
    'div',
    { role: 'tablist', class: 'tabs', 'aria-label': ctx.t('tabs.label') },
    ctx.tabs.map((id) =>
      h(
        'button',
        {
          type: 'button',
          role: 'tab',
          id: `tm-tab-${id}`,
          'aria-selected': id === tab ? 'true' : 'false',
          'aria-controls': 'tm-panel',
          tabindex: id === tab ? '0' : '-1',
          onclick: () => update(ctx, { tab: id }),
          onkeydown: (e) => tabKeydown(ctx, e, id),
        },
        ctx.t(`tab.${id}`),
      ),
    ),
  );
}

/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 * @param {HTMLElement | null} ask
 */
function panelEl(ctx, tab, ask) {
  ctx.statusEl = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' });
  ctx.resultsEl = h('div', { class: 'results', id: 'tm-results' });
  ctx.resultsSize?.disconnect();
  ctx.resultsSize?.observe(ctx.resultsEl);
  return h(
    'section',
    { role: 'tabpanel', id: 'tm-panel', 'aria-labelledby': `tm-tab-${tab}`, class: 'panel' },
    h('p', { class: 'panel-intro' }, ctx.t(`tab.${tab}.intro`)),
    h(
      'div',
      { class: 'fields' },
      fields(
        ctx,
        // (the question line and its advanced section hold these on the full page)
        TAB_FIELDS[tab].filter(
          (k) => !(ask && (ADVANCED_FIELDS.includes(k) || ASK_FIELDS.includes(k))),
        ),
        tab,
      ),
    ),
    ask ? null : advanced(ctx, tab, TAB_FIELDS[tab]),
    ctx.statusEl,
    ctx.resultsEl,
    exportBar(ctx),
  );
}

/** @param {Ctx} ctx */
function build(ctx) {
  const { root, rootEl, embed, options } = ctx;
  // (a shadow root has the focused element; an element has no activeElement)
  const focused =
    /** @type {Partial<ShadowRoot>} */ (root).activeElement?.id || document.activeElement?.id;
  ctx.invalid.clear();
  setLangAttrs(ctx);
  const tab = ctx.st.tab;
  const header = headerEl(ctx);
  const examples = embed && !options.showExamples ? null : examplesEl(ctx);
  ctx.exampleEl = h('section', { class: 'example-out', id: 'tm-example' });
  const context = contextEl(ctx, tab);
  /** @type {PreviousVerdict | null} */
  const previous = ctx.verdictEl
    ? { verdict: ctx.verdictEl, suggest: ctx.suggestEl, lang: ctx.verdictLang }
    : null;
  ctx.verdictEl = ctx.liveEl = null;
  ctx.verdictLang = ctx.t.lang;
  const ask = embed ? null : askEl(ctx, previous);
  const tabList = tabListEl(ctx, tab);
  const panel = panelEl(ctx, tab, ask);
  ctx.dialogEl = embed ? null : embedDialog(ctx);
  put(
    rootEl,
    // The iframe mode has no page header: the host page is the page, and the result has to
    // show within the embed code's height (900 px).
    options.bare ? null : header,
    h(
      'main',
      { class: 'layout' },
      // the question and its answer first; then the worked examples, a card each, the chosen
      // one explained under them; then the calculators
      ask,
      examples,
      ctx.exampleEl,
      ask ? null : context,
      ctx.tabs.length > 1 ? tabList : null,
      panel,
    ),
    embed ? null : footerEl(ctx),
    ctx.dialogEl,
  );
  if (focused) rootEl.querySelector(/** @type {'input'} */ (`#${CSS.escape(focused)}`))?.focus();
  compute(ctx);
}

// Where the numbers come from: the articles the page grew out of, and nothing sent anywhere.
/** @param {Ctx} ctx */
function footerEl(ctx) {
  return h('footer', { class: 'foot' }, h('p', {}, ctx.t('foot.text')));
}

/**
 * @param {Ctx} ctx
 * @param {string} lang
 */
async function switchLang(ctx, lang) {
  let strs;
  try {
    strs = await loadStrings(lang);
  } catch (/** @type {any} */ e) {
    // e.g. offline before the language file was fetched: stay in the current language
    /** @type {HTMLSelectElement} */ (ctx.rootEl.querySelector('#tm-lang')).value = ctx.t.lang;
    put(ctx.statusEl, ctx.t('error.langLoad', { message: e.message }));
    return;
  }
  ctx.t = makeTranslator(lang, strs, ctx.en);
  ctx.st = { ...ctx.st, lang };
  publishState(ctx);
  build(ctx);
}

// ---- computing ----------------------------------------------------------------------------
// A heavy solve's status line: a progress bar, the time so far, and a cancel button.
/**
 * @param {Ctx} ctx
 * @param {number} seq
 */
function showSolving(ctx, seq, stop = () => ctx.solver.cancel()) {
  const { t, statusEl } = ctx;
  const started = performance.now();
  const bar = h('progress', { 'aria-label': t('status.solving') });
  const timer = h('span', { class: 'muted' });
  const cancel = () => {
    stop();
    put(statusEl, t('status.cancelled'));
  };
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
      h('button', { type: 'button', class: 'small', onclick: cancel }, t('status.cancel')),
    ),
  );
  const tick = setInterval(() => {
    if (seq !== ctx.computeSeq || !statusEl.isConnected || !statusEl.firstChild)
      return clearInterval(tick);
    timer.textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`;
  }, 100);
  return tick;
}

// An input that does not parse: its message instead of a result.
/** @param {Ctx} ctx */
function showInvalid(ctx) {
  verdictInvalid(ctx);
  put(ctx.statusEl);
  put(
    ctx.resultsEl,
    h(
      'div',
      { class: 'error', role: 'alert' },
      h('strong', {}, ctx.t('error.title')),
      h('p', {}, [...ctx.invalid.values()][0]),
    ),
  );
  markFirst(ctx);
}

/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 * @param {PageError} e the core's error (TrainmemError) or the page's
 */
function showError(ctx, tab, e) {
  put(ctx.statusEl);
  ctx.last = null;
  put(ctx.resultsEl, errorBox(ctx, e));
  if (tab === 'peak') verdictError(ctx, e);
}

// Whether the core reads lora.baseDtype (a core built before it refuses the key): asked once,
// when the page is idle after its first result; the answer recomputes a LoRA run.
/** @param {Ctx} ctx */
function askBaseDtype(ctx) {
  try {
    markCall('peakMemory');
    ctx.tm.peakMemory(BASE_DTYPE_PROBE);
    knowBaseDtype(true);
    if (ctx.st.method === 'lora' || ctx.st.method === 'qlora' || ctx.st.tab === 'peak')
      compute(ctx);
  } catch {
    knowBaseDtype(false); // (an unknown key): the base stays in the precision's dtype
  }
}

// The request of a tab: the peak tab's is advise's (its result answers the verdict too).
/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 * @returns {[FunctionName, object]}
 */
function requestOf(ctx, tab) {
  if (tab === 'peak') {
    ctx.verdictKey = ''; // (the verdict comes with the tab's result)
    return ['advise', adviseRequest(ctx.st)];
  }
  const [fn, builder] = BUILDERS[tab];
  return [fn, builder(ctx.st)];
}

// Runs the tab's call: in the worker for a heavy solve, in the worker kept between keystrokes
// for calls of tens of milliseconds (the planner, advise), else here.
/**
 * @param {Ctx} ctx
 * @param {Tab} tab
 * @param {FunctionName} fn
 * @param {object} request
 * @param {number} seq
 * @param {(result: unknown) => void} done
 * @param {(e: TrainmemError) => void} fail
 */
function run(ctx, tab, fn, request, seq, done, fail) {
  const { st, solver } = ctx;
  if (isHeavy(tab, st)) {
    const tick = showSolving(ctx, seq);
    solver
      .runHeavy(fn, request)
      .then(done, fail)
      .finally(() => clearInterval(tick));
  } else if (fn === 'advise') {
    askAdvice(ctx, /** @type {AdviseRequest} */ (request), 'tab', seq, done, fail);
  } else if (isSlow(tab)) {
    // A planner run that takes long (a large model) shows the heavy solve's progress line.
    /** @type {ReturnType<typeof setInterval> | undefined} */
    let tick;
    const late = setTimeout(() => {
      if (seq === ctx.computeSeq) tick = showSolving(ctx, seq, () => solver.cancelLatest('tab'));
    }, 300);
    solver
      .runLatest(fn, request, 'tab')
      .then(done, fail)
      .finally(() => {
        clearTimeout(late);
        clearInterval(tick);
      });
  } else {
    try {
      done(solver.run(fn, request));
    } catch (/** @type {any} */ e) {
      fail(e);
    }
  }
}

/**
 * One advise call, in the worker kept between keystrokes. Before that worker has its core (the
 * page's first result), the verdict is computed here without the changes, which the worker
 * answers once it is ready: the first result does not wait for ten evaluations.
 * @param {Ctx} ctx
 * @param {AdviseRequest} request
 * @param {string} channel
 * @param {number} seq
 * @param {(advice: AdviseResult) => void} show
 * @param {(e: TrainmemError) => void} fail
 */
export function askAdvice(ctx, request, channel, seq, show, fail) {
  const { solver } = ctx;
  if (solver.quickReady || solver.noQuick || request.changes === false)
    return /** @type {Promise<AdviseResult>} */ (solver.runLatest('advise', request, channel)).then(
      show,
      fail,
    );
  /** @type {AdviseResult} */
  let first;
  try {
    first = /** @type {AdviseResult} */ (solver.run('advise', { ...request, changes: false }));
  } catch (/** @type {any} */ e) {
    return fail(e);
  }
  show(first);
  if (first.verdict.status !== 'doesNotFit' && first.verdict.status !== 'tight') return;
  solver
    .runLatest('advise', { ...request, timeline: false }, `${channel}-changes`, {
      waitForWorker: true,
    })
    .then(
      (full) => seq === ctx.computeSeq && showChanges(ctx, /** @type {AdviseResult} */ (full)),
      () => {},
    );
}

/** @param {Ctx} ctx */
function compute(ctx) {
  const { st, solver, rootEl } = ctx;
  const tab = st.tab;
  const seq = ++ctx.computeSeq;
  // An input the core called invalid last time is valid until the core says otherwise.
  for (const el of rootEl.querySelectorAll('[data-core-invalid]')) {
    el.removeAttribute('data-core-invalid');
    el.setAttribute('aria-invalid', 'false');
  }
  solver.cancel();
  renderExample(ctx);
  if (ctx.invalid.size) return showInvalid(ctx);
  let fn, request;
  try {
    [fn, request] = requestOf(ctx, tab);
  } catch (/** @type {any} */ e) {
    showError(ctx, tab, e);
    if (tab !== 'peak') computeVerdict(ctx);
    return markFirst(ctx);
  }
  if (tab !== 'peak') computeVerdict(ctx);
  showParsed(ctx);
  /** @param {unknown} result the result of the tab's call (fn) */
  const done = (result) => {
    if (seq !== ctx.computeSeq) return;
    mark('trainmem:render-start'); // (bench/page-update.mjs: the main thread's share)
    put(ctx.statusEl);
    ctx.last = { tab, fn, request, result };
    put(ctx.resultsEl);
    try {
      const advice = /** @type {AdviseResult} */ (result);
      if (tab === 'peak') renderVerdict(ctx, advice);
      // (each view takes the result of its tab's call: the peak tab's is advise's)
      /** @type {(ctx: Ctx, el: HTMLElement, res: unknown, req: unknown, advice: unknown) => void} */ (
        RENDER[tab]
      )(ctx, ctx.resultsEl, tab === 'peak' ? peakOf(advice) : result, request, result);
    } catch (/** @type {any} */ e) {
      ctx.resultsEl.append(errorBox(ctx, { code: 'internal', message: `display: ${e.message}` }));
    }
    mark('trainmem:render-end');
    markFirst(ctx);
  };
  /** @param {TrainmemError} e */
  const fail = (e) => {
    if (seq !== ctx.computeSeq || e.code === 'cancelled') return;
    showError(ctx, tab, e);
    markFirst(ctx);
  };
  run(ctx, tab, fn, request, seq, done, fail);
}

/**
 * Under a pasted config.json: what the core read from it (model type, layers, parameters).
 * @param {Ctx} ctx
 */
function showParsed(ctx) {
  const { t, st } = ctx;
  const slot = ctx.rootEl.querySelector('#tm-config-parsed');
  if (!slot) return;
  if (st.modelSource !== 'config' || !st.config.trim()) return put(slot);
  // (read once per text: a keystroke elsewhere asks the core nothing more)
  if (ctx.parsedFor === st.config && slot.firstChild) return;
  ctx.parsedFor = st.config;
  try {
    markCall('describeModel');
    const d = ctx.tm.describeModel({ model: modelOf(st) });
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
    ctx.parsedFor = '';
    put(slot); // the error box says why
  }
}

/** @param {Ctx} ctx */
function markFirst(ctx) {
  if (ctx.firstDone) return;
  ctx.firstDone = true;
  ctx.rootEl.setAttribute('data-ready', '1');
  mark('trainmem:first-result');
  // Then, in the background, the other languages' strings: the page works offline once loaded;
  // and whether the core loads a LoRA base in its own dtype.
  setTimeout(prefetchStrings, 0);
  setTimeout(() => askBaseDtype(ctx), 0);
}

// ---- worked examples ----------------------------------------------------------------------
// An example sets its whole state (nothing carried over from before), and the page scrolls to
// its explanation under the cards.
/**
 * @param {Ctx} ctx
 * @param {string} id
 */
function runExample(ctx, id) {
  const ex = EXAMPLES.find((e) => e.id === id);
  if (!ex) return;
  update(ctx, exampleState(ctx, ex), { rebuild: true, fromExample: true });
  if (ctx.embed) return;
  // (the focus stays on the card that was pressed)
  ctx.rootEl.querySelector('#tm-example')?.scrollIntoView?.({ block: 'start' });
}

/** @param {Ctx} ctx */
function openEmbed(ctx) {
  // (the embed button is in the full page's header, which has the dialog)
  const dialog = /** @type {NonNullable<Ctx['dialogEl']>} */ (ctx.dialogEl);
  dialog.fill();
  dialog.showModal();
}

/** @param {HTMLElement | ShadowRoot} root */
/**
 * @param {HTMLElement | ShadowRoot} root
 * @param {MountOptions} [options]
 */
export async function mountApp(root, options = {}) {
  const ctx = await startContext(root, options);
  build(ctx);
  return {
    get state() {
      return ctx.st;
    },
    setState: (/** @type {Partial<State>} */ patch) => update(ctx, patch, { rebuild: true }),
    runExample: (/** @type {string} */ id) => runExample(ctx, id),
    exportText: (/** @type {'json' | 'csv' | 'md'} */ kind) => exportersOf(ctx)[kind](),
    embedCodes: () => embedCodes(ctx),
    element: ctx.rootEl,
  };
}

export { modelOf };
