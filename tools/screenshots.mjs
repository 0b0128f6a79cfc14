// Regenerates docs/screenshots/: the page's first viewport at 1280×900, 390×844 and 360×640, in
// English and Arabic, light and dark, once the verdict and the changes with their times are
// shown (answer-<width>-<lang>-<scheme>.png); and a vision network's inputs (the image size and
// the classes instead of the sequence length): ResNet-50 with its verdict at 1280×900 and
// 390×844 (vision-<width>-<lang>-<scheme>.png).
// Multi-GPU parallelism: the pipeline's stages under the peak (LLaMA-2 7B, 4 stages of 1F1B,
// the advanced inputs open; stages-…) and the layout planner (LLaMA-3 8B on 16 A100s;
// plan-…), at 1280×900 and 390×844.
// Run: node tools/screenshots.mjs (builds the page bundle when a source is newer);
// `--only answer|vision|parallel` takes one set, `--out DIR` writes there instead.
import { mkdirSync } from 'node:fs';
import { setup, openPage, ready, repo } from '../tests/e2e/helpers.js';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const only = arg('--only');
const out = arg('--out') || `${repo}docs/screenshots`;
mkdirSync(out, { recursive: true });
const wanted = (set) => !only || only === set;

// The parallel views: a page scrolled to the view (selector) once it is drawn.
const PARALLEL = [
  ['stages', 'v=2&gas=8&pp=4', '#tm-advanced', '#tm-stages svg.chart-svg'],
  ['stages-chart', 'v=2&gas=8&pp=4', '#tm-stages', '#tm-stages svg.chart-svg'],
  [
    'plan-inputs',
    'v=2&tab=plan&m=llama-3-8b&gpus=16&gbs=64&seq=4096',
    '#tm-panel',
    'table.layouts',
  ],
  ['plan', 'v=2&tab=plan&m=llama-3-8b&gpus=16&gbs=64&seq=4096', '#tm-results', 'table.layouts'],
];

async function parallelShots() {
  for (const [name, query, view, drawn] of PARALLEL)
    for (const [w, hgt] of [
      [1280, 900],
      [390, 844],
    ])
      for (const lang of ['en', 'ar'])
        for (const scheme of ['light', 'dark']) {
          const url = `${env.base}/app/?lang=${lang}&${query}`;
          const { page, context } = await openPage(env.browser, url, {
            viewport: { width: w, height: hgt },
            colorScheme: scheme,
          });
          await ready(page);
          await page.waitForSelector(drawn);
          await page.evaluate((sel) => {
            const d = /** @type {HTMLDetailsElement | null} */ (document.querySelector(sel));
            if (d instanceof HTMLDetailsElement) d.open = true;
            d?.scrollIntoView({ block: 'start' });
          }, view);
          await page.waitForTimeout(300);
          const file = `${out}/${name}-${w}-${lang}-${scheme}.png`;
          await page.screenshot({ path: file });
          console.log(file);
          await context.close();
        }
}

const env = await setup();
try {
  if (wanted('parallel')) await parallelShots();
  if (wanted('answer'))
    for (const [w, hgt] of [
      [1280, 900],
      [390, 844],
      [360, 640],
    ])
      for (const lang of ['en', 'ar'])
        for (const scheme of ['light', 'dark']) {
          const { page, context } = await openPage(env.browser, `${env.base}/app/?lang=${lang}`, {
            viewport: { width: w, height: hgt },
            colorScheme: scheme,
          });
          await ready(page);
          await page.waitForSelector('#tm-suggest .sug-time');
          await page.waitForTimeout(300);
          const file = `${out}/answer-${w}-${lang}-${scheme}.png`;
          await page.screenshot({ path: file });
          console.log(file);
          await context.close();
        }
  const vision = 'v=2&ms=preset&m=torchvision%2Fresnet50&gpu=v100-16gb&mb=32&img=256&nc=10';
  if (wanted('vision'))
    for (const [w, hgt] of [
      [1280, 900],
      [390, 844],
    ])
      for (const lang of ['en', 'ar'])
        for (const scheme of ['light', 'dark']) {
          const url = `${env.base}/app/?lang=${lang}&${vision}`;
          const { page, context } = await openPage(env.browser, url, {
            viewport: { width: w, height: hgt },
            colorScheme: scheme,
          });
          await ready(page);
          await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-value');
          await page.waitForTimeout(300);
          const file = `${out}/vision-${w}-${lang}-${scheme}.png`;
          await page.screenshot({ path: file });
          console.log(file);
          await context.close();
        }
} finally {
  await env.close();
}
