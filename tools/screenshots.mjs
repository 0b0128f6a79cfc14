// Regenerates docs/screenshots/: the page's first viewport at 1280×900, 390×844 and 360×640, in
// English and Arabic, light and dark, once the verdict and the changes with their times are
// shown (answer-<width>-<lang>-<scheme>.png).
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
} finally {
  await env.close();
}
