// @ts-check
// The page's charts, drawn as SVG by this module: stacked bars (one per scenario) and lines or
// steps over a numeric x, either with the GPU's memory as a dashed line. Colours are classes
// (style.css: .c-weights and the others set --c from the page's custom properties), so a switch
// between light and dark needs no redraw. Each chart is an <svg role="img"> labelled with a
// summary in the page's language, its legend an HTML list under it (it wraps, and follows the
// page's direction); the table beside every chart holds each number. A chart is a few dozen
// elements, built afresh on every update (bench/page-update.mjs).
/** @import { Capacity, Translator } from './types.js' */
import { h, s } from './dom.js';
import { niceTicks, labelsFit, wrapLabel } from './chart-scale.js';

/**
 * A chart's y scale: bytes in GiB -> the y of the plot.
 * @typedef {{ y: (v: number) => number }} YScale
 */
/**
 * The y axis: its ticks, their labels and the left margin they take.
 * @typedef {{ ticks: number[], texts: string[], left: number }} YAxis
 */
/**
 * The scenarios' labels under their bars (categoryLabels).
 * @typedef {{ lines: string[][], slant: boolean, every: number, height: number, longest?: number }} CategoryLabels
 */
/**
 * One part of the stacked bars: its colour's key, its label and its bytes in each scenario.
 * @typedef {{ key: string, label: string, values: number[] }} BarPart
 */
/**
 * Stacked bars (stackedBars): the scenarios' names, the parts, the GPU's memory, and the width
 * the results have (0 before it is known).
 * @typedef {object} BarsOptions
 * @property {string} label
 * @property {string[]} scenarios
 * @property {BarPart[]} parts
 * @property {Translator} t
 * @property {Capacity | null} [capacity]
 * @property {number} available
 */
/**
 * One line of a chart: its colour's key, its label, its values (null: no point there), and
 * whether the line spans the gaps.
 * @typedef {{ key: string, label: string, values: (number | null)[], spanGaps?: boolean }} Series
 */
/**
 * Lines over a numeric x (lines): the x values, the series, a marked point, the GPU's memory.
 * @typedef {object} LinesOptions
 * @property {string} label
 * @property {number[]} x
 * @property {string} [xLabel]
 * @property {string} yLabel
 * @property {Series[]} series
 * @property {{ index: number, value: number, label: string } | null} [mark]
 * @property {Translator} t
 * @property {boolean} [stepped]
 * @property {Capacity | null} [capacity]
 * @property {number} available
 */

const FONT = 12; // px: the charts' text (style.css .chart-svg)
// The page's font (style.css, .tm): text is measured with it on a canvas, which needs no layout.
const FAMILY = "system-ui, -apple-system, 'Segoe UI', 'Noto Sans', 'Noto Sans Arabic', sans-serif";
const HEIGHT = 240;
const GAP = 8; // px between neighbouring labels
const LINE = FONT + 4; // px from one line of a wrapped label to the next (Arabic's boxes are 15)

/** @type {Record<string, string>} */
const COLOR_CLASS = {
  weights: 'c-weights',
  masterWeights: 'c-master',
  gradients: 'c-grads',
  optimizerState: 'c-opt',
  activations: 'c-act',
  temporaries: 'c-temp',
  buffers: 'c-buf',
  runtime: 'c-runtime',
};
/** @param {string} key */
const colorClass = (key) => COLOR_CLASS[key] || 'c-other';

/** @type {CanvasRenderingContext2D | null | undefined} */
let measurer;
const widths = new Map();
/**
 * A label's width in px at the charts' size (a little generous, so that labels never touch).
 * @param {string} text
 */
function textWidth(text) {
  let w = widths.get(text);
  if (w === undefined) {
    if (measurer === undefined) {
      measurer = document.createElement('canvas').getContext('2d');
      if (measurer) measurer.font = `${FONT}px ${FAMILY}`;
    }
    w = (measurer ? measurer.measureText(text).width : text.length * FONT * 0.6) * 1.05 + 1;
    if (widths.size > 4000) widths.clear();
    widths.set(text, w);
  }
  return w;
}

/**
 * `text` cut to `width` px, with an ellipsis when cut.
 * @param {string} text
 * @param {number} width
 */
