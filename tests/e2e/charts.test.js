// The page's charts (web/app/charts.js, SVG) against the numbers beside them, in Debian
// Chromium: the breakdown's bars are as tall as the table's bytes on the chart's own axis, the
// GPU's memory line sits at the memory typed in, it follows the input and the colour scheme,
// and no label of any chart touches another or leaves its chart (both widths, both languages).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, openPage, ready } from './helpers.js';

let env;
before(async () => {
  env = await setup();
});
after(async () => {
  await env?.close();
});

const GiB = 2 ** 30;

/**
 * The chart's y axis read from its grid: [value, y] of each tick, the value parsed from the
 * label the chart shows. Returns px per unit and the y of 0.
 */
const axisOf = (page, index) =>
  page.evaluate((i) => {
    const svg = document.querySelectorAll('#tm-results svg.chart-svg')[i];
    const ticks = [...svg.querySelectorAll('.ytick')].map((g) => [
      Number(g.querySelector('text').textContent.replace(/,/g, '')),
      Number(g.querySelector('line').getAttribute('y1')),
    ]);
    const [[v0, y0], [v1, y1]] = [ticks[0], ticks[ticks.length - 1]];
    const px = (y0 - y1) / (v1 - v0);
    return { px, zero: y0 + v0 * px, n: ticks.length };
  }, index);

const capacityY = (page, index) =>
  page.evaluate(
    (i) =>
      Number(
        document
          .querySelectorAll('#tm-results svg.chart-svg')
          [i].querySelector('line.cap')
          .getAttribute('y1'),
      ),
    index,
  );

