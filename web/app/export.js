// @ts-check
// Exports of the shown result (JSON, CSV, Markdown, clipboard, link) and the embed codes of the
// current view. Each takes the controller's live state ctx first: { last, t, st, tm, rootEl, embed }.
/** @import { Ctx } from './types.js' */
import { h } from './dom.js';
import { toQuery } from './state.js';
import { flatten, isBytesKey, toCSV, toMarkdown } from './format.js';

/** @param {Ctx} ctx */
function exportRows(ctx) {
  if (!ctx.last) return [];
  /** @type {unknown[][]} */
  const rows = [['calculator', ctx.last.fn, '', '']];
  for (const [k, v] of flatten(ctx.last.request)) rows.push([`request.${k}`, v, '', '']);
  for (const [k, v] of flatten(ctx.last.result)) {
    if (typeof v === 'number' && isBytesKey(k))
      rows.push([`result.${k}`, v, (v / 1e9).toFixed(3), (v / 2 ** 30).toFixed(3)]);
    else rows.push([`result.${k}`, v, '', '']);
  }
  return rows;
}

/**
 * @param {Ctx} ctx
 * @param {string} name
 * @param {string} type
 * @param {string} text
 */
function download(ctx, name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, class: 'sr-only' });
  ctx.rootEl.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * @param {Ctx} ctx
 * @param {string} text
 * @param {HTMLElement} btn
 */
async function copy(ctx, text, btn) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    ok = false;
  }
  const old = btn.textContent;
  btn.textContent = ok ? ctx.t('export.copied') : ctx.t('export.copyFailed');
  setTimeout(() => (btn.textContent = old), 1500);
  return ok;
}

const header4 = ['field', 'value', 'GB', 'GiB'];
/** @param {Ctx} ctx */
export function exportersOf(ctx) {
  return {
    json: () =>
      JSON.stringify(
        {
          trainmem: ctx.tm.version,
          calculator: ctx.last?.fn,
          request: ctx.last?.request,
          result: ctx.last?.result,
        },
        null,
        2,
      ) + '\n',
    csv: () => toCSV([header4, ...exportRows(ctx)]),
    md: () => toMarkdown(exportRows(ctx), header4),
  };
}

// The download buttons: [exporter, file type, label].
/** @type {Array<['json' | 'csv' | 'md', string, string]>} */
const DOWNLOADS = [
  ['json', 'application/json', 'JSON'],
  ['csv', 'text/csv', 'CSV'],
  ['md', 'text/markdown', 'Markdown'],
];

/** @param {Ctx} ctx */
export function exportBar(ctx) {
  const exporters = exportersOf(ctx);
  const name = () => `trainmem-${ctx.last?.fn || 'result'}`;
  /**
   * @param {string} kind
   * @param {(e: MouseEvent) => unknown} onclick
   * @param {string} label
   */
  const button = (kind, onclick, label) =>
    h('button', { type: 'button', class: 'small', 'data-export': kind, onclick }, label);
  return h(
    'div',
    { class: 'export', role: 'group', 'aria-label': ctx.t('export.label') },
    DOWNLOADS.map(([kind, type, label]) =>
      button(
        kind,
        () => ctx.last && download(ctx, `${name()}.${kind}`, type, exporters[kind]()),
        label,
      ),
    ),
    button(
      'copy',
      (e) => ctx.last && copy(ctx, exporters.md(), /** @type {HTMLElement} */ (e.currentTarget)),
      ctx.t('export.copy'),
    ),
    ctx.embed
      ? null
      : button(
          'link',
          (e) => copy(ctx, location.href, /** @type {HTMLElement} */ (e.currentTarget)),
          ctx.t('export.link'),
        ),
  );
}

/** @param {Ctx} ctx */
export function embedCodes(ctx) {
  const base = new URL('./', import.meta.url).href;
  const q = toQuery({ ...ctx.st, lang: ctx.st.lang || '', ex: '' }).slice(1);
  const elementCode = `<script type="module" src="${base}element.js"></script>\n<trainmem-calculator calculator="${ctx.st.tab}" lang="${ctx.t.lang}"${q ? ` state="${q.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"` : ''}></trainmem-calculator>`;
  const page = new URL('./', location.href).href;
  const iframeCode = `<iframe src="${page}?embed=1&tab=${ctx.st.tab}&lang=${ctx.t.lang}${q ? `&${q.replace(/&/g, '&amp;')}` : ''}" title="trainmem" width="100%" height="900" style="border:0"></iframe>`;
  return { elementCode, iframeCode };
}

/** @param {Ctx} ctx */
export function embedDialog(ctx) {
  const a = h('textarea', { id: 'tm-embed-element', rows: 4, readonly: true });
  const b = h('textarea', { id: 'tm-embed-iframe', rows: 3, readonly: true });
  /** @param {HTMLTextAreaElement} area */
  const copyOf = (area) =>
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        onclick: (e) => copy(ctx, area.value, /** @type {HTMLElement} */ (e.currentTarget)),
      },
      ctx.t('export.copy'),
    );
  /** @type {HTMLDialogElement & { fill?: () => void }} */
  const dlg = h(
    'dialog',
    { class: 'embed-dialog', 'aria-labelledby': 'tm-embed-h' },
    h('h2', { id: 'tm-embed-h' }, ctx.t('embed.title')),
    h('label', { for: 'tm-embed-element' }, ctx.t('embed.element')),
    a,
    copyOf(a),
    h('label', { for: 'tm-embed-iframe' }, ctx.t('embed.iframe')),
    b,
    copyOf(b),
    h('p', {}, h('button', { type: 'button', onclick: () => dlg.close() }, ctx.t('embed.close'))),
  );
  dlg.fill = () => {
    const c = embedCodes(ctx);
    a.value = c.elementCode;
    b.value = c.iframeCode;
  };
  return /** @type {HTMLDialogElement & { fill: () => void }} */ (dlg);
}
