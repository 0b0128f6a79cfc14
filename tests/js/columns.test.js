// Placement chains in columnar form through the JS API: `chain.layers` as one array per field,
// typed arrays or arrays of numbers. Expected: the answer of the same chain in the
// array-of-objects form (deep-equal), and errors that name the column and the value.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { TrainmemError, load } from '../../web/lib/index.js';

let tm;
before(async () => {
  tm = await load();
});

const throwsCode = (fn, code, field) =>
  assert.throws(fn, (e) => {
    assert.ok(e instanceof TrainmemError, `not a TrainmemError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (field !== undefined) assert.equal(e.field, field, e.message);
    return true;
  });

function lcg(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}
const GiB = 2 ** 30;
// Heterogeneous layers with fractional costs and sizes above 4 GiB.
function chain(n, seed) {
  const r = lcg(seed);
  const layers = [];
  for (let i = 0; i < n; i++) {
    const out = 1 + Math.floor(r() * 6 * GiB);
    layers.push({
      name: `block ${i}`,
      forwardCost: (1 + Math.floor(r() * 97)) / 7,
      backwardCost: (1 + Math.floor(r() * 193)) / 7,
      outputBytes: out,
      savedBytes: out + Math.floor(r() * 3 * GiB),
      forwardTempBytes: Math.floor(r() * 4096),
      backwardTempBytes: Math.floor(r() * 8192),
    });
  }
  return { inputBytes: 12345, layers };
}
const KEYS = ['forwardCost', 'backwardCost', 'outputBytes', 'savedBytes'];
const TEMPS = ['forwardTempBytes', 'backwardTempBytes'];
function columns(layers, make) {
  const out = { name: layers.map((l) => l.name) };
  for (const k of [...KEYS, ...TEMPS]) out[k] = make(layers.map((l) => l[k]));
  return out;
}

test('typed-array and number-array columns give the array form answer', () => {
  const c = chain(400, 29);
  const saved = c.layers.reduce((a, l) => a + l.savedBytes, 0);
  for (const extra of [
    { strategy: 'sqrt' },
    { strategy: 'chen-greedy', frontier: true, timeline: false },
    { strategy: 'optimal-single-level', budgetBytes: Math.floor(saved / 5) },
    { strategy: 'optimal', budgetBytes: Math.floor(saved / 4), slots: 100 },
  ]) {
    const expected = tm.placement({ chain: c, ...extra });
    for (const make of [(a) => Float64Array.from(a), (a) => a]) {
      const got = tm.placement({
        chain: { inputBytes: c.inputBytes, layers: columns(c.layers, make) },
        ...extra,
      });
      assert.deepEqual(got, expected, extra.strategy);
    }
  }
  // Whole-number columns of a smaller type are read as their values.
  const u = {
    inputBytes: 10,
    layers: Array.from({ length: 1000 }, () => ({
      forwardCost: 1,
      backwardCost: 2,
      outputBytes: 10,
      savedBytes: 20,
    })),
  };
  const typed = {
    forwardCost: new Uint8Array(1000).fill(1),
    backwardCost: new Float32Array(1000).fill(2),
    outputBytes: new Int32Array(1000).fill(10),
    savedBytes: new Uint32Array(1000).fill(20),
  };
  assert.deepEqual(
    tm.placement({ chain: { inputBytes: 10, layers: typed }, strategy: 'chen-greedy' }),
    tm.placement({ chain: u, strategy: 'chen-greedy' }),
  );
});

test('columnar errors name the column and the value; the module stays usable', () => {
  const ok = () => ({
    forwardCost: new Float64Array([1, 1]),
    backwardCost: [2, 2],
    outputBytes: new Float64Array([10, 10]),
    savedBytes: new Float64Array([20, 20]),
  });
  const place = (layers) => () =>
    tm.placement({ chain: { inputBytes: 10, layers }, strategy: 'sqrt' });
  throwsCode(
    place({ ...ok(), outputBytes: new Float64Array([10, NaN]) }),
    'invalid_number',
    'chain.layers.outputBytes[1]',
  );
  throwsCode(
    place({ ...ok(), savedBytes: [20, Infinity] }),
    'invalid_number',
    'chain.layers.savedBytes[1]',
  );
  throwsCode(
    place({ ...ok(), savedBytes: new Float64Array([20, 20.5]) }),
    'not_integer',
    'chain.layers.savedBytes[1]',
  );
  throwsCode(
    place({ ...ok(), backwardCost: new Float64Array([2, 2, 2]) }),
    'inconsistent',
    'chain.layers.backwardCost',
  );
  throwsCode(
    place({ ...ok(), forwardCost: [1, 'fast'] }),
    'invalid_type',
    'chain.layers.forwardCost[1]',
  );
  const { savedBytes, ...missing } = ok();
  assert.equal(savedBytes.length, 2);
  throwsCode(place(missing), 'missing_field', 'chain.layers.savedBytes');
  throwsCode(place({ ...ok(), fowardTempBytes: [0, 0] }), 'unknown_key');
  throwsCode(
    place({
      forwardCost: new Float64Array(100001).fill(1),
      backwardCost: new Float64Array(100001).fill(2),
      outputBytes: new Float64Array(100001).fill(1),
      savedBytes: new Float64Array(100001).fill(1),
    }),
    'too_large',
    'chain.layers',
  );
  const r = tm.placement({ chain: { inputBytes: 10, layers: ok() }, strategy: 'sqrt' });
  assert.deepEqual(r.plan.length, 2);
});
