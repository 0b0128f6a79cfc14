// @ts-check
// The checkpoint-size result: the file's size, the rule of thumb beside it, the breakdown.
/** @import { CheckpointSizeRequest, CheckpointSizeResult } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import { chip, headline, breakdownChart, breakdownTable, details } from './view-common.js';

/**
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {CheckpointSizeResult} res
 * @param {CheckpointSizeRequest} req
 */
export function renderSize(ctx, el, res, req) {
  const { t } = ctx;
  el.append(
    headline(ctx, 'size.total', res.totalBytes, [
      typeof res.bytesPerParam === 'number'
        ? chip(t('size.perParam', { n: '' }), t.n(t.num(res.bytesPerParam)))
        : null,
    ]),
  );
  if (res.formula)
    el.append(
      h(
        'p',
        { class: 'formula' },
        t('size.formula'),
        ' ',
        t.core(res, 'formula', res.formula, 'code'),
      ),
    );
  /** @type {Array<{ label: string, breakdown?: object }>} */
  const scenarios = [{ label: t('size.thisConfig'), breakdown: res.breakdown }];
  // The core returns the seed's simple formula beside the exact answer (res.simple).
  if (res.simple && typeof res.simple.totalBytes === 'number') {
    // (two bars only when they differ: the same number twice compares nothing)
    if (res.simple.totalBytes !== res.totalBytes)
      scenarios.unshift({ label: t('size.simpleFormula'), breakdown: res.simple.breakdown });
    el.append(
      h(
        'p',
        {},
        t('size.simpleVsExact'),
        ' ',
        t.both(res.simple.totalBytes),
        ` ${t('list.arrow')} `,
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
  const notes = Array.isArray(res.notes) ? res.notes : [];
  const noteItems = notes.flatMap((n, i) =>
    typeof n === 'string' ? [t.core(res, `notes[${i}]`, n, 'li')] : [],
  );
  if (noteItems.length) el.append(h('ul', { class: 'notes' }, noteItems));
  breakdownChart(ctx, el, scenarios);
  el.append(breakdownTable(ctx, res.breakdown, '', res) || '', details(ctx, res));
}
