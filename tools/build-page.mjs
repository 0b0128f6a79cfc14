// Builds the page into web/app/dist/: ES-module bundles of the page (main.js), the embeddable
// element (element.js) and the solver worker (worker.js), minified, with shared chunks; the
// charting library (uPlot, MIT) bundled from node_modules as a lazily loaded chunk; one CSS
// file; the language files. The WASM core (web/lib/wasm/trainmem_wasm.mjs) stays one shared
// file that the page and the worker both import. No CDN: everything is served by our origin.
import { build } from 'esbuild';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const app = fileURLToPath(new URL('../web/app/', import.meta.url));
const out = `${app}dist/`;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The WASM module stays external, addressed from dist/ (two levels below web/).
const wasmExternal = {
  name: 'wasm-external',
  setup(b) {
    b.onResolve({ filter: /trainmem_wasm\.mjs$/ }, () => ({
      path: '../../lib/wasm/trainmem_wasm.mjs',
      external: true,
    }));
  },
};

await build({
  entryPoints: [`${app}main.js`, `${app}element.js`, `${app}worker.js`],
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  minify: true,
  target: 'es2022',
  legalComments: 'none',
  chunkNames: 'chunk-[hash]',
  plugins: [wasmExternal],
  logLevel: 'warning',
});
await build({
  entryPoints: [`${app}style.css`],
  outfile: `${out}style.css`,
  bundle: true,
  minify: true,
  logLevel: 'warning',
});
cpSync(`${app}i18n`, `${out}i18n`, { recursive: true });
cpSync(
  fileURLToPath(new URL('../node_modules/uplot/LICENSE', import.meta.url)),
  `${out}uplot.LICENSE.txt`,
);
