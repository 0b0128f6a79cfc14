// @ts-check
// The answer at the top of the page, from one core call (advise): does the run fit (what
// nvidia-smi will show against the GPU's memory, with the safety margin), the time per step,
// what was assumed (each assumption one click from its input), and the changes that make it
// fit. Each function takes the controller's live state ctx first (app.js):
// { t, st, tm, solver, invalid, verdictEl, suggestEl, liveEl, computeSeq, update, errorBox }.
/** @import { AdviseChange, AdviseResult, AdviseSettings, AdviseStatus, AdviseStepTime, AdviseVerdict, MessageCodes, PeakMemoryResult } from '../lib/index.js' */
/** @import { Ctx, PageError, Translator } from './types.js' */
/** @import { Child } from './dom.js' */
import { h, put } from './dom.js';
import { optionLabel } from './form.js';
import { adviseRequest, stateOfChange, isHeavy, knowsBaseDtype } from './requests.js';
import { resolve } from './resolve.js';

/**
 * The run's peakMemory result inside an advise result, with its sentences' codes (the core
 * lists them under "peak." paths of the whole result).
 * @param {AdviseResult} advice
 * @returns {PeakMemoryResult}
 */
export function peakOf(advice) {
  /** @type {MessageCodes} */
  const messages = {};
  for (const [path, parts] of Object.entries(advice?.messages || {}))
    if (path.startsWith('peak.')) messages[path.slice(5)] = parts;
  return { ...advice.peak, messages };
}

/** @type {Record<string, [string, string]>} */
const STATUS = {
  fits: ['ok', 'peak.fits'],
  tight: ['warn', 'peak.tight'],
  doesNotFit: ['bad', 'peak.noFit'],
};

/**
 * The verdict's badge: fits, tight, does not fit.
 * @param {Ctx} ctx
 * @param {AdviseStatus} status
 */
export function statusBadge(ctx, status, extra = '') {
  const s = STATUS[status];
  if (!s) return null;
  return h('span', { class: `badge ${s[0]}${extra ? ` ${extra}` : ''}` }, ctx.t(s[1]));
}

/**
 * Seconds in the page's language ("0.25 s", "0.25 ث").
 * @param {Translator} t
 * @param {number} s
 */
const seconds = (t, s) => t.n(`${t.num(s)} ${t('unit.s')}`);

/**
 * The time of a step: seconds, samples per second, and what it is the time of.
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 */
function stepLine(ctx, advice) {
  const { t } = ctx;
  const st = advice.stepTime || {};
  const set = advice.settings || {};
  if (typeof st.stepSeconds !== 'number')
    return st.note
      ? h(
          'li',
          { class: 'verdict-time muted' },
          t('ask.noTime'),
          ' ',
          t.core(advice, 'stepTime.note', st.note),
        )
      : null;
  return h(
    'li',
    { class: 'verdict-time' },
    t('ask.time'),
    ' ',
    h('strong', {}, seconds(t, /** @type {number} */ (st.stepSeconds))), // (no note: a time)
    ' ',
    h(
      'span',
      { class: 'time-of' },
      t('ask.timeOf', {
        global: t.int(st.globalBatch),
        micro: t.int(set.microBatch),
        steps: t.int(set.gradientAccumulationSteps),
        gpus: t.int(set.dataParallel),
      }),
    ),
    ' · ',
    t.n(t('ask.samples', { n: t.num(/** @type {number} */ (st.samplesPerSecond)) })),
    st.optimizerOnCpu ? [' ', t('sug.cpuStep')] : null,
  );
}

/**
 * How much is left, against the margin kept free.
 * @param {Ctx} ctx
 * @param {AdviseVerdict} v
 */
function roomLine(ctx, v) {
  const { t } = ctx;
  if (v.status === 'noDevice') return null;
  const margin = v.marginBytes > 0 ? t('ask.marginIs', { pct: marginPct(ctx) }) : t('ask.noMargin');
  if (v.status === 'doesNotFit')
    return h('li', { class: 'verdict-room' }, t('ask.short'), ' ', t.both(-v.headroomBytes));
  return h(
    'li',
    { class: 'verdict-room' },
    t(v.status === 'tight' ? 'ask.tightLeft' : 'ask.left'),
    ' ',
    t.both(v.headroomBytes),
    ' · ',
    margin,
    v.marginBytes > 0 ? [' ', t.both(v.marginBytes)] : null,
  );
}

