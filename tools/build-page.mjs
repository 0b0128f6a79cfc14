// Builds the page into web/app/dist/: one self-contained, minified ES-module bundle per entry —
// the page (main.js), the embeddable element (element.js), the solver worker (worker.js) — so
// that nothing on the start-up path waits for a chunk discovered only after parsing its
// importer (shared chunks cost a round trip: measured 100-250 ms before the app could mount);
// one CSS file; the language files (English is also inside the bundles, as every language's
// fallback). The WASM core is split out of the npm package's
// single-file module (web/lib/wasm/trainmem_wasm.mjs, base64 inside) into dist/trainmem.wasm
// plus the same loader without the base64 (dist/trainmem_wasm.mjs), which the page, the
// element and the worker import: the binary gzips 29 % smaller than its base64 and compiles
// while it downloads (WebAssembly.instantiateStreaming). No CDN: everything is served by our
// origin.
import { build, transform } from 'esbuild';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { presetIndex } from './preset-index.mjs';

const app = fileURLToPath(new URL('../web/app/', import.meta.url));
const out = `${app}dist/`;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The WASM loader stays external: dist/trainmem_wasm.mjs, written below, resolved next to the
// importing bundle (and so does the full core's entry, dist/full.js).
const externals = {
  name: 'externals',
  setup(b) {
    b.onResolve({ filter: /trainmem_wasm\.mjs$/ }, () => ({
      path: './trainmem_wasm.mjs',
      external: true,
    }));
    b.onResolve({ filter: /^\.\/full\.js$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: './full.js', external: true } : undefined,
    );
  },
};

await build({
  entryPoints: [`${app}main.js`, `${app}element.js`, `${app}worker.js`],
  outdir: out,
  bundle: true,
  format: 'esm',
  minify: !process.env.NOMIN, // NOMIN=1: readable names, for profiling
  target: 'es2022',
  legalComments: 'none',
  // The preset pickers' ids and names, from the data files (tools/preset-index.mjs).
  define: { __TRAINMEM_PRESET_INDEX__: JSON.stringify(presetIndex()) },
  plugins: [externals],
  logLevel: 'warning',
});
await build({
  entryPoints: [`${app}full.js`],
  outdir: out,
  bundle: true,
  format: 'esm',
  minify: !process.env.NOMIN,
  target: 'es2022',
  legalComments: 'none',
  plugins: [
    {
      name: 'full-module',
      setup(b) {
        b.onResolve({ filter: /trainmem_wasm\.mjs$/ }, () => ({
          path: './trainmem_full.mjs',
          external: true,
        }));
      },
    },
  ],
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
// it with instantiateStreaming (served as application/wasm by tools/serve.js). Two modules: the
// page's first one (build/wasm/page/, without the memory-snapshot reader: 32 KB gzip less on
// every visit) as trainmem.wasm, and the npm package's full one as trainmem_full.wasm, which
// dist/full.js loads when a snapshot is first opened.
async function splitModule(single, wasmName, loaderName) {
  const source = readFileSync(fileURLToPath(new URL(single, import.meta.url)), 'utf8');
  const re = /wasmBinaryFile="data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)"/;
  const m = source.match(re);
  if (!m) throw new Error(`build-page: no embedded module in ${single} (run tools/build.sh wasm)`);
  writeFileSync(`${out}${wasmName}`, Buffer.from(m[1], 'base64'));
  // Emscripten's -Oz glue keeps its local names; esbuild's minifier shortens them (-25 % gzip).
  const loader = await transform(source.replace(re, `wasmBinaryFile="${wasmName}"`), {
    format: 'esm',
    minify: true,
    target: 'es2022',
    legalComments: 'none',
  });
  writeFileSync(`${out}${loaderName}`, loader.code);
}
await splitModule(
  '../build/wasm/page/trainmem_page_wasm.mjs',
  'trainmem.wasm',
  'trainmem_wasm.mjs',
);
await splitModule('../web/lib/wasm/trainmem_wasm.mjs', 'trainmem_full.wasm', 'trainmem_full.mjs');

// The service worker's list (web/app/sw.js): what the page loads, relative to index.html, so
// that a page loaded once opens again offline. Left out: the embeddable element (other sites'
// pages load it, not this one), English (inside the bundles) and the full core
// (loaded only with a snapshot; sw.js keeps it once fetched). The version
// changes with any listed file's contents, index.html's included.
{
  const files = [
    './',
    ...readdirSync(out, { recursive: true })
      .map((f) => String(f).split('\\').join('/'))
      .filter((f) => /\.(js|mjs|css|wasm|json)$/.test(f))
      .filter(
        (f) =>
          ![
            'element.js',
            'i18n/en.json',
            'files.json',
            'full.js',
            'trainmem_full.mjs',
            'trainmem_full.wasm',
          ].includes(f),
      )
      .sort()
      .map((f) => `dist/${f}`),
  ];
  const hash = createHash('sha256');
  for (const f of files) {
    hash.update(`${f}\0`);
    hash.update(readFileSync(f === './' ? `${app}index.html` : `${app}${f}`));
  }
  const version = hash.digest('hex').slice(0, 16);
  writeFileSync(`${out}files.json`, `${JSON.stringify({ version, files }, null, 1)}\n`);
}
