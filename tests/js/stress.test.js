// Stress test of the WebAssembly core (issue 8): >= 100,000 random and hostile requests, every
// one of which must end as a valid result or a TrainmemError with a string .field — never an
// abort, never a non-finite number, never the "internal" code — while the module's heap stays
// bounded; afterwards a valid request still gives the right answer.
//
// Two paths: raw JSON text straight into the module's `call` export (so that 1e400, NaN,
// duplicate keys, truncated text and deep nesting reach the C++ parser unchanged), and
// JavaScript values through the public wrapper (web/lib/index.js), which serialises them.
// Seeded PRNG: TRAINMEM_STRESS_SEED=<n> reproduces a run; TRAINMEM_STRESS_N sets the count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import createTrainmemModule from '../../web/lib/wasm/trainmem_wasm.mjs';
import { load, TrainmemError } from '../../web/lib/index.js';
import {
  getAt,
  isNode,
  isPlain,
  requestPaths,
  seeded,
  updateAt,
} from '../../tools/request-paths.mjs';

const SEED = Number(process.env.TRAINMEM_STRESS_SEED ?? 20240808) >>> 0;
const TOTAL = Number(process.env.TRAINMEM_STRESS_N ?? 100000);
const FUNCTIONS = [
  'checkpointSize',
  'describeModel',
  'peakMemory',
  'accumulation',
  'placement',
  'presets',
];
// The stable codes (the core's one table, vocabulary().errorCodes), less "internal" (which
// means a bug); set once the module is loaded, below.
const CODES = new Set();
const BIG_EXACT = 2n ** 53n; // largest integer a JSON / JavaScript number holds exactly

const { rand, pick, chance } = seeded(SEED);

// Base requests: every golden request (they grow as calculators land), plus a few of our own.
const golden = JSON.parse(readFileSync(new URL('../fixtures/golden.json', import.meta.url)));
const BASES = [...golden.cases, ...golden.errors]
  .filter((c) => FUNCTIONS.includes(c.function))
  .map((c) => ({ fn: c.function, request: c.request }));
for (const fn of FUNCTIONS) {
  BASES.push({ fn, request: {} });
  BASES.push({ fn, request: { model: { params: 124439808 }, optimizer: 'adamw' } });
}

// Hostile JSON tokens, spliced into request text in place of a value.
const LONG = 'x'.repeat(1000); // longer strings: the large-request test
const RAW_TOKENS = [
  '1e400',
  '-1e400',
  '1e308',
  '-1e308',
  '1.7976931348623157e308',
  '5e-324',
  '-0',
  '-0.0',
  '0',
  '-1',
  '0.5',
  '2.5',
  '1e15',
  '1e16',
  '9007199254740993',
  '18446744073709551615',
  '18446744073709551616',
  '-9223372036854775809',
  '1' + '0'.repeat(400),
  'NaN',
  'Infinity',
  '-Infinity',
  'true',
  'false',
  'null',
  '""',
  '"abc"',
  '"1e3"',
  '"\\ud800"',
  '"\\u0000"',
  '"<script>alert(1)</script>"',
  `"${LONG}"`,
  '[]',
  '{}',
  '[[[]]]',
  '{"__proto__":{"x":1}}',
  '[1,2,3]',
];
const JS_VALUES = [
  NaN,
  Infinity,
  -Infinity,
  -0,
  0,
  -1,
  0.5,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 64,
  '',
  'abc',
  LONG,
  '\u0000',
  '\ud800',
  true,
  false,
  null,
  undefined,
  [],
  {},
  [1, 2, 3],
  { nested: { deeper: 1 } },
  () => 1,
  new Date(0),
  new Map([[1, 2]]),
];

const { randomPath } = requestPaths({ chance, pick, stop: 1 / 3 });
function typo(key) {
  if (key.length < 2) return key + 'x';
  const i = Math.floor(rand() * key.length);
  const kind = Math.floor(rand() * 3);
  if (kind === 0) return key.slice(0, i) + key.slice(i + 1); // drop a letter
  if (kind === 1) return key.toLowerCase() === key ? key.toUpperCase() : key.toLowerCase();
  return key + 's';
}
const MARK = '\u0001TM_RAW\u0001';

