// @ts-check
// "Compare with a measurement" under the peak-memory results: a drop zone for a PyTorch
// memory snapshot (or memory_stats() JSON), read in the page's Web Worker (worker.js) by the
// core's compareSnapshot, then the measured and predicted curves on the same axes, the
// difference per category and the likely causes (translated by code). The file stays in the
// browser: it is read from the drop or the file input and handed to the worker, nothing else.
/** @import { CompareSnapshotResult, PeakMemoryRequest, SnapshotCause, SnapshotSummary, SnapshotTopFrame } from '../lib/index.js' */
/** @import { Ctx, PageError, Translator } from './types.js' */
/** @import { Attrs } from './dom.js' */
import { h, put } from './dom.js';
import { dropZone } from './drop-zone.js';
import { errorBox } from './errors-view.js';
import { lines } from './charts.js';
import { optionLabel } from './form.js';
import { chartOpts, partLabel } from './view-common.js';

const GIB = 2 ** 30;

// Bytes in the unit that suits them (GiB, MiB, KiB), for the sentences of the causes.
/**
 * @param {Translator} t
 * @param {number} b
 */
function human(t, b) {
  const a = Math.abs(b);
  if (a >= GIB) return t.gib(b);
  const [d, u] = a >= 2 ** 20 ? [2 ** 20, 'MiB'] : [2 ** 10, 'KiB'];
  return `${t.num(Math.round((b / d) * 10) / 10)} ${u}`;
}

/**
 * @param {Translator} t
 * @param {number | null | undefined} b
 */
function bytesText(t, b) {
  return b === null || b === undefined ? '—' : t.both(b);
}

/**
 * @param {Translator} t
 * @param {SnapshotCause} c
 */
function causeText(t, c) {
  /** @type {Record<string, string>} */
  const vars = {};
  for (const [k, v] of Object.entries(c.params)) {
    vars[k] = /Bytes$|^bytes$/.test(k) ? human(t, v) : k === 'ratio' ? v.toFixed(1) : String(v);
  }
  const key = `cause.${c.code}`;
  const s = t(key, vars);
  return s === key ? c.message : s;
}

/**
 * The measured peak and steps of a snapshot, and its chart.
 * @param {Ctx} ctx
 * @param {CompareSnapshotResult & { measured: SnapshotSummary }} r a comparison with a snapshot
 */
function measuredLines(ctx, r) {
  const { t } = ctx;
  const m = r.measured;
  const step = m.peak.step >= 0 ? m.peak.step + 1 : '—';
  return [
    h(
      'p',
      { class: 'snap-peak', 'data-peak-bytes': String(m.peak.allocatedBytes) },
      t('snap.peakLine', {
        bytes: human(t, m.peak.allocatedBytes),
        event: m.peak.event,
        phase: optionLabel(ctx, 'phase', m.peak.phase),
        step,
        steps: m.steps.count,
      }),
    ),
    h(
      'p',
      {},
      t('snap.steps', { count: m.steps.count, method: t(`snap.method.${m.steps.method}`) }),
    ),
    chart(ctx, r),
  ];
}

/**
 * Measured, predicted and their difference: the totals, then per category.
 * @param {Ctx} ctx
 * @param {CompareSnapshotResult} r
 */
function totalsTable(ctx, r) {
  const { t } = ctx;
  /**
   * @param {Attrs} attrs
   * @param {string} label
   * @param {{ measuredBytes: number | null, predictedBytes: number | null, differenceBytes: number | null }} x
   */
  const row = (attrs, label, x) =>
    h(
      'tr',
      attrs,
      h('th', {}, label),
      h('td', {}, bytesText(t, x.measuredBytes)),
      h('td', {}, bytesText(t, x.predictedBytes)),
      h('td', {}, bytesText(t, x.differenceBytes)),
    );
  return h(
    'table',
    { class: 'data snap-totals' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, ''),
        h('th', {}, t('snap.table.measured')),
        h('th', {}, t('snap.table.predicted')),
        h('th', {}, t('snap.table.difference')),
      ),
    ),
    h(
      'tbody',
      {},
      r.totals.map((x) => row({ 'data-total': x.what }, t(`snap.total.${x.what}`), x)),
      r.categories.map((x) => row({ 'data-category': x.category }, partLabel(ctx, x.category), x)),
    ),
  );
}

