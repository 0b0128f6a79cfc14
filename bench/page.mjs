// Page budgets (issue 7): page weight (HTML + JS + WASM + CSS + i18n, gzip) ≤ 150 KB, and the
// first computed result ≤ 300 ms after navigation in headless Chromium.
// Run: node bench/page.mjs   (after `bash tools/build.sh wasm` and `bash tools/build-page.sh`)
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setup, openPage, ready, repo } from '../tests/e2e/helpers.js';

const RUNS = Number(process.env.RUNS || 7);
const env = await setup();
const files = new Map();

// 1) Weight: every file the page loads over a visit of all four calculators, with charts.
{
  const { page, context } = await openPage(env.browser, `${env.base}/app/?lang=en`);
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.origin === env.base) files.set(u.pathname, true);
  });
  await page.reload();
  await ready(page);
  for (const tab of ['peak', 'accum', 'place', 'size']) {
    await page.click(`#tm-tab-${tab}`);
    await page.waitForTimeout(300);
  }
  await page.selectOption('#tm-lang', 'ar');
  await page.waitForTimeout(300);
  await context.close();
}
let total = 0;
const rows = [];
for (const path of [...files.keys()].sort()) {
  const rel = path.endsWith('/') ? `${path}index.html` : path;
  const body = readFileSync(`${repo}web${rel}`);
  const gz = gzipSync(body, { level: 9 }).length;
  total += gz;
  rows.push([rel, body.length, gz]);
}

// 2) First computed result: performance mark set when the first number is on screen,
//    measured from navigation start, fresh browser context (cold cache) each run.
//    'trainmem:core-ready' marks the core compiled and instantiated (and the strings loaded).
const times = [];
const coreReady = [];
for (let i = 0; i < RUNS; i++) {
  const { page, context } = await openPage(env.browser, `${env.base}/app/?lang=en`);
  await ready(page);
  const [core, first] = await page.evaluate(() =>
    ['trainmem:core-ready', 'trainmem:first-result'].map(
      (n) => performance.getEntriesByName(n)[0].startTime,
    ),
  );
  coreReady.push(core);
  times.push(first);
  await context.close();
}
await env.close();
times.sort((a, b) => a - b);
coreReady.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];

console.log('file | bytes | gzip bytes');
for (const [p, b, g] of rows) console.log(`${p} | ${b} | ${g}`);
console.log(
  `\npage weight (gzip -9, all files above): ${(total / 1024).toFixed(1)} KiB = ${total} bytes (budget 150 KB)`,
);
console.log(
  `first computed result after navigation: median ${median.toFixed(0)} ms, min ${times[0].toFixed(0)} ms, max ${times[times.length - 1].toFixed(0)} ms over ${RUNS} cold loads (budget 300 ms)`,
);
console.log(
  `core ready (compiled, instantiated) after navigation: median ${coreReady[Math.floor(RUNS / 2)].toFixed(0)} ms`,
);
console.log(`machine load average (1 min) during the run: ${loadavg()[0].toFixed(1)}`);