function fitText(text, width) {
  if (textWidth(text) <= width) return text;
  let n = text.length;
  while (n > 1 && textWidth(`${text.slice(0, n)}…`) > width) n--;
  return `${text.slice(0, n)}…`;
}

/** @param {number} v */
const r1 = (v) => Math.round(v * 10) / 10;

/**
 * A text whose `side` edge ('left' | 'right'; 'middle' centres it) sits at x. The chart itself
 * is left-to-right in both languages (style.css .chart); a right-to-left language's words get
 * direction rtl (class rtl), where text-anchor counts from the right.
 * @param {{ dir: string }} t the translator (its direction)
 * @param {number} x
 * @param {number} y
 * @param {string} text
 * @param {string} side
 * @param {string} cls
 */
function label(t, x, y, text, side, cls) {
  const rtl = t.dir === 'rtl';
  const anchor = side === 'middle' ? 'middle' : (side === 'left') !== rtl ? 'start' : 'end';
  return s(
    'text',
    { x: r1(x), y: r1(y), 'text-anchor': anchor, class: rtl ? `${cls} rtl` : cls },
    text,
  );
}

/**
 * Draws a chart `available` px wide at most: the results' width, which the app keeps from a
 * ResizeObserver. Before it has one (the first result), reading the width would force a layout
 * of the results just built, before they are on screen, and the canvas that measures text is
 * created on first use: the chart is then drawn after the next frame, at el's own width.
 * @param {HTMLElement} el
 * @param {number} available
 * @param {(width: number) => void} draw
 */
function sized(el, available, draw) {
  /** @param {number} w */
  const width = (w) => Math.round(Math.max(280, Math.min(760, (w || 600) - 8)));
  if (available > 0) return draw(width(available));
  // its place is kept meanwhile, so that what follows does not move when it comes
  const pending = h('div', { class: 'chart-pending', 'aria-hidden': 'true' });
  el.append(pending);
  requestAnimationFrame(() =>
    setTimeout(() => {
      if (!el.isConnected) return;
      pending.remove();
      draw(width(el.clientWidth));
    }, 0),
  );
}

/**
 * The y range, from 0: the data with a margin, or the GPU's memory when it is higher.
 * @param {number} max
 * @param {Capacity | null | undefined} capacity
 */
function yTop(max, capacity) {
  const cap = capacity && capacity.value > 0 ? capacity.value : 0;
  return cap ? Math.max(max, cap) * 1.1 : max * 1.08 || 1;
}

/**
 * The y axis: ticks as many as the plot's height takes (two text heights apart), grid lines,
 * labels right-aligned left of the plot, the unit above them. Returns the left margin.
 * @param {Translator} t
 * @param {number} yHi
 * @param {number} plotH
 */
function yAxis(t, yHi, plotH) {
  const ticks = niceTicks(0, yHi, Math.max(2, Math.floor(plotH / (FONT * 2.5))));
  const texts = ticks.map((v) => t.num(v));
  return { ticks, texts, left: Math.ceil(Math.max(...texts.map(textWidth), 10)) + 10 };
}

/**
 * @param {SVGElement} svg
 * @param {Translator} t
 * @param {YAxis} axis
 * @param {YScale} f
 * @param {number} x0
 * @param {number} x1
 * @param {string} title
 */
function drawYAxis(svg, t, axis, f, x0, x1, title) {
  axis.ticks.forEach((v, i) => {
    const y = r1(f.y(v));
    svg.append(
      s(
        'g',
        { class: 'ytick' },
        s('line', { class: 'grid', x1: x0, x2: x1, y1: y, y2: y }),
        label({ dir: 'ltr' }, x0 - 6, y + FONT * 0.35, axis.texts[i], 'right', 'tick'),
      ),
    );
  });
  if (title) svg.append(label(t, 2, FONT, fitText(title, (x1 - 2) / 2), 'left', 'ax-title'));
}

/**
 * The GPU's memory: a dashed line across the plot, its label above it at the right end — or,
 * where a bar rising past the line would be drawn over it (`bars`: the bars' [x0, x1, top] in
 * the chart's pixels), at the left end, cut to its value if the whole label does not fit there.
 * @param {SVGElement} svg
 * @param {Translator} t
 * @param {Capacity | null | undefined} capacity
 * @param {YScale} f
 * @param {number} x0
 * @param {number} x1
 * @param {Array<[number, number, number]>} [bars]
 */
