// The page's URL state (web/app/state.js): defaults are left out of links, and a link keeps
// meaning what it meant when it was made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaults, fromQuery, toQuery } from '../../web/app/state.js';

test('a first visit computes on the A100 80 GB preset, and the link stays empty', () => {
  const st = fromQuery('');
  assert.equal(st.gpu, 'a100-80gb');
  assert.equal(toQuery(st), '');
  // a link with only the language and the tab sets no input: today's defaults
  assert.equal(fromQuery('?lang=ar&tab=size').precision, '');
});

test('a custom GPU size round-trips through the link, in GiB as the presets count', () => {
  const st = { ...defaults(), gpu: '', gpuGiB: 24 };
  const q = toQuery(st);
  assert.equal(q, '?gpu=&gib=24&v=2');
  const back = fromQuery(q);
  assert.equal(back.gpu, '');
  assert.equal(back.gpuGiB, 24);
});

test('a link from before the preset default (a size in GB, no gpu) keeps its custom size', () => {
  const st = fromQuery('?gb=40&tab=peak');
  assert.equal(st.gpu, '');
  // 40 GB = 40 × 10^9 bytes = 37.252903 GiB (2^30 bytes)
  assert.equal(st.gpuGiB, 37.252903);
  assert.equal(fromQuery('?gpu=h100-80gb&gb=40').gpu, 'h100-80gb');
});

test('a link from before the automatic precision, checkpoint dtype and margin keeps them', () => {
  const old = fromQuery('?gpu=v100-16gb&opt=adam');
  assert.equal(old.precision, 'amp-bf16');
  assert.equal(old.weightDtype, 'fp16');
  assert.equal(old.marginPct, 0);
  const now = fromQuery(toQuery({ ...defaults(), gpu: 'v100-16gb' }));
  assert.equal(now.precision, '');
  assert.equal(now.weightDtype, '');
  assert.equal(now.marginPct, 5);
});

test('a link from before the method was its own input: lora=qlora', () => {
  assert.equal(fromQuery('?lora=qlora&lr=32').method, 'qlora');
  assert.equal(fromQuery('?lora=lora').method, 'lora');
  assert.equal(fromQuery('?v=2&mt=scratch').method, 'scratch');
});

test('a GPU preset round-trips', () => {
  const st = { ...defaults(), gpu: 'v100-16gb' };
  assert.equal(toQuery(st), '?gpu=v100-16gb&v=2');
  assert.equal(fromQuery(toQuery(st)).gpu, 'v100-16gb');
});
