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

function cssVar(el, name, fallback) {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v || fallback;
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

function width(el) {
  return Math.max(280, Math.min(760, (el.clientWidth || 600) - 8));
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
export async function stackedBars(el, { label, scenarios, parts, t }) {
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
  const text = cssVar(el, '--fg', '#222');
  const grid = cssVar(el, '--grid', '#ddd');
  const opts = {
    width: width(el),
    height: 240,
    legend: { show: true, live: false },
    cursor: { show: false },
    scales: {
      x: { time: false, range: [-0.6, scenarios.length - 0.4] },
      y: { range: (u, mn, mx) => [0, mx * 1.08 || 1] },
    },
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
  new uPlot(opts, [xs, ...order.map((i) => cum[i])], box);
}

/** Line chart: x values and one or more series; optional marked point (the peak, the plan). */
export async function lines(el, { label, x, xLabel, yLabel, series, mark, t, stepped }) {
  const uPlot = await loadUPlot();
  if (!uPlot || !x.length) return;
  const box = mount(el, label);
  const text = cssVar(el, '--fg', '#222');
  const grid = cssVar(el, '--grid', '#ddd');
  const path = stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
  const data = [x, ...series.map((s) => s.values)];
  const ser = [
    { label: xLabel },
    ...series.map((s, i) => ({
      label: s.label,
      stroke: s.color || partColor(el, s.key, i),
      width: 2,
      paths: path,
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
    width: width(el),
    height: 240,
    legend: { show: true, live: false },
    scales: { x: { time: false } },
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
  new uPlot(opts, data, box);
}