function drawCapacity(svg, t, capacity, f, x0, x1, bars = []) {
  if (!capacity || !(capacity.value > 0)) return;
  const y = r1(f.y(capacity.value));
  const value = `\u2068${t.num(capacity.value)} GiB\u2069`;
  const full = fitText(`${capacity.label} ${value}`, (x1 - x0) / 2);
  const above = y - 5 - FONT >= 0;
  const ly = above ? y - 5 : y + FONT + 3;
  // a bar covers a label's box when it spans its x range and rises above the label's foot
  /**
   * @param {number} a
   * @param {number} b
   */
  const covered = (a, b) => bars.some(([bx0, bx1, top]) => bx1 > a && bx0 < b && top < ly + 2);
  let place = { x: x1 - 4, text: full, anchor: 'right' };
  if (covered(x1 - 4 - textWidth(full), x1 - 4)) {
    const text = covered(x0 + 4, x0 + 4 + textWidth(full)) ? value : full;
    place = { x: x0 + 4, text, anchor: 'left' };
  }
  svg.append(
    s('line', { class: 'cap', x1: x0, x2: x1, y1: y, y2: y }),
    label(t, place.x, ly, place.text, place.anchor, 'cap-label'),
  );
}

/** @param {Array<[string, string]>} items */
function legend(items) {
  return h(
    'ul',
    { class: 'chart-legend' },
    items.map(([cls, text]) =>
      h('li', {}, h('span', { class: `key ${cls}`, 'aria-hidden': 'true' }), text),
    ),
  );
}

/**
 * @param {HTMLElement} el
 * @param {Translator} t
 * @param {number} width
 * @param {string} summary
 * @param {Array<[string, string]>} items
 */
function mount(el, t, width, summary, items) {
  const svg = s('svg', {
    class: 'chart-svg',
    role: 'img',
    'aria-label': summary,
    width,
    height: HEIGHT,
    viewBox: `0 0 ${width} ${HEIGHT}`,
  });
  el.append(h('div', { class: 'chart' }, svg, legend(items)));
  return svg;
}

/**
 * @param {Translator} t
 * @param {string[]} list
 */
const joined = (t, list) => list.join(t.lang === 'ar' ? '؛ ' : '; ');

/**
 * The scenarios' labels under their bars: on one line when they fit their slot, else wrapped
 * onto up to three lines, else slanted and cut; when slots are narrower than a line of text,
 * every k-th. Returns the lines of each label, how to set them and the height they take.
 * @param {string[]} names
 * @param {number} slot
 */
function categoryLabels(names, slot) {
  const room = slot - GAP;
  if (names.every((n) => textWidth(n) <= room))
    return { lines: names.map((n) => [n]), slant: false, every: 1, height: FONT + 8 };
  const wrapped = names.map((n) => wrapLabel(n, room, textWidth, 3));
  if (wrapped.every(Boolean)) {
    const lines = /** @type {string[][]} */ (wrapped);
    return {
      lines,
      slant: false,
      every: 1,
      height: Math.max(...lines.map((l) => l.length)) * LINE + 4,
    };
  }
  const every = Math.max(1, Math.ceil((FONT * 1.6) / slot));
  const longest = Math.min(110, Math.max(...names.map(textWidth)));
  return {
    lines: names.map((n) => [n]),
    slant: true,
    every,
    height: longest * 0.5 + FONT + 12,
    longest,
  };
}

/**
 * A scenario's name under its bar: its lines, or slanted 30° down to the left of the bar.
 * @param {SVGElement} svg
 * @param {Translator} t
 * @param {CategoryLabels} cats
 * @param {number} i
 * @param {string} name
 * @param {number} cx
 * @param {number} bottom
 */
function drawCategory(svg, t, cats, i, name, cx, bottom) {
  if (!cats.slant) {
    cats.lines[i].forEach((line, j) =>
      svg.append(label(t, cx, bottom + FONT + 4 + j * LINE, line, 'middle', 'cat')),
    );
    return;
  }
  // cut to what the margin below holds, and to what is left of the bar's centre
  const room = Math.min(cats.longest || 110, (cx - 2) / Math.cos(Math.PI / 6));
  const y = bottom + FONT + 6; // below the y axis' 0
  const shown = fitText(name, room);
  const text = label(t, cx, y, shown, 'right', 'cat');
  if (shown !== name) text.append(s('title', {}, name));
  text.setAttribute('transform', `rotate(-30 ${r1(cx)} ${r1(y)})`);
  svg.append(text);
}

