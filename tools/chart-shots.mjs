// Screenshots of the page's charts for docs/screenshots/ (charts-<tab>-<width>-<lang>-<scheme>.png):
// the results from the first chart to the last, for the peak, accumulation and placement tabs,
// a representative set covering both widths, both languages and both schemes.
// Run: node tools/chart-shots.mjs [out dir]   (after `bash tools/build.sh wasm`)
import { mkdirSync } from 'node:fs';
import { setup, openPage, ready, repo } from '../tests/e2e/helpers.js';

const out = process.argv[2] || `${repo}docs/screenshots`;
const SHOTS = [
  ['peak', 1280, 'en', 'light'],
  ['peak', 1280, 'ar', 'dark'],
  ['peak', 390, 'ar', 'dark'],
  ['accum', 1280, 'ar', 'light'],
  ['accum', 390, 'en', 'dark'],
  ['accum', 390, 'ar', 'light'],
  ['place', 1280, 'en', 'dark'],
  ['place', 390, 'ar', 'light'],
];

mkdirSync(out, { recursive: true });
const env = await setup();
try {
  for (const [tab, width, lang, scheme] of SHOTS) {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=${lang}&tab=${tab}`,
      { viewport: { width, height: width > 600 ? 900 : 844 }, colorScheme: scheme },
    );
    await ready(page);
    // the placement tab's frontier follows its solve in the worker
    const charts = tab === 'place' ? 2 : 1;
    await page.waitForFunction(
      (n) => document.querySelectorAll('#tm-results svg.chart-svg').length >= n,
      charts,
    );
    const clip = await page.evaluate(() => {
      const holders = [...document.querySelectorAll('#tm-results .chart-holder')];
      const a = holders[0].getBoundingClientRect();
      const b = holders[holders.length - 1].getBoundingClientRect();
      return { x: 0, y: a.top + scrollY - 8, width: innerWidth, height: b.bottom - a.top + 16 };
    });
    const file = `${out}/charts-${tab}-${width}-${lang}-${scheme}.png`;
    await page.screenshot({ path: file, clip, fullPage: true });
    if (problems.length) throw new Error(`${file}: ${problems.join('; ')}`);
    console.log(file);
    await context.close();
  }
} finally {
  await env.close();
}
