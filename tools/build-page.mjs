// Builds the page into web/app/dist/: ES-module bundles of the page (main.js), the embeddable
// element (element.js) and the solver worker (worker.js), minified, with shared chunks; the
// charting library (uPlot, MIT) bundled from node_modules as a lazily loaded chunk; one CSS
// file; the language files. The WASM core is split out of the npm package's single-file module
// (web/lib/wasm/trainmem_wasm.mjs, base64 inside) into dist/trainmem.wasm plus the same loader
// without the base64 (dist/trainmem_wasm.mjs), which the page, the element and the worker
// import: the binary gzips 29 % smaller than its base64 and compiles while it downloads
// (WebAssembly.instantiateStreaming). No CDN: everything is served by our origin.
import { build } from 'esbuild';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const app = fileURLToPath(new URL('../web/app/', import.meta.url));
const out = `${app}dist/`;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The WASM loader stays external: dist/trainmem_wasm.mjs, written below.
const wasmExternal = {
  name: 'wasm-external',
  setup(b) {
    b.onResolve({ filter: /trainmem_wasm\.mjs$/ }, () => ({
      path: './trainmem_wasm.mjs',
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
// Emscripten's SINGLE_FILE output holds the module as `wasmBinaryFile="data:…;base64,…"`; with
// a plain file name there, its loader resolves it next to itself (import.meta.url) and fetches
// it with instantiateStreaming (served as application/wasm by tools/serve.js).
{
  const single = readFileSync(
    fileURLToPath(new URL('../web/lib/wasm/trainmem_wasm.mjs', import.meta.url)),
    'utf8',
  );
  const re = /wasmBinaryFile="data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)"/;
  const m = single.match(re);
  if (!m) throw new Error('build-page: no embedded module found in trainmem_wasm.mjs');
  writeFileSync(`${out}trainmem.wasm`, Buffer.from(m[1], 'base64'));
  writeFileSync(`${out}trainmem_wasm.mjs`, single.replace(re, 'wasmBinaryFile="trainmem.wasm"'));
}
cpSync(
  fileURLToPath(new URL('../node_modules/uplot/LICENSE', import.meta.url)),
  `${out}uplot.LICENSE.txt`,
);