/**
 * Stacked bars: one bar per scenario, its parts stacked from the first (bottom) to the last.
 * parts[].values are bytes; the axis is in GiB.
 * @param {HTMLElement} el
 * @param {BarsOptions} opts
 */
export function stackedBars(el, opts) {
  if (opts.scenarios.length && opts.parts.length)
    sized(el, opts.available, (w) => drawBars(el, opts, w));
}

/**
 * @param {HTMLElement} el
 * @param {BarsOptions} opts
 * @param {number} W
 */
function drawBars(el, { label: title, scenarios, parts, t, capacity }, W) {
  const gib = parts.map((p) => scenarios.map((_, i) => (p.values[i] || 0) / 2 ** 30));
  const totals = scenarios.map((_, i) => gib.reduce((a, v) => a + v[i], 0));
  const yHi = yTop(Math.max(...totals), capacity);
  const top = FONT + 14; // room for the y axis' unit above the plot
  // The left margin depends on the y labels, whose count depends on the plot's height, which
  // depends on the category labels, which depend on the slot's width: one estimate, then exact.
  let axis = yAxis(t, yHi, HEIGHT - top - 40);
  let cats = categoryLabels(scenarios, (W - axis.left - 12) / scenarios.length);
  axis = yAxis(t, yHi, HEIGHT - top - cats.height);
  const left = axis.left;
  const plotW = W - left - 12;
  const slot = plotW / scenarios.length;
  cats = categoryLabels(scenarios, slot);
  const bottom = HEIGHT - cats.height;
  const f = {
    /** @param {number} v */
    y: (/** @type {number} */ v) => bottom - (v / yHi) * (bottom - top),
  };
  const summary = t('chart.summary', {
    title,
    items: joined(t, [
      ...scenarios.map((n, i) =>
        t('chart.summaryItem', { name: n, value: `${t.num(totals[i])} GiB` }),
      ),
      ...(capacity && capacity.value > 0
        ? [t('chart.summaryItem', { name: capacity.label, value: `${t.num(capacity.value)} GiB` })]
        : []),
    ]),
  });
  const svg = mount(
    el,
    t,
    W,
    summary,
    parts.map((p) => [colorClass(p.key), p.label]),
  );
  drawYAxis(svg, t, axis, f, left, left + plotW, 'GiB');
  const barW = Math.min(90, slot * 0.5);
  /** @type {Array<[number, number, number]>} */
  const rects = scenarios.map((_, i) => {
    const cx = left + slot * (i + 0.5);
    return [cx - barW / 2, cx + barW / 2, f.y(totals[i])];
  });
  scenarios.forEach((name, i) => {
    const cx = left + slot * (i + 0.5);
    let acc = 0;
    parts.forEach((p, k) => {
      if (!(gib[k][i] > 0)) return;
      const y0 = f.y(acc);
      acc += gib[k][i];
      const y1 = f.y(acc);
      const tip = `${name} · ${p.label}: ${t.gb(p.values[i])} · ${t.gib(p.values[i])}`;
      const box = { x: r1(cx - barW / 2), width: r1(barW), y: r1(y1), height: r1(y0 - y1) };
      const cls = `bar ${colorClass(p.key)}`;
      svg.append(s('rect', { class: cls, 'data-part': p.key, ...box }, s('title', {}, tip)));
    });
    if (i % cats.every === 0) drawCategory(svg, t, cats, i, name, cx, bottom);
  });
  svg.append(s('line', { class: 'axis', x1: left, x2: left + plotW, y1: bottom, y2: bottom }));
  drawCapacity(svg, t, capacity, f, left, left + plotW, rects);
}

/**
 * The x ticks: as many as fit, their labels two GAPs apart and inside the chart.
 * @param {Translator} t
 * @param {number} xLo
 * @param {number} xHi
 * @param {(v: number) => number} fx
 * @param {number} plotW
 * @param {number} W
 */
function xTicks(t, xLo, xHi, fx, plotW, W) {
  /** @type {number[]} */
  let xt = [];
  for (let most = Math.max(2, Math.floor(plotW / 40)); most >= 1; most--) {
    xt = niceTicks(xLo, xHi, most);
    const texts = xt.map((v) => t.num(v));
    if (labelsFit(xt.map(fx), texts.map(textWidth), 2 * GAP, 0, W)) break;
  }
  return xt;
}