/** @param {Ctx} ctx */
const marginPct = (ctx) =>
  ctx.st.marginGB > 0 ? `${ctx.t.num(ctx.st.marginGB)} GB` : `${ctx.t.num(ctx.st.marginPct)} %`;

/**
 * What the verdict assumed, each a button that goes to its input.
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 */
function assumptions(ctx, advice) {
  const { t, st } = ctx;
  const set = advice.settings || {};
  const { auto } = resolve(st);
  /**
   * @param {string} key
   * @param {string} text
   */
  const item = (key, text, note = '') =>
    h(
      'li',
      {},
      h(
        'button',
        { type: 'button', class: 'assume', 'data-input': key, onclick: () => goTo(ctx, key) },
        text,
        note ? [' ', h('span', { class: 'muted' }, note)] : null,
      ),
    );
  const lora = set.method === 'lora' || set.method === 'qlora';
  const items = [
    item('method', optionLabel(ctx, 'method', st.method === 'scratch' ? 'scratch' : set.method)),
    lora
      ? item('loraRank', t('ask.rank', { r: t.int(/** @type {number} */ (set.loraRank)) }))
      : null,
    item(
      'precision',
      optionLabel(ctx, 'precision', set.precision),
      auto.precision ? t('ask.forGpu') : '',
    ),
    lora ? baseItem(ctx, item, set) : null,
    item('optimizer', optionLabel(ctx, 'optimizer', st.optimizer)),
    item(
      'optImpl',
      optionLabel(ctx, 'optImpl', set.optimizerImplementation),
      st.optImpl ? '' : t('ask.runtimeDefault'),
    ),
    item(
      'checkpointing',
      t('ask.ckpt', { s: optionLabel(ctx, 'checkpointing', set.checkpointing) }),
    ),
    item(
      'attention',
      optionLabel(ctx, 'attention', set.attention),
      st.attention ? '' : t('ask.runtimeDefault'),
    ),
    item('runtime', optionLabel(ctx, 'runtime', set.runtime || 'pytorch-cuda')),
    item(st.marginGB > 0 ? 'marginGB' : 'marginPct', t('ask.kept', { m: marginPct(ctx) })),
  ];
  return h(
    'div',
    { class: 'verdict-assumed' },
    h('span', { class: 'assumed-label', id: 'tm-assumed-h' }, t('ask.assumed')),
    ' ',
    h('ul', { class: 'assumed', 'aria-labelledby': 'tm-assumed-h' }, items),
  );
}

// LoRA's frozen base: in the dtype the page resolved (bf16 as PEFT users load it), or, with a
// core that loads no other, in the precision's parameter dtype — said as it is computed.
/**
 * @param {Ctx} ctx
 * @param {(key: string, text: string, note?: string) => HTMLElement} item
 * @param {AdviseSettings} set
 */
function baseItem(ctx, item, set) {
  const { t, st } = ctx;
  const { auto } = resolve(st);
  if (!knowsBaseDtype()) {
    const dtype = ['bf16', 'fp16'].includes(set.precision) ? set.precision : 'fp32';
    const it = item('baseDtype', t('ask.base', { dtype }), t('ask.baseFixed'));
    /** @type {Element | null} */ (it.firstChild)?.setAttribute('data-base', 'precision');
    return it;
  }
  const it = item(
    'baseDtype',
    t('ask.base', { dtype: st.baseDtype || auto.baseDtype }),
    auto.baseDtype ? t('ask.asPeft') : '',
  );
  /** @type {Element | null} */ (it.firstChild)?.setAttribute('data-base', 'chosen');
  return it;
}

/**
 * Moves to an input (on the peak tab, in the advanced section if it is there) and focuses it.
 * @param {Ctx} ctx
 * @param {string} key
 */
export function goTo(ctx, key) {
  let el = ctx.rootEl.querySelector(`#tm-${key}`);
  if (!el && ctx.tabs.includes('peak') && ctx.st.tab !== 'peak') {
    ctx.update({ tab: 'peak' });
    el = ctx.rootEl.querySelector(`#tm-${key}`);
  }
  if (!el) return;
  const section = el.closest('details');
  if (section) section.open = true;
  el.scrollIntoView?.({ block: 'center' });
  /** @type {HTMLElement} */ (el).focus();
}

/**
 * One change: its badge, what it is, what nvidia-smi would show, its time; a click applies it.
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 * @param {AdviseChange} c
 */
