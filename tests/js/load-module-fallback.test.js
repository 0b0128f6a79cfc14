// load({ module }) with a compile that failed (the page's early fetch went wrong): the core is
// loaded the usual way. Own file, so that this process's load() is the first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';

test('a rejected module promise falls back to the usual loading', async () => {
  const tm = await load({ module: Promise.reject(new Error('offline')) });
  // LLaMA-2 7B has 6,738,415,616 parameters (Touvron et al. 2023, and the HF config)
  assert.equal(tm.describeModel({ model: { preset: 'llama-2-7b' } }).params, 6738415616);
});
