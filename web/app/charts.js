// Charts drawn with uPlot (MIT, ~23 KB gzip, canvas, no dependencies), bundled from
// node_modules by tools/build-page.sh into a lazily loaded chunk served by our own origin. If it
// cannot load, the tables beside each chart still carry every number.
import { h } from './dom.js';

let uplotPromise = null;
function loadUPlot() {
  if (!uplotPromise) {
    uplotPromise = import('uplot').then((m) => m.default).catch(() => null);
  }
  return uplotPromise;
}

// Colours come from the page's CSS custom properties. Reading one forces a style recalculation
// of freshly built results, so they are read once per calculator root and kept until the system
// switches between light and dark (resetColors).
const colorCache = new WeakMap(); // root element -> Map(name -> value)
function cssVar(el, name, fallback) {
  const root = el.closest?.('.tm') || el;
  let names = colorCache.get(root);
  if (!names) colorCache.set(root, (names = new Map()));
  if (!names.has(name)) names.set(name, getComputedStyle(root).getPropertyValue(name).trim());
  return names.get(name) || fallback;
}

/** Forgets the colours read so far (the app calls it when light/dark changes). */
export function resetColors(el) {
  colorCache.delete(el.closest?.('.tm') || el);
}

// One uPlot per chart slot, kept across updates: typing into an input redraws the same canvas
// with new data (setData) instead of building a canvas, its legend and axes again, which took
// most of a keystroke's 30-50 ms (bench/page-update.mjs). A chart whose shape changed (series,
// labels, colours, width, language) is built afresh.
function draw(uPlot, box, opts, data, reuse, shape) {
  const sig = JSON.stringify(shape);
  const prev = reuse?.cache.get(reuse.slot);
  if (prev && prev.sig === sig) {
    box.append(prev.u.root); // moved from the results view this update replaced
    prev.u.setData(data);
    return;
  }
  prev?.u.destroy();
  const u = new uPlot(opts, data, box);
  reuse?.cache.set(reuse.slot, { u, sig });
}

export const PART_COLORS = {
  weights: '--c-weights',
  masterWeights: '--c-master',
  gradients: '--c-grads',
  optimizerState: '--c-opt',
  activations: '--c-act',
  temporaries: '--c-temp',
  buffers: '--c-buf',
  runtime: '--c-runtime',
};

export function partColor(el, key, i = 0) {
  const fallback = [
    '#4e79a7',
    '#f28e2b',
    '#59a14f',
    '#e15759',
    '#76b7b2',
    '#edc948',
    '#b07aa1',
    '#9c755f',
  ];
  return cssVar(el, PART_COLORS[key] || '--c-other', fallback[i % fallback.length]);
}

// available: the width the chart may take (the app keeps it from a ResizeObserver, so that
// drawing does not force a layout of the results just built); el's own width otherwise.
function width(el, available) {
  return Math.max(280, Math.min(760, (available || el.clientWidth || 600) - 8));
}

/**
 * The GPU's memory as a dashed horizontal line across the plot, labelled at its end, and the
 * y range stretched to show it (drawn on the canvas after the series: uPlot's draw hook).
 */
function capacityLine(el, capacity) {
  if (!capacity || !(capacity.value > 0)) return {};
  const color = cssVar(el, '--c-capacity', '#c0392b');
  return {
    range: (u, mn, mx) => [0, Math.max(mx || 0, capacity.value) * 1.1 || 1],
    hooks: {
      draw: [
        (u) => {
          const c = u.ctx;
          const y = u.valToPos(capacity.value, 'y', true);
          c.save();
          c.strokeStyle = color;
          c.fillStyle = color;
          c.lineWidth = 2 * devicePixelRatio;
          c.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
          c.beginPath();
          c.moveTo(u.bbox.left, y);
          c.lineTo(u.bbox.left + u.bbox.width, y);
          c.stroke();
          c.font = `${12 * devicePixelRatio}px sans-serif`;
          c.textAlign = 'right';
          c.fillText(capacity.label, u.bbox.left + u.bbox.width - 4, y - 4 * devicePixelRatio);
          c.restore();
        },
      ],
    },
  };
}

function mount(el, label) {
  const box = h('div', { class: 'chart', role: 'img', 'aria-label': label });
  el.append(box);
  return box;
}

/**
 * Stacked bars: one bar per scenario, parts stacked (drawn as overlapping cumulative bars,
 * tallest first, the usual uPlot way to stack).
 */
