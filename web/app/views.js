// @ts-check
// The result views: one per calculator (checkpoint size, peak memory, accumulation plans,
// placement; view-size.js, view-peak.js, view-accum.js, view-place.js) and the parts they share
// (view-common.js). Each takes the controller's live state first: makeViews(ctx) binds them.
// ctx: { t, st, tm, solver, snapPanel, verdictEl, optionLabel, chartOpts, suggestionsLater,
// fitsWithMargin }.
import { partLabel } from './view-common.js';
import { renderSize } from './view-size.js';
import { renderPeak } from './view-peak.js';
import { renderAccum } from './view-accum.js';
import { renderPlace } from './view-place.js';

const VIEWS = { size: renderSize, peak: renderPeak, accum: renderAccum, place: renderPlace };

/** @param {any} ctx */
export function makeViews(ctx) {
  /** @type {Record<string, (el: any, res: any, req: any) => void>} */
  const RENDER = {};
  for (const [tab, render] of Object.entries(VIEWS))
    RENDER[tab] = (el, res, req) => render(ctx, el, res, req);
  return { RENDER, partLabel: (/** @type {string} */ k) => partLabel(ctx, k) };
}