/**
 * Where the measured peak was allocated: its five largest frames.
 * @param {Ctx} ctx
 * @param {SnapshotTopFrame[]} frames
 */
function topFrames(ctx, frames) {
  const { t } = ctx;
  return [
    h('h4', {}, t('snap.topFrames')),
    h(
      'ul',
      { class: 'snap-frames' },
      frames
        .slice(0, 5)
        .map((f) =>
          h(
            'li',
            {},
            t.n(human(t, f.bytes)),
            ' ',
            h('code', { dir: 'ltr' }, f.filename ? `${f.filename}:${f.line} ${f.name}` : f.name),
            ' ',
            partLabel(ctx, f.category),
          ),
        ),
    ),
  ];
}

/**
 * @param {Ctx} ctx
 * @param {CompareSnapshotResult} r
 */
function view(ctx, r) {
  const { t } = ctx;
  /** @type {HTMLElement[]} */
  const out = [];
  const m = r.measured;
  if (m && m.source === 'snapshot')
    out.push(
      ...measuredLines(
        ctx,
        /** @type {CompareSnapshotResult & { measured: SnapshotSummary }} */ (r),
      ),
    );
  out.push(totalsTable(ctx, r));
  out.push(
    h('h4', {}, t('snap.causes')),
    r.causes.length
      ? h(
          'ul',
          { class: 'snap-causes' },
          r.causes.map((c) => h('li', { 'data-cause': c.code }, causeText(t, c))),
        )
      : h('p', { class: 'muted' }, t('snap.noCauses')),
  );
  if (m && m.peak.topFrames.length) out.push(...topFrames(ctx, m.peak.topFrames));
  if (r.simulatorReplay) {
    out.push(
      h(
        'p',
        { class: 'muted' },
        t('snap.replay', {
          simulated: human(t, r.simulatorReplay.simulatedReservedBytes),
          recorded: human(t, r.simulatorReplay.recordedReservedBytes),
        }),
      ),
    );
  }
  return out;
}

// Measured allocated and reserved, and the predicted step, on one x axis (the union of both
// series' x; a series is null where it has no point, and its line spans the gaps).
/**
 * @param {Ctx} ctx
 * @param {CompareSnapshotResult & { measured: SnapshotSummary }} r a comparison with a snapshot
 */
function chart(ctx, r) {
  const { t } = ctx;
  const pts = r.measured.series.points;
  const pred = r.predictedSeries;
  const xs = [...new Set([...pts.map((p) => p.x), ...pred.map((p) => p.x)])].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  /**
   * @template {{ x: number }} P
   * @param {P[]} list
   * @param {(p: P) => number} f
   */
  const col = (list, f) => {
    const v = /** @type {(number | null)[]} */ (xs.map(() => null));
    for (const p of list) v[/** @type {number} */ (at.get(p.x))] = f(p) / GIB;
    return v;
  };
  const measured = col(pts, (p) => p.allocatedBytes);
  const holder = h(
    'div',
    {
      class: 'chart-holder snap-chart',
      'data-points': String(pts.length),
      'data-predicted': String(pred.length),
    },
    h('h3', {}, t('snap.chart')),
  );
  const peakIndex = at.get(r.measured.peak.x) ?? 0;
  lines(holder, {
    label: t('snap.chart'),
    x: xs,
    xLabel: t(`snap.x.${r.measured.series.x}`),
    yLabel: 'GiB',
    series: [
      { key: 'activations', label: t('snap.measured'), values: measured, spanGaps: true },
      {
        key: 'runtime',
        label: t('snap.reserved'),
        values: col(pts, (p) => p.reservedBytes),
        spanGaps: true,
      },
      {
        key: 'weights',
        label: t('snap.predicted'),
        values: col(pred, (p) => p.allocatedBytes),
        spanGaps: true,
      },
    ],
    mark: {
      index: peakIndex,
      value: r.measured.peak.allocatedBytes / GIB,
      label: t('snap.peak'),
    },
    t,
    ...chartOpts(ctx),
  });
  return holder;
}

