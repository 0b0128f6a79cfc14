// Multi-GPU parallelism on the page (Debian Chromium + playwright-core), one browser for the
// suite, in English and Arabic: the pipeline, context and expert inputs of the advanced section
// (shown as they apply, kept in the link, errors that lead to the input), the chart of the
// pipeline's stages against the table beside it, and the layout planner's table, whose layouts
// load into the peak-memory calculator.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setup, openPage, ready, repo } from './helpers.js';

let env;
before(async () => {
  env = await setup();
});
after(async () => {
  await env?.close();
});

const GiB = 2 ** 30;
// "12.34 GB" / "12.34 GiB" (Western digits in both languages) read from a cell's text.
const gibOf = (text) => Number(/([\d.,]+)\s*GiB/.exec(text)?.[1].replace(/,/g, ''));
const isShown = (page, sel) =>
  page.$eval(sel, (e) => /** @type {HTMLElement} */ (e).offsetParent !== null);

describe('parallelism', () => {
  for (const lang of ['en', 'ar']) {
    it(`${lang}: pipeline stages show the schedule, virtual stages follow interleaved 1F1B, the link keeps them`, async () => {
      const { page, context, problems } = await openPage(
        env.browser,
        `${env.base}/app/?lang=${lang}&v=2&gas=8`,
      );
      await ready(page);
      await page.evaluate(() => {
        /** @type {HTMLDetailsElement} */ (document.querySelector('#tm-advanced')).open = true;
      });
      // one stage: no schedule, no chunks per stage; LLaMA-2 has no experts
      assert.equal(await isShown(page, '#tm-pipelineParallel'), true);
      assert.equal(await isShown(page, '#tm-schedule'), false);
      assert.equal(await isShown(page, '#tm-virtualStages'), false);
      assert.equal(await isShown(page, '#tm-contextParallel'), true);
      assert.equal(await page.$('#tm-expertParallel'), null);
      // four stages typed: the schedule appears in place, the caret stays in the input
      await page.focus('#tm-pipelineParallel');
      await page.fill('#tm-pipelineParallel', '4');
      assert.equal(await isShown(page, '#tm-schedule'), true);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'tm-pipelineParallel');
      await page.selectOption('#tm-schedule', 'interleaved-1f1b');
      assert.equal(await isShown(page, '#tm-virtualStages'), true);
      await page.fill('#tm-virtualStages', '2');
      await page.waitForFunction(
        () => /pp=4/.test(location.search) && /ps=interleaved/.test(location.search),
      );
      // the stages' chart: one bar per stage
      await page.waitForSelector('#tm-stages svg.chart-svg');
      const bars = await page.$$eval(
        '#tm-stages svg rect.bar',
        (l) => new Set(l.map((r) => r.getAttribute('x'))).size,
      );
      assert.equal(bars, 4);
      assert.deepEqual(problems, []);
      // a reload keeps the inputs
      await page.reload();
      await ready(page);
      assert.equal(await page.inputValue('#tm-pipelineParallel'), '4');
      assert.equal(await page.inputValue('#tm-schedule'), 'interleaved-1f1b');
      await context.close();
    });

    it(`${lang}: the stages' bars are the table's memory, the binding stage is the largest, the line the GPU`, async () => {
      // LLaMA-2 7B on an A100 80 GB, 4 stages of 1F1B over 8 micro-batches
      const { page, context, problems } = await openPage(
        env.browser,
        `${env.base}/app/?lang=${lang}&v=2&gas=8&pp=4`,
      );
      await ready(page);
      await page.waitForSelector('#tm-stages svg.chart-svg');
      const rows = await page.$$eval('#tm-stages table.stages tbody tr', (trs) =>
        trs.map((tr) => ({
          rec: tr.classList.contains('rec'),
          memory: tr.querySelectorAll('td')[2].textContent,
        })),
      );
      assert.equal(rows.length, 4);
      const gib = rows.map((r) => gibOf(r.memory));
      // the binding stage (marked, and named above the chart) is the one with the most memory
      const most = gib.indexOf(Math.max(...gib));
      assert.equal(
        rows.findIndex((r) => r.rec),
        most,
      );
      const named = await page.textContent('#tm-stages .stage-binding');
      assert.ok(named.includes(String(most + 1)), named);
      // each bar's parts stack to its stage's memory on the chart's own axis
      const chart = await page.evaluate(() => {
        const svg = document.querySelector('#tm-stages svg.chart-svg');
        const ticks = [...svg.querySelectorAll('.ytick')].map((g) => [
          Number(g.querySelector('text').textContent.replace(/,/g, '')),
          Number(g.querySelector('line').getAttribute('y1')),
        ]);
        const byX = new Map();
        for (const r of svg.querySelectorAll('rect.bar')) {
          const x = Number(r.getAttribute('x'));
          byX.set(x, (byX.get(x) || 0) + Number(r.getAttribute('height')));
        }
        const cap = svg.querySelector('line.cap');
        return {
          ticks,
          heights: [...byX.entries()].sort((a, b) => a[0] - b[0]).map(([, hgt]) => hgt),
          cap: cap ? Number(cap.getAttribute('y1')) : null,
          label: svg.getAttribute('aria-label'),
        };
      });
      const [[v0, y0], [v1, y1]] = [chart.ticks[0], chart.ticks[chart.ticks.length - 1]];
      const px = (y0 - y1) / (v1 - v0);
      chart.heights.forEach((hgt, i) => assert.ok(Math.abs(hgt / px - gib[i]) < 0.02 + 0.5 / px));
      // the dashed line: the A100's 80 GiB (its preset's memoryBytes)
      assert.ok(Math.abs((y0 + v0 * px - chart.cap) / px - 80) < 0.5 / px + 0.01);
      assert.ok(chart.label.length > 20);
      assert.deepEqual(problems, []);
      await context.close();
    });
  }

  it('en: expert inputs only for a mixture of experts; an error leads to the input at fault', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&v=2&m=mixtral-8x7b&dp=8&ep=3`,
    );
    await ready(page);
    assert.ok(await page.$('#tm-expertParallel'));
    assert.ok(await page.$('#tm-expertTensorParallel'));
    // Mixtral has 8 experts: 3 does not divide them, and the core names expertParallel
    await page.waitForSelector('#tm-verdict .go-to-input');
    await page.evaluate(() => {
      /** @type {HTMLDetailsElement} */ (document.querySelector('#tm-advanced')).open = false;
    });
    await page.click('#tm-verdict .go-to-input');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'tm-expertParallel');
    assert.equal(await page.getAttribute('#tm-expertParallel', 'aria-invalid'), 'true');
    await page.fill('#tm-expertParallel', '4');
    await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('ar: too many stages for the model: the error is in Arabic and names the stages input', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=ar&v=2&gas=8&pp=64`,
    );
    await ready(page);
    await page.waitForSelector('#tm-verdict .go-to-input');
    assert.equal((await page.textContent('#tm-verdict .go-to-input')).trim(), 'مراحل خطّ الأنابيب');
    await page.click('#tm-verdict .go-to-input');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'tm-pipelineParallel');
    assert.deepEqual(problems, []);
    await context.close();
  });

  for (const lang of ['en', 'ar']) {
    it(`${lang}: plan my cluster lists layouts of all the GPUs, and one loads into peak memory`, async () => {
      // LLaMA-3 8B on 16 A100s, 8 per node, a global batch of 64 sequences of 4096 tokens
      const { page, context, problems } = await openPage(
        env.browser,
        `${env.base}/app/?lang=${lang}&v=2&tab=plan&m=llama-3-8b&gpus=16&gbs=64&seq=4096`,
      );
      await ready(page);
      await page.waitForSelector('table.layouts:not(.ruled-out) tbody tr');
      const rows = await page.$$eval('table.layouts:not(.ruled-out) tbody tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())),
      );
      assert.ok(rows.length >= 1);
      const int = (s) => Number(/\d[\d,]*/.exec(s)[0].replace(/,/g, ''));
      for (const r of rows) {
        // DP × TP × PP × CP is the cluster's 16 GPUs; micro-batch × count × DP the batch of 64
        assert.equal(int(r[0]) * int(r[1]) * int(r[2]) * int(r[3]), 16, r.join(' | '));
        const [mb, n] = r[5].split('×').map(int);
        assert.equal(mb * n * int(r[0]), 64, r.join(' | '));
        assert.ok(gibOf(r[7]) > 0 && gibOf(r[7]) <= 80, r[7]);
      }
      // step times ascend
      const times = rows.map((r) => Number(/[\d.]+/.exec(r[8])[0]));
      for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], times.join(' '));
      // the first layout, loaded: the peak tab with its parallel sizes, the same memory
      await page.click('table.layouts:not(.ruled-out) tbody tr:first-child .plan-load');
      await page.waitForFunction(() => !/tab=plan/.test(location.search));
      assert.equal(await page.getAttribute('#tm-tab-peak', 'aria-selected'), 'true');
      assert.equal(await page.inputValue('#tm-tensorParallel'), String(int(rows[0][1])));
      assert.equal(await page.inputValue('#tm-pipelineParallel'), String(int(rows[0][2])));
      await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-value');
      const peak = gibOf(await page.textContent('#tm-results .headline-value'));
      assert.ok(Math.abs(peak - gibOf(rows[0][7])) <= 0.011, `${peak} vs ${rows[0][7]}`);
      assert.deepEqual(problems, []);
      await context.close();
    });
  }

  for (const lang of ['en', 'ar'])
    it(`360 px ${lang}: the stages view with its inputs open does not scroll sideways`, async () => {
      const { page, context, problems } = await openPage(
        env.browser,
        `${env.base}/app/?lang=${lang}&v=2&gas=8&pp=4&ps=interleaved-1f1b&m=mixtral-8x7b&dp=8&ep=8`,
        { viewport: { width: 360, height: 780 } },
      );
      await ready(page);
      await page.waitForSelector('#tm-stages svg.chart-svg');
      assert.ok(await page.$eval('#tm-advanced', (d) => d.open));
      assert.equal(await isShown(page, '#tm-virtualStages'), true);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
      assert.equal(over, 0);
      assert.deepEqual(problems, []);
      await context.close();
    });

  it('axe-core finds no violation in the stages view and the plan view (English and Arabic, light and dark)', async () => {
    for (const [query, drawn] of [
      ['v=2&gas=8&pp=4&ps=interleaved-1f1b', '#tm-stages svg.chart-svg'],
      ['v=2&tab=plan&m=llama-3-8b&gpus=16&gbs=64&seq=4096', 'table.layouts'],
    ]) {
      const { page, context } = await openPage(env.browser, `${env.base}/app/?lang=en&${query}`);
      await ready(page);
      await page.waitForSelector(drawn);
      await page.evaluate(readFileSync(`${repo}node_modules/axe-core/axe.min.js`, 'utf8'));
      for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const lang of ['en', 'ar']) {
          await page.selectOption('#tm-lang', lang);
          await page.waitForFunction((l) => document.documentElement.lang === l, lang);
          await page.waitForSelector(drawn);
          const v = await page.evaluate(async () => {
            const r = await window.axe.run(document, { resultTypes: ['violations'] });
            return r.violations.map(
              (x) => `${x.id}: ${x.nodes.map((n) => n.target.join(' ')).join(', ')}`,
            );
          });
          assert.deepEqual(v, [], `${query} ${lang} ${scheme}`);
        }
      }
      await context.close();
    }
  });
});