function changeItem(ctx, advice, c) {
  const { t } = ctx;
  const base = advice.stepTime?.stepSeconds;
  /** @type {Partial<AdviseStepTime>} */
  const time = c.time || {};
  const pct =
    typeof base === 'number' && typeof time.stepSeconds === 'number'
      ? Math.round((100 * (time.stepSeconds - base)) / base)
      : null;
  return h(
    'li',
    { class: c.status === 'fits' ? 'fit' : c.status === 'tight' ? 'tight' : 'nofit' },
    h(
      'button',
      {
        type: 'button',
        class: 'sug-apply',
        'data-suggestion': c.id,
        onclick: () => {
          ctx.update(stateOfChange(c.set, ctx.st), { rebuild: true });
          ctx.verdictEl?.focus();
        },
      },
      statusBadge(ctx, c.status),
      ' ',
      h('span', { class: 'sug-label' }, t(`sug.${c.id}`)),
      h('span', { class: 'sep' }, ': '),
      // (a change far over the GPU, told by its tensors without the allocator's replay)
      c.usedMemory !== advice.verdict?.usedMemory ? [t('sug.about'), ' '] : null,
      h('span', { class: 'sug-mem', 'data-bytes': String(c.usedBytes) }, t.both(c.usedBytes)),
      c.gpus > 1 ? [h('span', { class: 'sep' }, ' · '), t('sug.gpus', { n: t.int(c.gpus) })] : null,
      typeof time.stepSeconds === 'number'
        ? h(
            'span',
            { class: 'sug-time' },
            h('span', { class: 'sep' }, ' · '),
            seconds(t, time.stepSeconds),
            ' ',
            t('sug.perStep'),
            pct ? [' (', t.n(`${pct > 0 ? '+' : ''}${pct} %`), ')'] : null,
            time.optimizerOnCpu ? [' ', t('sug.cpuStep')] : null,
          )
        : null,
    ),
  );
}

const SHOWN = 4; // changes listed before "show all"

/**
 * The changes of an advise result (those that fit first), or '' when there are none.
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 */
export function changeList(ctx, advice) {
  const { t } = ctx;
  const changes = Array.isArray(advice?.changes) ? advice.changes : [];
  if (!changes.length) return '';
  const items = changes.map((c) => changeItem(ctx, advice, c));
  const more = items.slice(SHOWN);
  return h(
    'div',
    { class: 'suggest' },
    h('h3', {}, t(advice.verdict?.status === 'tight' ? 'sug.headingTight' : 'sug.heading')),
    h('p', { class: 'help' }, t('sug.apply')),
    h('ul', {}, items.slice(0, SHOWN)),
    more.length
      ? h(
          'details',
          { class: 'sug-more' },
          h('summary', {}, t('sug.more', { n: t.int(more.length) })),
          h('ul', {}, more),
        )
      : null,
  );
}

// ---- the answer: does it fit, and how fast ------------------------------------------
/**
 * @param {Ctx} ctx
 * @param {PageError} e
 */
export function verdictError(ctx, e) {
  if (!ctx.verdictEl) return;
  ctx.verdictEl.removeAttribute('aria-busy');
  const box = ctx.errorBox(e);
  box.removeAttribute('role'); // the results below announce it
  put(ctx.verdictEl, box);
  put(ctx.suggestEl);
  announce(ctx, box.querySelector('.error-what')?.textContent || ctx.t('error.title'));
}

/** @param {Ctx} ctx */
export function verdictInvalid(ctx) {
  if (!ctx.verdictEl) return;
  ctx.verdictEl.removeAttribute('aria-busy');
  const msg = [...ctx.invalid.values()][0];
  put(ctx.verdictEl, h('div', { class: 'error' }, h('p', {}, msg)));
  put(ctx.suggestEl);
  announce(ctx, msg);
}

/**
 * Says the verdict through the live region once typing has settled (800 ms without a newer
 * one), so that a screen reader hears the answer, not every keystroke's.
 * @param {Ctx} ctx
 * @param {string} text
 */
export function announce(ctx, text) {
  if (!ctx.liveEl) return;
  clearTimeout(ctx.liveTimer);
  ctx.liveTimer = setTimeout(() => {
    // (a layout with the live region keeps one: build() makes it anew)
    /** @type {HTMLElement} */ (ctx.liveEl).textContent = text;
  }, 800);
}