// The body's content: the file's name (and a button that clears it), then the error, the
// "reading" line or the comparison.
/**
 * @param {Ctx} ctx
 * @param {{ name: string }} file
 * @param {() => void} clear
 * @param {PageError | null} error
 * @param {CompareSnapshotResult | null} result
 */
function answer(ctx, file, clear, error, result) {
  const { t } = ctx;
  const head = h(
    'p',
    { class: 'snap-file' },
    t('snap.file', { name: file.name }),
    ' ',
    h('button', { type: 'button', class: 'small', onclick: clear }, t('snap.clear')),
  );
  // the error in the page's language, with what to do (errors-view.js)
  if (error) return [head, errorBox(ctx, error)];
  if (!result) return [head, h('p', { class: 'muted' }, t('snap.reading', { name: file.name }))];
  return [head, ...view(ctx, result)];
}

// The drop zone, the file input and the body the answer is drawn in; take(file) reads a file.
/**
 * @param {Translator} t
 * @param {HTMLElement} body
 * @param {(f: File | undefined) => void} take
 */
function section(t, body, take) {
  return h(
    'section',
    { class: 'snapshot', 'aria-labelledby': 'tm-snap-h' },
    h('h3', { id: 'tm-snap-h' }, t('snap.heading')),
    ...dropZone(
      {
        id: 'tm-snapshot-drop',
        inputId: 'tm-snapshot-file',
        accept: '.pickle,.pkl,.json,application/octet-stream,application/json',
        text: t('snap.drop'),
        label: t('snap.choose'),
        describedBy: 'tm-snapshot-private',
      },
      take,
    ),
    h('p', { class: 'help', id: 'tm-snapshot-private' }, t('snap.private')),
    body,
  );
}

/**
 * One comparison panel per page. `ctx` is the page's (app.js), with a solver of its own.
 * Returns { element(request) } — called on every peak-memory update with its request.
 * @param {Ctx} ctx
 */
export function snapshotPanel(ctx) {
  /** @type {{ name: string, bytes: Uint8Array } | null} */
  let file = null;
  let key = '';
  /** @type {CompareSnapshotResult | null} */
  let result = null;
  /** @type {PageError | null} */
  let error = null;
  /** @type {HTMLElement | null} */
  let body = null;
  /** @type {PeakMemoryRequest | null} */
  let request = null;
  let seq = 0;

  function run() {
    if (!file || !request) return;
    const k = `${file.name}\n${JSON.stringify(request)}`;
    if (k === key && (result || error)) return render();
    key = k;
    result = null;
    error = null;
    const mine = ++seq;
    render();
    ctx.solver.runHeavy('compareSnapshot', { snapshot: file.bytes, request }).then(
      (r) => {
        if (mine !== seq) return;
        result = /** @type {CompareSnapshotResult} */ (r);
        render();
      },
      (e) => {
        if (mine !== seq || e.code === 'cancelled') return;
        error = e;
        render();
      },
    );
  }

  /** @param {File | undefined} f */
  async function take(f) {
    if (!f) return;
    const bytes = new Uint8Array(await f.arrayBuffer());
    file = { name: f.name || 'snapshot', bytes };
    key = '';
    run();
  }

  function clear() {
    file = null;
    result = null;
    error = null;
    key = '';
    ++seq;
    render();
  }

  function render() {
    if (!body || !body.isConnected) return;
    if (!file) return put(body);
    put(body, ...answer(ctx, file, clear, error, result));
  }

  return {
    /** @param {PeakMemoryRequest} req */
    element(req) {
      request = req;
      body = h('div', { class: 'snap-body', 'aria-live': 'polite' });
      // After the section is in the page (render() needs body connected).
      queueMicrotask(() => (file ? run() : render()));
      return section(ctx.t, body, take);
    },
  };
}