/**
 * The points of one run of a series (no gap) thinned to the pixels: of the points that fall in
 * one pixel column, the first, the lowest, the highest and the last, in their order. A line
 * through them looks the same as through all of them (every peak is kept), and a timeline of
 * 100,000 events becomes at most 4 points per pixel.
 * @param {number[]} pxs @param {number[]} pys
 */
function thinRun(pxs, pys) {
  if (pxs.length < 8) return pxs.map((px, i) => [px, pys[i]]);
  const out = [];
  let i = 0;
  while (i < pxs.length) {
    const col = Math.round(pxs[i]);
    let j = i;
    let lo = i;
    let hi = i;
    while (j + 1 < pxs.length && Math.round(pxs[j + 1]) === col) {
      j++;
      if (pys[j] < pys[lo]) lo = j;
      if (pys[j] > pys[hi]) hi = j;
    }
    for (const k of [...new Set([i, lo, hi, j])].sort((a, b) => a - b)) out.push([pxs[k], pys[k]]);
    i = j + 1;
  }
  return out;
}

/**
 * One series as a path (a null lifts the pen unless spanGaps), with its points under 60.
 * @param {SVGElement} svg
 * @param {Series} sr
 * @param {number[]} x
 * @param {(v: number) => number} fx
 * @param {YScale} f
 * @param {boolean | undefined} stepped
 */
function drawSeries(svg, sr, x, fx, f, stepped) {
  let d = '';
  let dots = '';
  /** @type {number[]} */ let pxs = [];
  /** @type {number[]} */ let pys = [];
  const flush = () => {
    thinRun(pxs, pys).forEach(([px, py], k) => {
      // a step holds each value until the next x (then rises or falls to the next value)
      d +=
        k > 0
          ? stepped
            ? `H${r1(px)}V${r1(py)}`
            : `L${r1(px)} ${r1(py)}`
          : `M${r1(px)} ${r1(py)}`;
    });
    pxs = [];
    pys = [];
  };
  sr.values.forEach((v, i) => {
    if (!Number.isFinite(v) || !Number.isFinite(x[i])) {
      if (!sr.spanGaps) flush();
      return;
    }
    const px = fx(x[i]);
    const py = f.y(/** @type {number} */ (v)); // (finite: checked above)
    pxs.push(px);
    pys.push(py);
    if (x.length < 60) dots += `M${r1(px - 2.5)} ${r1(py)}a2.5 2.5 0 1 0 5 0a2.5 2.5 0 1 0-5 0`;
  });
  flush();
  const cls = colorClass(sr.key);
  if (d) svg.append(s('path', { class: `line ${cls}`, d }));
  if (dots) svg.append(s('path', { class: `pts ${cls}`, d: dots }));
}

/**
 * Under the pointer: a line at the nearest x with a point, and that x's values above the plot
 * (beside the y axis' unit, cut to the room left of it).
 * @param {SVGSVGElement} svg
 * @param {Translator} t
 * @param {{ x: number[], series: Series[], fx: (v: number) => number, top: number, bottom: number, left: number, right: number, room: number }} plot
 */
function hoverReadout(svg, t, { x, series, fx, top, bottom, left, right, room }) {
  /** @type {Element[]} */
  let shown = [];
  const hide = () => {
    for (const e of shown) e.remove();
    shown = [];
  };
  svg.addEventListener('pointermove', (e) => {
    const box = svg.getBoundingClientRect();
    const px = ((e.clientX - box.left) * svg.viewBox.baseVal.width) / box.width;
    let best = -1;
    x.forEach((v, i) => {
      if (!Number.isFinite(v) || !series.some((sr) => Number.isFinite(sr.values[i]))) return;
      if (best < 0 || Math.abs(fx(v) - px) < Math.abs(fx(x[best]) - px)) best = i;
    });
    hide();
    if (best < 0 || px < left - 8 || px > right + 8) return;
    const cx = r1(fx(x[best]));
    const values = series
      .filter((sr) => Number.isFinite(sr.values[best]))
      .map((sr) => `${sr.label} \u2068${t.num(/** @type {number} */ (sr.values[best]))}\u2069`);
    const text = `\u2068${t.num(x[best])}\u2069: ${joined(t, values)}`;
    shown = [
      s('line', { class: 'cursor', x1: cx, x2: cx, y1: top, y2: bottom }),
      label(t, right, FONT, fitText(text, room), 'right', 'readout'),
    ];
    svg.append(...shown);
  });
  svg.addEventListener('pointerleave', hide);
}

