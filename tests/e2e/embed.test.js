// Embedding: the <trainmem-calculator> element inside a foreign page (another origin, with its
// own strict CSP), the iframe mode, and the page's "copy embed code" dialog.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { setup, openPage, shots } from './helpers.js';

let env;
let foreign; // a second server = a different origin, like a documentation site
let foreignBase;
const pages = new Map();
const policies = new Map(); // path -> a page's own Content-Security-Policy

before(async () => {
  env = await setup();
  foreign = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const body = pages.get(path);
    if (!body) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy':
        policies.get(path) ||
        `default-src 'self'; script-src 'self' ${env.base} 'wasm-unsafe-eval'; style-src 'self' ${env.base}; connect-src ${env.base} data:; frame-src ${env.base}; img-src data:`,
    });
    res.end(body);
  });
  await new Promise((ok) => foreign.listen(0, '127.0.0.1', ok));
  foreignBase = `http://127.0.0.1:${foreign.address().port}`;
});
after(async () => {
  await new Promise((ok) => foreign?.close(ok));
  await env?.close();
});

describe('embedding', () => {
  it('a host whose CSP blocks the core gets a message saying so, not "Failed to fetch"', async () => {
    // connect-src without trainmem's origin: the element's script runs, its .wasm fetch is blocked
    pages.set(
      '/strict.html',
      `<!doctype html><html lang="en"><head><title>Strict docs</title>
<script type="module" src="${env.base}/app/dist/element.js"></script></head>
<body><main><trainmem-calculator id="c" calculator="size" lang="en"></trainmem-calculator></main></body></html>`,
    );
    policies.set(
      '/strict.html',
      `default-src 'self'; script-src 'self' ${env.base}; style-src 'self' ${env.base}; connect-src 'self'`,
    );
    const { page, context } = await openPage(env.browser, `${foreignBase}/strict.html`);
    await page.waitForFunction(
      () => !!document.querySelector('#c')?.shadowRoot?.querySelector('[role="alert"]'),
      null,
      { timeout: 15000 },
    );
    const text = await page.$eval(
      '#c',
      (el) => el.shadowRoot.querySelector('[role="alert"]').textContent,
    );
    assert.match(text, /Content-Security-Policy/);
    assert.doesNotMatch(text, /Failed to fetch/);
    await context.close();
  });

  it('the custom element works from one script tag on another origin (Arabic, chosen inputs, worked example)', async () => {
    pages.set(
      '/doc.html',
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Docs</title><link rel="icon" href="data:,">
<script type="module" src="${env.base}/app/dist/element.js"></script></head>
<body><main><h1>Our docs</h1>
<trainmem-calculator id="a" calculator="checkpoint-size" example="sgd-vs-adam" lang="ar" inputs="params,optimizer"></trainmem-calculator>
<trainmem-calculator id="b" calculator="size" lang="en" state="ms=params&amp;p=1000000000&amp;opt=sgd&amp;wd=fp32"></trainmem-calculator>
</main></body></html>`,
    );
    const { page, context, problems } = await openPage(env.browser, `${foreignBase}/doc.html`);
    await page.waitForSelector('#a .tm[data-ready="1"]');
    await page.waitForSelector('#b .tm[data-ready="1"]');
    // seed 003: 100 M params, Adam, bf16 → 1e8 × 3 × 2 = 600,000,000 bytes
    assert.equal(Number(await page.getAttribute('#a .headline-value', 'data-bytes')), 6e8);
    assert.equal(
      await page.$eval('#a', (el) => el.shadowRoot.querySelector('.tm').getAttribute('dir')),
      'rtl',
    );
    assert.match(await page.textContent('#a #tm-example'), /100,000,000 × 1 × 4 = 400,000,000/);
    // only the inputs asked for
    const inputs = await page.$eval('#a', (el) =>
      [...el.shadowRoot.querySelectorAll('input, select, textarea')]
        .map((e) => e.id)
        .filter(Boolean),
    );
    assert.deepEqual(inputs.sort(), ['tm-lang', 'tm-optimizer', 'tm-params']);
    // state attribute, parsed by the page's URL schema: 1e9 × 1 copy × 4 bytes (SGD, fp32)
    assert.equal(Number(await page.getAttribute('#b .headline-value', 'data-bytes')), 4e9);
    // the host page's URL is not touched
    assert.equal(new URL(page.url()).search, '');
    await page.screenshot({ path: `${shots}/embed-element.png`, fullPage: true });
    // requests go to the doc site and to trainmem's own origin only
    assert.deepEqual(
      problems.filter((p) => !p.startsWith(`foreign request: ${env.base}/`)),
      [],
    );
    await context.close();
  });

  it('the iframe mode and the "copy embed code" dialog', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&tab=size&ms=params&opt=sgd&wd=fp32&p=1000000000`,
    );
    await page.waitForSelector('.tm[data-ready="1"]');
    await page.click('#tm-embed-btn');
    await page.waitForSelector('dialog[open]');
    const elementCode = await page.inputValue('#tm-embed-element');
    const iframeCode = await page.inputValue('#tm-embed-iframe');
    assert.match(
      elementCode,
      /<script type="module" src="http:\/\/127\.0\.0\.1:\d+\/app\/dist\/element\.js"><\/script>/,
    );
    assert.match(
      elementCode,
      /<trainmem-calculator calculator="size" lang="en" state="[^"]*opt=sgd/,
    );
    assert.match(iframeCode, /<iframe src="http:\/\/127\.0\.0\.1:\d+\/app\/\?embed=1/);
    await page.screenshot({ path: `${shots}/embed-dialog.png` });
    await page.keyboard.press('Escape');
    // both snippets work as given, pasted into a foreign page
    pages.set(
      '/snippets.html',
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Snippets</title><link rel="icon" href="data:,"></head><body>${elementCode.replace(/ style="border:0"/, '')}${iframeCode.replace(/ style="border:0"/, '')}</body></html>`,
    );
    const foreignPage = await openPage(env.browser, `${foreignBase}/snippets.html`);
    await foreignPage.page.waitForSelector('trainmem-calculator .tm[data-ready="1"]');
    assert.equal(
      Number(
        await foreignPage.page.getAttribute('trainmem-calculator .headline-value', 'data-bytes'),
      ),
      4e9,
    );
    const frame = foreignPage.page.frames().find((f) => f.url().includes('embed=1'));
    assert.ok(frame, 'iframe loaded');
    await frame.waitForSelector('.tm[data-ready="1"]');
    assert.equal(Number(await frame.getAttribute('.headline-value', 'data-bytes')), 4e9);
    assert.equal(await frame.$('#tm-embed-btn'), null); // no page chrome in iframe mode
    assert.deepEqual(
      [
        ...problems,
        ...foreignPage.problems.filter((p) => !p.startsWith(`foreign request: ${env.base}/`)),
      ],
      [],
    );
    await foreignPage.context.close();
    await context.close();
  });
});
