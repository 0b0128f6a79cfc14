// A first-time visitor's five questions (Debian Chromium + playwright-core, one browser for the
// suite), each on a desktop (1280×900) and a phone (390×844), in English and Arabic: the answer
// is asserted where the visitor reads it, against figures from outside the code.
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

const strings = {
  en: JSON.parse(readFileSync(`${repo}web/app/i18n/en.json`, 'utf8')),
  ar: JSON.parse(readFileSync(`${repo}web/app/i18n/ar.json`, 'utf8')),
};
// Qwen2.5-0.5B's config.json as published on huggingface.co/Qwen/Qwen2.5-0.5B (the fields
// that shape the tensors, as copied into the model data file).
const qwenConfig = JSON.parse(readFileSync(`${repo}cpp/data/models/qwen2.5-0.5b.json`, 'utf8'));

/** Is the element's box inside the viewport (after the page scrolled it there)? */
const onScreen = (page, sel) =>
  page.$eval(sel, (e) => {
    e.scrollIntoView({ block: 'nearest' });
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight + 1 && r.right <= innerWidth + 1;
  });

// The GPU's memory: an 80 GB A100 holds 80 GiB = 85,899,345,920 B (NVIDIA's datasheet).
const A100 = 80 * 2 ** 30;

describe('first visit walkthrough', () => {
  for (const [width, height] of [
    [1280, 900],
    [390, 844],
  ]) {
    for (const lang of ['en', 'ar']) {
      const s = strings[lang];
      const open = (q) =>
        openPage(env.browser, `${env.base}/app/?lang=${lang}${q}`, {
          viewport: { width, height },
        });
      const where = `${width}×${height} ${lang}`;

      it(`${where}: LLaMA-2 7B full fine-tune on one 80 GB GPU does not fit; one click on LoRA makes it fit`, async () => {
        const { page, context, problems } = await open('');
        await ready(page);
        await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
        // AdamW under mixed precision keeps 16 B a parameter for weights, gradients and states
        // (Transformer Math 101): 6,738,415,616 × 16 = 107.8 GB before activations > 80 GiB.
        assert.equal(
          await page.textContent('#tm-verdict:not([aria-busy]) .verdict-badge'),
          s['peak.noFit'],
        );
        const used = Number(await page.getAttribute('#tm-verdict .verdict-value', 'data-bytes'));
        assert.ok(used > 6738415616 * 16 && used > A100, `${used}`);
        assert.ok(await onScreen(page, '#tm-verdict'));
        // the changes a one-GPU user would make are offered; micro-batch 1 is not (it is 1)
        // (the changes that keep the method come first; LoRA may be among "more changes")
        await page.waitForSelector('#tm-suggest [data-suggestion="lora"]', { state: 'attached' });
        await page.evaluate(() =>
          document.querySelectorAll('#tm-suggest details').forEach((d) => (d.open = true)),
        );
        const offered = await page.$$eval('#tm-suggest [data-suggestion]', (b) =>
          b.map((x) => x.getAttribute('data-suggestion')),
        );
        for (const k of ['lora', 'qlora', 'zero2-offload']) assert.ok(offered.includes(k), k);
        assert.ok(!offered.includes('micro-batch-1'), offered.join(','));
        // each shows its memory; those that fit come first
        assert.match(await page.textContent('#tm-suggest li:first-child'), /GB/);
        await page.click('#tm-suggest [data-suggestion="lora"]');
        await page.waitForFunction(() => /mt=lora/.test(location.search));
        await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
        assert.equal(
          await page.textContent('#tm-verdict:not([aria-busy]) .verdict-badge'),
          s['peak.fits'],
        );
        // LoRA keeps the frozen base: fp32 weights alone are 4 B × 6,738,415,616 = 26.95 GB,
        // under the GPU's 80 GiB with room for the adapters, their states and activations.
        const lora = Number(await page.getAttribute('#tm-verdict .verdict-value', 'data-bytes'));
        assert.ok(lora > 4 * 6738415616 && lora < A100, `${lora}`);
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'tm-verdict');
        assert.ok(await onScreen(page, '#tm-verdict'));
        assert.deepEqual(problems, []);
        await context.close();
      });

      it(`${where}: bert-large at 512 tokens on a 16 GB V100, global batch 32: the split and whether checkpointing pays`, async () => {
        const { page, context, problems } = await open(
          '&tab=accum&m=bert-large-uncased&gpu=v100-16gb&prec=amp-fp16&seq=512&gbs=32',
        );
        await ready(page);
        await page.waitForSelector('#tm-results .headline-value');
        // micro-batch × accumulation steps = the global batch (seed 000's definition)
        const split = await page.textContent('#tm-results .headline-value');
        const m = /(\d+) × (\d+)/.exec(split);
        assert.ok(m, split);
        assert.equal(Number(m[1]) * Number(m[2]), 32, split);
        assert.ok(await onScreen(page, '#tm-results .headline-value'));
        // the checkpointing comparison is stated in words, in the page's language: a verdict
        // (larger micro-batch or not, faster or slower), not "not considered"
        const verdict =
          lang === 'ar'
            ? /(تسمح|لا تسمح|لا تفيد) نقاط تحقّق التّدرّج|إلّا بنقاط تحقّق التّدرّج/
            : /checkpointing (lets|does not help)|only checkpointing/;
        assert.match(await page.textContent('#tm-results .notes'), verdict);
        assert.deepEqual(problems, []);
        await context.close();
      });

      it(`${where}: the Llama-3-8B AdamW bf16 checkpoint file`, async () => {
        const { page, context, problems } = await open('&tab=size&m=llama-3-8b&opt=adamw&wd=bf16');
        await ready(page);
        await page.waitForSelector('#tm-results .headline-value');
        // 8,030,261,248 parameters (Meta's Llama 3 8B model card) × (2 B bf16 weights + 2 × 2 B
        // Adam moments in the weights' dtype) = 48,181,567,488 B; the file adds its buffers and
        // pickle, well under 0.1 %.
        const bytes = Number(await page.getAttribute('#tm-results .headline-value', 'data-bytes'));
        assert.ok(bytes >= 48181567488 && bytes < 48181567488 * 1.001, `${bytes}`);
        assert.ok(await onScreen(page, '#tm-results .headline-value'));
        assert.match(await page.textContent('#tm-results .headline-value'), /48\.18 GB/);
        assert.deepEqual(problems, []);
        await context.close();
      });

      it(`${where}: GPT-2 checkpoints under a 2 GB activation budget, with their recompute cost, named by module`, async () => {
        const { page, context, problems } = await open(
          '&tab=place&cs=model&m=gpt2&st=chen-greedy&bud=2&fr=0',
        );
        await ready(page);
        await page.waitForSelector('#tm-results .headline-value');
        // within the budget the visitor set
        const peak = Number(await page.getAttribute('#tm-results .headline-value', 'data-bytes'));
        assert.ok(peak > 0 && peak <= 2e9, `${peak}`);
        // the recompute cost in % of forward + backward
        assert.match(await page.textContent('#tm-results .headline .chip'), /\d %/);
        // GPT-2's blocks are transformer.h.0 … transformer.h.11 (its state_dict's names)
        const list = await page.textContent('#tm-results .num-list');
        assert.match(list, /transformer\.h\.\d+(–h\.\d+)?/);
        assert.ok(await onScreen(page, '#tm-results .num-list'));
        assert.deepEqual(problems, []);
        await context.close();
      });

      it(`${where}: a pasted Qwen2.5-0.5B config.json shows what was read`, async () => {
        const { page, context, problems } = await open('&ms=config');
        await ready(page);
        await page.fill('#tm-config', JSON.stringify(qwenConfig.config, null, 2));
        await page.waitForSelector('#tm-config-parsed .parsed-params');
        // 24 layers (its config.json) and 494,032,768 parameters (its model card)
        assert.equal(
          await page.getAttribute('#tm-config-parsed .parsed-params', 'data-params'),
          '494032768',
        );
        assert.match(await page.textContent('#tm-config-parsed'), /qwen2/);
        assert.match(await page.textContent('#tm-config-parsed .parsed-layers'), /24/);
        assert.notEqual(await page.getAttribute('#tm-config', 'aria-invalid'), 'true');
        assert.ok(await onScreen(page, '#tm-config-parsed'));
        await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
        assert.deepEqual(problems, []);
        await context.close();
      });
    }
  }

  it('a bf16 run on a V100 offers fp16 mixed precision, and one click computes it', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?lang=en&gpu=v100-16gb&m=bert-large-uncased&prec=bf16`,
    );
    await ready(page);
    // a V100 (Volta) has no bf16: torch.cuda.is_bf16_supported() is False before Ampere
    await page.waitForSelector('#tm-verdict .way-out button');
    await page.click('#tm-verdict .way-out button');
    await page.waitForFunction(() => /prec=amp-fp16/.test(location.search));
    await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-badge');
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('axe-core finds no violation with the advanced inputs open (English and Arabic, light and dark)', async () => {
    const { page, context } = await openPage(env.browser, `${env.base}/app/?lang=en&lora=qlora`);
    await ready(page);
    await page.waitForSelector('#tm-loraRank');
    await page.evaluate(() => (document.querySelector('#tm-advanced').open = true));
    await page.waitForSelector('#tm-advanced[open] #tm-loraTargets');
    await page.evaluate(readFileSync(`${repo}node_modules/axe-core/axe.min.js`, 'utf8'));
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const lang of ['en', 'ar']) {
        await page.selectOption('#tm-lang', lang);
        await page.waitForFunction((l) => document.documentElement.lang === l, lang);
        const v = await page.evaluate(async () => {
          const r = await window.axe.run(document, { resultTypes: ['violations'] });
          return r.violations.map(
            (x) => `${x.id}: ${x.nodes.map((n) => n.target.join(' ')).join(', ')}`,
          );
        });
        assert.deepEqual(v, [], `${lang} ${scheme}`);
      }
    }
    await context.close();
  });
});
