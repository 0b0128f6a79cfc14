// @ts-check
// Hand-drawn SVG where no charting library draws the picture:
//  - seed 000 figure 1: layers as nodes; stored (orange), checkpoints (purple), discarded
//    (white), recomputed (blue),
//    stepping through the forward and the backward pass of a single-level plan;
//  - seed 000 figure 2: the global batch split into micro-batches, gradients summed over time,
//    one optimizer update.
// The pictures only illustrate the plan the core returned; every number comes from the core.
/** @import { Translator } from './types.js' */
import { h, s, put } from './dom.js';

const MAX_ITEMS = 48;

/**
 * One node of the plan's figure: a kind and the layers it stands for.
 * @typedef {{ kind: string, first: number, last: number }} PlanItem
 */
/**
 * One step of the figure: the pass and the item it is at.
 * @typedef {{ phase: 'forward' | 'recompute' | 'backward', item: number }} PlanStep
 */

/**
 * Items to draw for n layers with checkpointed segments [[first, last], ...].
 * @param {number} n
 * @param {Array<[number, number]>} segments
 * @returns {PlanItem[]}
 */
export function planItems(n, segments) {
  /** @type {PlanItem[]} */
  const items = [];
  /**
   * @param {string} kind
   * @param {number} first
   * @param {number} last
   */
  const push = (kind, first, last) => {
    if (last >= first) items.push({ kind, first, last });
  };
  let next = 0;
  for (const [a, b] of segments) {
    // plain layers before the segment keep what they save (stored)
    for (let i = next; i < a; i++) push('stored', i, i);
    // inside a segment nothing is kept but its input; its last output is the next checkpoint
    push('discarded', a, b - 1);
    push('checkpoint', b, b);
    next = b + 1;
  }
  for (let i = next; i < n; i++) push('stored', i, i);
  if (items.length <= MAX_ITEMS) return items;
  // Too many to draw: merge neighbours of the same kind, then chunk evenly.
  /** @type {PlanItem[]} */
  const merged = [];
  for (const it of items) {
    const last = merged[merged.length - 1];
    if (last && last.kind === it.kind && it.kind !== 'checkpoint') last.last = it.last;
    else merged.push({ ...it });
  }
  if (merged.length <= MAX_ITEMS) return merged;
  const size = Math.ceil(merged.length / MAX_ITEMS);
  /** @type {PlanItem[]} */
  const out = [];
  for (let i = 0; i < merged.length; i += size) {
    const group = merged.slice(i, i + size);
    const kind = group.some((g) => g.kind === 'discarded') ? 'discarded' : group[0].kind;
    out.push({ kind, first: group[0].first, last: group[group.length - 1].last });
  }
  return out;
}

/**
 * The steps of one training step over the items: forward, then backward with recompute.
 * @param {PlanItem[]} items
 */
export function planSteps(items) {
  /** @type {PlanStep[]} */
  const steps = [];
  items.forEach((_, i) => steps.push({ phase: 'forward', item: i }));
  for (let i = items.length - 1; i >= 0; i--) {
    if (items[i].kind === 'discarded') steps.push({ phase: 'recompute', item: i });
    steps.push({ phase: 'backward', item: i });
  }
  return steps;
}

/**
 * Node states at step k: 'pending' | 'stored' | 'checkpoint' | 'discarded' | 'recomputed' |
 * 'done'.
 * @param {PlanItem[]} items
 * @param {PlanStep[]} steps
 * @param {number} k
 */
export function statesAt(items, steps, k) {
  const st = items.map(() => 'pending');
  for (let j = 0; j <= k && j < steps.length; j++) {
    const { phase, item } = steps[j];
    if (phase === 'forward') st[item] = items[item].kind === 'stored' ? 'stored' : items[item].kind;
    else if (phase === 'recompute') st[item] = 'recomputed';
    else st[item] = 'done';
  }
  return st;
}

// Layers numbered from 0, as the API's `checkpointed` ranges and the page's text.
/** @param {PlanItem} it */
const label = (it) => (it.first === it.last ? `${it.first}` : `${it.first}–${it.last}`);

