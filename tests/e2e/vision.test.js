// Vision networks on the page: a torchvision preset and a pasted Hugging Face ViT config get a
// verdict (no sequence length asked, none sent: an image network refuses it), with the image
// size and the classes as inputs; a larger image gives a larger peak. Expected directions come
// from the shapes (activations grow with the pixels), not from the page's own output.
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

// google/vit-base-patch16-224's config.json (huggingface.co/google/vit-base-patch16-224),
// the fields the core reads, with two labels instead of ImageNet's 1000
const VIT = JSON.stringify({
  architectures: ['ViTForImageClassification'],
  model_type: 'vit',
  hidden_size: 768,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  intermediate_size: 3072,
  hidden_act: 'gelu',
  image_size: 224,
  patch_size: 16,
  num_channels: 3,
  qkv_bias: true,
  id2label: { 0: 'cat', 1: 'dog' },
});

/** The verdict's bytes once it has settled, or the error it shows. */
async function verdictBytes(page) {
  await page.waitForSelector('#tm-verdict:not([aria-busy]) .verdict-value, #tm-verdict .error');
  const err = await page.$('#tm-verdict .error');
  assert.equal(err ? await err.textContent() : null, null);
  return Number(await page.getAttribute('#tm-verdict .verdict-value', 'data-bytes'));
}

/** Types a size and waits for a verdict other than `before`. */
async function typeAndWait(page, selector, value, before) {
  await page.fill(selector, value);
  await page.waitForFunction(
    (b) => {
      const v = document.querySelector('#tm-verdict:not([aria-busy]) .verdict-value');
      return v && Number(v.getAttribute('data-bytes')) !== b;
    },
    before,
    { timeout: 15000 },
  );
  return verdictBytes(page);
}

describe('vision networks on the page', () => {
  it('torchvision ResNet-50: a verdict, the image size and classes asked, no sequence length', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?v=2&lang=en&tab=peak&ms=preset&m=torchvision%2Fresnet50&gpu=rtx-4090&mb=32`,
    );
    await ready(page);
    assert.equal(await page.$('#tm-seqLen'), null, 'an image network reads no tokens');
    assert.ok(await page.$('#tm-imageSize'));
    assert.ok(await page.$('#tm-numClasses'));
    const at224 = await verdictBytes(page);
    assert.ok(at224 > 0);
    // 448 px: four times the pixels, so every activation four times; the peak grows
    const at448 = await typeAndWait(page, '#tm-imageSize', '448', at224);
    assert.ok(at448 > at224 * 1.5, `${at448} vs ${at224}`);
    await page.waitForURL(/img=448/); // the address follows the input after its debounce
    // back to a text model: the sequence length returns, the image inputs go
    await page.selectOption('#tm-preset', 'gpt2');
    await page.waitForSelector('#tm-seqLen');
    assert.equal(await page.$('#tm-imageSize'), null);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('a pasted HF ViT config (Arabic page): a verdict, and the image size changes it', async () => {
    const { page, context, problems } = await openPage(
      env.browser,
      `${env.base}/app/?v=2&lang=ar&tab=peak&ms=config&cfg=${encodeURIComponent(VIT)}&gpu=rtx-4090&mb=16`,
    );
    await ready(page);
    assert.equal(await page.$('#tm-seqLen'), null);
    const at224 = await verdictBytes(page);
    // 384 px with 16 px patches: 577 tokens instead of 197, attention's scores ~8.6 times
    const at384 = await typeAndWait(page, '#tm-imageSize', '384', at224);
    assert.ok(at384 > at224, `${at384} vs ${at224}`);
    // an image size that is no multiple of the patch: the core's error, named at the input
    await page.fill('#tm-imageSize', '230');
    await page.waitForSelector('#tm-verdict .error');
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('the worked examples of ViT-B/16, Whisper-small and ResNet-50 set their inputs and answer', async () => {
    const { page, context, problems } = await openPage(env.browser, `${env.base}/app/?lang=en`);
    await ready(page);
    // (card, the inputs it shows: an image network's size, or none for Whisper's fixed 30 s)
    const cards = [
      ['vit-b16-finetune', '#tm-imageSize'],
      ['whisper-small-finetune', null],
      ['resnet50-scratch', '#tm-numClasses'],
    ];
    for (const [id, shown] of cards) {
      await page.click(`[data-example="${id}"]`);
      await page.waitForSelector('#tm-example article ol li');
      // the recipe's line and its three runs, each with bytes, none with an error
      const steps = await page.$$eval('#tm-example ol li', (ls) => ls.map((l) => l.textContent));
      assert.equal(steps.length, 4, `${id}: ${steps}`);
      for (const s of steps.slice(1)) assert.match(s, /GB/, `${id}: ${s}`);
      assert.equal(await page.$('#tm-example ol li .muted'), null, `${id}: an error`);
      assert.equal(await page.$('#tm-seqLen'), null, `${id}: no sequence length`);
      if (shown) assert.ok(await page.$(shown), `${id}: ${shown}`);
      await verdictBytes(page);
    }
    // ResNet-50 from scratch with SGD and momentum: at least weights, gradients and the
    // momentum buffer, 12 bytes for each of the 25,557,032 parameters (torchvision's count)
    assert.ok((await verdictBytes(page)) > 12 * 25557032);
    assert.equal(await page.inputValue('#tm-method'), 'scratch');
    // the SDXL card trains LoRA adapters (not the whole UNet)
    await page.click('[data-example="sdxl-lora-24gb"]');
    await page.waitForSelector('#tm-loraRank');
    assert.equal(await page.inputValue('#tm-method'), 'lora');
    assert.deepEqual(problems, []);
    await context.close();
  });
});
