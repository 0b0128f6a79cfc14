// @ts-check
// The answer at the top of the page: does the run fit (what nvidia-smi will show against the
// GPU's memory, where the peak is), the time per step, and the changes that make it fit.
// Each function takes the controller's live state ctx first (app.js):
// { t, st, tm, solver, invalid, verdictEl, suggestEl, computeSeq, update, errorBox }.
import { h, put } from './dom.js';
import { BUILDERS, isHeavy } from './requests.js';
import { optionLabel } from './form.js';

// The suggestions take six more core calls: they are filled in the task after the one that
// shows the result, so that a keystroke's frame holds only the result itself; a newer
// update before then replaces them (ctx.computeSeq).
/** @param {Record<string, any>} [s] the state whose changes are tried (default: the page's) */
export function suggestionsLater(ctx, s) {
  const slot = h('div', { class: 'suggest-slot' });
  const seq = ctx.computeSeq;
  setTimeout(() => {
    if (seq === ctx.computeSeq && slot.isConnected) slot.append(suggestions(ctx, s || ctx.st));
  }, 0);
  return slot;
}

/** What nvidia-smi shows for a peak result (peakBytes where the device is not modelled). */
const usedOf = (/** @type {any} */ r) =>
  typeof r.deviceUsedBytes === 'number' ? r.deviceUsedBytes : r.peakBytes;

/**
 * Fits, with the safety margin (marginGB, the page's own input: memory kept free on the GPU
 * on top of the prediction); the core's verdict when no margin is set.
 * @param {any} r a peak memory result
 * @returns {boolean | null}
 */
export function fitsWithMargin(ctx, r) {
  const margin = Math.round((ctx.st.marginGB || 0) * 1e9);
  if (typeof r.fits !== 'boolean' || !margin || typeof r.headroomBytes !== 'number')
    return typeof r.fits === 'boolean' ? r.fits : null;
  return r.headroomBytes >= margin;
}

/**
 * Seconds per optimizer step for a state, from the accumulation planner's plan with the same
 * micro-batch, accumulation and checkpointing (it needs a GPU preset's TFLOP/s); null when
 * the planner cannot time it.
 * @param {Record<string, any>} s
 * @returns {number | null}
 */
function stepSeconds(ctx, s) {
  if (!s.gpu || s.checkpointing === 'optimal') return null;
  try {
    const steps = s.accumSteps || 1;
    const res = ctx.tm.accumulation(
      BUILDERS.accum[1]({
        ...s,
        accMode: 'plan',
        targetGlobalBatch: s.microBatch * steps * (s.dataParallel || 1),
      }),
    );
    const plans = Array.isArray(res.plans) ? res.plans : [];
    const p =
      plans.find(
        (x) =>
          x.microBatch === s.microBatch &&
          x.accumulationSteps === steps &&
          (!x.checkpointing || x.checkpointing === s.checkpointing),
      ) || plans.find((x) => x.microBatch === s.microBatch && x.accumulationSteps === steps);
    return p && typeof p.stepSeconds === 'number' ? p.stepSeconds : null;
  } catch {
    return null; // a custom GPU size, a model the planner cannot time
  }
}

/**
 * The changes to try when the run does not fit, as state patches: first those that keep the
 * run on this one GPU, then those that need more GPUs. A change the run already has is left
 * out.
 * @param {Record<string, any>} st
 * @returns {Array<{ key: string, patch: Record<string, any>, gpus: number }>}
 */
function variants(st) {
  const adam = ['adam', 'adamw'].includes(st.optimizer);
  // PyTorch 2's foreach step holds a temporary as large as the optimizer state (not when the
  // step already runs one tensor at a time: for-loop, fused, transformers, or a runtime
  // whose default is for-loop)
  const foreach =
    !['for-loop', 'fused', 'transformers'].includes(st.optImpl) &&
    !['pytorch-cpu', 'pytorch-1.13-cuda', 'pytorch-1.10-cuda'].includes(st.runtime);
  const dp = st.dataParallel || 1;
  const list = [
    { key: 'lora', patch: { lora: 'lora', loraRank: 16 }, gpus: 1, when: st.lora !== 'lora' },
    { key: 'qlora', patch: { lora: 'qlora', loraRank: 16 }, gpus: 1, when: st.lora !== 'qlora' },
    {
      key: 'zero2offload',
      patch: { zeroStage: '2', offloadOptimizer: true },
      gpus: 1,
      when: !(st.offloadOptimizer && Number(st.zeroStage) >= 1),
    },
    { key: 'ckpt', patch: { checkpointing: 'full' }, gpus: 1, when: st.checkpointing !== 'full' },
    {
      key: 'micro1',
      patch: { microBatch: 1, accumSteps: (st.accumSteps || 1) * st.microBatch },
      gpus: 1,
      when: st.microBatch > 1,
    },
    { key: 'adam8', patch: { optimizer: 'adam-8bit' }, gpus: 1, when: adam },
    { key: 'forloop', patch: { optImpl: 'for-loop' }, gpus: 1, when: foreach },
    { key: 'bf16', patch: { precision: 'bf16' }, gpus: 1, when: st.precision !== 'bf16' },
    {
      key: 'combo',
      patch: { checkpointing: 'full', optimizer: 'adam-8bit', precision: 'bf16' },
      gpus: 1,
      when: adam && (st.checkpointing !== 'full' || st.precision !== 'bf16'),
    },
    {
      key: 'tp2',
      patch: { tensorParallel: 2 * (st.tensorParallel || 1) },
      gpus: 2 * (st.tensorParallel || 1) * dp,
      when: true,
    },
    {
      key: 'zero3',
      patch: { zeroStage: '3', dataParallel: Math.max(8, dp) },
      gpus: Math.max(8, dp) * (st.tensorParallel || 1),
      when: st.zeroStage !== '3' || dp < 8,
    },
  ];
  return list.filter((v) => v.when).map(({ key, patch, gpus }) => ({ key, patch, gpus }));
}

