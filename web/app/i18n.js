// @ts-check
// Languages: labels live in i18n/<lang>.json (data, not code). Numbers keep Latin digits in
// both languages (as the seed articles write them: "8681 MB"), and every number + unit is
// isolated (<bdi dir="ltr">) so a right-to-left line never reorders "40.43 GB".
/** @import { MessageCodes, MessagePart } from '../lib/index.js' */
/** @import { Strings } from './types.js' */
import { h } from './dom.js';
import { numberFormat } from './numbers.js';
// English is the fallback of every language, so it is bundled with the page (no request on
// the start-up path); the others are fetched after the first result (prefetchStrings), so that
// the page, once loaded, switches language offline too.
import en from './i18n/en.json' with { type: 'json' };

export const LANGS = ['en', 'ar'];
/** @type {Map<string, Promise<Strings>>} */
const cache = new Map([['en', Promise.resolve(en)]]);

/**
 * @param {string} lang
 * @returns {Promise<Strings>}
 */
export async function loadStrings(lang) {
  if (!cache.has(lang)) {
    cache.set(
      lang,
      fetch(new URL(`./i18n/${lang}.json`, import.meta.url))
        .then((r) => {
          if (!r.ok) throw new Error(`i18n/${lang}.json: HTTP ${r.status}`);
          return r.json();
        })
        .catch((e) => {
          cache.delete(lang); // a later attempt fetches again
          throw e;
        }),
    );
  }
  return /** @type {Promise<Strings>} */ (cache.get(lang));
}

/** Fetches every language not loaded yet, in the background (failures are left for later). */
export function prefetchStrings() {
  for (const lang of LANGS) if (!cache.has(lang)) loadStrings(lang).catch(() => {});
}

/** The browser's preferred language among ours (English when none matches). */
export function browserLang() {
  for (const l of navigator.languages || [navigator.language || 'en']) {
    const base = String(l).toLowerCase().split('-')[0];
    if (LANGS.includes(base)) return base;
  }
  return 'en';
}

/**
 * @param {string} lang
 * @param {Strings} strings
 * @param {Strings} [fallback]
 */
export function makeTranslator(lang, strings, fallback) {
  // Intl.NumberFormat's output for 'en' / 'ar-u-nu-latn', without its start-up cost.
  const nf = { format: numberFormat(lang, { fractionDigits: 0 }) };
  const nf2 = { format: numberFormat(lang, { fractionDigits: 2 }) };
  const nf3 = { format: numberFormat(lang, { significantDigits: 4 }) };
  // Code and formulas are written `in backticks` in the strings: shown as a left-to-right
  // isolate (U+2066 … U+2069), so that a right-to-left line keeps "max_memory_reserved()" whole.
  /**
   * @param {string} key
   * @param {Record<string, unknown>} [vars]
   * @returns {string}
   */
  const t = (key, vars) => {
    let text = strings[key] ?? fallback?.[key] ?? key;
    if (vars) text = text.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
    return text.includes('`') ? text.replace(/`([^`]+)`/g, '\u2066$1\u2069') : text;
  };
  const sep = lang === 'ar' ? '؛ ' : '; ';
  /**
   * Whether this language translates every clause, and every clause of a parameter that is a
   * sentence of its own (a list of clauses: an inner error, a phrase of the catalog).
   * @param {unknown} parts
   * @returns {boolean}
   */
  const translated = (parts) =>
    Array.isArray(parts) &&
    parts.length > 0 &&
    parts.every(
      (p) =>
        typeof strings[`core.${p?.code}`] === 'string' &&
        Object.values(p.params || {}).every((v) => !Array.isArray(v) || translated(v)),
    );
  /**
   * Clauses in this language, joined as the language joins them. Each value (a name, a figure,
   * a file's own text) is a bidi isolate (U+2068 … U+2069), so that it cannot reorder the
   * sentence around it in a right-to-left line; a nested sentence is rendered in place.
   * @param {MessagePart[]} parts
   * @returns {string}
   */
  const clauses = (parts) =>
    parts
      .map((p) =>
        t(
          `core.${p.code}`,
          Object.fromEntries(
            Object.entries(p.params || {}).map(([k, v]) => [
              k,
              Array.isArray(v) ? clauses(v) : `\u2068${v}\u2069`,
            ]),
          ),
        ),
      )
      .join(sep);
  /**
   * The core's clauses (a result's `messages[path]`, an error's `messages`) in this language,
   * or null when this language does not translate every one of them.
   * @param {unknown} parts
   */
  t.coreText = (parts) =>
    translated(parts) ? clauses(/** @type {MessagePart[]} */ (parts)) : null;
  /**
   * A sentence the core wrote at `path` of `res`, in this language when the core gave its codes
   * (res.messages) and this language translates every one of them; else the core's English.
   * Returns an element marked with the language of its text.
   * @param {object | null | undefined} res a result (its `messages`, where the core gave codes)
   * @param {string} path
   * @param {unknown} text
   * @param {string} [tag]
   */
  t.core = (res, path, text, tag = 'span') => {
    const parts =
      lang === 'en'
        ? null
        : /** @type {{ messages?: MessageCodes } | null | undefined} */ (res)?.messages?.[path];
    const said = t.coreText(parts);
    return said === null ? h(tag, { lang: 'en', dir: 'ltr' }, String(text)) : h(tag, {}, said);
  };
  /**
   * Whether this language translates every code of the sentence at `path` of `res`.
   * @param {object | null | undefined} res a result (its `messages`, where the core gave codes)
   * @param {string} path
   */
  t.covers = (res, path) =>
    translated(
      /** @type {{ messages?: MessageCodes } | null | undefined} */ (res)?.messages?.[path],
    );
  /** An error code of the core in words (coreError.<code>), or '' for an unknown code. */
  t.coreError = (/** @type {string} */ code) =>
    strings[`coreError.${code}`] ?? fallback?.[`coreError.${code}`] ?? '';
  t.lang = lang;
  t.dir = lang === 'ar' ? 'rtl' : 'ltr';
  t.int = (/** @type {number} */ n) => (Number.isFinite(n) ? nf.format(n) : String(n));
  t.num = (/** @type {number} */ n) => (Number.isFinite(n) ? nf3.format(n) : String(n));
  t.fixed2 = (/** @type {number} */ n) => (Number.isFinite(n) ? nf2.format(n) : String(n));
  /** Bytes as "40.43 GB" (10^9) and "37.65 GiB" (2^30), chosen scale by size. */
  t.gb = (/** @type {number} */ b) => `${nf2.format(b / 1e9)} GB`;
  t.gib = (/** @type {number} */ b) => `${nf2.format(b / 2 ** 30)} GiB`;
  t.mb = (/** @type {number} */ b) => `${nf2.format(b / 1e6)} MB`;
  t.bytes = (/** @type {number} */ b) => `${nf.format(b)} ${t('unit.bytes')}`;
  /** <bdi dir=ltr> holding a number with its unit. */
  t.n = (/** @type {string} */ text, /** @type {string} */ cls = '') =>
    h('bdi', { dir: 'ltr', class: cls || 'num' }, text);
  /** "40.43 GB · 37.65 GiB" as a node. */
  // (a screen reader hears "147.32 GB, 137.20 GiB": the dot is shown, the comma read)
  t.both = (/** @type {number} */ b) =>
    h(
      'span',
      { class: 'both' },
      t.n(t.gb(b), 'num gb'),
      h('span', { class: 'sep', 'aria-hidden': 'true' }, ' · '),
      h('span', { class: 'sr-only' }, t('list.sep')),
      t.n(t.gib(b), 'num gib'),
    );
  return t;
}
