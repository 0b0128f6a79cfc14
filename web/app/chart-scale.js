// @ts-check
// The arithmetic of the page's charts (charts.js), free of the DOM so that tests/js can check
// it: "nice" ticks (steps of 1, 2 or 5 times a power of ten, the usual choice for axes since
// Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990), whether a row of labels fits
// without touching, and category labels wrapped onto lines.

const STEPS = [1, 2, 5];

/**
 * How many multiples of `step` lie in [lo, hi] (with a little slack for rounding).
 * @param {number} lo
 * @param {number} hi
 * @param {number} step
 */
function countIn(lo, hi, step) {
  const eps = 1e-9;
  return Math.floor(hi / step + eps) - Math.ceil(lo / step - eps) + 1;
}

/**
 * The smallest step of 1, 2 or 5 × 10^k that puts at most `most` ticks in [lo, hi]; 0 when the
 * range is empty or not finite.
 * @param {number} lo
 * @param {number} hi
 * @param {number} most
 */
export function tickStep(lo, hi, most) {
  const span = hi - lo;
  if (!(span > 0) || !Number.isFinite(span) || !(most >= 1)) return 0;
  let p = 10 ** Math.floor(Math.log10(span / Math.floor(most)));
  for (let round = 0; round < 4; round++, p *= 10)
    for (const m of STEPS) if (countIn(lo, hi, m * p) <= most) return m * p;
  return 0;
}

/**
 * The ticks in [lo, hi], at most `most` of them, at multiples of tickStep's step, rounded to the
 * step's decimals (0.1 + 0.2 shows as 0.3).
 * @param {number} lo
 * @param {number} hi
 * @param {number} most
 * @returns {number[]}
 */
export function niceTicks(lo, hi, most) {
  const step = tickStep(lo, hi, most);
  if (!step) return Number.isFinite(lo) ? [lo] : [];
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  const eps = 1e-9;
  const out = [];
  for (let i = Math.ceil(lo / step - eps), last = Math.floor(hi / step + eps); i <= last; i++)
    out.push(Number((i * step).toFixed(Math.min(20, decimals))));
  return out;
}

/**
 * Whether labels centred at `centers` (px, ascending) with widths `widths` keep `gap` px
 * between neighbours and stay inside [min, max].
 * @param {number[]} centers
 * @param {number[]} widths
 * @param {number} gap
 * @param {number} min
 * @param {number} max
 */
export function labelsFit(centers, widths, gap, min, max) {
  for (let i = 0; i < centers.length; i++) {
    const left = centers[i] - widths[i] / 2;
    const right = centers[i] + widths[i] / 2;
    if (left < min || right > max) return false;
    if (i && left < centers[i - 1] + widths[i - 1] / 2 + gap) return false;
  }
  return true;
}

/**
 * `text` broken at spaces into lines no wider than `width` (px, measured by widthOf), or null
 * when that takes more than `most` lines or a single word is wider.
 * @param {string} text
 * @param {number} width
 * @param {(s: string) => number} widthOf
 * @param {number} most
 * @returns {string[] | null}
 */
export function wrapLabel(text, width, widthOf, most) {
  const lines = [];
  let line = '';
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    if (widthOf(word) > width) return null;
    const longer = line ? `${line} ${word}` : word;
    if (widthOf(longer) <= width) line = longer;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line) lines.push(line);
  return lines.length <= most ? lines : null;
}
