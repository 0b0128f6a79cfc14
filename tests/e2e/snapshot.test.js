// The page's "Compare with a measurement" (web/app/snapshot.js) in Debian Chromium: a committed
// snapshot (tests/fixtures/snapshots, written from a real PyTorch CPU loop by
// tools/snapshot_fixtures.py) dropped on the drop zone. Expected figures: the fixture's own
// torch numbers (*.expected.json). One browser for the suite.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setup, openPage, ready, shots, repo } from './helpers.js';

let env;
before(async () => {
  env = await setup();
});
after(async () => {
  await env?.close();
});

const fixture = (name) => `${repo}tests/fixtures/snapshots/${name}`;

async function drop(page, name) {
  const b64 = readFileSync(fixture(`${name}.pickle`)).toString('base64');
  await page.evaluate(
    ([data, fileName]) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], fileName, { type: 'application/octet-stream' }));
      const zone = document.querySelector('#tm-snapshot-drop');
      zone.dispatchEvent(
        new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }),
      );
      zone.dispatchEvent(
        new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }),
      );
    },
    [b64, `${name}.pickle`],
  );
}

describe('snapshot comparison on the page', () => {
  it('a dropped snapshot shows both curves, the peak, the difference per category and the cause', async () => {
    const { page, context, problems, fetched } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&ms=preset&preset=gpt2`,
    );
    await ready(page);
    assert.match(await page.textContent('#tm-snapshot-private'), /never leaves your browser/);
    // The page starts on the module without the snapshot reader; the full one comes with the
    // first snapshot (tools/build-page.mjs).
    assert.ok(fetched.includes('/app/dist/trainmem.wasm'), fetched.join(' '));
    assert.ok(!fetched.some((f) => /trainmem_full/.test(f)), fetched.join(' '));
    await drop(page, 'mlp_adam_keep_grads');
    await page.waitForSelector('.snap-causes li', { timeout: 15000 });
    assert.ok(fetched.includes('/app/dist/trainmem_full.wasm'), fetched.join(' '));
    const ex = JSON.parse(readFileSync(fixture('mlp_adam_keep_grads.expected.json'), 'utf8'));
    // The curves: the measured series and the predicted step, drawn on one chart.
    await page.waitForSelector('.snap-chart svg.chart-svg', { timeout: 15000 });
    const points = Number(await page.getAttribute('.snap-chart', 'data-points'));
    const predicted = Number(await page.getAttribute('.snap-chart', 'data-predicted'));
    assert.ok(points > 10, `measured points: ${points}`);
    assert.ok(predicted > 2, `predicted points: ${predicted}`);
    const legend = await page.textContent('.snap-chart');
    assert.match(legend, /Measured allocated/);
    assert.match(legend, /Predicted allocated/);
    // The peak: the figure the profiler gave, rounded to 512 B blocks, is at least its value.
    const peak = Number(await page.getAttribute('.snap-peak', 'data-peak-bytes'));
    assert.ok(peak >= ex.maxTotalAllocated);
    assert.match(await page.textContent('.snap-peak'), /step 1 of 3/);
    // The difference per category: a row each.
    for (const c of [
      'weights',
      'gradients',
      'optimizerState',
      'activations',
      'temporaries',
      'cacheFragmentation',
    ]) {
      assert.ok(await page.$(`.snap-totals tr[data-category="${c}"]`), c);
    }
    // The cause, translated from its code.
    const cause = await page.textContent('[data-cause="gradients_kept_between_steps"]');
    assert.match(cause, /Gradients kept between steps \(set_to_none=False\)/);
    await page.screenshot({ path: `${shots}/snapshot-en.png`, fullPage: true });
    // Arabic: the same panel in the other language after switching.
    await page.selectOption('#tm-lang', 'ar');
    await page.waitForSelector('[data-cause="gradients_kept_between_steps"]', { timeout: 15000 });
    assert.match(await page.textContent('[data-cause="gradients_kept_between_steps"]'), /التّدرّجات/);
    // A hostile file: an error naming the opcode, and the page keeps working.
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array([0x80, 4, 0x63, 0x2e])], 'evil.pickle'));
      document
        .querySelector('#tm-snapshot-drop')
        .dispatchEvent(
          new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }),
        );
    });
    // said in the page's language (the core's English words folded away under it)
    await page.waitForSelector('.snap-body [data-code="unsupported"]', { timeout: 15000 });
    const box = await page.textContent('.snap-body [data-code="unsupported"] .error-what');
    assert.match(box, /GLOBAL/);
    assert.match(box, /البايت \u20682\u2069/); // (the parameter, isolated)
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("a dropped trace of the user's model becomes the model of every calculator", async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&ms=preset&preset=gpt2&prec=fp32`,
    );
    await ready(page);
    // the U-Net of tests/fuzz/trace_seeds (python/trainmem_trace): no sequence length
    const text = readFileSync(`${repo}tests/fuzz/trace_seeds/unet.trace.json`, 'utf8');
    await page.evaluate((data) => {
      const dt = new DataTransfer();
      dt.items.add(new File([data], 'unet.trace.json', { type: 'application/json' }));
      document
        .querySelector('#tm-trace-drop')
        .dispatchEvent(
          new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }),
        );
    }, text);
    await page.waitForSelector('.trace-using', { timeout: 15000 });
    assert.match(await page.textContent('.trace-using'), /traced model UNetish/);
    // the results are the trace's: its assumption, its parameter count
    await page.waitForFunction(
      () => /trace of the model's own training step/.test(document.body.textContent),
      null,
      { timeout: 15000 },
    );
    // removed: back to the form's model
    await page.click('.trace-using button');
    await page.waitForFunction(() => !document.querySelector('.trace-using'), null, {
      timeout: 15000,
    });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('the control (set_to_none=True) names no such cause', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=peak&ms=preset&preset=gpt2`,
    );
    await ready(page);
    await drop(page, 'mlp_adam_set_to_none');
    await page.waitForSelector('.snap-totals', { timeout: 15000 });
    assert.equal(await page.$('[data-cause="gradients_kept_between_steps"]'), null);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