/**
 * When the run does not fit: the changes that make it fit, ranked (those that fit first;
 * among them those that stay on one GPU first, then in the order above, the smaller change
 * first), each with what nvidia-smi would show and its time per step; one click applies it.
 * @param {Record<string, any>} st the state whose changes are tried (each variant is built
 *   from it, so that the request and the inputs a click sets never disagree)
 */
function suggestions(ctx, st) {
  const { t, tm } = ctx;
  const found = [];
  for (const v of variants(st)) {
    try {
      const vs = { ...st, ...v.patch };
      // Only the peak and the verdict are shown: no timeline, no micro-batch search.
      const r = tm.peakMemory({
        ...BUILDERS.peak[1](vs),
        timeline: false,
        searchMaxMicroBatch: false,
      });
      found.push({ ...v, r, fits: fitsWithMargin(ctx, r), vs });
    } catch {
      /* that change is not modelled for this request (e.g. LoRA without an architecture) */
    }
  }
  found.sort(
    (a, b) => Number(!!b.fits) - Number(!!a.fits) || Number(a.gpus > 1) - Number(b.gpus > 1),
  );
  const items = found.map(({ key, r, fits, patch, gpus }) => {
    const time = h('span', { class: 'sug-time' });
    const li = h(
      'li',
      { class: fits ? 'fit' : 'nofit' },
      h(
        'button',
        {
          type: 'button',
          class: 'sug-apply',
          'data-suggestion': key,
          onclick: () => {
            ctx.update(patch, { rebuild: true });
            ctx.verdictEl?.focus();
          },
        },
        h(
          'span',
          { class: `badge ${fits ? 'ok' : 'bad'}` },
          fits ? t('peak.fits') : t('peak.noFit'),
        ),
        ' ',
        h('span', { class: 'sug-label' }, t(`sug.${key}`)),
        ': ',
        h('span', { class: 'sug-mem', 'data-bytes': String(usedOf(r)) }, t.both(usedOf(r))),
        gpus > 1 ? [' · ', t('sug.gpus', { n: t.int(gpus) })] : null,
        time,
      ),
    );
    return { li, time, fits, key };
  });
  // The time per step of the base run and of each change that fits: one accumulation plan
  // each (about 0.1 s in WASM), in the task after the list, a newer update cancels them.
  const seq = ctx.computeSeq;
  const timed = found.filter((f) => f.fits);
  setTimeout(() => {
    if (seq !== ctx.computeSeq) return;
    const base = stepSeconds(ctx, st);
    for (const f of timed) {
      const item = items.find((i) => i.key === f.key);
      if (seq !== ctx.computeSeq || !item?.li.isConnected) return;
      const s = stepSeconds(ctx, f.vs);
      if (s === null) continue;
      const pct = base ? Math.round((100 * (s - base)) / base) : null;
      put(
        item.time,
        ' · ',
        t.n(`${t.num(s)} s`),
        ' ',
        t('sug.perStep'),
        pct !== null && pct !== 0 ? [' (', t.n(`${pct > 0 ? '+' : ''}${pct} %`), ')'] : null,
        f.key === 'zero2offload' ? [' ', t('sug.cpuStep')] : null,
      );
    }
  }, 0);
  return items.length
    ? h(
        'div',
        { class: 'suggest' },
        h('h3', {}, t('sug.heading')),
        h('p', { class: 'help' }, t('sug.apply')),
        h(
          'ul',
          {},
          items.map((i) => i.li),
        ),
      )
    : '';
}