// One mutation of a JS request (never modifies its input); raw tokens are placed as MARK
// strings and spliced into the text later.
function mutate(r, raw) {
  const p = randomPath(r);
  const leaf = getAt(r, p);
  if (typeof leaf === 'number' && chance(0.5)) {
    // Gentle: another number of the same kind, so that calculators run over wide ranges.
    const scale = 10 ** (rand() * 16 - 1);
    return updateAt(r, p, Number.isInteger(leaf) ? Math.round(scale) : leaf * scale);
  }
  const kind = Math.floor(rand() * 10);
  if (kind <= 2) {
    const useRaw = raw.length < 4 && chance(0.6);
    if (useRaw) raw.push(pick(RAW_TOKENS));
    return updateAt(r, p, useRaw ? MARK : pick(JS_VALUES));
  }
  if (kind === 3) return p.length > 0 ? updateAt(r, p, undefined) : r;
  if (kind === 4) {
    const o = randomPath(r, true);
    if (!o) return r;
    const keys = Object.keys(getAt(r, o));
    const key =
      keys.length && chance(0.7)
        ? typo(pick(keys))
        : pick(['microbatch', 'foo', 'x'.repeat(300), '']);
    return updateAt(r, [...o, key], 1);
  }
  if (kind === 5) {
    const depth = pick([10, 63, 64, 65, 200, 3000]);
    raw.push('['.repeat(depth) + '1' + ']'.repeat(depth));
    return updateAt(r, p, MARK);
  }
  if (kind === 6) {
    // Long arrays; the very large ones live in their own test (they set the heap's
    // high-water mark, and would dominate the run time here).
    const n = pick([0, 1, 2, 100, 1000]);
    return updateAt(r, p, new Array(n).fill(chance(0.5) ? 1 : { savedBytes: 1e9 }));
  }
  if (kind === 7) return updateAt(r, p, chance(0.5) ? [] : { layers: [] });
  if (kind === 8) {
    return updateAt(
      r,
      p,
      chance(0.5) ? Math.floor(rand() * 2 ** 40) : -Math.floor(rand() * 1e6) - 0.5,
    );
  }
  return updateAt(
    r,
    p,
    pick([0, 1, 1e9, 1e15, 1e15 + 1, 4.3e9, 2 ** 63, 7e-7, 'fp16', 'bf16', 'adam']),
  );
}

// JSON text of a mutated request, with raw tokens spliced in.
function requestText(base) {
  const raw = [];
  let r = base.request;
  const rounds = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < rounds; ++i) r = mutate(r, raw);
  let text = JSON.stringify(r === undefined ? null : r) ?? 'null';
  const quoted = JSON.stringify(MARK);
  for (const tok of raw) text = text.replace(quoted, tok);
  // Text-level damage now and then: truncation, duplicate keys, garbage, BOM, comments.
  const t = Math.floor(rand() * 40);
  if (t === 0) text = text.slice(0, Math.floor(rand() * text.length));
  else if (t === 1) text = text.replace(/^\{"([^"]+)":/, '{"$1":1,"$1":');
  else if (t === 2) text = '\ufeff' + text;
  else if (t === 3) text = text + ' // comment';
  else if (t === 4) text = text.replace(/}$/, ',}');
  else if (t === 5)
    text = String.fromCharCode(...Array.from({ length: 30 }, () => Math.floor(rand() * 128)));
  return text;
}

// Every number in a result finite; integers beyond 2^53 listed in result.inexact.
function checkResult(result, where) {
  assert.ok(
    result && typeof result === 'object' && !Array.isArray(result),
    `${where}: result object`,
  );
  const walk = (v, path) => {
    if (typeof v === 'number') assert.ok(Number.isFinite(v), `${where}: ${path} = ${v}`);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
  };
  walk(result, '');
  if (result.inexact !== undefined) {
    assert.ok(Array.isArray(result.inexact) && result.inexact.length > 0, `${where}: inexact list`);
    for (const w of result.inexact) {
      assert.equal(typeof w.field, 'string');
      assert.match(w.exact, /^-?\d+$/);
      const big = BigInt(w.exact);
      assert.ok((big < 0n ? -big : big) > BIG_EXACT, `${where}: ${w.field} listed but small`);
    }
  }
}
// Raw envelopes also show integer tokens as C++ printed them: those above 2^53 must be listed.
function checkEnvelopeText(text, envelope, where) {
  if (!envelope.ok) return;
  const listed = new Set((envelope.result.inexact ?? []).map((w) => w.exact));
  for (const m of text.matchAll(/[:[,](-?\d{16,})(?=[,\]}])/g)) {
    const big = BigInt(m[1]);
    if ((big < 0n ? -big : big) > BIG_EXACT) {
      assert.ok(listed.has(m[1]), `${where}: ${m[1]} not listed as inexact`);
    }
  }
}
function checkError(e, where) {
  assert.ok(CODES.has(e.code), `${where}: code ${e.code} (${e.message})`);
  assert.equal(typeof e.field, 'string', `${where}: field`);
  assert.equal(typeof e.message, 'string', `${where}: message`);
  assert.ok(e.message.length > 0 && e.message.length < 4096, `${where}: message length`);
}

