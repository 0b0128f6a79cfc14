// "Keystroke to verdict ≤ 16 ms of main-thread work, one core call per verdict." Measures, in
// headless Chromium, one keystroke's update on each calculator: the input event's task (the
// handler: the request, the core call when it runs here, the views), the main thread's work when
// an answer comes back from the worker (its views), the core calls the keystroke made (User
// Timing marks "trainmem:call <fn>", web/app/solver.js), when the frame after it is produced and
// when the new result and the verdict are on screen.
// Run: node bench/page-update.mjs   (after `bash tools/build.sh wasm` and `bash tools/build-page.sh`)
import { setup, openPage, ready } from '../tests/e2e/helpers.js';

const WARM = 5;
const RUNS = Number(process.env.RUNS || 30);
// One text input per calculator, typed into with successive values, as a user would.
const CASES = [
  { tab: 'size', query: 'ms=params&v=2', input: '#tm-params', value: (i) => String(7e9 + i * 1e6) },
  { tab: 'peak', query: '', input: '#tm-seqLen', value: (i) => String(512 + i) },
  { tab: 'accum', query: '', input: '#tm-seqLen', value: (i) => String(512 + i) },
  { tab: 'place', query: '', input: '#tm-layers', value: (i) => String(32 + (i % 40)) },
];

// One keystroke, in the page: the figures above, in ms from the keystroke.
async function keystroke({ selector, value }) {
  const el = document.querySelector(selector);
  if (!el) throw new Error(`no ${selector}`);
  const seen = (target) =>
    new Promise((ok) => {
      const mo = new MutationObserver(() => {
        mo.disconnect();
        ok(performance.now());
      });
      mo.observe(target, { childList: true });
      setTimeout(() => ok(NaN), 2000);
    });
  const marks = () => performance.getEntriesByType('mark').length;
  const before = marks();
  const t0 = performance.now();
  const results = seen(document.querySelector('#tm-results'));
  const verdict = seen(document.querySelector('#tm-verdict'));
  el.value = value;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  for (let k = 0; k < 4; k++) await null; // the handler's microtasks
  const t1 = performance.now();
  await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
  const t2 = performance.now();
  const [shown, judged] = await Promise.all([results, verdict]);
  await new Promise((ok) => setTimeout(ok, 50));
  const mine = performance.getEntriesByType('mark').slice(before);
  const calls = mine.filter((m) => m.name.startsWith('trainmem:call')).length;
  // the views drawn when an answer came back after the keystroke's task
  let render = 0;
  let start = null;
  for (const m of mine) {
    if (m.name === 'trainmem:render-start') start = m.startTime;
    if (m.name === 'trainmem:render-end' && start !== null) {
      if (start >= t1) render += m.startTime - start;
      start = null;
    }
  }
  return [t1 - t0, render, t1 - t0 + render, t2 - t0, shown - t0, judged - t0, calls];
}

const env = await setup();
const rows = [];
for (const c of CASES) {
  const { page, context, problems } = await openPage(
    env.browser,
    `${env.base}/app/?lang=en&tab=${c.tab}${c.query ? `&${c.query}` : ''}`,
  );
  await ready(page);
  await page.waitForTimeout(1500); // the worker kept between keystrokes has its core
  const times = [];
  for (let i = 0; i < WARM + RUNS; i++) {
    const t = await page.evaluate(keystroke, { selector: c.input, value: c.value(i + 1) });
    if (i >= WARM) times.push(t);
  }
  const failed = await page.evaluate(() => document.querySelector('.tm .error')?.textContent);
  if (failed || problems.length)
    throw new Error(`${c.tab}: ${problems.join('; ') || `error box: ${failed}`}`);
  await context.close();
  const med = (k) => {
    const a = times
      .map((t) => t[k])
      .filter(Number.isFinite)
      .sort((x, y) => x - y);
    return a.length ? a[Math.floor(a.length / 2)] : NaN;
  };
  const p95 = (k) => {
    const a = times.map((t) => t[k]).sort((x, y) => x - y);
    return a[Math.min(a.length - 1, Math.floor(0.95 * a.length))];
  };
  rows.push([c.tab, c.input, med(0), med(1), med(2), p95(2), med(3), med(4), med(5), med(6)]);
}
await env.close();

const ms = (v) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : '—');
console.log(
  `calculator | input | keystroke task | answer's views | main thread | p95 | next frame | result on screen | verdict on screen | core calls  (medians of ${RUNS} keystrokes; goal: main thread ≤ 16 ms, one call on the peak tab)`,
);
for (const [tab, input, ...v] of rows)
  console.log(`${tab} | ${input} | ${v.slice(0, 7).map(ms).join(' | ')} | ${v[7]}`);
