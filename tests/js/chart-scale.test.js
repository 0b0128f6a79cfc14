// The charts' arithmetic (web/app/chart-scale.js): ticks at 1, 2 or 5 × 10^k, at most as many
// as asked, labels that keep apart, category labels wrapped at spaces. Every expected value is
// worked out by hand in the comment beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { niceTicks, tickStep, labelsFit, wrapLabel } from '../../web/app/chart-scale.js';

test('ticks: the smallest 1-2-5 step that keeps within the count', () => {
  // 0–7.3 in at most 5: step 1 gives 0..7 (8 ticks), step 2 gives 0, 2, 4, 6
  assert.deepEqual(niceTicks(0, 7.3, 5), [0, 2, 4, 6]);
  // 0–100 in at most 6: step 10 gives 11, step 20 gives 0..100 (6)
  assert.deepEqual(niceTicks(0, 100, 6), [0, 20, 40, 60, 80, 100]);
  // 0–1 in at most 5: 0.1 gives 11, 0.2 gives 6, 0.5 gives 3
  assert.deepEqual(niceTicks(0, 1, 5), [0, 0.5, 1]);
  // 0–199 (events of a step) in at most 8: 20 gives 10, 50 gives 0, 50, 100, 150
  assert.deepEqual(niceTicks(0, 199, 8), [0, 50, 100, 150]);
  // 0.94–3.17 GiB in at most 9: 0.1 gives 22, 0.2 gives 11, 0.5 gives 1, 1.5, …, 3
  assert.deepEqual(niceTicks(0.94, 3.17, 9), [1, 1.5, 2, 2.5, 3]);
  // bytes: 0–8.1e10 in at most 5: 1e10 gives 9, 2e10 gives 0, 2e10, …, 8e10
  assert.deepEqual(niceTicks(0, 8.1e10, 5), [0, 2e10, 4e10, 6e10, 8e10]);
  // one tick at most: 5 still gives 0 and 5, 10 gives 0 alone
  assert.equal(tickStep(0, 7.3, 1), 10);
  assert.deepEqual(niceTicks(0, 7.3, 1), [0]);
});

test('ticks are rounded to their step: 0.1, 0.2, 0.3, not 0.30000000000000004', () => {
  // 0.1–0.35 in at most 4: 0.02 gives 13, 0.05 gives 6, 0.1 gives 0.1, 0.2, 0.3
  assert.deepEqual(niceTicks(0.1, 0.35, 4), [0.1, 0.2, 0.3]);
  // 0–0.0007 in at most 4: 0.0002 gives 0, 0.0002, 0.0004, 0.0006
  assert.deepEqual(niceTicks(0, 0.0007, 4), [0, 0.0002, 0.0004, 0.0006]);
});

test('an empty or unbounded range has no step', () => {
  assert.equal(tickStep(5, 5, 4), 0);
  assert.deepEqual(niceTicks(5, 5, 4), [5]);
  assert.equal(tickStep(0, NaN, 4), 0);
  assert.equal(tickStep(0, Infinity, 4), 0);
  assert.deepEqual(niceTicks(NaN, 1, 4), []);
});

test('labels fit when neighbours keep the gap and none leaves the chart', () => {
  // 20 px labels centred at 10 and 50: they span 0–20 and 40–60, 20 px apart
  assert.equal(labelsFit([10, 50], [20, 20], 8, 0, 100), true);
  assert.equal(labelsFit([10, 50], [20, 20], 25, 0, 100), false);
  // centred at 5, a 20 px label starts at -5: outside
  assert.equal(labelsFit([5], [20], 8, 0, 100), false);
  // ends at 105 > 100
  assert.equal(labelsFit([95], [20], 8, 0, 100), false);
});

test('category labels wrap at spaces, or give up', () => {
  const w = (s) => s.length * 10; // 10 px a character
  // "Accumulation +" is 14 characters (140 px), "checkpointing" 13
  assert.deepEqual(wrapLabel('Accumulation + checkpointing', 140, w, 3), [
    'Accumulation +',
    'checkpointing',
  ]);
  assert.deepEqual(wrapLabel('This setting', 140, w, 3), ['This setting']);
  // a word of 12 characters does not fit 100 px
  assert.equal(wrapLabel('Accumulation + checkpointing', 100, w, 3), null);
  // two lines needed, one allowed
  assert.equal(wrapLabel('Accumulation + checkpointing', 140, w, 1), null);
});