const heapBytes = (m) => m.HEAP8.length;
// Bytes the C++ heap holds: its size less what malloc can still hand out without growing it
// (probed in 16 KiB blocks through the module's own _malloc, then freed). Memory growth alone
// cannot show a leak once one large request has raised the high-water mark; this can.
function heapInUse(m) {
  const BLOCK = 16384;
  const blocks = [];
  let size = heapBytes(m);
  for (;;) {
    const p = m._malloc(BLOCK);
    if (!p) break;
    if (heapBytes(m) !== size) {
      m._free(p);
      break;
    }
    blocks.push(p);
  }
  for (const p of blocks) m._free(p);
  return size - blocks.length * BLOCK;
}
// Two instances: the storm runs on a fresh one, so that its heap is not already inflated by
// the very large requests (free space there could hide a leak).
const module = await createTrainmemModule();
for (const { code } of JSON.parse(module.call('vocabulary', '{}')).result.errorCodes)
  if (code !== 'internal') CODES.add(code);
const bigModule = await createTrainmemModule();
const tm = await load();

// The expected answer used before and after the storm: seed 003 example 1, LLaMA-2 7B with
// AdamW in fp16 (states in the weight dtype): 6,738,415,616 params x 3 copies x 2 bytes
// = 40,430,493,696 bytes (params: Llama-2-7b-hf model index; hand calculation).
const LLAMA = { model: { params: 6738415616 }, optimizer: 'adamw', weightDtype: 'fp16' };
const LLAMA_BYTES = 40430493696;

let wasmNs = 0n; // time spent inside the module's call (for the log line)
const wasmNsByFn = {};
const slowest = { ns: 0n, fn: '', text: '' }; // the slowest raw call (for the log line)
// A failing request is written to build/stress-failure.json ({function, text, envelope}).
const FAILURE = new URL('../../build/stress-failure.json', import.meta.url);
function rawCall(fn, text, where, m = module) {
  const t0 = process.hrtime.bigint();
  const out = m.call(fn, text);
  const dt = process.hrtime.bigint() - t0;
  wasmNs += dt;
  wasmNsByFn[fn] = (wasmNsByFn[fn] ?? 0n) + dt;
  if (dt > slowest.ns) Object.assign(slowest, { ns: dt, fn, text });
  try {
    const envelope = JSON.parse(out);
    assert.equal(typeof envelope.ok, 'boolean', `${where}: envelope`);
    if (envelope.ok) checkResult(envelope.result, where);
    else checkError(envelope.error, where);
    checkEnvelopeText(out, envelope, where);
    return envelope;
  } catch (e) {
    mkdirSync(new URL('.', FAILURE), { recursive: true });
    writeFileSync(
      FAILURE,
      JSON.stringify({ function: fn, text, envelope: out.slice(0, 4096) }) + '\n',
    );
    throw e;
  }
}

// Cost-weighted choice of base request: valid requests of some calculators take milliseconds
// (presets, planners). Each base is sampled with weight min(1, 40 / length of its result),
// a deterministic stand-in for its cost (timing would make a seed irreproducible), which
// keeps the storm's run time bounded while every base still appears.
const weights = BASES.map((b) =>
  Math.min(1, 40 / module.call(b.fn, JSON.stringify(b.request)).length),
);
const cumulative = [];
weights.reduce((acc, w, i) => (cumulative[i] = acc + w), 0);
function pickBase() {
  const x = rand() * cumulative.at(-1);
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return BASES[lo];
}

