// @ts-check
// Tiny DOM helpers. Everything on the page is built with createElement + textContent:
// no HTML string is ever parsed, so text from the URL or a pasted config.json stays inert.
const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * What an element holds: nodes and text (numbers written as text); null, undefined and false
 * are left out, arrays flattened.
 * @typedef {Node | string | number | boolean | null | undefined | Child[]} Child
 */
/**
 * An element's attributes: `class`, `text` (its text), `on<event>` listeners, properties the
 * element has (set as properties unless a string), any other attribute (set as text; true is
 * the empty string; null, undefined and false are left out).
 * @typedef {{
 *   [name: string]: unknown,
 *   onclick?: (e: MouseEvent) => void,
 *   onkeydown?: (e: KeyboardEvent) => void,
 *   oninput?: (e: Event) => void,
 *   onchange?: (e: Event) => void,
 *   onblur?: (e: FocusEvent) => void,
 *   onfocus?: (e: FocusEvent) => void,
 *   onsubmit?: (e: SubmitEvent) => void,
 * }} Attrs
 */

/**
 * @template {Element} E
 * @param {E} el
 * @param {Child[]} children
 * @returns {E}
 */
function append(el, children) {
  for (const c of /** @type {unknown[]} */ (children).flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * @template {Element} E
 * @param {E} el
 * @param {Attrs | null | undefined} attrs
 * @returns {E}
 */
function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function')
      el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
    else if (k === 'class') el.setAttribute('class', String(v));
    else if (k === 'text') el.textContent = String(v);
    else if (k in el && typeof v !== 'string' && !(el instanceof SVGElement))
      /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el))[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  return el;
}

/**
 * h('div', {class: 'x'}, child, 'text', [more]) → HTMLElement
 * @template {string} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement}
 */
export function h(tag, attrs, ...children) {
  return /** @type {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement} */ (
    append(setAttrs(document.createElement(tag), attrs), children)
  );
}

/**
 * s('rect', {x: 1}) → SVGElement
 * @template {string} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {K extends keyof SVGElementTagNameMap ? SVGElementTagNameMap[K] : SVGElement}
 */
export function s(tag, attrs, ...children) {
  return /** @type {K extends keyof SVGElementTagNameMap ? SVGElementTagNameMap[K] : SVGElement} */ (
    append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children)
  );
}

/**
 * @template {Element} E
 * @param {E} el
 * @returns {E}
 */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/**
 * Replaces the children of el.
 * @template {Element} E
 * @param {E} el
 * @param {...Child} children
 * @returns {E}
 */
export function put(el, ...children) {
  return append(clear(el), children);
}