// ---- the answer: does it fit, and how fast ------------------------------------------
export function verdictError(ctx, e) {
  if (!ctx.verdictEl) return;
  const box = ctx.errorBox(e);
  box.removeAttribute('role'); // the results below announce it
  put(ctx.verdictEl, box);
  put(ctx.suggestEl);
}

export function verdictInvalid(ctx) {
  if (!ctx.verdictEl) return;
  put(ctx.verdictEl, h('div', { class: 'error' }, h('p', {}, [...ctx.invalid.values()][0])));
  put(ctx.suggestEl);
}

/** The peak result as a verdict: fits or not, what nvidia-smi shows, where the peak is. */
export function renderVerdict(ctx, res) {
  const { t } = ctx;
  if (!ctx.verdictEl) return;
  const fits = fitsWithMargin(ctx, res);
  const margin = Math.round((ctx.st.marginGB || 0) * 1e9);
  const used = usedOf(res);
  const capacity = typeof res.headroomBytes === 'number' ? used + res.headroomBytes : null;
  const where =
    res.peakPhase &&
    [
      optionLabel(ctx, 'phase', res.peakPhase),
      typeof res.peakLayer === 'number' && res.peakLayer >= 0
        ? t('ask.layer', { n: res.peakLayer })
        : '',
    ]
      .filter(Boolean)
      .join(', ');
  const timeSlot = h('li', { class: 'verdict-time' });
  put(
    ctx.verdictEl,
    h(
      'p',
      { class: 'verdict-line' },
      typeof fits === 'boolean'
        ? h(
            'span',
            { class: `badge verdict-badge ${fits ? 'ok' : 'bad'}` },
            fits ? t('peak.fits') : t('peak.noFit'),
          )
        : null,
      ' ',
      h(
        'span',
        { class: 'verdict-text' },
        t(typeof res.deviceUsedBytes === 'number' ? 'ask.smi' : 'ask.peak'),
        ' ',
        h('strong', { class: 'verdict-value', 'data-bytes': String(used) }, t.both(used)),
        capacity ? [' ', t('ask.of'), ' ', t.both(capacity)] : null,
      ),
    ),
    h(
      'ul',
      { class: 'verdict-facts' },
      where ? h('li', {}, t('peak.phase'), ' ', where) : null,
      typeof res.allocatedPeakBytes === 'number'
        ? h(
            'li',
            { class: 'verdict-more' },
            t('ask.allocated'),
            ' ',
            h('code', {}, 'max_memory_allocated()'),
            ' ',
            t.both(res.allocatedPeakBytes),
            typeof res.reservedPeakBytes === 'number'
              ? ['; ', h('code', {}, 'max_memory_reserved()'), ' ', t.both(res.reservedPeakBytes)]
              : null,
          )
        : null,
      margin && capacity
        ? h('li', { class: 'verdict-margin' }, t('ask.margin', { gb: t.num(margin / 1e9) }))
        : null,
      fits && typeof res.maxMicroBatch === 'number'
        ? h('li', {}, t('peak.maxMicroBatch'), ' ', t.n(t.int(res.maxMicroBatch)))
        : null,
      timeSlot,
    ),
  );
  put(ctx.suggestEl, fits === false ? suggestionsLater(ctx) : '');
  stepTimeLater(ctx, timeSlot);
}

// The time per step comes from the accumulation planner (it needs a GPU preset's TFLOP/s):
// the plan for this micro-batch and global batch, computed in the task after the verdict.
function stepTimeLater(ctx, slot) {
  const { t, st } = ctx;
  const seq = ctx.computeSeq;
  if (!st.gpu || st.checkpointing === 'optimal') return;
  setTimeout(() => {
    if (seq !== ctx.computeSeq || !slot.isConnected) return;
    const s = stepSeconds(ctx, st);
    if (s === null) return;
    const global = st.microBatch * (st.accumSteps || 1) * (st.dataParallel || 1);
    put(
      slot,
      t('ask.time', { global: t.int(global) }),
      ' ',
      t.n(`${t.num(s)} s`),
      ' (',
      t.n(t('ask.samples', { n: t.num(global / s) })),
      ')',
    );
  }, 0);
}

/** The verdict for the current inputs, from the peak result when the peak tab shows it. */
export function computeVerdict(ctx) {
  const { t, st, solver, invalid } = ctx;
  if (!ctx.verdictEl || st.tab === 'peak') return;
  if (invalid.size) return verdictInvalid(ctx);
  let req;
  try {
    req = BUILDERS.peak[1](st);
  } catch (e) {
    return verdictError(ctx, e);
  }
  if (isHeavy('peak', st)) {
    put(ctx.verdictEl, h('p', { class: 'muted' }, t('ask.heavy')));
    put(ctx.suggestEl);
    return;
  }
  try {
    renderVerdict(ctx, solver.run('peakMemory', { ...req, timeline: false }));
  } catch (e) {
    verdictError(ctx, e);
  }
}
