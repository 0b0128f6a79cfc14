// The first questions answered right, in English and Arabic (Debian Chromium + playwright-core,
// one browser for the suite). One test per finding of the newcomer audit: the method and the
// precision people decide on the first line, with suggestions that fit the method; the verdict's
// assumptions, each one click from its input, and no refused precision nobody chose; errors in
// the page's language with what to do; the glossary's Arabic; right-to-left code and diagrams;
// one meaning per number; worked examples that set their whole state; the layout; screen
// readers; one core call per verdict. Expected values are hand calculations from published
// figures (datasheets, parameter counts), never the page's own output.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, openPage, ready } from './helpers.js';
import { violations, prose } from '../js/fixtures/glossary.js';

let env;
before(async () => {
  env = await setup();
});
after(async () => {
  await env?.close();
});

const LANGS = ['en', 'ar'];
const LLAMA2_7B = 6738415616; // Llama-2-7b-hf's published parameter count

/** A page at a query, ready, its verdict shown. */
async function open(query, options = {}) {
  const o = await openPage(env.browser, `${env.base}/app/?${query}`, options);
  await ready(o.page);
  return o;
}
const verdict = (page) =>
  page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge, #tm-verdict .error');
// the changes of the newest answer (a rebuilt page keeps the last one, busy, until it comes)
const suggestions = async (page) => {
  await page.waitForSelector('#tm-verdict:not([aria-busy])');
  return page.$$eval('#tm-suggest [data-suggestion]', (b) => b.map((x) => x.dataset.suggestion));
};