/**
 * Lines (or steps) over a numeric x: one or more series, nulls leaving a gap (or spanned, with
 * spanGaps), an optional marked point (the peak, the chosen plan) and the GPU's memory.
 * @param {HTMLElement} el
 * @param {LinesOptions} opts
 */
export function lines(el, opts) {
  if (opts.x.some(Number.isFinite)) sized(el, opts.available, (w) => drawLines(el, opts, w));
}

/**
 * @param {HTMLElement} el
 * @param {LinesOptions} opts
 * @param {number} W
 */
function drawLines(el, { label: title, x, xLabel, yLabel, series, mark, t, stepped, capacity }, W) {
  // (a loop, not Math.min(...xs): 100,000 arguments overflow the call stack)
  let xLo = Infinity;
  let xHi = -Infinity;
  for (const v of x) {
    if (!Number.isFinite(v)) continue;
    if (v < xLo) xLo = v;
    if (v > xHi) xHi = v;
  }
  if (xHi === xLo) [xLo, xHi] = [xLo - 1, xHi + 1];
  let yMax = mark && Number.isFinite(mark.value) ? mark.value : 0;
  for (const sr of series)
    for (const v of sr.values) if (v !== null && Number.isFinite(v) && v > yMax) yMax = v;
  const yHi = yTop(yMax, capacity);
  const top = FONT + 14; // room for the y axis' unit above the plot
  const bottom = HEIGHT - (FONT + 8) - (xLabel ? FONT + 6 : 0);
  const axis = yAxis(t, yHi, bottom - top);
  const left = axis.left;
  // room on the right for half the label of a tick at the end of the x range
  const right = W - Math.max(12, Math.ceil(textWidth(t.num(xHi)) / 2) + 2);
  /** @param {number} v */
  const fx = (v) => left + ((v - xLo) / (xHi - xLo)) * (right - left);
  const f = {
    /** @param {number} v */
    y: (/** @type {number} */ v) => bottom - (v / yHi) * (bottom - top),
  };
  const xt = xTicks(t, xLo, xHi, fx, right - left, W);
  // the x values with a point (phases of a timeline share the points where they meet)
  const points = x.filter((_, i) => series.some((sr) => Number.isFinite(sr.values[i]))).length;
  const summary = t('chart.summaryLines', {
    title,
    y: yLabel,
    x: xLabel,
    n: t.int(points),
    max: t.num(yMax),
  });
  /** @type {Array<[string, string]>} */
  const items = series.map((sr) => [`line ${colorClass(sr.key)}`, sr.label]);
  if (mark) items.push(['dot', mark.label]);
  const svg = mount(el, t, W, summary, items);
  drawYAxis(svg, t, axis, f, left, right, yLabel);
  for (const v of xt) {
    const px = r1(fx(v));
    svg.append(
      s(
        'g',
        { class: 'xtick' },
        s('line', { class: 'grid', x1: px, x2: px, y1: top, y2: bottom }),
        label({ dir: 'ltr' }, px, bottom + FONT + 4, t.num(v), 'middle', 'tick'),
      ),
    );
  }
  svg.append(s('line', { class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom }));
  if (xLabel)
    svg.append(
      label(t, (left + right) / 2, HEIGHT - 4, fitText(xLabel, right - left), 'middle', 'ax-title'),
    );
  drawCapacity(svg, t, capacity, f, left, right);
  for (const sr of series) drawSeries(svg, sr, x, fx, f, stepped);
  const room = right - 2 - GAP - textWidth(fitText(yLabel || '', (right - 2) / 2));
  hoverReadout(svg, t, { x, series, fx, top, bottom, left, right, room });
  if (mark && Number.isFinite(mark.value) && Number.isFinite(x[mark.index]))
    svg.append(
      s(
        'circle',
        { class: 'mark', cx: r1(fx(x[mark.index])), cy: r1(f.y(mark.value)), r: 6 },
        s('title', {}, `${mark.label}: ${t.num(mark.value)}`),
      ),
    );
}
