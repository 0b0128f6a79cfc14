// A traced model (python3 -m trainmem_trace) through the npm API: `model: { trace }` as the
// file's object or its text in every calculator, errors that name the trace's field, and a
// module that stays usable after them. The trace is tests/fuzz/trace_seeds/lm.trace.json, a
// tiny language model whose lm_head is tied to the token embedding; the expected numbers are
// hand calculations from its parameter list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { TrainmemError, load } from '../../web/lib/index.js';

const text = readFileSync(new URL('../fuzz/trace_seeds/lm.trace.json', import.meta.url), 'utf8');
const trace = JSON.parse(text);
const numel = (shape) => shape.reduce((a, b) => a * b, 1);
// A tied parameter (`tiedTo`) is the same storage as the one it names: counted once.
const owned = trace.parameters.filter((p) => p.tiedTo === undefined);
const params = owned.reduce((n, p) => n + numel(p.shape), 0);

test('checkpointSize of a traced model: its own parameters, once each, with Adam state', async () => {
  const tm = await load();
  assert.equal(params, 1144); // 16·8 ×2 + 8·2 ×3 + (24·8 + 24) + (8·8 + 8) + (32·8 + 32) + (8·32 + 8)
  const r = tm.checkpointSize({ model: { trace }, optimizer: 'adam' });
  assert.equal(r.params, params);
  // fp32 weights; torch.optim.Adam keeps exp_avg and exp_avg_sq (fp32, the parameter's shape)
  // and a one-element fp32 `step` tensor per parameter (torch 1.13 adam.py, _init_group).
  assert.equal(r.breakdown.weights, 4 * params);
  assert.equal(r.breakdown.optimizerState, 8 * params + 4 * owned.length);
});

test('the trace as its text or as its object is the same model in every calculator', async () => {
  const tm = await load();
  const ask = (fn, rest) => [
    tm[fn]({ model: { trace }, ...rest }),
    tm[fn]({ model: { trace: text }, ...rest }),
  ];
  const runs = [
    ['peakMemory', { microBatch: 4, seqLen: 16, runtime: 'pytorch-cpu' }],
    ['placement', { microBatch: 4, seqLen: 16, strategy: 'sqrt' }],
    ['accumulation', { seqLen: 16, gpu: 'a100-80gb', targetGlobalBatch: 32 }],
    ['checkpointSize', { optimizer: 'sgd' }],
    ['describeModel', {}],
  ];
  for (const [fn, rest] of runs) {
    const [fromObject, fromText] = ask(fn, rest);
    assert.deepEqual(fromObject, fromText, fn);
  }
  const peak = tm.peakMemory({ model: { trace }, microBatch: 4, seqLen: 16 });
  assert.deepEqual([peak.trace.tracedBatch, peak.trace.tracedSeqLen], [2, 4]);
  assert.equal(peak.params, params);
  // the traced chain (stem, attention, MLP, head) is the placement's chain of layers
  const plan = tm.placement({ model: { trace }, microBatch: 4, seqLen: 16, strategy: 'sqrt' });
  assert.equal(plan.plan.length, trace.layers.length);
});

test('a malformed or hostile trace is a TrainmemError naming its field; the module goes on', async () => {
  const tm = await load();
  const before = tm.peakMemory({ model: { trace }, microBatch: 4, seqLen: 16 });
  const cases = [
    [(t) => (t.parameters[3].shape = [-1]), 'out_of_range', 'model.trace.parameters[3].shape[0]'],
    [(t) => (t.layers[1].end = 1e9), 'inconsistent', /^model\.trace\.layers\[1\]/],
    [(t) => (t.format = 'other'), 'unknown_value', 'model.trace.format'],
    [(t) => delete t.tensors, 'missing_field', /^model\.trace/],
  ];
  for (const [spoil, code, field] of cases) {
    const bad = structuredClone(trace);
    spoil(bad);
    assert.throws(
      () => tm.peakMemory({ model: { trace: bad }, microBatch: 4, seqLen: 16 }),
      (e) =>
        e instanceof TrainmemError &&
        e.code === code &&
        (field instanceof RegExp ? field.test(e.field) : e.field === field),
      `${code} ${field}`,
    );
  }
  assert.throws(
    () => tm.peakMemory({ model: { trace: text.slice(0, 500) }, microBatch: 4 }),
    (e) => e instanceof TrainmemError && e.code === 'invalid_json' && e.field === 'model.trace',
  );
  assert.deepEqual(tm.peakMemory({ model: { trace }, microBatch: 4, seqLen: 16 }), before);
});

test('placement with strategy optimal and a budget plans a traced model (hand sums from the trace)', async () => {
  const tm = await load();
  // tests/fuzz/trace_seeds/mlp.trace.json: Linear(4, 8) -> ReLU -> Linear(8, 3), cross-entropy.
  // At micro-batch 4, fp32: x 4·4·4 = 64 B and the target 4·8 = 32 B (both kept); the first
  // Linear's output 4·8·4 = 128 B, which no op keeps (ReLU keeps its result); ReLU's output 128 B;
  // log_softmax's output 4·3·4 = 48 B, nll_loss's total_weight 4 B and the loss 4 B.
  const mlp = JSON.parse(
    readFileSync(new URL('../fuzz/trace_seeds/mlp.trace.json', import.meta.url), 'utf8'),
  );
  const ask = { model: { trace: mlp }, microBatch: 4, strategy: 'optimal' };
  const plan = tm.placement({ ...ask, budgetBytes: 2_000_000 });
  assert.deepEqual(plan.plan, ['store', 'store', 'store']);
  assert.equal(plan.storedBytes, 64 + 32 + 128 + 48 + 4 + 4);
  // ReLU's backward: the batch, ReLU's output, the gradient it gets and the one it sends
  assert.equal(plan.peakActivationBytes, 64 + 32 + 3 * 128);
  assert.throws(
    () => tm.placement({ ...ask, budgetBytes: 64 + 32 + 3 * 128 - 1 }),
    (e) => e instanceof TrainmemError && e.code === 'infeasible' && e.field === 'budgetBytes',
  );
});
