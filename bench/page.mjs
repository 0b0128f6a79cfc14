// Page budgets: page weight (HTML + JS + WASM + CSS + i18n, gzip) ≤ 200 KiB, and the first
// computed result ≤ 300 ms after navigation in headless Chromium.
// Run: node bench/page.mjs   (after `bash tools/build.sh wasm` and `bash tools/build-page.sh`)
//
// The page is served by tools/serve.js in its own process, as `npm start` serves it (in the
// test process, its responses waited behind the browser driver's work). Each load is a fresh
// browser context (cold cache); the browser is left 300 ms to settle between loads. The same
// loads of a blank page (the same stylesheet, one tiny module that sets the mark) give the
// floor that the browser and this harness cost before any of our work.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { ensureBuilt, repo } from '../tests/e2e/helpers.js';

const RUNS = Number(process.env.RUNS || 15);
const SETTLE_MS = 300;
ensureBuilt();

// tools/serve.js in a child process, on a free port (it prints its address when listening).
const server = spawn(process.execPath, [`${repo}tools/serve.js`], {
  env: { ...process.env, PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const base = await new Promise((ok, fail) => {
  server.stdout.on('data', (d) => {
    const m = /http:\/\/[\d.]+:\d+/.exec(String(d));
    if (m) ok(m[0]);
  });
  server.on('exit', (code) => fail(new Error(`tools/serve.js exited (${code})`)));
});
// The floor: a blank page with the page's stylesheet and one module that sets the same mark.
const css = readFileSync(`${repo}web/app/dist/style.css`);
const blank = createServer((req, res) => {
  const files = {
    '/': [
      'text/html',
      '<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="style.css">' +
        '<script type="module" src="floor.js"></script></head><body><div id="app"><p>Loading</p>' +
        '</div></body></html>',
    ],
    '/style.css': ['text/css', css],
    '/floor.js': [
      'text/javascript',
      "const d = document.createElement('div'); d.className = 'tm'; d.textContent = '1 GB';" +
        "document.getElementById('app').append(d); performance.mark('trainmem:first-result');" +
        "d.setAttribute('data-ready', '1');",
    ],
  };
  const [type, body] = files[req.url] || ['text/plain', ''];
  res.writeHead(files[req.url] ? 200 : 404, { 'Content-Type': type, 'Cache-Control': 'no-cache' });
  res.end(body);
});
await new Promise((ok) => blank.listen(0, '127.0.0.1', ok));
const blankBase = `http://127.0.0.1:${blank.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-quic'],
});
const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  return { context, page: await context.newPage() };
};
const settle = () => new Promise((ok) => setTimeout(ok, SETTLE_MS));

// 1) Weight: every file the page loads over a visit of all four calculators, with charts.
const files = new Map();
{
  const { page, context } = await newPage();
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.origin === base) files.set(u.pathname, true);
  });
  await page.goto(`${base}/app/?lang=en`);
  await page.waitForSelector('.tm[data-ready="1"]');
  for (const tab of ['peak', 'accum', 'place', 'size']) {
    await page.click(`#tm-tab-${tab}`);
    await page.waitForTimeout(300);
  }
  await page.selectOption('#tm-lang', 'ar');
  await page.waitForTimeout(300);
  await context.close();
  // The service worker and its list, which the browser fetches for the offline copy (its copy
  // of the other files revalidates them: 304s, no bodies).
  files.set('/app/sw.js', true);
  files.set('/app/dist/files.json', true);
}
// Also, for comparison: the same files with Brotli (quality 11, which most hosts and CDNs serve;
// GitHub Pages serves gzip only), and a visit in English alone (no Arabic strings file; the
// English ones are inside the bundle, so a visit in Arabic loads every file).
let total = 0;
let totalBr = 0;
let english = 0;
const rows = [];
for (const path of [...files.keys()].sort()) {
  const rel = path.endsWith('/') ? `${path}index.html` : path;
  const body = readFileSync(`${repo}web${rel}`);
  const gz = gzipSync(body, { level: 9 }).length;
  const br = brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
  }).length;
  total += gz;
  totalBr += br;
  if (!/\/i18n\/(?!en\.json)[^/]+\.json$/.test(rel)) english += gz;
  rows.push([rel, body.length, gz, br]);
}

// 2) First computed result: the performance mark set when the first number is on screen,
//    from navigation start. 'trainmem:core-ready' marks the core compiled and instantiated.
//    Page and blank loads alternate, so that both see the same machine.
async function mark(url, names) {
  const { page, context } = await newPage();
  await page.goto(url);
  await page.waitForSelector('.tm[data-ready="1"]');
  const t = await page.evaluate(
    (ns) => ns.map((n) => performance.getEntriesByName(n)[0]?.startTime ?? NaN),
    names,
  );
  await context.close();
  await settle();
  return t;
}
const first = [];
const coreReady = [];
const floor = [];
await mark(`${base}/app/?lang=en`, []); // the browser's first navigation is not a cold page load
for (let i = 0; i < RUNS; i++) {
  const [core, f] = await mark(`${base}/app/?lang=en`, [
    'trainmem:core-ready',
    'trainmem:first-result',
  ]);
  coreReady.push(core);
  first.push(f);
  floor.push((await mark(`${blankBase}/`, ['trainmem:first-result']))[0]);
}
const load = loadavg()[0];
await browser.close();
server.kill();
blank.close();

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const ms = (x) => `${x.toFixed(0)} ms`;
const kib = (x) => `${(x / 1024).toFixed(1)} KiB = ${x} bytes`;
console.log('file | bytes | gzip bytes | brotli bytes');
for (const [p, b, g, br] of rows) console.log(`${p} | ${b} | ${g} | ${br}`);
console.log(`\npage weight (gzip -9, all files above): ${kib(total)} (goal 200 KiB)`);
console.log(`  a visit in English only (gzip -9, without the Arabic strings): ${kib(english)}`);
console.log(`  the same files with Brotli (quality 11): ${kib(totalBr)}`);
console.log(
  `first computed result after navigation: median ${ms(median(first))}, min ${ms(Math.min(...first))}, max ${ms(Math.max(...first))} over ${RUNS} cold loads (budget 300 ms)`,
);
console.log(
  `core ready (compiled, instantiated) after navigation: median ${ms(median(coreReady))}`,
);
console.log(
  `floor (blank page, same stylesheet, same harness): median ${ms(median(floor))}, min ${ms(Math.min(...floor))}`,
);
console.log(`machine load average (1 min) at the end of the run: ${load.toFixed(1)}`);
