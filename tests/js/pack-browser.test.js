// The PACKED npm module in a browser (Debian Chromium via playwright-core), with no
// configuration: a page with <script type="module"> and a module Web Worker (no bundler),
// a Vite production build (defaults, worker included) and the Vite dev server. Each page
// computes seed 003's example 2 (100 M params: SGD fp32 = 400,000,000 B in the window,
// Adam bf16 = 600,000,000 B in the worker) and shows a TrainmemError's code and field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { chromium } from 'playwright-core';
import { build, createServer as createViteServer } from 'vite';
import { packAndInstall, repoRoot } from './fixtures/packed.js';

const CHROMIUM = '/usr/bin/chromium';
const fixtures = join(repoRoot, 'tests/js/fixtures');
// A strict policy a careful site would send: the module needs 'wasm-unsafe-eval' to compile
// WebAssembly, and reads its embedded binary from a data: URL.
const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; connect-src 'self' data:; img-src 'self' data:; base-uri 'none'; object-src 'none'";
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript' };

// A static file server with the CSP above, on a free port of 127.0.0.1.
function serve(root) {
  const server = createServer((req, res) => {
    let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (path.endsWith('/')) path += 'index.html';
    const file = normalize(join(root, path));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, {
      'Content-Type': `${TYPES[extname(file)] || 'application/octet-stream'}; charset=utf-8`,
      'Content-Security-Policy': CSP,
    });
    res.end(readFileSync(file));
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () =>
      ok({ server, url: `http://127.0.0.1:${server.address().port}/` }),
    ),
  );
}

let pkg;
let browser;
before(async () => {
  pkg = packAndInstall();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--disable-gpu', '--disable-quic'],
  });
});
after(async () => {
  await browser?.close();
  pkg?.cleanup();
});

// Opens a URL, waits for the window and the worker results, returns them with console errors.
async function readPage(url) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  try {
    await page.goto(url);
    await page.waitForFunction(
      () => ['main', 'error', 'worker'].every((id) => document.getElementById(id)?.textContent),
      null,
      { timeout: 15000 },
    );
    const text = (id) => page.locator(`#${id}`).textContent();
    return {
      main: await text('main'),
      error: await text('error'),
      worker: await text('worker'),
      problems,
    };
  } catch (e) {
    throw new Error(`${url}: ${e.message}\n${problems.join('\n')}`);
  } finally {
    await page.close();
  }
}

const expected = {
  main: '400000000',
  error: 'out_of_range model.params',
  worker: '600000000',
  problems: [],
};

test('no bundler: <script type="module"> and a module Web Worker, under a strict CSP', async () => {
  cpSync(join(fixtures, 'browser-plain'), pkg.dir, { recursive: true });
  const { server, url } = await serve(pkg.dir);
  try {
    assert.deepEqual(await readPage(url), expected);
  } finally {
    server.close();
  }
});

// The Vite app gets the package exactly as installed from the tarball.
function viteApp(name) {
  const dir = join(pkg.dir, name);
  cpSync(join(fixtures, 'vite-app'), dir, { recursive: true });
  cpSync(pkg.pkgDir, join(dir, 'node_modules', 'trainmem'), { recursive: true });
  return dir;
}

test('Vite production build (no config), served under a strict CSP', async () => {
  const root = viteApp('vite-build');
  const warnings = [];
  await build({
    root,
    configFile: false,
    logLevel: 'silent',
    customLogger: {
      info() {},
      warn: (m) => warnings.push(m),
      warnOnce: (m) => warnings.push(m),
      error: (m) => warnings.push(m),
      clearScreen() {},
      hasErrorLogged: () => false,
      hasWarned: false,
    },
  });
  // Vite's generic size notice (chunks > 500 kB) is not a packaging problem: the module embeds
  // its WebAssembly binary (the README, "Bundlers", says how to split it off with a dynamic import()).
  const real = warnings.filter((w) => !/Some chunks are larger than/.test(w));
  assert.deepEqual(real, [], 'vite build warnings');
  const { server, url } = await serve(join(root, 'dist'));
  try {
    assert.deepEqual(await readPage(url), expected);
  } finally {
    server.close();
  }
});

test('Vite dev server (no config)', async () => {
  const root = viteApp('vite-dev');
  const vite = await createViteServer({
    root,
    configFile: false,
    logLevel: 'silent',
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false },
  });
  await vite.listen();
  try {
    const url = vite.resolvedUrls.local[0];
    assert.deepEqual(await readPage(url), expected);
  } finally {
    await vite.close();
  }
});
