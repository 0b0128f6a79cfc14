// @ts-check
// <trainmem-calculator>: embed trainmem in any page with one script tag:
//   <script type="module" src="https://…/app/dist/element.js"></script>   (the built bundle)
//   <trainmem-calculator calculator="size" example="llama2-7b" lang="ar"
//                        inputs="params,optimizer,weightDtype" state="p=7000000000"></trainmem-calculator>
// Attributes: calculator (size | peak | accum | place, or a comma list), example (a worked
// example id), lang (en | ar; default: the browser's), inputs (comma list of inputs to show),
// state (a page query string, parsed by the same safe schema as the page URL).
/** @import { Tab } from './types.js' */
import { mountApp } from './app.js';
import { fromQuery, FIELDS, TABS } from './state.js';
import { EXAMPLES } from './examples.js';
import { startErrorText } from './start-error.js';

const ALIASES = {
  'checkpoint-size': 'size',
  'peak-memory': 'peak',
  accumulation: 'accum',
  placement: 'place',
};

class TrainmemCalculator extends HTMLElement {
  connectedCallback() {
    if (this.shadowRoot) return;
    const root = this.attachShadow({ mode: 'open' });
    for (const css of ['./style.css']) {
      root.append(
        Object.assign(document.createElement('link'), {
          rel: 'stylesheet',
          href: new URL(css, import.meta.url).href,
        }),
      );
    }
    /**
     * @param {string} name
     * @param {readonly string[]} allowed
     */
    const list = (name, allowed) =>
      (this.getAttribute(name) || '')
        .split(',')
        .map((x) => /** @type {Record<string, string>} */ (ALIASES)[x.trim()] || x.trim())
        .filter((x) => allowed.includes(x));
    const tabs = /** @type {Tab[]} */ (list('calculator', TABS)); // (names of TABS)
    const inputs = list('inputs', Object.keys(FIELDS));
    const state = fromQuery(this.getAttribute('state') || '');
    const lang = this.getAttribute('lang');
    if (lang === 'en' || lang === 'ar') state.lang = lang;
    if (tabs.length) state.tab = tabs[0];
    const exampleId = this.getAttribute('example');
    mountApp(root, {
      state,
      embed: true,
      tabs,
      show: inputs.length ? new Set(inputs) : null,
      showExamples: this.hasAttribute('examples'),
    }).then(
      (app) => {
        this.app = app;
        if (exampleId && EXAMPLES.some((e) => e.id === exampleId)) app.runExample(exampleId);
        this.dispatchEvent(new CustomEvent('trainmem-ready', { bubbles: true }));
      },
      async (e) => {
        const p = document.createElement('p');
        p.setAttribute('role', 'alert');
        p.textContent = await startErrorText(e, state.lang);
        root.append(p);
      },
    );
  }
}

if (!customElements.get('trainmem-calculator'))
  customElements.define('trainmem-calculator', TrainmemCalculator);
