// @ts-check
// The placement result: the peak of the activations, which layers are checkpointed (by module
// name), the placement diagram, memory over the step and the memory–time frontier.
/** @import { DescribeModelResult, PlacementCostResult, PlacementFrontierResult, PlacementPlanResult, PlacementRequest, PlacementResult } from '../lib/index.js' */
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import { frontierData } from './frontier.js';
import { lines } from './charts.js';
import { placementDiagram } from './diagrams.js';
import { chartOpts, chip, headline, details, timelineChart } from './view-common.js';

/**
 * A placement result of any strategy (a plan, a frontier, Revolve's cost): the view checks
 * each field before it reads it.
 * @typedef {Partial<PlacementPlanResult> & Partial<PlacementFrontierResult> & Partial<PlacementCostResult>} AnyPlacementResult
 */

/**
 * The module name of each layer of a model's chain, or its number (from 0, as the API's
 * `checkpointed` ranges) for a uniform chain. The chain is the peak-memory model's: the
 * embedding, one layer per block, the head (docs/placement.md); the blocks' prefix is read
 * from the model's tensor names (`transformer.h.0.ln_1.weight` → `transformer.h.`).
 * @param {Ctx} ctx
 * @param {PlacementRequest} req
 * @returns {(i: number) => string}
 */
export function chainNames(ctx, req) {
  const num = (/** @type {number} */ i) => String(i);
  if (!req.model) return num;
  /** @type {DescribeModelResult | undefined} */
  let d;
  try {
    d = ctx.tm.describeModel({ model: req.model });
  } catch {
    return num;
  }
  const tensors = Array.isArray(d?.tensors) ? d.tensors : [];
  const m = tensors.map((x) => /^(.*?\.)(\d+)\./.exec(String(x.name))).find(Boolean);
  const layers = typeof d?.layers === 'number' ? d.layers : 0;
  if (!m || !layers) return num;
  const prefix = m[1];
  const embed = String(tensors[0]?.name || 'embedding').replace(/\.weight$/, '');
  return (i) =>
    i === 0 ? embed : i <= layers ? `${prefix}${i - 1}` : i === layers + 1 ? 'lm_head' : num(i);
}

/** "transformer.h.7" after "transformer.h.4" → "h.7" (the shared prefix said once). */
function shortName(/** @type {string} */ a, /** @type {string} */ b) {
  const pa = a.split('.');
  const pb = b.split('.');
  let k = 0;
  while (k < pa.length - 1 && k < pb.length - 1 && pa[k] === pb[k]) k++;
  return pb.slice(Math.max(0, k - 1)).join('.');
}

/**
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {AnyPlacementResult} res
 * @param {PlacementRequest} req
 */
export function renderPlace(ctx, el, res, req) {
  const { t, st } = ctx;
  el.append(
    headline(ctx, 'place.peak', /** @type {number} */ (res.peakActivationBytes), [
      typeof res.overheadFraction === 'number'
        ? chip(t('place.overhead'), ' ', t.n(`${t.num(100 * res.overheadFraction)} %`))
        : null,
    ]),
  );
  if (typeof res.storedBytes === 'number')
    el.append(h('p', {}, t('place.stored'), ' ', t.both(res.storedBytes)));
  const segs = Array.isArray(res.checkpointed) ? res.checkpointed : [];
  // Layers are numbered from 0, as in the API; a model's layers by their module names.
  const names = chainNames(ctx, req);
  el.append(
    h(
      'p',
      {},
      t('place.segments', { n: segs.length }),
      ' ',
      t.n(
        segs
          .slice(0, 40)
          .map(([a, b]) => (a === b ? names(a) : `${names(a)}–${shortName(names(a), names(b))}`))
          .join(', ') + (segs.length > 40 ? ' …' : ''),
        'num-list',
      ),
    ),
  );
  const n =
    /** @type {{ length?: number } | undefined} */ (req.chain?.layers)?.length ||
    (Array.isArray(res.timeline)
      ? res.timeline.reduce((m, e) => Math.max(m, e.layer ?? -1), -1) + 1
      : 0);
  if (n > 0) placementDiagram(el, { n, segments: segs, t });
  timelineChart(ctx, el, res.timeline, 'place.timeline');
  if (st.frontier) frontierChart(ctx, el, res, req);
  el.append(details(ctx, res));
}

/**
 * The memory–time frontier of the plan's chain, with the chosen plan marked (in the worker).
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {AnyPlacementResult} res
 * @param {PlacementRequest} req
 */
function frontierChart(ctx, el, res, req) {
  const { t, solver } = ctx;
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
      const data = frontierData(
        /** @type {PlacementFrontierResult | undefined} */ (fr)?.frontier,
        /** @type {PlacementPlanResult} */ (res), // (the frontier is asked for a plan's)
      );
      if (!data.x.length) return;
      const label = t(rotor ? 'place.frontierRotor' : 'place.frontierBest');
      lines(holder, {
        label: t('place.frontier'),
        x: data.x,
        xLabel: 'GiB',
        yLabel: t('place.costAxis'),
        series: [{ key: 'activations', label, values: data.y, spanGaps: true }],
        mark: { index: data.index, value: data.value, label: t('place.chosen') },
        stepped: true,
        t,
        ...chartOpts(ctx),
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