describe('charts', () => {
  it('the breakdown bars are the table’s bytes, the dashed line the GPU memory typed in', async () => {
    // GPT-2 on a custom 8 GB GPU (8e9 bytes = 7.45 GiB)
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&m=gpt2&gb=8`,
    );
    await ready(page);
    // the first result's charts follow it, after the next frame (charts.js sized())
    await page.waitForFunction(
      () => document.querySelectorAll('#tm-results svg.chart-svg').length === 2,
    ); // the breakdown and the timeline
    for (let i = 0; i < 2; i++) {
      const axis = await axisOf(page, i);
      assert.ok(axis.n >= 3, `chart ${i}: ${axis.n} ticks`);
      const y = await capacityY(page, i);
      assert.ok(Math.abs(y - (axis.zero - (8e9 / GiB) * axis.px)) <= 1, `chart ${i}: y ${y}`);
    }
    const axis = await axisOf(page, 0);
    const { bars, rows, legend, label } = await page.evaluate(() => {
      const svg = document.querySelector('#tm-results svg.chart-svg');
      const table = document.querySelector('#tm-results table.data.stack');
      return {
        label: svg.getAttribute('aria-label'),
        bars: [...svg.querySelectorAll('rect.bar')].map((r) => Number(r.getAttribute('height'))),
        legend: [...svg.parentElement.querySelectorAll('.chart-legend li')].map(
          (li) => li.textContent,
        ),
        rows: [...table.querySelectorAll('tbody tr')].map((tr) => ({
          label: tr.querySelector('th').textContent,
          // the bytes column, or the "(4,096 bytes)" of a part that is almost nothing
          bytes: Number(
            (tr.classList.contains('part-none')
              ? tr.textContent.match(/\(([\d,]+)/)[1]
              : tr.querySelectorAll('td')[2].textContent
            ).replace(/,/g, ''),
          ),
        })),
      };
    });
    // one segment per row of the table, in its order, as tall as its bytes on the axis
    assert.deepEqual(
      legend,
      rows.map((r) => r.label),
    );
    assert.equal(bars.length, rows.length);
    rows.forEach((r, k) => {
      const want = (r.bytes / GiB) * axis.px;
      assert.ok(Math.abs(bars[k] - want) <= 1, `${r.label}: ${bars[k]} px, want ${want}`);
    });
    assert.match(
      label,
      /^Stacked breakdown of memory: This setting [\d.]+ GiB; GPU memory 7\.451 GiB$/,
    );

    // typing another memory moves the line: 12 GiB, as the presets count (the custom size is
    // in GiB; the link's 8 GB, from before, was read as 8e9 bytes)
    await page.fill('#tm-gpuGiB', '12');
    await page.waitForFunction(() =>
      /GPU memory 12 GiB/.test(
        document.querySelector('#tm-results svg.chart-svg')?.getAttribute('aria-label'),
      ),
    );
    const after = await axisOf(page, 0);
    const y = await capacityY(page, 0);
    assert.ok(Math.abs(y - (after.zero - 12 * after.px)) <= 1, `after: y ${y}`);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('light and dark: the palette of style.css, with no redraw', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&m=gpt2&gb=8`,
    );
    await ready(page);
    const cap = await page.waitForSelector('#tm-results line.cap', { state: 'attached' });
    const stroke = () => cap.evaluate((e) => getComputedStyle(e).stroke);
    const weights = () =>
      page.$eval('#tm-results rect.bar[data-part="weights"]', (e) => getComputedStyle(e).fill);
    assert.equal(await stroke(), 'rgb(142, 68, 173)'); // --c-capacity #8e44ad
    assert.equal(await weights(), 'rgb(78, 121, 167)'); // --c-weights #4e79a7
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await stroke(), 'rgb(215, 166, 255)'); // the dark --c-capacity #d7a6ff
    assert.ok(await cap.evaluate((e) => e.isConnected)); // the same line, restyled
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('the pointer over a line chart reads out the nearest x and its values, inside the chart', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&m=gpt2&gb=8`,
      { viewport: { width: 390, height: 844 } },
    );
    await ready(page);
    await page.waitForFunction(
      () => document.querySelectorAll('#tm-results svg.chart-svg').length === 2,
    );
    const svg = (await page.$$('#tm-results svg.chart-svg'))[1]; // the timeline
    await svg.scrollIntoViewIfNeeded();
    const b = await svg.boundingBox();
    await page.mouse.move(b.x + b.width * 0.6, b.y + b.height / 2);
    const r = await svg.evaluate((e) => {
      const text = e.querySelector('.readout');
      const box = e.getBoundingClientRect();
      const tb = text.getBoundingClientRect();
      const title = e.querySelector('.ax-title').getBoundingClientRect();
      return {
        text: text.textContent,
        cursor: !!e.querySelector('line.cursor'),
        inside: tb.left >= box.left && tb.right <= box.right && tb.top >= box.top,
        clear: tb.left >= title.right,
      };
    });
    // "17: Backward pass 3.128": an event of the step, then each phase's GiB there
    assert.match(r.text, /^\u2068\d+\u2069: [A-Za-z ]+ \u2068[\d.]+\u2069/);
    assert.ok(r.cursor && r.inside && r.clear, JSON.stringify(r));
    await page.mouse.move(1, 1);
    assert.equal(await svg.evaluate((e) => e.querySelectorAll('.readout, .cursor').length), 0);
    assert.deepEqual(problems, []);
    await context.close();
  });

  for (const width of [360, 1280]) {
    for (const lang of ['en', 'ar']) {
      it(`${width} px ${lang}: no chart label touches another or leaves its chart`, async () => {
        const { page, context, problems } = await openPage(
          env.browser,
          `${env.base}/app/?lang=${lang}`,
          { viewport: { width, height: 900 } },
        );
        await ready(page);
        let seen = 0;
        for (const tab of ['size', 'peak', 'accum', 'place']) {
          await page.click(`#tm-tab-${tab}`);
          await page.waitForSelector(`#tm-tab-${tab}[aria-selected="true"]`);
          await page.waitForSelector('#tm-results svg.chart-svg');
          // the placement tab's frontier follows its solve in the worker
          if (tab === 'place')
            await page.waitForFunction(
              () => document.querySelectorAll('#tm-results svg.chart-svg').length >= 2,
            );
          const found = await page.evaluate(() => {
            const out = [];
            const svgs = [...document.querySelectorAll('#tm-results svg.chart-svg')];
            for (const [i, svg] of svgs.entries()) {
              const box = svg.getBoundingClientRect();
              const texts = [...svg.querySelectorAll('text')].map((t) => ({
                text: t.textContent,
                slanted: t.hasAttribute('transform'),
                r: t.getBoundingClientRect(),
              }));
              for (const a of texts) {
                if (
                  a.r.left < box.left - 0.5 ||
                  a.r.right > box.right + 0.5 ||
                  a.r.top < box.top - 0.5 ||
                  a.r.bottom > box.bottom + 0.5
                )
                  out.push(`chart ${i}: "${a.text}" leaves the chart`);
              }
              for (let j = 0; j < texts.length; j++)
                for (let k = j + 1; k < texts.length; k++) {
                  const [a, b] = [texts[j], texts[k]];
                  if (a.slanted && b.slanted) continue; // boxes of slanted text overlap; glyphs do not
                  const dx = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
                  const dy = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
                  if (dx > 0.5 && dy > 0.5) out.push(`chart ${i}: "${a.text}" on "${b.text}"`);
                }
            }
            return { out, n: svgs.length };
          });
          seen += found.n;
          assert.deepEqual(found.out, [], `${tab}`);
        }
        assert.ok(seen >= 6, `charts seen: ${seen}`);
        assert.deepEqual(problems, []);
        await context.close();
      });
    }
  }
});