// An SVG picture described by the caption with that id (drawn left to right in both languages).
/**
 * @param {number} width
 * @param {number} height
 * @param {string} cls
 * @param {string} captionId
 */
function figureSvg(width, height, cls, captionId) {
  return s('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width,
    class: cls,
    role: 'img',
    'aria-labelledby': captionId,
    dir: 'ltr',
  });
}

// The plan at step k: every node in its state, the current one marked, and the caption.
/**
 * @param {SVGElement} svg
 * @param {Translator} t
 * @param {HTMLElement} caption
 * @param {PlanItem[]} items
 * @param {PlanStep[]} steps
 * @param {number} k
 */
function drawPlan(svg, caption, items, steps, k, t) {
  const w = 36; // a node's width
  const gap = 8;
  const states = statesAt(items, steps, k);
  const cur = steps[k];
  put(svg);
  svg.append(
    s('text', { x: 4, y: 14, class: 'svg-label' }, t('plan.row.forward')),
    s('text', { x: 4, y: 134, class: 'svg-label' }, t('plan.row.backward')),
  );
  // the input of the chain is always kept
  svg.append(s('rect', { x: 4, y: 50, width: 20, height: 36, rx: 4, class: 'node node-stored' }));
  svg.append(s('text', { x: 14, y: 104, class: 'svg-small', 'text-anchor': 'middle' }, 'x'));
  items.forEach((it, i) => {
    const state = states[i];
    const cls = `node node-${state}${cur && cur.item === i ? ' node-current' : ''}`;
    const x = 32 + i * (w + gap);
    svg.append(s('line', { x1: x - gap, y1: 68, x2: x, y2: 68, class: 'edge' }));
    svg.append(
      s(
        'rect',
        { x, y: 50, width: w, height: 36, rx: 6, class: cls },
        s('title', {}, `${label(it)}: ${t(`plan.state.${state}`)}`),
      ),
    );
    // A long range ("101–121") is squeezed into its node's width instead of overlapping.
    const text = label(it);
    svg.append(
      s(
        'text',
        {
          x: x + w / 2,
          y: 104,
          class: 'svg-small',
          'text-anchor': 'middle',
          ...(text.length > 5 ? { textLength: w, lengthAdjust: 'spacingAndGlyphs' } : {}),
        },
        text,
      ),
    );
  });
  const arrowX = cur ? 32 + cur.item * (w + gap) + w / 2 : 0;
  svg.append(
    s('path', {
      d: `M${arrowX - 6} ${cur?.phase === 'forward' ? 40 : 118} l6 ${cur?.phase === 'forward' ? 8 : -8} l6 ${cur?.phase === 'forward' ? -8 : 8} z`,
      class: `marker marker-${cur?.phase}`,
    }),
  );
  const it = items[cur.item];
  caption.textContent = t(`plan.caption.${cur.phase}`, {
    layers: label(it),
    step: k + 1,
    steps: steps.length,
  });
}

/** @param {Translator} t */
function planLegend(t) {
  return h(
    'ul',
    { class: 'plan-legend' },
    ['stored', 'checkpoint', 'discarded', 'recomputed', 'done'].map((st) =>
      h(
        'li',
        {},
        h('span', {
          class: `swatch node-${st}`,
          'aria-hidden': 'true',
        }),
        t(`plan.state.${st}`),
      ),
    ),
  );
}

/**
 * @param {HTMLElement} container
 * @param {{ n: number, segments: Array<[number, number]>, t: Translator }} plan the layers, the
 *   plan's checkpointed segments
 */
