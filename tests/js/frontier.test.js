// The page's frontier chart data (web/app/frontier.js). The overhead is the headline's:
// recompute / (forward + backward) in % (cpp/src/placement/placement_simulator.cpp, overheadFraction).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { frontierData } from '../../web/app/frontier.js';

const GiB = 2 ** 30;
// A uniform chain of 32 layers, forward 1 and backward 2 each: storing everything costs
// 32 + 64 = 96 and recomputes nothing; recomputing every forward once costs 32 more (33.33 %).
const storeAll = { peakActivationBytes: 3 * GiB, totalCost: 96, recomputeCost: 0 };
const everyOnce = { peakActivationBytes: 1 * GiB, totalCost: 128, recomputeCost: 32 };

test('points sorted by memory, overhead in % of forward + backward', () => {
  const d = frontierData([storeAll, everyOnce], {
    peakActivationBytes: GiB,
    overheadFraction: 1 / 3,
  });
  assert.deepEqual(d.x, [1, 3]);
  assert.equal(d.y[1], 0);
  assert.ok(Math.abs(d.y[0] - 100 / 3) < 1e-9);
  assert.equal(d.index, 0); // the chosen plan is the frontier's point at 1 GiB
  assert.ok(Math.abs(d.value - 100 / 3) < 1e-9);
});

test('a chosen plan off the frontier is placed at its own memory, the line spanning it', () => {
  const chosen = { peakActivationBytes: 1.5 * GiB, overheadFraction: 0.4 };
  const d = frontierData([storeAll, everyOnce], chosen);
  assert.deepEqual(d.x, [1, 1.5, 3]);
  assert.equal(d.y[1], null);
  assert.equal(d.index, 1);
  assert.ok(Math.abs(d.value - 40) < 1e-9);
  const beyond = frontierData([everyOnce], { peakActivationBytes: 4 * GiB, overheadFraction: 0 });
  assert.deepEqual([beyond.x, beyond.index], [[1, 4], 1]);
});

test('points without costs, or with no forward + backward, are left out', () => {
  const d = frontierData(
    [
      everyOnce,
      { peakActivationBytes: 2 * GiB },
      { peakActivationBytes: GiB, totalCost: 5, recomputeCost: 5 },
      null,
    ],
    { peakActivationBytes: GiB, overheadFraction: 1 / 3 },
  );
  assert.deepEqual(d.x, [1]);
  assert.deepEqual(
    frontierData(undefined, { peakActivationBytes: GiB, overheadFraction: 0 }).x,
    [1],
  );
});
