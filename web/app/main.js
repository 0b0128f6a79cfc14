// @ts-check
// Page entry (index.html): the state lives in the URL; ?embed=1 is the iframe mode
// (no header chrome), ?show=a,b limits the inputs shown, ?tabs=size,peak the calculators.
/** @import { State, Tab } from './types.js' */
import { mountApp } from './app.js';
import { fromQuery, toQuery, FIELDS, TABS } from './state.js';
import { startErrorText } from './start-error.js';

const q = new URLSearchParams(location.search);
const embed = q.get('embed') === '1';
/**
 * @param {string} name
 * @param {readonly string[]} allowed
 */
const listParam = (name, allowed) =>
  (q.get(name) || '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => allowed.includes(x));
const show = listParam('show', Object.keys(FIELDS));
const tabs = /** @type {Tab[]} */ (listParam('tabs', TABS)); // (names of TABS)
const extra = () => {
  const keep = new URLSearchParams();
  for (const k of ['embed', 'show', 'tabs']) {
    const v = q.get(k);
    if (v) keep.set(k, v);
  }
  return keep.toString();
};

const host = /** @type {HTMLElement} */ (document.getElementById('app'));
host.textContent = '';
if (embed) document.documentElement.classList.add('embedded');
// A page loaded once opens again offline: sw.js keeps a copy of its files (dist/files.json).
// Registered when the page is idle after its first result, so that it costs the start nothing.
function keepOfflineCopy() {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  const register = () => navigator.serviceWorker.register('sw.js').catch(() => {});
  const idle = () =>
    'requestIdleCallback' in window ? requestIdleCallback(register, { timeout: 5000 }) : register();
  if (document.readyState === 'complete') idle();
  else addEventListener('load', idle, { once: true });
}

mountApp(host, {
  state: fromQuery(location.search),
  embed,
  bare: embed,
  ownsDocument: true,
  show: show.length ? new Set(show) : null,
  tabs,
  /** @param {State} st */
  onState: (st) => {
    const own = toQuery(st);
    const more = extra();
    const search = own && more ? `${own}&${more}` : own || (more ? `?${more}` : '');
    if (search !== location.search) history.replaceState(null, '', `${location.pathname}${search}`);
  },
}).then(keepOfflineCopy, async (e) => {
  host.textContent = await startErrorText(e, q.get('lang') || undefined);
  host.setAttribute('role', 'alert');
});