test('stress: very large requests leave the heap at a stable high-water mark', () => {
  const bigArray = `{"model":{"params":[${'1,'.repeat(200000)}1]},"optimizer":"adam"}`; // 400 kB
  const tooMany = `[${'0,'.repeat(1000001)}0]`; // more JSON values than the 1,000,000 limit
  const longString = `{"model":{"params":7},"optimizer":"${'a'.repeat(4 << 20)}"}`; // 4 MiB
  const tooBig = ' '.repeat((16 << 20) + 1); // over the 16 MiB request limit
  const deep = '['.repeat(100000) + ']'.repeat(100000);
  let first = true;
  const round = () => {
    const cases = [
      [bigArray, 'invalid_type'],
      [longString, 'too_large'],
      [deep, 'too_large'],
    ];
    // Rejected before parsing (tooBig) or at the limit (tooMany): once is enough.
    if (first) cases.push([tooBig, 'too_large'], [tooMany, 'too_large']);
    first = false;
    for (const [text, code] of cases) {
      const env = rawCall('checkpointSize', text, `large ${text.slice(0, 40)}`, bigModule);
      assert.equal(env.ok, false);
      assert.equal(env.error.code, code, env.error.message);
    }
  };
  // The allocator settles after two rounds (dlmalloc fragmentation), then must stay put.
  round();
  round();
  const high = heapBytes(bigModule);
  round();
  round();
  assert.equal(heapBytes(bigModule), high, 'heap grew on repeating the same large requests');
});

test(`stress: ${TOTAL} random and hostile requests (seed ${SEED}), heap bounded`, () => {
  const started = Date.now();
  wasmNs = 0n;
  slowest.ns = 0n;
  for (const k of Object.keys(wasmNsByFn)) delete wasmNsByFn[k];
  const counts = { ok: 0, error: 0 };
  const codes = {};
  const tally = (ok, code) => {
    counts[ok ? 'ok' : 'error']++;
    if (!ok) codes[code] = (codes[code] ?? 0) + 1;
  };
  const wrapperShare = Math.floor(TOTAL / 5);
  const rawCount = TOTAL - wrapperShare;
  const warmup = Math.min(2000, Math.floor(rawCount / 10));
  let heapAfterWarmup = 0;
  let inUseAfterWarmup = 0;
  const biggestGrowth = { bytes: 0, fn: '', text: '' }; // the request that grew the heap most
  for (let i = 0; i < rawCount; ++i) {
    if (i === warmup) {
      heapAfterWarmup = heapBytes(module);
      inUseAfterWarmup = heapInUse(module);
    }
    const base = pickBase();
    const fn = chance(0.97) ? base.fn : pick([...FUNCTIONS, 'checkpointsize', '', 'x'.repeat(500)]);
    const text = requestText(base);
    const before = heapBytes(module);
    const env = rawCall(fn, text, `raw #${i} ${fn} ${text.slice(0, 300)}`);
    const grew = heapBytes(module) - before;
    if (i >= warmup && grew > biggestGrowth.bytes)
      Object.assign(biggestGrowth, { bytes: grew, fn, text });
    tally(env.ok, env.ok ? '' : env.error.code);
  }
  const heapAfterRaw = heapBytes(module);
  const inUseAfterRaw = heapInUse(module);
  // Through the wrapper: JS values the wrapper must serialise or refuse.
  const circular = { model: {} };
  circular.model.self = circular;
  const oddRequests = [
    undefined,
    null,
    5,
    'text',
    [],
    [1],
    circular,
    { model: { params: 10n } },
    Symbol('s'),
  ];
  for (let i = 0; i < wrapperShare; ++i) {
    const base = pickBase();
    let request;
    if (chance(0.05)) request = pick(oddRequests);
    else {
      const raw = [];
      request = base.request;
      for (let k = 0; k < 1 + Math.floor(rand() * 2); ++k) request = mutate(request, raw);
      if (raw.length) request = base.request; // raw tokens are the raw path's job
    }
    const where = `wrapper #${i} ${base.fn}`;
    try {
      checkResult(tm[base.fn](request), where);
      tally(true);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      assert.ok(e instanceof TrainmemError, `${where}: ${e && e.stack}`);
      checkError(e, where);
      tally(false, e.code);
    }
  }
  const elapsed = (Date.now() - started) / 1000;
  console.log(
    `stress: ${TOTAL} requests in ${elapsed.toFixed(1)} s: ${counts.ok} results, ${counts.error} errors`,
    JSON.stringify(codes),
    `(raw calls inside wasm: ${(Number(wasmNs) / 1e9).toFixed(1)} s:`,
    Object.entries(wasmNsByFn)
      .map(([f, ns]) => `${f.slice(0, 20)} ${(Number(ns) / 1e9).toFixed(1)} s`)
      .join(', ') + ');',
    `slowest ${(Number(slowest.ns) / 1e6).toFixed(0)} ms: ${slowest.fn} ${slowest.text.slice(0, 200)};`,
    `heap after warm-up ${heapAfterWarmup} B (in use ${inUseAfterWarmup}),`,
    `after raw storm ${heapAfterRaw} B (in use ${inUseAfterRaw})`,
  );
  assert.equal(counts.ok + counts.error, TOTAL);
  // No leak: the bytes in use after the storm are those after the warm-up (a leak of even
  // 100 bytes per request would add ~8 MB over 80,000 raw requests), and the heap itself
  // stays far below wasm32's 2 GiB (one request may raise the high-water mark, within limits).
  assert.ok(
    inUseAfterRaw - inUseAfterWarmup <= 2 * 2 ** 20,
    `bytes in use grew from ${inUseAfterWarmup} to ${inUseAfterRaw} during the storm`,
  );
  assert.ok(
    heapAfterRaw <= 256 * 2 ** 20,
    `heap grew to ${heapAfterRaw} bytes; most at once (${biggestGrowth.bytes} B): ` +
      `${biggestGrowth.fn} ${biggestGrowth.text.slice(0, 2000)}`,
  );
});

