// @ts-check
// The result views: one per calculator (checkpoint size, peak memory, accumulation plans,
// placement, the layout planner; view-size.js, view-peak.js, view-accum.js, view-place.js,
// view-plan.js) and the parts they share
// (view-common.js). Each takes the controller's live state first (app.js): { t, st, tm,
// solver, snapPanel, verdictEl, resultsWidth, ... }, then the results element,
// the result and its request.
import { renderSize } from './view-size.js';
import { renderPeak } from './view-peak.js';
import { renderAccum } from './view-accum.js';
import { renderPlace } from './view-place.js';
import { renderPlan } from './view-plan.js';

export const RENDER = {
  size: renderSize,
  peak: renderPeak,
  accum: renderAccum,
  place: renderPlace,
  plan: renderPlan,
};
