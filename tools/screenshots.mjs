// Regenerates docs/screenshots/: the page's first viewport at 1280×900, 390×844 and 360×640, in
// English and Arabic, light and dark, once the verdict and the changes with their times are
// shown (answer-<width>-<lang>-<scheme>.png); and a vision network's inputs (the image size and
// the classes instead of the sequence length): ResNet-50 with its verdict at 1280×900 and
// 390×844 (vision-<width>-<lang>-<scheme>.png).
// Run: node tools/screenshots.mjs (builds the page bundle when a source is newer).
import { setup, openPage, ready, repo } from '../tests/e2e/helpers.js';

const env = await setup();
try {
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
        const file = `${repo}docs/screenshots/answer-${w}-${lang}-${scheme}.png`;
        await page.screenshot({ path: file });
        console.log(file);
        await context.close();
      }
  const vision = 'v=2&ms=preset&m=torchvision%2Fresnet50&gpu=v100-16gb&mb=32&img=256&nc=10';
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
        const file = `${repo}docs/screenshots/vision-${w}-${lang}-${scheme}.png`;
        await page.screenshot({ path: file });
        console.log(file);
        await context.close();
      }
} finally {
  await env.close();
}
