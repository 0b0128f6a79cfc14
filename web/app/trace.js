// @ts-check
// "Use a traced model", beside the snapshot comparison: a drop zone for a trace of the user's own
// model written by `python3 -m trainmem_trace`. The file is read in the page's Web Worker (the
// core's describeModel checks it, naming the field of any fault), then every calculator uses it
// as the model until it is removed. The trace stays in memory (it is not in the page's address,
// which a reload or a shared link keeps) and is sent nowhere.
/** @import { DescribeModelResult } from '../lib/index.js' */
/** @import { Ctx, PageError } from './types.js' */
import { h, put } from './dom.js';
import { dropZone } from './drop-zone.js';

/**
 * The trace in use, read by requests.js: its text (null: none), name, whether it has a
 * sequence length, and the chain layers describeModel found.
 */
export const traced = { text: /** @type {string|null} */ (null), name: '', hasSeq: false };

/**
 * The line a panel and the error box show while a trace is in use.
 * @param {Ctx} ctx
 * @param {() => void} clear
 */
export function tracedLine(ctx, clear) {
  const { t } = ctx;
  return h(
    'p',
    { class: 'trace-using' },
    t('trace.using', { name: traced.name }),
    ' ',
    h('button', { type: 'button', class: 'small', onclick: clear }, t('trace.clear')),
  );
}

/**
 * @param {Ctx} ctx
 * @param {DescribeModelResult} d
 */
function summary(ctx, d) {
  const { t } = ctx;
  const tr = /** @type {NonNullable<DescribeModelResult['trace']>} */ (d.trace); // (a trace's)
  return h(
    'p',
    { class: 'muted' },
    t('trace.summary', {
      params: t.int(d.params),
      layers: t.int(tr.layers.length),
      ops: t.int(tr.ops),
      batch: t.int(tr.tracedBatch),
    }),
  );
}

/**
 * One panel per page; `ctx` is the page's (app.js) with a solver of its own. Returns
 * { element(), clear() }: element() is drawn under the peak-memory results.
 * @param {Ctx} ctx
 */
export function tracePanel(ctx) {
  let reading = '';
  /** @type {PageError | null} */
  let error = null;
  /** @type {DescribeModelResult | null} */
  let described = null;
  /** @type {HTMLElement | null} */
  let body = null;

  function render() {
    if (!body || !body.isConnected) return;
    const { t } = ctx;
    if (reading)
      return put(body, h('p', { class: 'muted' }, t('trace.reading', { name: reading })));
    if (error)
      return put(
        body,
        h(
          'div',
          { class: 'error', role: 'alert', 'data-code': error.code || '' },
          h('strong', {}, t('error.title')),
          h('p', { lang: 'en', dir: 'ltr' }, String(error.message)),
          error.field ? h('p', { class: 'muted' }, h('code', {}, String(error.field))) : null,
        ),
      );
    if (traced.text && described) return put(body, tracedLine(ctx, clear), summary(ctx, described));
    put(body);
  }

  /** @param {File | undefined} f */
  async function take(f) {
    if (!f) return;
    reading = f.name || 'trace';
    error = null;
    render();
    const text = await f.text();
    ctx.solver.runHeavy('describeModel', { model: { trace: text } }).then(
      (/** @type {unknown} */ result) => {
        const d = /** @type {DescribeModelResult} */ (result);
        reading = '';
        described = d;
        traced.text = text;
        traced.name = d.name || f.name;
        traced.hasSeq = typeof d.trace?.tracedSeqLen === 'number';
        ctx.update({});
      },
      (e) => {
        reading = '';
        if (e.code === 'cancelled') return;
        error = e;
        render();
      },
    );
  }

  function clear() {
    traced.text = null;
    traced.name = '';
    traced.hasSeq = false;
    described = null;
    error = null;
    ctx.update({});
  }

  return {
    clear,
    element() {
      body = h('div', { class: 'snap-body', 'aria-live': 'polite' });
      queueMicrotask(render);
      const { t } = ctx;
      return h(
        'section',
        { class: 'snapshot trace', 'aria-labelledby': 'tm-trace-h' },
        h('h3', { id: 'tm-trace-h' }, t('trace.heading')),
        ...dropZone(
          {
            id: 'tm-trace-drop',
            inputId: 'tm-trace-file',
            accept: '.json,application/json',
            text: t('trace.drop'),
            label: t('trace.choose'),
            describedBy: 'tm-trace-private',
          },
          take,
        ),
        h(
          'p',
          { class: 'help' },
          t('trace.how'),
          ' ',
          h(
            'code',
            { dir: 'ltr' },
            'python3 -m trainmem_trace MODULE:CALLABLE --input b,3,224,224 --loss cross_entropy --out model.trace.json',
          ),
        ),
        h('p', { class: 'help', id: 'tm-trace-private' }, t('trace.private')),
        body,
      );
    },
  };
}
