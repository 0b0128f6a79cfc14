// @ts-check
// Pipeline parallelism's stages (peakMemory's pipelineParallel.perStage): a bar per stage, its
// weights, gradients, optimizer state, activations and the rest of its device memory stacked,
// the GPU's memory as the dashed line, the stage that binds named; and a table of each stage's
// numbers beside it.
/** @import { PeakMemoryResult } from '../lib/index.js' */
/** @import { Ctx, Stage } from './types.js' */
/** @import { Child } from './dom.js' */
import { h } from './dom.js';
import { stackedBars } from './charts.js';
import { chartOpts, partLabel } from './view-common.js';

// A stage's parts as the result names them, in the breakdown's order (bottom first).
const PARTS = [
  ['weights', 'weightsBytes'],
  ['gradients', 'gradientsBytes'],
  ['optimizerState', 'optimizerStateBytes'],
  ['activations', 'activationsBytes'],
];

/**
 * A stage's memory: what nvidia-smi shows where the allocator is simulated, else the peak.
 * @param {Stage} s
 */
const stageBytes = (s) => (typeof s.deviceUsedBytes === 'number' ? s.deviceUsedBytes : s.peakBytes);

/**
 * The stage's name under its bar and in the table (stages count from 1, as people say them).
 * @param {Ctx} ctx
 * @param {Stage} s
 */
const stageName = (ctx, s) => ctx.t('stage.name', { n: ctx.t.int(s.stage + 1) });

/**
 * Bars of the stages' memory: the four parts, and the rest (temporaries, buffers, the runtime,
 * the allocator's cache) up to the stage's total.
 * @param {Ctx} ctx
 * @param {Stage[]} stages
 */
function stageParts(ctx, stages) {
  const parts = PARTS.map(([key, field]) => ({
    key,
    label: partLabel(ctx, key),
    values: stages.map((s) => {
      const v = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (s))[field];
      return typeof v === 'number' ? v : 0;
    }),
  }));
  const rest = stages.map((s, i) =>
    Math.max(0, stageBytes(s) - parts.reduce((a, p) => a + p.values[i], 0)),
  );
  if (rest.some((v) => v > 0))
    parts.push({ key: 'other', label: ctx.t('stage.other'), values: rest });
  return parts;
}

/**
 * @param {Ctx} ctx
 * @param {NonNullable<PeakMemoryResult['pipelineParallel']>} pp
 * @param {Stage[]} stages
 */
function stageTable(ctx, pp, stages) {
  const { t } = ctx;
  const cols = ['stage.col.blocks', 'stage.col.inFlight', 'stage.col.memory', 'stage.col.fits'];
  /**
   * @param {string} key
   * @param {Child} value
   */
  const cell = (key, value) => h('td', { 'data-label': t(key) }, value);
  return h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { class: 'data stack stages' },
      h('caption', {}, t('stage.table')),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, t('stage.col.stage')),
          cols.map((c) => h('th', { scope: 'col' }, t(c))),
        ),
      ),
      h(
        'tbody',
        {},
        stages.map((s) =>
          h(
            'tr',
            { class: s.stage === pp.peakStage ? 'rec' : '' },
            h('th', { scope: 'row' }, stageName(ctx, s)),
            cell('stage.col.blocks', t.n(t.int(s.blocks))),
            cell('stage.col.inFlight', t.n(t.num(s.inFlightMicroBatches))),
            cell('stage.col.memory', t.both(stageBytes(s))),
            cell(
              'stage.col.fits',
              typeof s.fits === 'boolean' ? t(s.fits ? 'stage.fits' : 'stage.noFit') : '',
            ),
          ),
        ),
      ),
    ),
  );
}

/**
 * The stages' chart and table, when the result has more than one stage.
 * @param {{ value: number, label: string } | undefined} capacity the GPU's memory (GiB)
 * @param {Ctx} ctx
 * @param {HTMLElement} el
 * @param {PeakMemoryResult} res
 */
export function stageView(ctx, el, res, capacity) {
  const { t } = ctx;
  const pp = res.pipelineParallel;
  if (!pp || !Array.isArray(pp.perStage) || pp.perStage.length < 2) return;
  const stages = pp.perStage;
  const binding = stages.find((s) => s.stage === pp.peakStage);
  const box = h(
    'section',
    { class: 'stages', id: 'tm-stages', 'aria-labelledby': 'tm-stages-h' },
    h('h3', { id: 'tm-stages-h' }, t('stage.heading')),
    binding
      ? h(
          'p',
          { class: 'stage-binding' },
          t('stage.binding', { stage: stageName(ctx, binding) }),
          ' ',
          t.both(stageBytes(binding)),
        )
      : null,
    h(
      'p',
      { class: 'note' },
      t('stage.schedule', {
        schedule: t(`opt.schedule.${pp.schedule}`),
        microBatches: t.int(pp.microBatches),
        bubble: t.num(100 * pp.bubbleFraction),
      }),
    ),
  );
  const holder = h('div', { class: 'chart-holder' });
  box.append(holder);
  el.append(box);
  stackedBars(holder, {
    label: t('stage.chart'),
    scenarios: stages.map((s) => stageName(ctx, s)),
    parts: stageParts(ctx, stages),
    t,
    capacity,
    ...chartOpts(ctx),
  });
  box.append(stageTable(ctx, pp, stages));
}