test('stress: every field of every golden request, set to each hostile value', () => {
  const values = [null, 'x', -1, 0.5, 1e308, {}];
  let calls = 0;
  for (const base of BASES)
    base.valid = JSON.parse(module.call(base.fn, JSON.stringify(base.request))).ok;
  for (const base of BASES) {
    const stack = [[]];
    while (stack.length) {
      const p = stack.pop();
      const v = getAt(base.request, p);
      if (isNode(v))
        for (const k of Object.keys(v)) stack.push([...p, Array.isArray(v) ? Number(k) : k]);
      if (p.length === 0) continue;
      for (const value of values) {
        const text = JSON.stringify(updateAt(base.request, p, value));
        const where = `sweep ${base.fn} ${p.join('.')} = ${JSON.stringify(value)}`;
        const envelope = rawCall(base.fn, text, where);
        ++calls;
        // null is a value of the wrong type naming its field (not absent, not the default),
        // except inside a pasted HF config.json, where transformers reads null as unset; in a
        // request that is valid otherwise (an error case fails on its own field first)
        if (value === null && base.valid && !(p[0] === 'model' && p[1] === 'config')) {
          const path = p
            .map((k, i) => (typeof k === 'number' ? `[${k}]` : i ? `.${k}` : k))
            .join('');
          assert.equal(envelope.ok, false, `${where}: accepted`);
          assert.deepEqual(
            [envelope.error.code, envelope.error.field],
            ['invalid_type', path],
            where,
          );
        }
      }
    }
  }
  console.log(`sweep: ${calls} single-field mutations of ${BASES.length} requests`);
});

test('stress: an unknown key in any object of a valid request is refused, naming it', () => {
  // Every calculator must call Obj::finish() on every object it reads. Exception, documented
  // in docs/models.md: a pasted HF config.json (model.config) keeps its many other keys.
  let checked = 0;
  for (const c of golden.cases) {
    const stack = [[]];
    while (stack.length) {
      const p = stack.pop();
      const v = getAt(c.request, p);
      if (isNode(v))
        for (const k of Object.keys(v)) stack.push([...p, Array.isArray(v) ? Number(k) : k]);
      if (!isPlain(v) || p.join('.') === 'model.config') continue;
      const text = JSON.stringify(updateAt(c.request, [...p, 'zzUnknownKey'], 1));
      const env = rawCall(c.function, text, `unknown key at ${c.function} ${p.join('.')}`);
      const where = `${c.name}: object ${p.join('.') || '(root)'}`;
      assert.equal(env.ok, false, `${where} accepted an unknown key`);
      assert.equal(env.error.code, 'unknown_key', `${where}: ${env.error.message}`);
      assert.ok(env.error.field.endsWith('zzUnknownKey'), `${where}: field ${env.error.field}`);
      ++checked;
    }
  }
  console.log(`unknown keys: ${checked} objects checked`);
});

test('stress: after the storm a valid request still gives the hand-calculated answer', () => {
  const env = rawCall('checkpointSize', JSON.stringify(LLAMA), 'final raw');
  assert.equal(env.ok, true);
  assert.equal(env.result.totalBytes, LLAMA_BYTES);
  assert.equal(tm.checkpointSize(LLAMA).totalBytes, LLAMA_BYTES);
});