/**
 * The verdict of an advise result: fits or not, what nvidia-smi shows, what was assumed.
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 */
export function renderVerdict(ctx, advice) {
  const { t } = ctx;
  if (!ctx.verdictEl) return;
  const v = advice.verdict;
  const res = advice.peak;
  ctx.verdictEl.removeAttribute('aria-busy');
  const where =
    res.peakPhase &&
    [
      optionLabel(ctx, 'phase', res.peakPhase),
      typeof res.peakLayer === 'number' && res.peakLayer >= 0
        ? t('ask.layer', { n: res.peakLayer })
        : '',
    ]
      .filter(Boolean)
      .join(t('list.sep'));
  const smi = v.usedMemory === 'nvidia-smi';
  const line = h(
    'p',
    { class: 'verdict-line' },
    statusBadge(ctx, v.status, 'verdict-badge'),
    ' ',
    h(
      'span',
      { class: 'verdict-text' },
      t(smi ? 'ask.smi' : 'ask.peak'),
      ' ',
      h(
        'strong',
        { class: 'verdict-value', 'data-bytes': String(v.usedBytes) },
        t.both(v.usedBytes),
      ),
      v.capacityBytes
        ? [' ', t('ask.of'), ' ', h('span', { class: 'verdict-capacity' }, t.both(v.capacityBytes))]
        : null,
    ),
  );
  put(
    ctx.verdictEl,
    line,
    h(
      'ul',
      { class: 'verdict-facts' },
      roomLine(ctx, v),
      where ? h('li', { class: 'verdict-where' }, t('peak.phase'), ' ', where) : null,
      typeof res.allocatedPeakBytes === 'number'
        ? h(
            'li',
            { class: 'verdict-more' },
            t('ask.allocated'),
            ' ',
            h('bdi', { dir: 'ltr' }, h('code', {}, 'max_memory_allocated()')),
            ' ',
            t.both(res.allocatedPeakBytes),
            typeof res.reservedPeakBytes === 'number'
              ? [
                  t('list.sep'),
                  h('bdi', { dir: 'ltr' }, h('code', {}, 'max_memory_reserved()')),
                  ' ',
                  t.both(res.reservedPeakBytes),
                ]
              : null,
          )
        : null,
      v.status !== 'doesNotFit' && typeof res.maxMicroBatch === 'number'
        ? h('li', {}, t('peak.maxMicroBatch'), ' ', t.n(t.int(res.maxMicroBatch)))
        : null,
      stepLine(ctx, advice),
    ),
    assumptions(ctx, advice),
  );
  put(ctx.suggestEl, changeList(ctx, advice));
  announce(ctx, line.textContent || '');
}

/**
 * The verdict for the current inputs on a tab other than peak (whose own call answers it).
 * @param {Ctx} ctx
 */
export function computeVerdict(ctx) {
  const { t, st, invalid } = ctx;
  if (!ctx.verdictEl || st.tab === 'peak') return;
  if (invalid.size) return verdictInvalid(ctx);
  let req;
  try {
    req = adviseRequest(st, { timeline: false });
  } catch (e) {
    return verdictError(ctx, /** @type {PageError} */ (e));
  }
  if (isHeavy('peak', st)) {
    put(ctx.verdictEl, h('p', { class: 'muted' }, t('ask.heavy')));
    put(ctx.suggestEl);
    return;
  }
  // An input of this tab alone (a placement strategy, a file's format) leaves the verdict's
  // request as it was: the verdict shown stands, and the core is not asked again.
  const key = JSON.stringify(req);
  if (key === ctx.verdictKey && ctx.verdictEl.querySelector('.verdict-line')) {
    ctx.verdictEl.removeAttribute('aria-busy');
    return;
  }
  ctx.verdictKey = key;
  // (an answer to the newest verdict request is shown even after a keystroke of this tab alone)
  const current = () => ctx.verdictKey === key;
  ctx.askAdvice(
    req,
    'verdict',
    ctx.computeSeq,
    (advice) => {
      if (!current()) return;
      performance.mark?.('trainmem:render-start');
      renderVerdict(ctx, advice);
      performance.mark?.('trainmem:render-end');
    },
    (e) => {
      if (!current()) return;
      ctx.verdictKey = '';
      if (e.code !== 'cancelled') verdictError(ctx, e);
    },
  );
}

/**
 * The changes of an advise result that came after its verdict (the page's first result).
 * @param {Ctx} ctx
 * @param {AdviseResult} advice
 */
export function showChanges(ctx, advice) {
  const slot = ctx.suggestEl || ctx.rootEl.querySelector('#tm-changes');
  if (slot) put(slot, changeList(ctx, advice));
}
