// @ts-check
// The worked examples near the top of the page: one card each (its question, the calculator it
// opens, the article it comes from), and the chosen one's explanation under them — steps,
// result, the article and the sources. A card sets the example's whole state (every other input
// back to its default: nothing carried over from before) and scrolls to the explanation.
// Each function takes the controller's live state ctx first (app.js).
/** @import { Ctx, PageError, State, Translator } from './types.js' */
import { h, put } from './dom.js';
import { defaults } from './state.js';
import { EXAMPLES, ARTICLES } from './examples.js';
/** @import { Example } from './examples.js' */
/** @import { Child } from './dom.js' */

/**
 * The state of an example: the defaults, the page's language and tab, and the example's own.
 * @param {Ctx} ctx
 * @param {Example} ex
 */
export function exampleState(ctx, ex) {
  return {
    ...defaults(),
    lang: ctx.st.lang,
    ...ex.state(ctx.known),
    tab: ctx.tabs.includes(ex.tab) ? ex.tab : ctx.st.tab,
    ex: ex.id,
  };
}

/**
 * @param {Translator} t
 * @param {Example} ex
 */
const cardTitle = (t, ex) => {
  const short = t(`ex.${ex.id}.short`);
  return short === `ex.${ex.id}.short` ? t(`ex.${ex.id}.title`) : short;
};

/**
 * @param {Ctx} ctx
 * @param {Example} ex
 */
function card(ctx, ex) {
  const { t, st } = ctx;
  const on = st.ex === ex.id;
  return h(
    'li',
    { class: `ex-card${on ? ' active' : ''}` },
    h(
      'button',
      {
        type: 'button',
        id: `tm-ex-${ex.id}`,
        class: 'ex-btn',
        'data-example': ex.id,
        'aria-pressed': on ? 'true' : 'false',
        onclick: () => ctx.runExample(ex.id),
      },
      // (a card's short title, where the example has one)
      h('span', { class: 'ex-title' }, cardTitle(t, ex)),
      h(
        'span',
        { class: 'ex-meta' },
        t(`tab.${ex.tab}`),
        // (the article it comes from, where it comes from one)
        ex.article ? [t('list.sep'), t(`article.${ex.article}.short`)] : null,
      ),
    ),
  );
}

/**
 * The strip of example cards.
 * @param {Ctx} ctx
 */
export function examplesEl(ctx) {
  const { t } = ctx;
  return h(
    'section',
    { class: 'examples', 'aria-labelledby': 'tm-ex-h' },
    h('h2', { id: 'tm-ex-h' }, t('ex.heading')),
    h(
      'ul',
      { class: 'ex-cards' },
      EXAMPLES.map((ex) => card(ctx, ex)),
    ),
  );
}

/**
 * Where an example comes from: its article (the Arabic original) and the sources it cites.
 * @param {Ctx} ctx
 * @param {Example} ex
 */
function provenance(ctx, ex) {
  const { t } = ctx;
  const a = ex.article
    ? /** @type {Record<string, (typeof ARTICLES)['size']>} */ (ARTICLES)[ex.article]
    : undefined;
  const sources = ex.sources || [];
  if (!a && !sources.length) return null;
  if (!a) return h('div', { class: 'ex-sources' }, sourcesLine(t, sources));
  const title = h('cite', { lang: 'ar', dir: 'rtl' }, a.title);
  return h(
    'div',
    { class: 'ex-sources' },
    h(
      'p',
      {},
      t('ex.fromArticle'),
      ' ',
      a.url ? h('a', { href: a.url, rel: 'noopener noreferrer' }, title) : title,
      a.author ? [' (', h('bdi', { lang: 'ar' }, a.author), ')'] : null,
      h('span', { class: 'muted' }, t('ex.articleNote')),
    ),
    sources.length ? sourcesLine(t, sources) : null,
  );
}

/**
 * @param {Translator} t
 * @param {Array<{ label: string, url: string }>} sources
 */
function sourcesLine(t, sources) {
  return h(
    'p',
    {},
    t('ex.sources'),
    ' ',
    sources.map((s, i) => [
      i ? t('list.sep') : '',
      h('a', { href: s.url, rel: 'noopener noreferrer', lang: 'en', dir: 'ltr' }, s.label),
    ]),
  );
}

/**
 * The chosen example's explanation (steps, result, article, sources), or nothing.
 * @param {Ctx} ctx
 */
export function renderExample(ctx) {
  const { t, exampleEl } = ctx;
  if (!exampleEl) return;
  const ex = EXAMPLES.find((e) => e.id === ctx.st.ex);
  if (!ex) return put(exampleEl);
  /** @type {{ steps: Child[], result: Child, patch?: Partial<State> }} */
  let out;
  try {
    out = ex.explain(ctx.tm, t, ctx.known);
  } catch (e) {
    out = { steps: [], result: ctx.errorBox(/** @type {PageError} */ (e)) };
  }
  const st = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (ctx.st));
  if (out.patch && Object.entries(out.patch).some(([k, v]) => st[k] !== v)) {
    ctx.st = { ...ctx.st, ...out.patch };
    ctx.publish();
    queueMicrotask(() => ctx.rebuild());
  }
  put(
    exampleEl,
    h(
      'article',
      { class: 'example', 'aria-labelledby': 'tm-example-h' },
      h('h2', { id: 'tm-example-h', tabindex: '-1' }, t(`ex.${ex.id}.title`)),
      h('p', {}, t(`ex.${ex.id}.question`)),
      h('h3', {}, t('ex.steps')),
      h('ol', {}, out.steps),
      h('h3', {}, t('ex.result')),
      out.result || '',
      provenance(ctx, ex),
      h('p', { class: 'ex-below' }, t(`ex.below.${ex.tab}`)),
    ),
  );
}
