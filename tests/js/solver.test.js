// The page's solver (web/app/solver.js): runLatest, the worker kept between calls of tens of
// milliseconds (the accumulation planner). With a stand-in for the browser's Worker: the page
// gets the answer to its latest request, a call waiting behind a newer one is cancelled, the
// core's errors keep their code and field, and a failed worker hands its calls to the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';

class FakeWorker {
  static made = [];
  constructor(url, options) {
    this.url = String(url);
    this.options = options;
    this.posted = [];
    FakeWorker.made.push(this);
  }
  postMessage(m) {
    this.posted.push(m);
  }
  answer(data) {
    this.onmessage({ data });
  }
}
globalThis.Worker = FakeWorker;
const { Solver } = await import('../../web/app/solver.js');

// A core whose every function answers { fn, n } with the request's n, counting its calls.
function fakeCore() {
  const calls = [];
  const tm = new Proxy(
    {},
    {
      get: (_, fn) => (request) => {
        calls.push([fn, request.n]);
        return { fn, n: request.n };
      },
    },
  );
  return { tm, calls };
}

const settle = (p) =>
  p.then(
    (v) => ({ ok: v }),
    (e) => ({ error: e }),
  );

test('until the worker has its core, the call is answered on the page', async () => {
  FakeWorker.made = [];
  const { tm, calls } = fakeCore();
  const s = new Solver(tm);
  assert.deepEqual(await s.runLatest('accumulation', { n: 1 }), { fn: 'accumulation', n: 1 });
  assert.deepEqual(calls, [['accumulation', 1]]);
  assert.equal(FakeWorker.made.length, 1, 'the worker is started by the first call');
  assert.match(FakeWorker.made[0].url, /worker\.js$/);
  assert.equal(FakeWorker.made[0].options.type, 'module');
});

test('once ready: one call at a time in the worker, and only the newest waiting one runs', async () => {
  FakeWorker.made = [];
  const { tm, calls } = fakeCore();
  const s = new Solver(tm);
  await s.runLatest('accumulation', { n: 0 }); // starts the worker
  const w = FakeWorker.made[0];
  w.answer({ ready: true });
  const first = settle(s.runLatest('accumulation', { n: 1 }));
  const second = settle(s.runLatest('accumulation', { n: 2 }));
  const third = settle(s.runLatest('accumulation', { n: 3 }));
  assert.equal(w.posted.length, 1, 'the worker computes one call; the others wait');
  assert.equal(w.posted[0].request.n, 1);
  assert.equal((await second).error.code, 'cancelled', 'a newer call replaced it in line');
  w.answer({ id: w.posted[0].id, result: { n: 1 } });
  assert.deepEqual((await first).ok, { n: 1 });
  assert.equal(w.posted.length, 2, 'the waiting call is sent when the worker is free');
  assert.equal(w.posted[1].request.n, 3);
  w.answer({ id: w.posted[1].id, result: { n: 3 } });
  assert.deepEqual((await third).ok, { n: 3 });
  assert.equal(FakeWorker.made.length, 1, 'the same worker throughout');
  assert.deepEqual(calls, [['accumulation', 0]], 'nothing else ran on the page');
});

test("the core's error from the worker keeps its code and field", async () => {
  FakeWorker.made = [];
  const s = new Solver(fakeCore().tm);
  await s.runLatest('accumulation', { n: 0 });
  const w = FakeWorker.made[0];
  w.answer({ ready: true });
  const p = settle(s.runLatest('accumulation', { n: 1 }));
  w.answer({
    id: w.posted[0].id,
    error: { code: 'out_of_range', field: 'seqLen', message: 'seqLen must be at least 1' },
  });
  const { error } = await p;
  assert.equal(error.name, 'TrainmemError');
  assert.equal(error.code, 'out_of_range');
  assert.equal(error.field, 'seqLen');
});

test('a worker that fails hands its calls, and later ones, to the page', async () => {
  FakeWorker.made = [];
  const { tm, calls } = fakeCore();
  const s = new Solver(tm);
  await s.runLatest('accumulation', { n: 0 });
  const w = FakeWorker.made[0];
  w.answer({ ready: true });
  const busy = settle(s.runLatest('accumulation', { n: 1 }));
  const waiting = settle(s.runLatest('accumulation', { n: 2 }));
  w.onerror({ preventDefault() {} });
  assert.deepEqual((await busy).ok, { fn: 'accumulation', n: 1 });
  assert.deepEqual((await waiting).ok, { fn: 'accumulation', n: 2 });
  assert.deepEqual(await s.runLatest('accumulation', { n: 3 }), { fn: 'accumulation', n: 3 });
  assert.deepEqual(
    calls.map((c) => c[1]),
    [0, 1, 2, 3],
  );
  assert.equal(FakeWorker.made.length, 1, 'no second worker after a failure');
});

test('cancel() drops the waiting call', async () => {
  FakeWorker.made = [];
  const s = new Solver(fakeCore().tm);
  await s.runLatest('accumulation', { n: 0 });
  const w = FakeWorker.made[0];
  w.answer({ ready: true });
  settle(s.runLatest('accumulation', { n: 1 }));
  const waiting = settle(s.runLatest('accumulation', { n: 2 }));
  s.cancel();
  assert.equal((await waiting).error.code, 'cancelled');
  w.answer({ id: w.posted[0].id, result: { n: 1 } });
  assert.equal(w.posted.length, 1, 'nothing is sent after the answer');
});

test("channels: the verdict's call does not cancel the tab's, each keeps its newest", async () => {
  FakeWorker.made = [];
  const s = new Solver(fakeCore().tm);
  await s.runLatest('accumulation', { n: 0 });
  const w = FakeWorker.made[0];
  w.answer({ ready: true });
  const tab = settle(s.runLatest('accumulation', { n: 1 }, 'tab'));
  const verdict1 = settle(s.runLatest('advise', { n: 2 }, 'verdict'));
  const verdict2 = settle(s.runLatest('advise', { n: 3 }, 'verdict'));
  const tab2 = settle(s.runLatest('accumulation', { n: 4 }, 'tab'));
  assert.equal((await verdict1).error.code, 'cancelled', 'the older verdict call');
  w.answer({ id: w.posted[0].id, result: { n: 1 } });
  assert.deepEqual((await tab).ok, { n: 1 });
  // both newest calls are sent in turn, the older waiting one first
  assert.deepEqual(
    w.posted.map((p) => p.request.n),
    [1, 3],
  );
  w.answer({ id: w.posted[1].id, result: { n: 3 } });
  assert.deepEqual((await verdict2).ok, { n: 3 });
  assert.equal(w.posted[2].request.n, 4);
  w.answer({ id: w.posted[2].id, result: { n: 4 } });
  assert.deepEqual((await tab2).ok, { n: 4 });
});

test('a call that may wait for the worker is sent once it has its core, not run here', async () => {
  FakeWorker.made = [];
  const { tm, calls } = fakeCore();
  const s = new Solver(tm);
  const p = settle(s.runLatest('advise', { n: 1 }, 'changes', { waitForWorker: true }));
  const w = FakeWorker.made[0];
  assert.equal(w.posted.length, 0, 'waiting for the core');
  w.answer({ ready: true });
  assert.equal(w.posted.length, 1);
  w.answer({ id: w.posted[0].id, result: { n: 1 } });
  assert.deepEqual((await p).ok, { n: 1 });
  assert.deepEqual(calls, [], 'nothing ran on the page');
});
