// The page's URL state (web/app/state.js): defaults are left out of links, and a link keeps
// meaning what it meant when it was made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaults, fromQuery, toQuery } from '../../web/app/state.js';

test('a first visit computes on the A100 80 GB preset, and the link stays empty', () => {
  const st = fromQuery('');
  assert.equal(st.gpu, 'a100-80gb');
  assert.equal(toQuery(st), '');
});

test('a custom GPU size round-trips through the link', () => {
  const st = { ...defaults(), gpu: '', gpuGB: 24 };
  const q = toQuery(st);
  assert.equal(q, '?gpu=&gb=24');
  const back = fromQuery(q);
  assert.equal(back.gpu, '');
  assert.equal(back.gpuGB, 24);
});

test('a link from before the preset default (a size, no gpu) keeps its custom size', () => {
  const st = fromQuery('?gb=40&tab=peak');
  assert.equal(st.gpu, '');
  assert.equal(st.gpuGB, 40);
  assert.equal(fromQuery('?gpu=h100-80gb&gb=40').gpu, 'h100-80gb');
});

test('a GPU preset round-trips', () => {
  const st = { ...defaults(), gpu: 'v100-16gb' };
  assert.equal(toQuery(st), '?gpu=v100-16gb');
  assert.equal(fromQuery(toQuery(st)).gpu, 'v100-16gb');
});