export async function stackedBars(el, { label, scenarios, parts, t, available, reuse, capacity }) {
  const uPlot = await loadUPlot();
  if (!uPlot || !scenarios.length || !parts.length) return;
  const box = mount(el, label);
  const xs = scenarios.map((_, i) => i);
  const cum = [];
  let acc = scenarios.map(() => 0);
  for (const p of parts) {
    acc = acc.map((a, i) => a + (p.values[i] || 0) / 2 ** 30);
    cum.push(acc.slice());
  }
  const order = parts.map((_, i) => i).reverse();
  const bars = uPlot.paths.bars({ size: [0.5, 90] });
  const cap = capacityLine(el, capacity);
  const text = cssVar(el, '--fg', '#222');
  const grid = cssVar(el, '--grid', '#ddd');
  const opts = {
    width: width(el, available),
    height: 240,
    legend: { show: true, live: false },
    cursor: { show: false },
    scales: {
      x: { time: false, range: [-0.6, scenarios.length - 0.4] },
      y: { range: cap.range || ((u, mn, mx) => [0, mx * 1.08 || 1]) },
    },
    hooks: cap.hooks,
    axes: [
      {
        stroke: text,
        grid: { show: false },
        splits: () => xs,
        values: (u, splits) => splits.map((i) => scenarios[i] ?? ''),
      },
      {
        stroke: text,
        grid: { stroke: grid },
        label: 'GiB',
        values: (u, v) => v.map((x) => t.num(x)),
      },
    ],
    series: [
      {},
      ...order.map((i) => ({
        label: parts[i].label,
        fill: partColor(el, parts[i].key, i),
        stroke: partColor(el, parts[i].key, i),
        paths: bars,
        points: { show: false },
      })),
    ],
  };
  const shape = {
    kind: 'bars',
    width: opts.width,
    capacity: capacity ? [capacity.value, capacity.label] : null,
    scenarios,
    series: opts.series.slice(1).map((x) => [x.label, x.fill]),
    text,
    grid,
    lang: t.lang,
  };
  draw(uPlot, box, opts, [xs, ...order.map((i) => cum[i])], reuse, shape);
}

/** Line chart: x values and one or more series; optional marked point (the peak, the plan). */
export async function lines(
  el,
  { label, x, xLabel, yLabel, series, mark, t, stepped, available, reuse, capacity },
) {
  const uPlot = await loadUPlot();
  if (!uPlot || !x.length) return;
  const box = mount(el, label);
  const text = cssVar(el, '--fg', '#222');
  const grid = cssVar(el, '--grid', '#ddd');
  const path = stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
  const cap = capacityLine(el, capacity);
  const data = [x, ...series.map((s) => s.values)];
  const ser = [
    { label: xLabel },
    ...series.map((s, i) => ({
      label: s.label,
      stroke: s.color || partColor(el, s.key, i),
      width: 2,
      paths: path,
      spanGaps: true, // a marked point off the line (the frontier chart) leaves a null
      points: { show: x.length < 60 },
    })),
  ];
  if (mark) {
    const vals = x.map((xv, i) => (i === mark.index ? mark.value : null));
    data.push(vals);
    ser.push({
      label: mark.label,
      stroke: cssVar(el, '--c-mark', '#d00'),
      width: 0,
      paths: () => null,
      points: { show: true, size: 12, fill: cssVar(el, '--c-mark', '#d00') },
    });
  }
  const opts = {
    width: width(el, available),
    height: 240,
    legend: { show: true, live: false },
    scales: { x: { time: false }, ...(cap.range ? { y: { range: cap.range } } : {}) },
    hooks: cap.hooks,
    axes: [
      {
        stroke: text,
        grid: { stroke: grid },
        label: xLabel,
        values: (u, v) => v.map((z) => t.num(z)),
      },
      {
        stroke: text,
        grid: { stroke: grid },
        label: yLabel,
        values: (u, v) => v.map((z) => t.num(z)),
      },
    ],
    series: ser,
  };
  const shape = {
    kind: 'lines',
    width: opts.width,
    capacity: capacity ? [capacity.value, capacity.label] : null,
    xLabel,
    yLabel,
    series: ser.map((x) => [x.label, x.stroke, x.points?.show, x.points?.size]),
    stepped: !!stepped,
    text,
    grid,
    lang: t.lang,
  };
  draw(uPlot, box, opts, data, reuse, shape);
}
