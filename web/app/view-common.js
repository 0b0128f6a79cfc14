// @ts-check
// The parts the result views share: the headline, the breakdown table and chart, the timeline,
// the plans table and the details table. Each takes the controller's live state ctx (see
// views.js) first.
/** @import { AccumulationPlan } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
/** @import { Child } from './dom.js' */
/** @import { BreakdownEntry } from './format.js' */
import { h } from './dom.js';
import { flatten, isBytesKey, breakdownParts, partBytes } from './format.js';
import { stackedBars, lines } from './charts.js';
import { optionLabel } from './form.js';

/**
 * A chart's width: the results', kept by app.js.
 * @param {Ctx} ctx
 * @returns {{ available: number }}
 */
export function chartOpts(ctx) {
  return { available: ctx.resultsWidth };
}

/** A small label beside a headline. */
export const chip = (/** @type {Child[]} */ ...children) =>
  h('span', { class: 'chip' }, ...children);

/**
 * @param {Ctx} ctx
 * @param {string} labelKey
 * @param {number} bytes
 * @param {Child} extra
 */
export function headline(ctx, labelKey, bytes, extra) {
  const { t } = ctx;
  return h(
    'div',
    { class: 'headline' },
    h('span', { class: 'headline-label' }, t(labelKey)),
    h('span', { class: 'headline-value', 'data-bytes': String(bytes) }, t.both(bytes)),
    h('span', { class: 'headline-exact' }, t.n(t.bytes(bytes))),
    extra,
  );
}

/**
 * @param {Ctx} ctx
 * @param {string} k
 */
export function partLabel(ctx, k) {
  const { t } = ctx;
  const key = `part.${k}`;
  const s = t(key);
  return s === key ? k : s;
}

/**
 * @param {Ctx} ctx
 * @param {object} breakdown
 * @param {string} [peakPhase]
 * @param {object | null} [res] the result (its sentences' codes)
 */
export function breakdownTable(ctx, breakdown, peakPhase = '', res = null) {
  const { t } = ctx;
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
              h('th', { scope: 'row' }, partLabel(ctx, k)),
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
              h('th', { scope: 'row' }, partLabel(ctx, k)),
              h('td', { 'data-label': 'GB (10⁹)' }, t.n(t.fixed2(v / 1e9))),
              h('td', { 'data-label': 'GiB (2³⁰)' }, t.n(t.fixed2(v / 2 ** 30))),
              h('td', { 'data-label': t('unit.bytes') }, t.n(t.int(v))),
              h('td', { 'data-label': '%' }, t.n(t.num((100 * v) / total))),
              sources
                ? h(
                    'td',
                    { class: 'source', 'data-label': t('result.source') },
                    t.core(res, `breakdown.${k}.source`, src),
                  )
                : null,
            ),
      ),
    ),
  );
}

/**
 * @param {{ value: number, label: string } | undefined} [capacity]
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {Array<{ label: string, breakdown?: object }>} scenarios each with its breakdown
 */
export function breakdownChart(ctx, el, scenarios, capacity = undefined) {
  const { t } = ctx;
  // scenarios: [{ label, breakdown }]
  /** @type {string[]} */
  const keys = [];
  for (const sc of scenarios)
    for (const [k] of breakdownParts(sc.breakdown)) if (!keys.includes(k)) keys.push(k);
  if (!keys.length) return;
  const parts = keys.map((k) => ({
    key: k,
    label: partLabel(ctx, k),
    values: scenarios.map(
      (sc) =>
        partBytes(/** @type {Record<string, BreakdownEntry> | undefined} */ (sc.breakdown)?.[k]) ||
        0,
    ),
  }));
  const holder = h('div', { class: 'chart-holder' });
  el.append(holder);
  stackedBars(holder, {
    label: t('result.breakdownChart'),
    scenarios: scenarios.map((s) => s.label),
    parts,
    t,
    capacity,
    ...chartOpts(ctx),
  });
}

/**
 * @param {Ctx} ctx
 * @param {object} result
 */
export function details(ctx, result) {
  const { t } = ctx;
  // Collapsed at first: its table (every field of the result) is built when it is opened,
  // not on every keystroke.
  const box = h('details', { class: 'details' }, h('summary', {}, t('result.details')));
  box.addEventListener('toggle', function fill() {
    if (!box.open) return;
    box.removeEventListener('toggle', fill);
    box.append(detailsTable(ctx, result));
  });
  return box;
}

