// @ts-check
// Data of the page's memory–time frontier chart: the frontier's plans sorted by activation
// memory (GiB), each with its recompute overhead in % of forward + backward (the headline's
// overheadFraction, placement_simulator.cpp), and the chosen plan placed where it lies — on the
// frontier, or off it (a √n plan above the best single-level plans, a Rotor plan below them).
/** @import { FrontierPoint } from '../lib/index.js' */
/**
 * @param {FrontierPoint[] | undefined} points
 * @param {{ peakActivationBytes: number, overheadFraction: number }} chosen the plan shown
 */
export function frontierData(points, chosen) {
  const rows = (Array.isArray(points) ? points : [])
    .filter(
      (p) =>
        Number.isFinite(p?.peakActivationBytes) &&
        Number.isFinite(p.totalCost) &&
        Number.isFinite(p.recomputeCost) &&
        p.totalCost > p.recomputeCost,
    )
    .map((p) => [
      p.peakActivationBytes / 2 ** 30,
      (100 * p.recomputeCost) / (p.totalCost - p.recomputeCost),
    ])
    .sort((a, b) => a[0] - b[0]);
  const x = rows.map((r) => r[0]);
  const y = /** @type {(number | null)[]} */ (rows.map((r) => r[1]));
  const cx = chosen.peakActivationBytes / 2 ** 30;
  let index = x.findIndex((v) => v === cx);
  if (index < 0) {
    index = x.findIndex((v) => v > cx);
    if (index < 0) index = x.length;
    x.splice(index, 0, cx);
    y.splice(index, 0, null); // no frontier plan at exactly this memory: the line spans the gap
  }
  return { x, y, index, value: 100 * chosen.overheadFraction };
}
