// @ts-check
// The result views: one per calculator (checkpoint size, peak memory, accumulation plans,
// placement) and the parts they share (headline, breakdown table and chart, timeline, the
// details table). makeViews(ctx) reads the controller's live state through ctx:
// { t, st, solver, snapPanel, verdictEl, optionLabel, chartOpts, suggestionsLater }.
import { h } from './dom.js';
import { frontierData } from './frontier.js';
import { flatten, isBytesKey, breakdownParts, partBytes } from './format.js';
import { stackedBars, lines } from './charts.js';
import { placementDiagram, accumulationDiagram } from './diagrams.js';

/** @param {any} ctx */
export function makeViews(ctx) {
  const optionLabel = (/** @type {string} */ k, /** @type {string} */ v) => ctx.optionLabel(k, v);
  const chartOpts = (/** @type {string} */ slot) => ctx.chartOpts(slot);
  const suggestionsLater = (/** @type {any} */ s = undefined) => ctx.suggestionsLater(s);
  // ---- result views -------------------------------------------------------------------
  function headline(labelKey, bytes, extra) {
    const { t } = ctx;
    return h(
      'div',
      { class: 'headline' },
      h('span', { class: 'headline-label' }, t(labelKey)),
      h('span', { class: 'headline-value', 'data-bytes': String(bytes) }, t.both(bytes)),
      h('span', { class: 'headline-exact' }, t.n(t.bytes(bytes))),
      extra,
    );
  }

  function partLabel(k) {
    const { t } = ctx;
    const key = `part.${k}`;
    const s = t(key);
    return s === key ? k : s;
  }

  function breakdownTable(breakdown, peakPhase = '', res = null) {
    const { t } = ctx;
    const parts = breakdownParts(breakdown);
    if (!parts.length) return null;
    const total = parts.reduce((a, [, v]) => a + v, 0);
    const sources = parts.some(([, , src]) => src);
    return h(
      'table',
      { class: 'data stack' },
      h('caption', {}, t('result.breakdown')),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, t('result.part')),
          h('th', { scope: 'col' }, 'GB (10⁹)'),
          h('th', { scope: 'col' }, 'GiB (2³⁰)'),
          h('th', { scope: 'col' }, t('unit.bytes')),
          h('th', { scope: 'col' }, '%'),
          sources ? h('th', { scope: 'col' }, t('result.source')) : null,
        ),
      ),
      h(
        'tbody',
        {},
        parts.map(([k, v, src]) =>
          // At an optimizer-step peak the activations are gone (a few bytes): "0.00 GB" would
          // read as "not counted".
          k === 'activations' && peakPhase === 'optimizer' && v < 5e6
            ? h(
                'tr',
                { class: 'part-none' },
                h('th', { scope: 'row' }, partLabel(k)),
                h(
                  'td',
                  { colspan: sources ? 5 : 4, 'data-label': '' },
                  t('part.activationsNone'),
                  ' ',
                  t.n(`(${t.int(v)} ${t('unit.bytes')})`),
                ),
              )
            : h(
                'tr',
                {},
                h('th', { scope: 'row' }, partLabel(k)),
                h('td', { 'data-label': 'GB (10⁹)' }, t.n(t.fixed2(v / 1e9))),
                h('td', { 'data-label': 'GiB (2³⁰)' }, t.n(t.fixed2(v / 2 ** 30))),
                h('td', { 'data-label': t('unit.bytes') }, t.n(t.int(v))),
                h('td', { 'data-label': '%' }, t.n(t.num((100 * v) / total))),
                sources
                  ? h(
                      'td',
                      { class: 'source', 'data-label': t('result.source') },
                      t.core(res, `breakdown.${k}.source`, src),
                    )
                  : null,
              ),
        ),
      ),
    );
  }

  function breakdownChart(el, scenarios, capacity = undefined) {
    const { t } = ctx;
    // scenarios: [{ label, breakdown }]
    const keys = [];
    for (const sc of scenarios)
      for (const [k] of breakdownParts(sc.breakdown)) if (!keys.includes(k)) keys.push(k);
    if (!keys.length) return;
    const parts = keys.map((k) => ({
      key: k,
      label: partLabel(k),
      values: scenarios.map((sc) => partBytes(sc.breakdown?.[k]) || 0),
    }));
    const holder = h('div', { class: 'chart-holder' });
    el.append(holder);
    stackedBars(holder, {
      label: t('result.breakdownChart'),
      scenarios: scenarios.map((s) => s.label),
      parts,
      t,
      capacity,
      ...chartOpts('breakdown'),
    });
  }

  function details(result) {
    const { t } = ctx;
    // Collapsed at first: its table (every field of the result) is built when it is opened,
    // not on every keystroke.
    const box = h('details', { class: 'details' }, h('summary', {}, t('result.details')));
    box.addEventListener('toggle', function fill() {
      if (!box.open) return;
      box.removeEventListener('toggle', fill);
      box.append(detailsTable(result));
    });
    return box;
  }

  function detailsTable(result) {
    const { t } = ctx;
    const rows = flatten(result).filter(([, v]) => v !== null && v !== undefined && v !== '');
    return h(
      'table',
      { class: 'data' },
      h(
        'tbody',
        {},
        rows.map(([k, v]) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, h('code', {}, k)),
            h(
              'td',
              {},
              typeof v === 'number'
                ? isBytesKey(k)
                  ? [t.n(t.int(v)), ' = ', t.both(v)]
                  : t.n(Number.isInteger(v) ? t.int(v) : t.num(v))
                : String(v),
            ),
          ),
        ),
      ),
    );
  }

  function renderSize(el, res, req) {
    const { t } = ctx;
    el.append(
      headline('size.total', res.totalBytes, [
        typeof res.bytesPerParam === 'number'
          ? h(
              'span',
              { class: 'chip' },
              t('size.perParam', { n: '' }),
              t.n(t.num(res.bytesPerParam)),
            )
          : null,
      ]),
    );
    if (res.formula)
      el.append(
        h(
          'p',
          { class: 'formula' },
          t('size.formula'),
          ' ',
          t.core(res, 'formula', res.formula, 'code'),
        ),
      );
    const scenarios = [{ label: t('size.thisConfig'), breakdown: res.breakdown }];
    // The core returns the seed's simple formula beside the exact answer (res.simple).
    if (res.simple && typeof res.simple.totalBytes === 'number') {
      // (two bars only when they differ: the same number twice compares nothing)
      if (res.simple.totalBytes !== res.totalBytes)
        scenarios.unshift({ label: t('size.simpleFormula'), breakdown: res.simple.breakdown });
      el.append(
        h(
          'p',
          {},
          t('size.simpleVsExact'),
          ' ',
          t.both(res.simple.totalBytes),
          ' → ',
          t.both(res.totalBytes),
          typeof res.differenceFromSimple === 'number'
            ? [
                ' (',
                t.n(
                  `${res.differenceFromSimple >= 0 ? '+' : ''}${t.int(res.differenceFromSimple)} ${t('unit.bytes')}`,
                ),
                ')',
              ]
            : null,
        ),
      );
    }
    const notes = Array.isArray(res.notes) ? res.notes : [];
    const noteItems = notes.flatMap((n, i) =>
      typeof n === 'string' ? [t.core(res, `notes[${i}]`, n, 'li')] : [],
    );
    if (noteItems.length) el.append(h('ul', { class: 'notes' }, noteItems));
    breakdownChart(el, scenarios);
    el.append(breakdownTable(res.breakdown, '', res) || '', details(res));
  }

  function timelineValues(timeline) {
    const keys = ['totalBytes', 'bytes', 'allocatedBytes', 'liveBytes', 'memoryBytes', 'peakBytes'];
    const key = keys.find((k) => timeline.some((e) => typeof e?.[k] === 'number'));
    return key ? timeline.map((e) => (typeof e[key] === 'number' ? e[key] : null)) : null;
  }

  function timelineChart(el, timeline, titleKey, capacity = undefined) {
    const { t } = ctx;
    if (!Array.isArray(timeline) || timeline.length < 2) return;
    const vals = timelineValues(timeline);
    if (!vals) return;
    const x = vals.map((_, i) => i);
    const phases = [...new Set(timeline.map((e) => e.phase || 'step'))];
    const series = phases.map((ph, i) => ({
      key:
        {
          forward: 'weights',
          backward: 'gradients',
          recompute: 'activations',
          optimizer: 'optimizerState',
        }[ph] || 'runtime',
      label: optionLabel('phase', ph),
      values: vals.map((v, j) =>
        (timeline[j].phase || 'step') === ph ||
        (timeline[j + 1] && (timeline[j + 1].phase || 'step') === ph)
          ? v / 2 ** 30
          : null,
      ),
    }));
    let peak = 0;
    vals.forEach((v, i) => {
      if (v > vals[peak]) peak = i;
    });
    const holder = h('div', { class: 'chart-holder' }, h('h3', {}, t(titleKey)));
    el.append(holder);
    lines(holder, {
      label: t(titleKey),
      x,
      xLabel: t('chart.event'),
      yLabel: 'GiB',
      series,
      mark: { index: peak, value: vals[peak] / 2 ** 30, label: t('chart.peak') },
      t,
      capacity,
      ...chartOpts(titleKey),
    });
  }

  /** The three numbers users compare with, and which tool reports which. */
  function deviceNumbers(res) {
    const { t } = ctx;
    const a = res.allocator;
    if (!a || typeof res.deviceUsedBytes !== 'number') return '';
    const row = (key, bytes) => h('li', {}, t(key), ' ', t.both(bytes));
    return h(
      'div',
      { class: 'device-numbers' },
      h('h3', {}, t('peak.tools')),
      h(
        'ul',
        {},
        row('peak.smi', res.deviceUsedBytes),
        row('peak.reserved', res.reservedPeakBytes),
        row('peak.allocated', res.allocatedPeakBytes),
        row('peak.fragmentation', a.fragmentationBytes),
        row('peak.largest', a.largestRequestBytes),
        row('peak.firstStep', a.firstStepAllocatedBytes),
      ),
      a.outOfMemory ? h('p', { class: 'badge bad' }, t('peak.oom')) : null,
      h('p', { class: 'note' }, t('peak.simulated')),
    );
  }

  /** The result's assumptions, in the page's language where the core gave their codes. */
  function assumptionList(res) {
    const { t } = ctx;
    const list = Array.isArray(res.assumptions) ? res.assumptions : [];
    const items = list.flatMap((a, i) =>
      typeof a === 'string' ? [t.core(res, `assumptions[${i}]`, a, 'li')] : [],
    );
    if (!items.length) return '';
    return h(
      'details',
      { class: 'assumptions' },
      h('summary', {}, t('result.assumptions')),
      h('ul', { class: 'notes' }, items),
    );
  }

  function renderPeak(el, res, req) {
    const { t, snapPanel } = ctx;
    const fits = ctx.fitsWithMargin(res); // the core's verdict, with the safety margin if set
    const device = typeof res.deviceUsedBytes === 'number';
    el.append(
      headline(
        device ? 'peak.device' : 'peak.total',
        device ? res.deviceUsedBytes : res.peakBytes,
        [
          typeof fits === 'boolean'
            ? h(
                'span',
                { class: `badge ${fits ? 'ok' : 'bad'}` },
                fits ? t('peak.fits') : t('peak.noFit'),
              )
            : null,
          res.peakPhase
            ? h(
                'span',
                { class: 'chip' },
                t('peak.phase'),
                ' ',
                optionLabel('phase', res.peakPhase),
              )
            : null,
        ],
      ),
    );
    if (typeof res.headroomBytes === 'number')
      el.append(h('p', {}, t('peak.headroom'), ' ', t.both(res.headroomBytes)));
    if (typeof res.maxMicroBatch === 'number')
      el.append(h('p', {}, t('peak.maxMicroBatch'), ' ', t.n(t.int(res.maxMicroBatch))));
    el.append(deviceNumbers(res));
    if (fits === false && !ctx.verdictEl) el.append(suggestionsLater());
    // The GPU's memory as a line on both charts (GiB, as their axes).
    const used = device ? res.deviceUsedBytes : res.peakBytes;
    const capacity =
      typeof res.headroomBytes === 'number'
        ? { value: (used + res.headroomBytes) / 2 ** 30, label: t('chart.capacity') }
        : undefined;
    breakdownChart(el, [{ label: t('size.thisConfig'), breakdown: res.breakdown }], capacity);
    el.append(breakdownTable(res.breakdown, res.peakPhase, res) || '');
    el.append(assumptionList(res));
    timelineChart(el, res.timeline, 'peak.timeline', capacity);
    el.append(details(res));
    el.append(snapPanel.element(req));
  }

  /** A table of plans / comparison rows: the scalar fields, bytes in GB, times in seconds. */
  function planTable(list, caption, rec, lead = []) {
    const { t } = ctx;
    const cols = [...lead];
    for (const p of list)
      for (const [k, v] of Object.entries(p))
        if (
          ['number', 'boolean', 'string'].includes(typeof v) &&
          !cols.includes(k) &&
          k !== 'exact'
        )
          cols.push(k);
    const cell = (c, v) =>
      typeof v === 'boolean'
        ? v
          ? '✓'
          : '✗'
        : typeof v === 'number'
          ? t.n(isBytesKey(c) ? t.gb(v) : /Seconds$/.test(c) ? `${t.num(v)} s` : t.num(v))
          : typeof v === 'string'
            ? optionLabel(c === 'id' ? 'row' : c, v)
            : '';
    return h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { class: 'data plans stack' },
        h('caption', {}, caption),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            cols.map((c) => h('th', { scope: 'col' }, optionLabel('col', c))),
          ),
        ),
        h(
          'tbody',
          {},
          list.map((p) =>
            h(
              'tr',
              {
                class:
                  p === rec ||
                  (rec &&
                    p.microBatch === rec.microBatch &&
                    p.accumulationSteps === rec.accumulationSteps &&
                    p.checkpointing === rec.checkpointing)
                    ? 'rec'
                    : '',
              },
              cols.map((c, i) =>
                h(
                  i === 0 ? 'th' : 'td',
                  i === 0 ? { scope: 'row' } : { 'data-label': optionLabel('col', c) },
                  cell(c, p[c]),
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  function renderAccum(el, res, req) {
    const { t } = ctx;
    const plans = Array.isArray(res.plans) ? res.plans : null;
    if (!plans) {
      if (typeof res.effectiveBatch === 'number') {
        el.append(
          h(
            'div',
            { class: 'headline' },
            h('span', { class: 'headline-label' }, t('acc.effective')),
            h('span', { class: 'headline-value' }, t.n(t.int(res.effectiveBatch))),
          ),
        );
      }
      accumulationDiagram(el, {
        micro: req.microBatch || 1,
        steps: req.accumulationSteps || 1,
        dp: req.dataParallel || 1,
        t,
      });
      el.append(details(res));
      return;
    }
    const rec =
      typeof res.recommended === 'number'
        ? plans[res.recommended]
        : res.recommended && typeof res.recommended === 'object'
          ? res.recommended
          : plans.find((p) => p.recommended);
    // Nothing fits: say so, and offer the changes that make one micro-batch fit.
    if (!plans.some((p) => p.fits)) {
      el.append(
        h(
          'div',
          { class: 'headline acc-none' },
          h('span', { class: 'badge bad' }, t('peak.noFit')),
          ' ',
          h('span', { class: 'headline-label' }, t('acc.noneFits')),
        ),
        suggestionsLater({ ...ctx.st, microBatch: 1 }),
      );
    }
    if (rec) {
      el.append(
        h(
          'div',
          { class: 'headline' },
          h('span', { class: 'headline-label' }, t('acc.recommended')),
          h(
            'span',
            { class: 'headline-value' },
            t.n(
              `${t.int(rec.microBatch)} × ${t.int(rec.accumulationSteps)}${req.dataParallel > 1 ? ` × ${t.int(req.dataParallel)}` : ''}`,
            ),
          ),
          typeof rec.peakBytes === 'number' ? t.both(rec.peakBytes) : null,
        ),
      );
    }
    const notes = [
      ['checkpointing.message', res.checkpointing?.message],
      ...(Array.isArray(res.warnings)
        ? res.warnings.map((w, k) => [`warnings[${k}].message`, w?.message])
        : []),
    ].filter(([, m]) => typeof m === 'string');
    if (notes.length)
      el.append(
        h(
          'ul',
          { class: 'notes' },
          notes.map(([path, m]) => t.core(res, path, m, 'li')),
        ),
      );
    const rows = Array.isArray(res.comparison?.rows) ? res.comparison.rows : null;
    if (rows) {
      el.append(planTable(rows, t('acc.comparison'), null, ['id']));
      breakdownChart(
        el,
        rows
          .filter((r) => r.breakdown)
          .map((r) => ({ label: optionLabel('row', r.id), breakdown: r.breakdown })),
      );
    }
    el.append(planTable(plans.slice(0, 60), t('acc.plans'), rec));
    // Figure 2 shows accumulation: the recommended plan, or the fastest fitting plan that accumulates.
    const shown =
      rec?.accumulationSteps > 1
        ? rec
        : plans.find((p) => p.fits && p.accumulationSteps > 1) || rec;
    if (shown)
      accumulationDiagram(el, {
        micro: shown.microBatch,
        steps: shown.accumulationSteps,
        dp: req.dataParallel || 1,
        t,
      });
    el.append(details(res));
  }

  /**
   * The module name of each layer of a model's chain, or its number (from 0, as the API's
   * `checkpointed` ranges) for a uniform chain. The chain is the peak-memory model's: the
   * embedding, one layer per block, the head (docs/placement.md); the blocks' prefix is read
   * from the model's tensor names (`transformer.h.0.ln_1.weight` → `transformer.h.`).
   * @param {any} req
   * @returns {(i: number) => string}
   */
  function chainNames(req) {
    const num = (/** @type {number} */ i) => String(i);
    if (!req.model) return num;
    /** @type {any} */
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

  function renderPlace(el, res, req) {
    const { t, st, solver } = ctx;
    el.append(
      headline('place.peak', res.peakActivationBytes, [
        typeof res.overheadFraction === 'number'
          ? h(
              'span',
              { class: 'chip' },
              t('place.overhead'),
              ' ',
              t.n(`${t.num(100 * res.overheadFraction)} %`),
            )
          : null,
      ]),
    );
    if (typeof res.storedBytes === 'number')
      el.append(h('p', {}, t('place.stored'), ' ', t.both(res.storedBytes)));
    const segs = Array.isArray(res.checkpointed) ? res.checkpointed : [];
    // Layers are numbered from 0, as in the API; a model's layers by their module names.
    const names = chainNames(req);
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
      req.chain?.layers?.length ||
      res.layers ||
      (Array.isArray(res.timeline)
        ? Math.max(0, ...res.timeline.map((e) => e.layer ?? -1)) + 1
        : 0);
    if (n > 0) placementDiagram(el, { n, segments: segs, t });
    timelineChart(el, res.timeline, 'place.timeline');
    if (st.frontier) {
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
          const data = frontierData(fr?.frontier, res);
          if (!data.x.length) return;
          const label = t(rotor ? 'place.frontierRotor' : 'place.frontierBest');
          lines(holder, {
            label: t('place.frontier'),
            x: data.x,
            xLabel: 'GiB',
            yLabel: t('place.costAxis'),
            series: [{ key: 'activations', label, values: data.y }],
            mark: { index: data.index, value: data.value, label: t('place.chosen') },
            stepped: true,
            t,
            ...chartOpts('frontier'),
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
    el.append(details(res));
  }

  const RENDER = { size: renderSize, peak: renderPeak, accum: renderAccum, place: renderPlace };
  return {
    RENDER,
    headline,
    partLabel,
    breakdownTable,
    breakdownChart,
    details,
    planTable,
    timelineChart,
  };
}
