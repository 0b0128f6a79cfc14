// The shared golden vectors (tests/fixtures/golden.json), run against the WASM build through
// the JS wrapper: the same expectations the Catch2 suite checks natively, but in wasm32.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';

const golden = JSON.parse(readFileSync(new URL('../fixtures/golden.json', import.meta.url)));
const tm = await load();

const lookup = (root, path) =>
  path.split('.').reduce((cur, part) => (cur == null ? undefined : cur[part]), root);

for (const c of golden.cases) {
  test(`golden: ${c.name}`, () => {
    const result = tm[c.function](c.request);
    for (const [path, want] of Object.entries(c.expect)) {
      const got = lookup(result, path);
      if (typeof want === 'number') {
        const tol = c.tolerance ?? 0;
        assert.ok(
          Math.abs(got - want) <= tol * Math.abs(want) + 1e-12,
          `${path}: got ${got}, want ${want} (tolerance ${tol})`,
        );
      } else {
        assert.deepEqual(got, want, path);
      }
    }
  });
}

for (const c of golden.errors) {
  test(`golden error: ${c.name}`, () => {
    assert.throws(
      () => tm[c.function](c.request),
      (e) =>
        e instanceof TrainmemError &&
        e.code === c.code &&
        e.field === c.field &&
        e.minimumBudgetBytes === c.minimumBudgetBytes,
    );
  });
}

test('the module keeps working after every error above', () => {
  const r = tm.checkpointSize({ model: { params: 100e6 }, optimizer: 'sgd', weightDtype: 'fp32' });
  assert.equal(r.totalBytes, 400e6); // seed 003: 1e8 x 4 bytes
});