/**
 * A copy of `value` with each sentence the core gave its codes for said in this language: the
 * codes are the nearest enclosing result's `messages[path]` (a result inside a result has its
 * own); a sentence this language does not translate stays as the core wrote it.
 * @param {Ctx['t']} t
 * @param {unknown} value
 * @param {{ messages?: Record<string, unknown> } | null} res the enclosing result
 * @param {string} path value's path in res, as its messages name it
 * @returns {unknown}
 */
function sayAll(t, value, res, path) {
  if (typeof value === 'string') return (res && t.coreText(res.messages?.[path])) ?? value;
  if (Array.isArray(value)) {
    const said = value.map((x, i) => sayAll(t, x, res, `${path}[${i}]`));
    // a short list of sentences, one cell as the table shows it (format.js), joined as the
    // language joins a list
    const short = said.length <= 16 && said.every((x) => typeof x === 'string');
    return short && said.length > 1 ? said.join(t.lang === 'ar' ? '، ' : ', ') : said;
  }
  if (value === null || typeof value !== 'object') return value;
  const own =
    'messages' in value ? /** @type {{ messages?: Record<string, unknown> }} */ (value) : null;
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(value))
    out[k] =
      k === 'messages'
        ? v
        : own
          ? sayAll(t, v, own, k)
          : sayAll(t, v, res, path ? `${path}.${k}` : k);
  return out;
}

/**
 * @param {Ctx} ctx
 * @param {object} result
 */
export function detailsTable(ctx, result) {
  const { t } = ctx;
  const said = t.lang === 'en' ? result : sayAll(t, result, null, '');
  const rows = flatten(said).filter(([, v]) => v !== null && v !== undefined && v !== '');
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

/**
 * The bytes of each timeline point (the first field that every result's timeline names bytes
 * in), or null.
 * @param {Array<Record<string, unknown>>} timeline
 * @returns {(number | null)[] | null}
 */
function timelineValues(timeline) {
  const keys = ['totalBytes', 'bytes', 'allocatedBytes', 'liveBytes', 'memoryBytes', 'peakBytes'];
  const key = keys.find((k) => timeline.some((e) => typeof e?.[k] === 'number'));
  return key
    ? timeline.map((e) => {
        const v = e[key];
        return typeof v === 'number' ? v : null;
      })
    : null;
}

/**
 * @param {{ value: number, label: string } | undefined} [capacity]
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {Array<{ phase?: string }> | undefined} timeline the result's timeline: points with
 *   their bytes (timelineValues) and phase
 * @param {string} titleKey
 */
export function timelineChart(ctx, el, timeline, titleKey, capacity = undefined) {
  const { t } = ctx;
  if (!Array.isArray(timeline) || timeline.length < 2) return;
  // (a point without bytes, null, counts as 0 below, as JavaScript's arithmetic makes it)
  const vals = /** @type {number[] | null} */ (timelineValues(timeline));
  if (!vals) return;
  const x = vals.map((_, i) => i);
  const phases = [...new Set(timeline.map((e) => e.phase || 'step'))];
  const series = phases.map((ph, i) => ({
    key:
      /** @type {Record<string, string>} */ ({
        forward: 'weights',
        backward: 'gradients',
        recompute: 'activations',
        optimizer: 'optimizerState',
      })[ph] || 'runtime',
    label: optionLabel(ctx, 'phase', ph),
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
    capacity,
    ...chartOpts(ctx),
  });
}

/**
 * A table of plans / comparison rows: the scalar fields, bytes in GB, times in seconds.
 * @param {Ctx} ctx
 * @param {ReadonlyArray<AccumulationPlan>} list
 * @param {string} caption
 * @param {AccumulationPlan | null | undefined} rec the recommended plan
 * @param {string[]} [lead]
 */
export function planTable(ctx, list, caption, rec, lead = []) {
  const { t } = ctx;
  const cols = [...lead];
  for (const p of list)
    for (const [k, v] of Object.entries(p))
      if (['number', 'boolean', 'string'].includes(typeof v) && !cols.includes(k) && k !== 'exact')
        cols.push(k);
  /** @type {(c: string, v: unknown) => Child} */
  const cell = (c, v) =>
    typeof v === 'boolean'
      ? v
        ? '✓'
        : '✗'
      : typeof v === 'number'
        ? t.n(isBytesKey(c) ? t.gb(v) : /Seconds$/.test(c) ? `${t.num(v)} s` : t.num(v))
        : typeof v === 'string'
          ? optionLabel(ctx, c === 'id' ? 'row' : c, v)
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
          cols.map((c) => h('th', { scope: 'col' }, optionLabel(ctx, 'col', c))),
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
                i === 0 ? { scope: 'row' } : { 'data-label': optionLabel(ctx, 'col', c) },
                cell(c, /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (p))[c]),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}
