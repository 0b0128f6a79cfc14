// The page's first module (build/wasm/page/, CMakeLists.txt trainmem_page_wasm) is the npm
// package's module without the functions that read a file's bytes: every other function must
// answer every golden request byte for byte as the full module does, and the snapshot
// functions must be an unknown function there, not a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

const pagePath = new URL('../../build/wasm/page/trainmem_page_wasm.mjs', import.meta.url);
const fullPath = new URL('../../web/lib/wasm/trainmem_wasm.mjs', import.meta.url);
const golden = JSON.parse(readFileSync(new URL('../fixtures/golden.json', import.meta.url)));

test('the page module answers like the full one, without the snapshot reader', async () => {
  assert.ok(existsSync(pagePath), 'build/wasm/page missing: run tools/build.sh wasm');
  const page = await (await import(pagePath.href)).default();
  const full = await (await import(fullPath.href)).default();
  const fullFunctions = JSON.parse(full.call('vocabulary', '{}')).result.functions;
  const pageFunctions = JSON.parse(page.call('vocabulary', '{}')).result.functions;
  assert.deepEqual(
    pageFunctions,
    fullFunctions.filter((f) => f !== 'readSnapshot' && f !== 'compareSnapshot'),
  );
  let compared = 0;
  for (const c of golden.cases) {
    if (!pageFunctions.includes(c.function)) continue;
    const request = JSON.stringify(c.request);
    assert.equal(page.call(c.function, request), full.call(c.function, request), c.name);
    compared++;
  }
  assert.ok(compared > 50, `compared ${compared} golden cases`);
  const env = JSON.parse(page.callBytes('readSnapshot', '{}', new Uint8Array([0x80, 2])));
  assert.equal(env.ok, false);
  assert.equal(env.error.code, 'unknown_function');
  // still usable afterwards
  assert.equal(JSON.parse(page.call('vocabulary', '{}')).ok, true);
});
