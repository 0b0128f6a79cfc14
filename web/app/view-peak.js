// @ts-check
// The peak-memory result: the peak (what nvidia-smi shows), the numbers each tool reports, the
// breakdown, the assumptions, memory over the step, and the comparison with a measurement.
/** @import { AdviseRequest, AdviseResult, PeakMemoryResult } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import {
  chip,
  headline,
  breakdownChart,
  breakdownTable,
  details,
  timelineChart,
} from './view-common.js';
import { optionLabel } from './form.js';
import { statusBadge, changeList } from './verdict.js';
import { stageView } from './view-stages.js';

/**
 * The three numbers users compare with, and which tool reports which.
 * @param {Ctx} ctx
 * @param {PeakMemoryResult} res
 */
export function deviceNumbers(ctx, res) {
  const { t } = ctx;
  const a = res.allocator;
  if (!a || typeof res.deviceUsedBytes !== 'number') return '';
  /**
   * @param {string} key
   * @param {number} bytes
   */
  const row = (key, bytes) => h('li', {}, t(key), ' ', t.both(bytes));
  return h(
    'div',
    { class: 'device-numbers' },
    h('h3', {}, t('peak.tools')),
    h(
      'ul',
      {},
      row('peak.smi', res.deviceUsedBytes),
      row('peak.reserved', /** @type {number} */ (res.reservedPeakBytes)), // (with the allocator)
      row('peak.allocated', res.allocatedPeakBytes),
      row('peak.fragmentation', a.fragmentationBytes),
      row('peak.largest', a.largestRequestBytes),
      row('peak.firstStep', a.firstStepAllocatedBytes),
    ),
    a.outOfMemory ? h('p', { class: 'badge bad' }, t('peak.oom')) : null,
    h('p', { class: 'note' }, t('peak.simulated')),
  );
}

/**
 * The result's assumptions, in the page's language where the core gave their codes.
 * @param {Ctx} ctx
 * @param {{ assumptions?: string[] }} res a result with assumptions (peak memory's, the planner's)
 */
export function assumptionList(ctx, res) {
  const { t } = ctx;
  const list = Array.isArray(res.assumptions) ? res.assumptions : [];
  const items = list.flatMap((a, i) =>
    typeof a === 'string' ? [t.core(res, `assumptions[${i}]`, a, 'li')] : [],
  );
  if (!items.length) return '';
  return h(
    'details',
    { class: 'assumptions' },
    h('summary', {}, t('result.assumptions')),
    h('ul', { class: 'notes' }, items),
  );
}

/**
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {PeakMemoryResult} res the run's peakMemory result
 * @param {AdviseRequest} req the request (advise's: a peakMemory request with the verdict's keys)
 * @param {AdviseResult} [advice] the advise result holding res: its verdict (with the safety margin)
 */
export function renderPeak(ctx, el, res, req, advice) {
  const { t, snapPanel } = ctx;
  const device = typeof res.deviceUsedBytes === 'number';
  el.append(
    headline(
      ctx,
      device ? 'peak.device' : 'peak.total',
      device ? /** @type {number} */ (res.deviceUsedBytes) : res.peakBytes,
      [
        advice ? statusBadge(ctx, advice.verdict.status) : null,
        res.peakPhase ? chip(t('peak.phase'), ' ', optionLabel(ctx, 'phase', res.peakPhase)) : null,
      ],
    ),
  );
  if (typeof res.headroomBytes === 'number')
    el.append(
      res.headroomBytes >= 0
        ? h('p', {}, t('peak.headroom'), ' ', t.both(res.headroomBytes))
        : h('p', {}, t('ask.short'), ' ', t.both(-res.headroomBytes)),
    );
  if (typeof res.maxMicroBatch === 'number')
    el.append(
      h(
        'p',
        {},
        t('peak.maxMicroBatch'),
        ' ',
        res.maxMicroBatch > 0 ? t.n(t.int(res.maxMicroBatch)) : t('peak.noneFits'),
      ),
    );
  el.append(deviceNumbers(ctx, res));
  // (the full page lists the changes under its verdict; an embed here)
  if (advice && !ctx.verdictEl) el.append(h('div', { id: 'tm-changes' }, changeList(ctx, advice)));
  // The GPU's memory as a line on both charts (GiB, as their axes).
  const used = device ? /** @type {number} */ (res.deviceUsedBytes) : res.peakBytes;
  const capacity =
    typeof res.headroomBytes === 'number'
      ? { value: (used + res.headroomBytes) / 2 ** 30, label: t('chart.capacity') }
      : undefined;
  breakdownChart(ctx, el, [{ label: t('size.thisConfig'), breakdown: res.breakdown }], capacity);
  el.append(breakdownTable(ctx, res.breakdown, res.peakPhase, res) || '');
  // with pipeline stages: each stage's memory (the figures above are the binding stage's)
  stageView(ctx, el, res, capacity);
  el.append(assumptionList(ctx, res));
  timelineChart(ctx, el, res.timeline, 'peak.timeline', capacity);
  el.append(details(ctx, res));
  // the snapshot comparison takes the run's peakMemory request
  const { marginBytes, marginFraction, fromScratch, changes, loraBaseDtype, ...peakRequest } = req;
  el.append(snapPanel.element(peakRequest), ctx.tracePanel.element());
}
