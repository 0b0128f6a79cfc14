// @ts-check
// The layout planner's result ("plan my cluster"): the layouts that fit, fastest first, as a
// table (data × tensor × pipeline × context × expert parallelism, the micro-batch, checkpointing,
// the memory of the binding GPU and the estimated step time), each with a button that loads it
// into the peak-memory calculator; the faster layouts that were ruled out, and the counts.
/** @import { PlanLayoutResult, PlannedLayout } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import { details } from './view-common.js';
import { optionLabel } from './form.js';
import { assumptionList } from './view-peak.js';
import { stateOfLayout } from './requests.js';

/**
 * The layout's size of a parallel dimension (1 where the planner did not set it).
 * @param {PlannedLayout} l
 * @param {string} key
 */
const sizeOf = (l, key) => {
  const fields = /** @type {Record<string, number | undefined>} */ (/** @type {unknown} */ (l));
  const set = /** @type {Record<string, number | undefined> | undefined} */ (l.settings);
  return typeof fields[key] === 'number' ? fields[key] : (set?.[key] ?? 1);
};

/**
 * The data-parallel size, with its sharding ("ZeRO-1" or "FSDP") over more than one rank.
 * @param {Ctx} ctx
 * @param {PlannedLayout} l
 */
function dataParallelText(ctx, l) {
  const n = ctx.t.int(l.dataParallel);
  return l.dataParallel > 1 ? `${n} · ${optionLabel(ctx, 'sharding', l.sharding)}` : n;
}

// The columns: a header key (its short name, and the long one as the header's title) and the
// cell of a layout. The parallel sizes take their usual short names (DP, TP, PP, CP, EP) so that
// the memory and the step time fit beside them.
/** @type {Array<[string, (ctx: any, l: any) => any, boolean?]>} */
const COLUMNS = [
  ['plan.col.dp', (ctx, l) => ctx.t.n(dataParallelText(ctx, l)), true],
  ['plan.col.tp', (ctx, l) => ctx.t.n(ctx.t.int(l.tensorParallel)), true],
  [
    'plan.col.pp',
    // (the schedule by its API name: 1f1b, interleaved-1f1b, zb-h1, zb-v)
    (ctx, l) =>
      ctx.t.n(l.pipelineParallel > 1 ? `${ctx.t.int(l.pipelineParallel)} · ${l.schedule}` : '1'),
    true,
  ],
  ['plan.col.cp', (ctx, l) => ctx.t.n(ctx.t.int(sizeOf(l, 'contextParallel'))), true],
  ['plan.col.ep', (ctx, l) => ctx.t.n(ctx.t.int(sizeOf(l, 'expertParallel'))), true],
  [
    'plan.col.micro',
    (ctx, l) => ctx.t.n(`${ctx.t.int(l.microBatch)} × ${ctx.t.int(l.microBatches)}`),
  ],
  ['plan.col.ckpt', (ctx, l) => optionLabel(ctx, 'checkpointing', l.checkpointing)],
  [
    'plan.col.memory',
    (ctx, l) => (typeof l.peakBytes === 'number' ? ctx.t.n(ctx.t.gib(l.peakBytes)) : '—'),
  ],
  ['plan.col.step', (ctx, l) => ctx.t.n(`${ctx.t.num(l.time.stepSeconds)} ${ctx.t('unit.s')}`)],
  ['plan.col.mfu', (ctx, l) => ctx.t.n(`${ctx.t.num(100 * l.time.modelFlopsUtilization)} %`)],
];

/**
 * A column's header: a parallel size by its short name, its long name as the abbreviation's.
 * @param {Ctx} ctx
 * @param {string} key
 * @param {boolean} [short]
 */
function header(ctx, key, short) {
  if (!short) return h('th', { scope: 'col' }, ctx.t(key));
  return h('th', { scope: 'col' }, h('abbr', { title: ctx.t(key) }, ctx.t(`${key}.short`)));
}

/**
 * Loads a layout into the peak-memory calculator (its settings, the tab switched).
 * @param {Ctx} ctx
 * @param {PlannedLayout} l
 * @param {number} i
 */
function loadButton(ctx, l, i) {
  return h(
    'button',
    {
      type: 'button',
      class: 'small plan-load',
      'aria-label': ctx.t('plan.loadRow', { n: ctx.t.int(i + 1) }),
      onclick: () => {
        ctx.update(stateOfLayout(l.settings || {}), { rebuild: true });
        ctx.rootEl.querySelector(/** @type {'div'} */ ('#tm-verdict, #tm-results'))?.focus?.();
      },
    },
    ctx.t('plan.load'),
  );
}

