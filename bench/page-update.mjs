// Issue 7: "results update as you type (each update ≤ 16 ms)". Measures, in headless Chromium,
// one keystroke's update on each calculator: the input event's task (the core call and the new
// result view, synchronous, and the charts' redraw in a microtask), and the time until the
// frame after it has been produced (style, layout, paint, and any follow-up task).
// Run: node bench/page-update.mjs   (after `bash tools/build.sh wasm` and `bash tools/build-page.sh`)
import { setup, openPage, ready } from '../tests/e2e/helpers.js';

const WARM = 5;
const RUNS = Number(process.env.RUNS || 30);
// One text input per calculator, typed into with successive values, as a user would.
const CASES = [
  { tab: 'size', query: 'ms=params', input: '#tm-params', value: (i) => String(7e9 + i * 1e6) },
  { tab: 'peak', query: '', input: '#tm-seqLen', value: (i) => String(512 + i) },
  { tab: 'accum', query: '', input: '#tm-seqLen', value: (i) => String(512 + i) },
  { tab: 'place', query: '', input: '#tm-layers', value: (i) => String(32 + (i % 40)) },
];

const env = await setup();
const rows = [];
for (const c of CASES) {
  const { page, context, problems } = await openPage(
    env.browser,
    `${env.base}/app/?lang=en&tab=${c.tab}${c.query ? `&${c.query}` : ''}`,
  );
  await ready(page);
  const values = Array.from({ length: WARM + RUNS }, (_, i) => c.value(i + 1));
  const times = await page.evaluate(
    async ({ selector, values, warm }) => {
      const el = document.querySelector(selector);
      if (!el) throw new Error(`no ${selector}`);
      const out = [];
      const results = document.querySelector('#tm-results');
      for (let i = 0; i < values.length; i++) {
        // The new result on screen: the results view is rebuilt when the answer arrives, in the
        // input's task or, for calls made in a worker (accumulation), when the worker answers.
        let shown = NaN;
        const mo = new MutationObserver(() => {
          shown = performance.now();
          mo.disconnect();
        });
        mo.observe(results, { childList: true });
        const t0 = performance.now();
        el.value = values[i];
        el.dispatchEvent(new Event('input', { bubbles: true }));
        // The keystroke's task: the handler, which draws the charts too, and the microtasks it
        // queued. Work deferred to later tasks (the peak calculator's suggestions) is not in
        // it, but is in the time to the next frame.
        for (let k = 0; k < 4; k++) await null;
        const t1 = performance.now();
        await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0))); // next frame
        const t2 = performance.now();
        for (let w = 0; Number.isNaN(shown) && w < 200; w++)
          await new Promise((ok) => setTimeout(ok, 5));
        mo.disconnect();
        if (i >= warm) out.push([t1 - t0, t2 - t0, shown - t0]);
      }
      return out;
    },
    { selector: c.input, values, warm: WARM },
  );
  const failed = await page.evaluate(() => document.querySelector('.tm .error')?.textContent);
  if (failed || problems.length)
    throw new Error(`${c.tab}: ${problems.join('; ') || `error box: ${failed}`}`);
  await context.close();
  const pick = (k) => times.map((t) => t[k]).sort((a, b) => a - b);
  const q = (a, p) => a[Math.min(a.length - 1, Math.floor(p * a.length))];
  const script = pick(0);
  const frame = pick(1);
  const shown = pick(2);
  rows.push([
    c.tab,
    c.input,
    q(script, 0.5),
    q(script, 0.95),
    q(frame, 0.5),
    q(frame, 0.95),
    q(shown, 0.5),
  ]);
}
await env.close();

console.log(
  `calculator | input | keystroke task median | p95 | to next frame median | p95 | new result on screen median  (${RUNS} keystrokes each, budget 16 ms)`,
);
for (const [tab, input, a, b, c, d, e] of rows)
  console.log(
    `${tab} | ${input} | ${a.toFixed(1)} ms | ${b.toFixed(1)} ms | ${c.toFixed(1)} ms | ${d.toFixed(1)} ms | ${e.toFixed(1)} ms`,
  );
