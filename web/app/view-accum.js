// @ts-check
// The accumulation result: the effective batch, or the plans (the recommended one, the
// comparison of accumulation and checkpointing) and the accumulation figure.
/** @import { AccumulationForwardResult, AccumulationPlanRequest, AccumulationPlanResult, AccumulationRequest, AccumulationResult, AdviseResult } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import { accumulationDiagram } from './diagrams.js';
import { breakdownChart, details, planTable } from './view-common.js';
import { optionLabel } from './form.js';
import { changeList } from './verdict.js';
import { adviseRequest } from './requests.js';

/**
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {Partial<AccumulationForwardResult> & Partial<AccumulationPlanResult>} res either
 *   form's result (forward or plan): each field is checked before it is read
 * @param {Partial<AccumulationRequest> & Partial<AccumulationPlanRequest>} req its request
 */
export function renderAccum(ctx, el, res, req) {
  const { t } = ctx;
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
    el.append(details(ctx, res));
    return;
  }
  const rec =
    typeof res.recommended === 'number'
      ? plans[res.recommended]
      : res.recommended && typeof res.recommended === 'object'
        ? res.recommended
        : null; // (no plan has a `recommended` field: the core's is the result's)
  // Nothing fits: say so, and offer the changes that make one micro-batch fit.
  if (!plans.some((p) => p.fits)) {
    el.append(
      h(
        'div',
        { class: 'headline acc-none' },
        h('span', { class: 'badge bad' }, t('peak.noFit')),
        ' ',
        h('span', { class: 'headline-label' }, t('acc.noneFits')),
      ),
      noneFitsChanges(ctx),
    );
  }
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
            `${t.int(rec.microBatch)} × ${t.int(rec.accumulationSteps)}${(req.dataParallel ?? 1) > 1 ? ` × ${t.int(req.dataParallel ?? 1)}` : ''}`,
          ),
        ),
        typeof rec.peakBytes === 'number' ? t.both(rec.peakBytes) : null,
      ),
    );
  }
  const notes = /** @type {Array<[string, unknown]>} */ ([
    ['checkpointing.message', res.checkpointing?.message],
    ...(Array.isArray(res.warnings)
      ? res.warnings.map((w, k) => [`warnings[${k}].message`, w?.message])
      : []),
  ]).filter(([, m]) => typeof m === 'string');
  if (notes.length)
    el.append(
      h(
        'ul',
        { class: 'notes' },
        notes.map(([path, m]) => t.core(res, path, m, 'li')),
      ),
    );
  const rows = Array.isArray(res.comparison?.rows) ? res.comparison.rows : null;
  if (rows) {
    el.append(planTable(ctx, rows, t('acc.comparison'), null, ['id']));
    breakdownChart(
      ctx,
      el,
      rows
        .filter((r) => r.breakdown)
        .map((r) => ({ label: optionLabel(ctx, 'row', r.id), breakdown: r.breakdown })),
    );
  }
  el.append(planTable(ctx, plans.slice(0, 60), t('acc.plans'), rec));
  // which memory the plans' peaks are (the verdict judges nvidia-smi's)
  el.append(h('p', { class: 'note' }, t('acc.peakIs')));
  // Figure 2 shows accumulation: the recommended plan, or the fastest fitting plan that accumulates.
  const shown =
    (rec?.accumulationSteps ?? 0) > 1
      ? rec
      : plans.find((p) => p.fits && p.accumulationSteps > 1) || rec;
  if (shown)
    accumulationDiagram(el, {
      micro: shown.microBatch,
      steps: shown.accumulationSteps,
      dp: req.dataParallel || 1,
      t,
    });
  el.append(details(ctx, res));
}

// When no split fits: on the full page the verdict above lists the changes; an embed asks for
// the changes that make micro-batch 1 fit (one advise call, in the worker).
/** @param {Ctx} ctx */
function noneFitsChanges(ctx) {
  const { t } = ctx;
  if (ctx.verdictEl)
    return h(
      'p',
      {},
      h(
        'button',
        {
          type: 'button',
          class: 'small',
          onclick: () => {
            // (this button is made only where the page has a verdict)
            const verdictEl = /** @type {HTMLElement} */ (ctx.verdictEl);
            const to = ctx.rootEl.querySelector('#tm-suggest .suggest') || verdictEl;
            to.scrollIntoView?.({ block: 'start' });
            verdictEl.focus();
          },
        },
        t('acc.seeChanges'),
      ),
    );
  const slot = h('div', { class: 'suggest-slot' });
  const seq = ctx.computeSeq;
  ctx.solver
    .runLatest(
      'advise',
      adviseRequest({ ...ctx.st, microBatch: 1 }, { timeline: false }),
      'changes',
    )
    .then(
      (advice) =>
        seq === ctx.computeSeq &&
        slot.append(changeList(ctx, /** @type {AdviseResult} */ (advice))),
      () => {},
    );
  return slot;
}