export function placementDiagram(container, { n, segments, t }) {
  const items = planItems(n, segments);
  const steps = planSteps(items);
  let k = items.length - 1; // start at the end of the forward pass
  const width = Math.max(320, 60 + items.length * (36 + 8)); // nodes and gaps, as drawPlan
  const svg = figureSvg(width, 150, 'plan-svg', 'plan-caption');
  const caption = h('p', { id: 'plan-caption', class: 'plan-caption', 'aria-live': 'polite' });
  const slider = h('input', {
    type: 'range',
    min: '0',
    max: String(steps.length - 1),
    value: String(k),
    'aria-label': t('plan.step'),
    class: 'plan-slider',
  });
  /** @param {number} to */
  const go = (to) => {
    k = to;
    drawPlan(svg, caption, items, steps, k, t);
    slider.value = String(k);
  };
  /**
   * @param {string} labelKey
   * @param {() => number} to the step it goes to
   */
  const stepButton = (labelKey, to) =>
    h('button', { type: 'button', class: 'small', onclick: () => go(to()) }, t(labelKey));
  const prev = stepButton('plan.prev', () => Math.max(0, k - 1));
  const next = stepButton('plan.next', () => Math.min(steps.length - 1, k + 1));
  slider.addEventListener('input', () => go(Number(slider.value)));
  go(k);
  container.append(
    h(
      'figure',
      { class: 'plan-figure' },
      h('div', { class: 'svg-scroll' }, svg),
      h('div', { class: 'plan-controls' }, prev, slider, next),
      caption,
      planLegend(t),
    ),
  );
}

/**
 * @param {HTMLElement} container
 * @param {{ micro: number, steps: number, dp: number, t: Translator }} split the micro-batch, the
 *   accumulation steps, the data-parallel ranks
 */
export function accumulationDiagram(container, { micro, steps, dp, t }) {
  const shown = Math.min(steps, 8);
  // Boxes as wide as their longest label (≈ 6.3 px a character at the 11 px label size), so
  // that "mini-batch 7 (512)" does not run into the next box.
  const longest = t('acc.fig.micro', { i: steps - 1, b: micro }).length;
  const bw = Math.max(64, Math.ceil(longest * 6.3) + 14);
  const width = 90 + shown * (bw + 14) + 150;
  const svg = figureSvg(width, 170, 'acc-svg', 'acc-caption');
  svg.append(
    s('rect', {
      x: 4,
      y: 8,
      width: 70 + shown * (bw + 14),
      height: 30,
      rx: 6,
      class: 'acc-global',
    }),
  );
  svg.append(
    s(
      'text',
      { x: 12, y: 28, class: 'svg-label' },
      t('acc.fig.global', { n: micro * steps * dp, dp }),
    ),
  );
  for (let i = 0; i < shown; i++) {
    const x = 80 + i * (bw + 14);
    const idx = shown < steps && i === shown - 1 ? steps - 1 : i;
    const name = shown < steps && i === shown - 2 ? '…' : String(idx);
    svg.append(s('rect', { x, y: 54, width: bw, height: 30, rx: 6, class: 'acc-micro' }));
    svg.append(
      s(
        'text',
        { x: x + bw / 2, y: 74, 'text-anchor': 'middle', class: 'svg-small' },
        name === '…' ? '…' : t('acc.fig.micro', { i: name, b: micro }),
      ),
    );
    svg.append(s('line', { x1: x + bw / 2, y1: 84, x2: x + bw / 2, y2: 104, class: 'edge' }));
    svg.append(
      s(
        'text',
        { x: x + bw / 2, y: 120, 'text-anchor': 'middle', class: 'svg-small' },
        name === '…' ? '…' : `grad${name}`,
      ),
    );
  }
  const endX = 80 + shown * (bw + 14);
  svg.append(s('rect', { x: 80, y: 130, width: endX - 94, height: 10, rx: 3, class: 'acc-sum' }));
  svg.append(s('text', { x: 80, y: 160, class: 'svg-small' }, t('acc.fig.sum')));
  svg.append(s('line', { x1: endX - 10, y1: 135, x2: endX + 20, y2: 135, class: 'edge arrow' }));
  svg.append(
    s('rect', { x: endX + 24, y: 118, width: 118, height: 34, rx: 8, class: 'acc-update' }),
  );
  svg.append(
    s(
      'text',
      { x: endX + 83, y: 140, 'text-anchor': 'middle', class: 'svg-label' },
      t('acc.fig.update'),
    ),
  );
  svg.append(s('text', { x: 80, y: 48, class: 'svg-small time' }, t('acc.fig.time')));
  const caption = h(
    'figcaption',
    { id: 'acc-caption' },
    t('acc.fig.caption', { micro, steps, dp, global: micro * steps * dp }),
  );
  container.append(
    h('figure', { class: 'acc-figure' }, h('div', { class: 'svg-scroll' }, svg), caption),
  );
}
