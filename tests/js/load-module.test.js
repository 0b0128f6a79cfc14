// load({ module }): the core instantiated from a WebAssembly.Module the caller compiled (the
// page compiles trainmem.wasm before its script has arrived: web/app/boot.js). Each test file
// runs in its own process, so this file's load() is the first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';

// The single-file module carries the core as base64 (as tools/build-page.mjs splits it out).
const single = readFileSync(
  new URL('../../web/lib/wasm/trainmem_wasm.mjs', import.meta.url),
  'utf8',
);
const bytes = Buffer.from(single.match(/base64,([A-Za-z0-9+/=]+)/)[1], 'base64');

test('a value that is not a WebAssembly.Module is rejected, naming the field', async () => {
  await assert.rejects(
    load({ module: Promise.resolve(new Uint8Array(8)) }),
    (e) => e instanceof TrainmemError && e.code === 'invalid_type' && e.field === 'module',
  );
});

test('the instance comes from the given module, and later calls return it', async () => {
  const instantiate = WebAssembly.instantiate;
  const seen = [];
  WebAssembly.instantiate = (what, imports) => {
    seen.push(what);
    return instantiate(what, imports);
  };
  try {
    const module = await WebAssembly.compile(bytes);
    const tm = await load({ module: Promise.resolve(module) });
    assert.deepEqual(seen, [module]); // instantiated from our module, nothing fetched or decoded
    // 124,439,808 parameters (GPT-2 small) × 2 bytes (fp16 weights), no optimizer: the payload
    assert.equal(
      tm.checkpointSize({ model: { preset: 'gpt2' }, weightDtype: 'fp16', includeOptimizer: false })
        .breakdown.weights,
      124439808 * 2,
    );
    assert.equal(await load(), tm);
  } finally {
    WebAssembly.instantiate = instantiate;
  }
});