/**
 * A table of layouts. `reasons`: the ruled-out list, whose last column says why (the core's
 * sentence) instead of a load button.
 * @param {Ctx} ctx
 * @param {PlanLayoutResult} res
 * @param {PlannedLayout[]} list
 * @param {string} caption
 */
function layoutTable(ctx, res, list, caption, reasons = false) {
  const { t } = ctx;
  const last = reasons ? t('plan.col.why') : t('plan.col.action');
  const path = reasons ? 'fasterButRuledOut' : 'layouts';
  return h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { class: `data plans stack layouts${reasons ? ' ruled-out' : ''}` },
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, t('plan.col.rank')),
          COLUMNS.map(([key, , short]) => header(ctx, key, short)),
          h('th', { scope: 'col' }, last),
        ),
      ),
      h(
        'tbody',
        {},
        list.map((l, i) =>
          h(
            'tr',
            { class: !reasons && i === 0 ? 'rec' : '' },
            h('th', { scope: 'row' }, t.n(t.int(i + 1))),
            COLUMNS.map(([key, cell]) => h('td', { 'data-label': t(key) }, cell(ctx, l))),
            h(
              'td',
              { 'data-label': last, class: reasons ? 'source' : 'action' },
              reasons
                ? t.core(res, `${path}[${i}].reason`, l.reason || t(`plan.status.${l.status}`))
                : loadButton(ctx, l, i),
            ),
          ),
        ),
      ),
    ),
  );
}

/**
 * The fastest layout that fits, as a headline: its sizes and its step time.
 * @param {Ctx} ctx
 * @param {PlanLayoutResult} res
 * @param {PlannedLayout} best
 */
function bestLine(ctx, res, best) {
  const { t } = ctx;
  return h(
    'div',
    { class: 'headline' },
    h('span', { class: 'headline-label' }, t('plan.best')),
    h(
      'span',
      { class: 'headline-value' },
      t.n(
        t('plan.shape', {
          dp: t.int(best.dataParallel),
          tp: t.int(best.tensorParallel),
          pp: t.int(best.pipelineParallel),
        }),
      ),
    ),
    h(
      'span',
      { class: 'headline-exact' },
      t('plan.bestTime', {
        s: t.num(best.time.stepSeconds),
        tokens: t.int(Math.round(best.time.tokensPerSecondPerGpu)),
      }),
    ),
  );
}

/**
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {PlanLayoutResult} res
 */
export function renderPlan(ctx, el, res) {
  const { t } = ctx;
  const layouts = Array.isArray(res.layouts) ? res.layouts : [];
  const ruledOut = Array.isArray(res.fasterButRuledOut) ? res.fasterButRuledOut : [];
  if (layouts.length) el.append(bestLine(ctx, res, layouts[0]));
  else
    el.append(
      h(
        'div',
        { class: 'headline acc-none' },
        h('span', { class: 'badge bad' }, t('peak.noFit')),
        ' ',
        h('span', { class: 'headline-label' }, t('plan.none')),
      ),
    );
  const c = res.counts || {};
  el.append(
    h(
      'p',
      { class: 'note plan-counts' },
      t('plan.counts', {
        gpus: t.int(res.gpus),
        nodes: t.int(Math.ceil(res.gpus / res.gpusPerNode)),
        candidates: t.int(c.candidates),
        evaluated: t.int(c.evaluated),
        // (a value and its unit on one line)
        memory: t.gib(res.gpuMemoryBytes).replace(' ', '\u00a0'),
      }),
    ),
  );
  if (layouts.length) el.append(layoutTable(ctx, res, layouts, t('plan.layouts')));
  if (ruledOut.length) {
    const more = h('details', { class: 'plan-ruled-out' }, h('summary', {}, t('plan.ruledOut')));
    more.append(layoutTable(ctx, res, ruledOut.slice(0, 20), t('plan.ruledOut'), true));
    el.append(more);
  }
  const util = res.timeModel?.utilization;
  el.append(h('p', { class: 'note' }, t('plan.timeNote', { util: t.num(100 * util) })));
  el.append(assumptionList(ctx, res), details(ctx, res));
}