describe('the first questions, answered right', () => {
  for (const lang of LANGS) {
    it(`${lang}: the method is on the first line, LoRA's base is 16-bit, and the changes fit the method`, async () => {
      const { page, context, problems } = await open(`lang=${lang}&gpu=rtx-4090&v=2`);
      assert.ok(await page.$('.ask #tm-method'), 'the method is a first-line input');
      assert.ok(await page.$('.ask #tm-precision'), 'so is the precision');
      // full fine-tuning of LLaMA-2 7B with AdamW on 24 GB: 16 B × 6.74e9 > 24 GiB
      await page.waitForSelector('#tm-suggest [data-suggestion]');
      let offered = await suggestions(page);
      assert.ok(offered.includes('bf16-checkpointing'), `plain bf16 + checkpointing: ${offered}`);
      assert.ok(offered.includes('lora') && offered.includes('qlora'), offered.join());
      await page.selectOption('#tm-method', 'lora');
      await page.waitForSelector('#tm-baseDtype');
      // PEFT users load the frozen base in bf16 (torch_dtype=torch.bfloat16)
      assert.equal(await page.inputValue('#tm-baseDtype'), '');
      assert.match(await page.textContent('#tm-baseDtype option[value=""]'), /bf16/);
      await page.waitForSelector('#tm-verdict [data-input="baseDtype"]');
      // the verdict says the base's dtype as computed: bf16 where the core loads it so (else
      // the precision's, said as such, by a core without lora.baseDtype)
      const base = await page.$('#tm-verdict [data-input="baseDtype"]');
      if ((await base.getAttribute('data-base')) === 'chosen')
        assert.match(await base.textContent(), /bf16/);
      else assert.match(await base.textContent(), /fp32/);
      await page.waitForFunction(() => document.querySelector('#tm-verdict [data-input="method"]'));
      await page.waitForTimeout(300);
      offered = await suggestions(page);
      // an adapter's optimizer state is small: no 8-bit Adam, no offload, no foreach change
      for (const id of ['adam-8bit', 'zero2-offload', 'for-loop', 'bf16', 'lora'])
        assert.ok(!offered.includes(id), `${id} offered with LoRA: ${offered}`);
      // from scratch: no adapters to train instead
      await page.selectOption('#tm-method', 'scratch');
      await page.waitForSelector('#tm-suggest [data-suggestion="bf16-checkpointing"]', {
        state: 'attached',
      });
      offered = await suggestions(page);
      assert.ok(!offered.includes('lora') && !offered.includes('qlora'), offered.join());
      assert.deepEqual(problems, []);
      await context.close();
    });

    it(`${lang}: the verdict states its assumptions, each one click from its input; a T4 is not refused bf16`, async () => {
      const { page, context, problems } = await open(`lang=${lang}`, {
        viewport: { width: 390, height: 844 },
      });
      await verdict(page);
      const inputs = await page.$$eval('#tm-verdict [data-input]', (b) =>
        b.map((x) => x.dataset.input),
      );
      for (const k of ['method', 'precision', 'optimizer', 'optImpl', 'checkpointing'])
        assert.ok(inputs.includes(k), `${k} stated: ${inputs}`);
      for (const k of ['attention', 'runtime', 'marginPct'])
        assert.ok(inputs.includes(k), `${k} stated: ${inputs}`);
      const top = (await page.$eval('#tm-verdict', (e) => e.getBoundingClientRect().top)) + 0;
      for (const key of ['precision', 'runtime', 'marginPct']) {
        await page.click(`#tm-verdict [data-input="${key}"]`);
        assert.equal(await page.evaluate(() => document.activeElement?.id), `tm-${key}`);
      }
      // the advanced inputs, opened, come after the answer: the verdict does not move
      await page.evaluate(() => window.scrollTo(0, 0));
      assert.ok(await page.$eval('#tm-advanced', (d) => d.open));
      const after = await page.$eval('#tm-verdict', (e) => e.getBoundingClientRect().top);
      assert.equal(Math.round(after), Math.round(top));
      // a T4 (Turing: no bf16 in its datasheet) computes in mixed fp16, and says so
      await page.selectOption('#tm-gpu', 't4');
      await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
      assert.equal(await page.$('#tm-verdict [data-code="unsupported"]'), null);
      assert.match(await page.textContent('#tm-verdict [data-input="precision"]'), /fp16/);
      assert.equal(await page.inputValue('#tm-precision'), '');
      assert.deepEqual(problems, []);
      await context.close();
    });

    it(`${lang}: errors say what is wrong and what to do in the page's language`, async () => {
      const { page, context, problems } = await open(`lang=${lang}&gpu=t4&prec=bf16&v=2`);
      await page.waitForSelector('#tm-verdict .error-what');
      const what = await page.textContent('#tm-verdict .error-what');
      const todo = await page.textContent('#tm-verdict .error-todo');
      if (lang === 'ar') {
        assert.match(what, /[\u0621-\u064a]{3}/, what);
        assert.doesNotMatch(prose(what), /has no bf16|use fp16/, what);
        assert.match(todo, /[\u0621-\u064a]{3}/);
        // the core's English words are folded away, marked as English
        assert.equal(await page.getAttribute('#tm-verdict .error-detail p', 'lang'), 'en');
      } else {
        assert.match(what, /t4 GPU has no bf16/);
      }
      // Arabic-Indic digits are numbers
      await page.fill('#tm-seqLen', '١٠٢٤');
      await page.waitForFunction(() => /seq=1024/.test(location.search));
      assert.equal(await page.getAttribute('#tm-seqLen', 'aria-invalid'), 'false');
      // a Hub id pasted where a config.json goes: named as such, with the known model offered
      await page.check('input[type="radio"][value="config"]');
      await page.fill('#tm-config', 'meta-llama/Llama-3.1-8B');
      await page.waitForSelector('#tm-results [data-code="invalid_json"] .way-out button');
      const box = await page.textContent('#tm-results [data-code="invalid_json"] .error-what');
      assert.match(box, /meta-llama\/Llama-3\.1-8B/);
      assert.match(box, /Hugging Face/);
      await page.click('#tm-results [data-code="invalid_json"] .way-out button');
      await page.waitForFunction(() => /m=llama-3\.1-8b/.test(location.search));
      // a file that is not a memory snapshot, in the comparison: said in the page's language
      await page.selectOption('#tm-gpu', 'a100-80gb');
      await page.selectOption('#tm-precision', '');
      await page.waitForSelector('#tm-snapshot-file');
      await page.setInputFiles('#tm-snapshot-file', {
        name: 'picture.png',
        mimeType: 'image/png',
        buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47]),
      });
      await page.waitForSelector('.snapshot .error-what');
      const snap = await page.textContent('.snapshot .error-what');
      if (lang === 'ar') (assert.match(snap, /pickle/), assert.match(snap, /[\u0621-\u064a]{3}/));
      else assert.match(snap, /not a pickle/);
      assert.deepEqual(problems, []);
      await context.close();
    });
  }

  it('ar: an error inside a pasted config.json says the inner error in Arabic', async () => {
    // a key twice: JSON.parse keeps the last one, the core refuses the text (error.in around
    // its JSON reader's error.json.duplicate, "n_layer appears twice in one object")
    const cfg =
      '{"model_type":"gpt2","n_layer":2,"n_layer":3,"n_embd":64,"n_head":2,"vocab_size":100,"n_positions":64}';
    const { page, context, problems } = await open(
      `lang=ar&v=2&ms=config&cfg=${encodeURIComponent(cfg)}`,
    );
    await page.waitForSelector('[data-code="invalid_json"] .error-what');
    const what = await page.textContent('[data-code="invalid_json"] .error-what');
    // ar.json's core.error.json.duplicate: "`{field}` appears twice in one object" in Arabic
    assert.match(what, /model\.config/);
    assert.match(what, /n_layer/);
    assert.match(what, /مرّتين في كائن واحد/);
    assert.doesNotMatch(what, /appears twice|object/);
    // the core's English words are folded away, marked as English
    const detail = await page.textContent('[data-code="invalid_json"] .error-detail p');
    assert.equal(detail, 'model.config: n_layer appears twice in one object');
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("ar: the page speaks the glossary's Arabic, with Arabic punctuation, in every part", async () => {
    const { page, context, problems } = await open('lang=ar&tab=accum');
    await verdict(page);
    await page.evaluate(() => document.querySelectorAll('details').forEach((d) => (d.open = true)));
    assert.equal(await page.textContent('#tm-ask-h'), 'هل تكفي ذاكرة الـGPU لتدريبي، وكم يستغرق؟');
    const texts = [];
    for (const tab of ['accum', 'size', 'place', 'peak']) {
      await page.click(`#tm-tab-${tab}`);
      await page.waitForSelector(`#tm-tab-${tab}[aria-selected="true"]`);
      await page.waitForSelector('#tm-results > *');
      await page.evaluate(() =>
        document.querySelectorAll('details').forEach((d) => (d.open = true)),
      );
      await page.waitForTimeout(200);
      texts.push(await page.evaluate(() => document.body.innerText));
    }
    const found = violations({ page: texts.join('\n') });
    assert.deepEqual(found, []);
    // Latin , ; ? beside Arabic words (code is isolated, numbers keep their commas)
    const latin = /[\u0621-\u064a][\u064b-\u0652]*[,;?]|[,;?] [\u0621-\u064a]/;
    const bad = texts
      .join('\n')
      .split('\n')
      .map(prose)
      .filter((l) => latin.test(l));
    assert.deepEqual(bad, []);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('ar: code stays whole right to left, the diagram arrows point along it, one arrow a line', async () => {
    const { page, context, problems } = await open('lang=ar');
    await page.waitForSelector('.device-numbers');
    // "torch.cuda.max_memory_reserved()": its "()" right of "torch", not before it
    const order = await page.evaluate(() => {
      const walker = document.createTreeWalker(document.querySelector('.device-numbers'), 4);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const at = n.textContent.indexOf('max_memory_reserved()');
        if (at < 0) continue;
        const range = document.createRange();
        const rect = (i) => {
          range.setStart(n, i);
          range.setEnd(n, i + 1);
          return range.getBoundingClientRect();
        };
        const start = n.textContent.lastIndexOf('torch', at);
        return { t: rect(start).left, paren: rect(at + 'max_memory_reserved('.length).left };
      }
      return null;
    });
    assert.ok(order && order.paren > order.t, JSON.stringify(order));
    // the placement diagram: layers left to right, forward → and backward ←
    await page.goto(`${env.base}/app/?lang=ar&tab=place&fr=0&v=2`);
    await page.waitForSelector('.plan-svg');
    const labels = await page.$$eval('.plan-svg .svg-label', (l) => l.map((x) => x.textContent));
    assert.ok(labels[0].includes('→') && !labels[0].includes('←'), labels[0]);
    assert.ok(labels[1].includes('←') && !labels[1].includes('→'), labels[1]);
    const xs = await page.$$eval('.plan-svg rect.node', (r) =>
      r.map((x) => Number(x.getAttribute('x'))),
    );
    assert.ok(
      xs.every((x, i) => i === 0 || x > xs[i - 1]),
      'layer 0 at the left',
    );
    // the article's formula beside the exact answer: one arrow, pointing along the line
    await page.click('#tm-tab-size');
    await page.waitForSelector('#tm-results .headline');
    const line = await page.evaluate(
      () =>
        [...document.querySelectorAll('#tm-results p')].find((p) => /[←→]/.test(p.textContent))
          ?.textContent || '',
    );
    assert.ok(line.includes('←') && !line.includes('→'), line);
    assert.deepEqual(problems, []);
    await context.close();
  });

  for (const lang of LANGS) {
    it(`${lang}: one meaning per number — file dtype, batch words, which memory, GiB, the margin`, async () => {
      const { page, context, problems } = await open(`lang=${lang}&tab=size`);
      await page.waitForSelector('#tm-results .headline');
      // the checkpoint file follows the training precision: mixed bf16 trains fp32 weights and
      // keeps AdamW's two moments in fp32: 12 B per parameter (+ AdamW's step per tensor)
      const bytes = async () => Number(await page.getAttribute('.headline-value', 'data-bytes'));
      assert.equal(await page.inputValue('#tm-weightDtype'), '');
      let b = await bytes();
      assert.ok(b >= LLAMA2_7B * 12 && b < LLAMA2_7B * 12 + 1e6, String(b));
      await page.selectOption('#tm-precision', 'bf16'); // pure bf16: 2 + 2 + 2 B
      await page.waitForFunction(
        (w) => Number(document.querySelector('.headline-value')?.dataset.bytes) < w,
        LLAMA2_7B * 7,
      );
      b = await bytes();
      assert.ok(b >= LLAMA2_7B * 6 && b < LLAMA2_7B * 6 + 1e6, String(b));
      // accumulation: 4 × 8 on 4 GPUs is one global batch of 128, in the headline and the figure
      await page.goto(`${env.base}/app/?lang=${lang}&tab=accum&am=forward&mb=4&gas=8&dp=4&v=2`);
      await page.waitForSelector('#tm-results .headline');
      assert.match(await page.textContent('#tm-results .headline'), /128/);
      assert.match(await page.textContent('.acc-svg .svg-label'), /128/);
      // the plans' peak says which memory it is
      await page.goto(`${env.base}/app/?lang=${lang}&tab=accum`);
      await page.waitForSelector('#tm-results table.plans');
      const head = await page.textContent('#tm-results table.plans thead');
      assert.match(head, lang === 'en' ? /allocated \+ CUDA context/ : /المحجوز للموتّرات/);
      // a custom size is in GiB, as the presets: 80 is the A100 80 GB's 80.00 GiB
      await page.goto(`${env.base}/app/?lang=${lang}&gpu=&gib=80&v=2`);
      await page.waitForSelector('#tm-verdict .verdict-capacity');
      assert.match(await page.textContent('#tm-verdict .verdict-capacity'), /80\.00 GiB/);
      // the safety margin is stated: GPT-2 fits an A100 with room; 5 % of 80 GiB = 4.00 GiB
      await page.goto(`${env.base}/app/?lang=${lang}&m=gpt2&seq=1024&v=2`);
      await page.waitForSelector('#tm-verdict .verdict-room');
      const room = await page.textContent('#tm-verdict .verdict-room');
      assert.match(room, /5 %/);
      assert.match(room, /4\.00 GiB/);
      assert.deepEqual(problems, []);
      await context.close();
    });

    it(`${lang}: worked examples near the top set their whole state, scroll to their explanation, cite the article`, async () => {
      const { page, context, problems } = await open(`lang=${lang}`, {
        viewport: { width: 1280, height: 900 },
      });
      const cards = await page.$eval('.examples', (e) => e.getBoundingClientRect().top);
      const calculators = await page.$eval('#tm-panel', (e) => e.getBoundingClientRect().top);
      assert.ok(cards < calculators, 'the cards come before the calculators');
      assert.ok(cards < 1400, `the cards at y = ${cards}`);
      await page.click('[data-example="bert-hf"]');
      await page.waitForSelector('#tm-example article');
      assert.equal(await page.inputValue('#tm-gpu'), 'v100-16gb');
      assert.equal(await page.inputValue('#tm-runtime'), 'pytorch-1.10-cuda');
      // its explanation is in view, with the article it comes from and its sources
      const box = await page.$eval('#tm-example article', (e) => e.getBoundingClientRect());
      assert.ok(box.top >= -1 && box.top < 900, `explanation at ${box.top}`);
      assert.match(await page.textContent('#tm-example cite'), /تراكم التّدرّج/);
      const links = await page.$$eval('#tm-example .ex-sources a', (a) => a.map((x) => x.href));
      assert.ok(
        links.some((u) => u.startsWith('https://huggingface.co/docs/transformers')),
        links.join(),
      );
      // the next example starts from the defaults: nothing of bert-large's V100 run carries over
      await page.click('[data-example="llama2-7b"]');
      await page.waitForSelector('#tm-tab-size[aria-selected="true"]');
      const st = await page.evaluate(() => new URLSearchParams(location.search));
      assert.equal(await page.inputValue('#tm-gpu'), 'a100-80gb');
      assert.equal(await page.inputValue('#tm-precision'), '');
      assert.equal(await page.inputValue('#tm-optimizer'), 'adamw');
      assert.ok(st);
      assert.ok(!/rt=|prec=|attn=/.test(page.url()), page.url());
      assert.deepEqual(problems, []);
      await context.close();
    });

    it(`${lang}: layout — whole GPU names, whole words, the embed dialog, the capacity label at 360 px`, async () => {
      for (const [w, hgt] of [
        [1280, 900],
        [390, 844],
      ]) {
        const { page, context } = await open(`lang=${lang}&tab=accum`, {
          viewport: { width: w, height: hgt },
        });
        // every GPU's name fits its picker (measured with the picker's own font)
        const clipped = await page.$$eval('#tm-gpu, #tm-preset, .fields-ask select', (sels) => {
          const ctx = document.createElement('canvas').getContext('2d');
          const out = [];
          for (const s of sels) {
            const cs = getComputedStyle(s);
            ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
            const room =
              s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 18;
            const all = s.id === 'tm-gpu' || s.id === 'tm-preset';
            for (const o of all ? [...s.options] : [s.options[s.selectedIndex]])
              if (ctx.measureText(o.text).width > room) out.push(`${s.id}: ${o.text}`);
          }
          return out;
        });
        assert.deepEqual(clipped, [], `${w}px`);
        // no word of a table header is broken over two lines
        await page.waitForSelector('#tm-results table.plans');
        const broken = await page.$$eval('#tm-results table.plans thead th', (ths) => {
          const out = [];
          for (const th of ths) {
            const node = th.firstChild;
            if (!node || node.nodeType !== 3 || th.getBoundingClientRect().width === 0) continue;
            const range = document.createRange();
            // (a hyphen or a slash may end a line: "Micro-" "batch", "samples/" "s")
            for (const m of node.textContent.matchAll(/[^\s/-]+/g)) {
              range.setStart(node, m.index);
              range.setEnd(node, m.index + m[0].length);
              const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
              if (tops.size > 1) out.push(m[0]);
            }
          }
          return out;
        });
        assert.deepEqual(broken, [], `${w}px`);
        await context.close();
      }
      // the embed dialog: no Copy button over a label
      const { page, context, problems } = await open(`lang=${lang}`);
      await page.click('#tm-embed-btn');
      await page.waitForSelector('dialog[open]');
      const overlaps = await page.$eval('dialog[open]', (d) => {
        const boxes = (sel) => [...d.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
        const hit = (a, b) =>
          a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        return boxes('button').flatMap((b) => boxes('label, textarea').filter((l) => hit(b, l)));
      });
      assert.deepEqual(overlaps, []);
      await context.close();
      // the capacity label at 360 px: beside the bar that rises past it, not over it
      const narrow = await open(`lang=${lang}`, { viewport: { width: 360, height: 640 } });
      await narrow.page.waitForSelector('#tm-results svg .cap-label');
      const over = await narrow.page.$eval('#tm-results .chart-holder svg', (svg) => {
        const label = svg.querySelector('.cap-label').getBoundingClientRect();
        return [...svg.querySelectorAll('rect.bar')].some((r) => {
          const b = r.getBoundingClientRect();
          return (
            label.left < b.right &&
            b.left < label.right &&
            label.top < b.bottom &&
            b.top < label.bottom
          );
        });
      });
      assert.equal(over, false);
      assert.deepEqual([...problems, ...narrow.problems], []);
      await narrow.context.close();
    });

    it(`${lang}: a screen reader hears the verdict once typing settles, numbers apart`, async () => {
      const { page, context, problems } = await open(`lang=${lang}`);
      await verdict(page);
      assert.equal(await page.getAttribute('#tm-verdict-live', 'aria-live'), 'polite');
      await page.waitForFunction(() => document.querySelector('#tm-verdict-live').textContent);
      // a burst of keystrokes: the live region is written once, after the last
      const writes = await page.evaluate(async () => {
        const live = document.querySelector('#tm-verdict-live');
        let n = 0;
        new MutationObserver(() => n++).observe(live, {
          childList: true,
          characterData: true,
          subtree: true,
        });
        const input = document.querySelector('#tm-seqLen');
        for (const v of ['600', '700', '800', '900']) {
          input.value = v;
          input.dispatchEvent(new Event('input', { bubbles: true }));
          await new Promise((ok) => setTimeout(ok, 100));
        }
        await new Promise((ok) => setTimeout(ok, 1500));
        return n;
      });
      assert.equal(writes, 1);
      // the verdict's figure as read: "147.32 GB, 137.20 GiB", not "147.32 GB137.20 GiB"
      const read = await page.$eval('#tm-verdict .verdict-value', (e) => {
        const c = e.cloneNode(true);
        c.querySelectorAll('[aria-hidden="true"]').forEach((x) => x.remove());
        return c.textContent;
      });
      assert.match(read, /GB[,،] \d/);
      assert.deepEqual(problems, []);
      await context.close();
    });
  }

  for (const lang of LANGS)
    it(`${lang}: one core call per verdict — a keystroke on the peak tab asks the core once`, async () => {
      const { page, context, problems } = await open(`lang=${lang}`);
      await verdict(page);
      // the worker kept between keystrokes has its core once the first changes have come
      await page.waitForSelector('#tm-suggest [data-suggestion]');
      const calls = await page.evaluate(async () => {
        const before = performance
          .getEntriesByType('mark')
          .filter((m) => m.name.startsWith('trainmem:call')).length;
        const input = document.querySelector('#tm-seqLen');
        input.value = '640';
        input.dispatchEvent(new Event('input', { bubbles: true }));
        await new Promise((ok) => setTimeout(ok, 1500));
        return performance
          .getEntriesByType('mark')
          .filter((m) => m.name.startsWith('trainmem:call'))
          .slice(before)
          .map((m) => m.name);
      });
      assert.deepEqual(calls, ['trainmem:call advise']);
      assert.deepEqual(problems, []);
      await context.close();
    });
});
