// Differential check of two builds of the WebAssembly core: the same generated requests go to
// both modules' raw `call` / `callBytes` exports, and every response must be byte-identical,
// except where a listed, intended change explains the difference.
//
//   node tools/differential.mjs OLD_MODULE.mjs [NEW_MODULE.mjs] [--n 100000] [--seed 1]
//
// OLD_MODULE: e.g. the module of an earlier commit, built in its own worktree:
//   git worktree add /tmp/old c0fa289 && (cd /tmp/old && bash tools/build.sh wasm)
//   node tools/differential.mjs /tmp/old/web/lib/wasm/trainmem_wasm.mjs
// NEW_MODULE defaults to this checkout's web/lib/wasm/trainmem_wasm.mjs.
//
// The generator is deterministic (a seeded PRNG): valid requests from the golden vectors and
// from a few bases of its own (long homogeneous chains among them), then mutated: numbers
// rescaled, values replaced by hostile JSON tokens, keys dropped or misspelt, arrays grown,
// text damaged (truncation, duplicate keys, garbage). Exit status 1 on an unexplained
// difference (the first ones are printed in full).
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { getAt, requestPaths, seeded, updateAt } from './request-paths.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const TOTAL = Number(opt('--n', 100000));
const SEED = Number(opt('--seed', 1)) >>> 0;
const JOBS = Number(opt('--jobs', 1));
if (args.length < 1) {
  console.error(
    'usage: node tools/differential.mjs OLD_MODULE.mjs [NEW_MODULE.mjs] [--n N] [--seed S]',
  );
  process.exit(2);
}
const root = fileURLToPath(new URL('..', import.meta.url));
const oldPath = resolve(args[0]);
const newPath = resolve(args[1] ?? `${root}web/lib/wasm/trainmem_wasm.mjs`);

// result.messages is new on purpose; a response that differs only by it counts as this.
const MESSAGES = 'result.messages added';
// error.messages: an error that was a plain English sentence now carries its catalog codes too
// (the same English); a response that differs only by it counts as this, and each code it
// carries is counted in errorCodes (which of the catalog's error sentences the run reached).
const ERROR_MESSAGES = 'error.messages added';
const errorCodes = {};
// Intended changes: a difference is accepted when one of these explains it. The list is the
// one for the previous release's module (c0fa289); the lists of earlier rounds are in git.
const INTENDED = [
  {
    name: "a trace's notes as codes",
    reason:
      'the tracer writes each note as {code, params} (trace.note.*), which the previous core ' +
      'refused as not a string; it reads them now, or names the field inside the note at fault',
    explains: (fn, oldOut, newOut) =>
      !oldOut.ok &&
      oldOut.error.code === 'invalid_type' &&
      /^model\.trace\.notes\[\d+\]$/.test(oldOut.error.field) &&
      / got object$/.test(oldOut.error.message) &&
      newOut.error?.field !== oldOut.error.field, // read, or refused for what is inside the note
  },
  {
    name: 'a note that is neither form',
    reason:
      'a trace note that is neither an object nor a string: the error names both forms a note ' +
      'takes (error.trace.noteType), where it asked for a string',
    explains: (fn, oldOut, newOut) =>
      !oldOut.ok &&
      !newOut.ok &&
      oldOut.error.code === 'invalid_type' &&
      newOut.error.code === 'invalid_type' &&
      /^model\.trace\.notes\[\d+\]$/.test(oldOut.error.field) &&
      newOut.error.field === oldOut.error.field &&
      newOut.error.messages?.[0]?.code === 'error.trace.noteType',
  },
  {
    name: 'phrases and inner errors as nested codes',
    reason:
      'a parameter that was an English phrase (the inner error of error.in, a JSON syntax fault, ' +
      "an allocator option's range, a snapshot reader's limit or type, a traced model's " +
      'refusal, a diffusers setting) is a list of catalog codes: only messages differ',
    explains: (fn, oldOut, newOut) => {
      const rest = (o) => {
        const c = structuredClone(o);
        delete c.result?.messages;
        delete c.error?.messages;
        return JSON.stringify(c);
      };
      return rest(oldOut) === rest(newOut);
    },
  },
  {
    name: 'sharded units gathered around their ops',
    reason:
      "ZeRO-3 and FSDP: a unit's gathered parameters are allocated before its forward or " +
      'backward ops and freed after them (they were one allocation between two layers), so the ' +
      'allocator simulation and the figures built on it change',
    explains: (fn, oldOut, newOut, text) =>
      ['peakMemory', 'accumulation'].includes(fn) &&
      (text.includes('"fsdp"') || /"zeroStage":\s*3/.test(text)) &&
      oldOut.ok === newOut.ok,
  },
  {
    name: 'T5 saves its eager attention whatever the setting',
    reason:
      'T5Attention has no SDPA path (modeling_t5.py): an SDPA setting now keeps the eager core ' +
      "(the probabilities included) with an assumption saying so, where it used SDPA's saves",
    explains: (fn, oldOut, newOut) =>
      oldOut.ok &&
      newOut.ok &&
      /recipe 't5'/.test(JSON.stringify(oldOut)) &&
      JSON.stringify(newOut).includes('no SDPA path'),
  },
  {
    name: 'vocabulary exports the strategy table and four more lists',
    reason:
      'vocabulary() adds budgetStrategies, strategies (placement, budget, parameters), saveOps, ' +
      'fsdpStrategies, float8Recipes and zeroMixedPrecision; every other key is unchanged',
    explains: (fn, oldOut, newOut) => {
      if (fn !== 'vocabulary' || !oldOut.ok || !newOut.ok) return false;
      const rest = { ...newOut.result };
      for (const k of ['budgetStrategies', 'strategies', 'saveOps', 'fsdpStrategies'])
        delete rest[k];
      delete rest.float8Recipes;
      delete rest.zeroMixedPrecision;
      return JSON.stringify(rest) === JSON.stringify(oldOut.result);
    },
  },
  {
    name: "a strategy parameter's error lists its strategies in the table's order",
    reason:
      'the strategies that take k, budgetBytes, ... are read from vocab::kStrategies (its order: ' +
      '"selective-layer, every-k, block"; "chen-greedy, optimal-single-level, optimal")',
    explains: (fn, oldOut, newOut) =>
      !oldOut.ok &&
      !newOut.ok &&
      oldOut.error.code === newOut.error.code &&
      oldOut.error.field === newOut.error.field &&
      / applies to strategy /.test(oldOut.error.message) &&
      / applies to strategy /.test(newOut.error.message),
  },
  {
    name: 'peakMemory plans chen-greedy under budgetBytes',
    reason:
      'the one budget rule: peakMemory accepts budgetBytes with every strategy that plans under ' +
      'one (chen-greedy too, as placement did); it refused the field for chen-greedy',
    explains: (fn, oldOut, newOut, text) =>
      ['peakMemory', 'accumulation', 'advise'].includes(fn) &&
      text.includes('chen-greedy') &&
      text.includes('budgetBytes') &&
      !oldOut.ok &&
      oldOut.error.field.endsWith('budgetBytes'),
  },
];
const { rand, pick, chance } = seeded(SEED);

// ---- Bases
const golden = JSON.parse(readFileSync(`${root}tests/fixtures/golden.json`, 'utf8'));
const bases = [...golden.cases, ...golden.errors]
  .filter((c) => typeof c.function === 'string' && c.request !== undefined)
  .map((c) => ({ fn: c.function, request: c.request }));
const layer = (f, s) => ({
  forwardCost: f,
  backwardCost: 2 * f,
  outputBytes: s,
  savedBytes: 3 * s,
});
// Long homogeneous chains (revolve's limits): slow, so picked for 1 request in 2,000.
const rare = [];
for (const n of [10, 100, 2046, 2047, 4096, 4097, 6000]) {
  const layers = Array.from({ length: n }, () => layer(1, 1000));
  for (const snapshots of [1, 3, 16])
    (n > 100 ? rare : bases).push({
      fn: 'placement',
      request: {
        chain: { inputBytes: 1000, layers },
        strategy: 'revolve',
        snapshots,
        timeline: false,
      },
    });
}
for (const st of [
  'none',
  'sqrt',
  'every-k',
  'sequential',
  'chen-greedy',
  'optimal',
  'optimal-single-level',
]) {
  const layers = Array.from({ length: 24 }, (_, i) => layer(1 + (i % 3), 1000 * (1 + (i % 5))));
  const r = { chain: { inputBytes: 500, layers }, strategy: st };
  if (st === 'every-k') r.k = 3;
  if (st === 'sequential') r.segments = 4;
  if (st.startsWith('optimal')) r.budgetBytes = 60000;
  bases.push({ fn: 'placement', request: r });
  bases.push({ fn: 'placement', request: { ...r, frontier: true, timeline: false } });
}
for (const fn of [
  'checkpointSize',
  'describeModel',
  'peakMemory',
  'accumulation',
  'placement',
  'presets',
  'readSnapshot',
  'compareSnapshot',
  'nope',
]) {
  bases.push({ fn, request: {} });
  bases.push({ fn, request: { model: { preset: 'gpt2' }, optimizer: 'adamw' } });
}
// The requests of tests/fixtures/message_requests.json (every feature's inputs: vision and
// speech networks, diffusion pipelines, quantized bases, parallelism, traces), traced models
// from tests/fixtures/traces, and hostile requests aimed at the readers' refusals (each error
// family of cpp/src), so that mutations reach those readers' checks too.
for (const [fn, request] of JSON.parse(
  readFileSync(`${root}tests/fixtures/message_requests.json`, 'utf8'),
).requests)
  bases.push({ fn, request });
const BASE = { model: { preset: 'gpt2' }, microBatch: 1, seqLen: 128, gpu: 'a100-80gb' };
for (const f of ['shared_twice', 'unetish', 'vgg11', 'tinylm', 'llama_tiny']) {
  const trace = JSON.parse(readFileSync(`${root}tests/fixtures/traces/${f}.trace.json`, 'utf8'));
  bases.push({ fn: 'peakMemory', request: { ...BASE, seqLen: undefined, model: { trace } } });
  bases.push({ fn: 'describeModel', request: { model: { trace: JSON.stringify(trace) } } });
}
const LAYER = layer(1, 10);
const chain = (layers, more) => ({ chain: { inputBytes: 1, layers }, ...more });
for (const [fn, request] of [
  ['peakMemory', { ...BASE, microBatch: 'one' }],
  ['peakMemory', { ...BASE, gpu: 'a100' }],
  ['peakMemory', { ...BASE, runtime: 'pytorch' }],
  ['peakMemory', { ...BASE, model: { preset: 'gpt' } }],
  ['peakMemory', { ...BASE, checkpointing: 'selective' }],
  ['peakMemory', { ...BASE, checkpointing: { strategy: 'selective-op', saveOps: ['mm', 'x'] } }],
  ['peakMemory', { ...BASE, allocator: 'max_split_size_mb:1.5,expandable_segments:x' }],
  ['peakMemory', { ...BASE, fsdp: { version: 1, reshardAfterForward: { blocks: [true] } } }],
  ['peakMemory', { ...BASE, mlp: { sizes: [8] }, model: undefined }],
  ['peakMemory', { ...BASE, optimizer: 'adamw', optimizerImplementation: 'fused' }],
  ['peakMemory', { ...BASE, model: { config: '{"model_type":' } }],
  ['peakMemory', { ...BASE, model: { config: { architectures: ['FooForCausalLM'] } } }],
  ['peakMemory', { ...BASE, model: { tensors: [] } }],
  ['peakMemory', { ...BASE, model: { preset: 'resnet50' }, imageSize: 7 }],
  ['peakMemory', { ...BASE, model: { config: { architecture: 'resnet51' } } }],
  ['peakMemory', { ...BASE, model: { trace: { format: 'x' } } }],
  ['peakMemory', { ...BASE, lora: { rank: 8, targetModules: ['wte'] } }],
  ['placement', chain([])],
  ['placement', chain([LAYER], { strategy: 'every-k' })],
  ['placement', chain([{ ...LAYER, savedBytes: 1 }])],
  ['placement', chain([LAYER, LAYER], { strategy: 'revolve', snapshots: 1, frontier: true })],
  ['placement', chain([LAYER, LAYER], { strategy: 'sequential', segments: 9 })],
  ['placement', chain([LAYER, LAYER], { checkpointed: [[1, 0]] })],
  ['checkpointSize', { model: { preset: 'gpt2' }, format: 'safetensors', includeOptimizer: true }],
  ['describeModel', { model: { params: 1e9, layers: 2 } }],
])
  bases.push({ fn, request });
// The snapshot reader, damaged files included (below), as often as the golden cases.
for (let i = 0; i < 50; ++i)
  bases.push(
    { fn: 'readSnapshot', request: {} },
    { fn: 'compareSnapshot', request: { request: BASE } },
  );
// Snapshot files for readSnapshot / compareSnapshot.
const snapDir = `${root}tests/fixtures/snapshots/`;
const snapNames = readdirSync(snapDir).filter((f) => !f.endsWith('.expected.json'));
const snapFiles = snapNames.map((f) => readFileSync(snapDir + f));

// ---- Mutations (JS values; raw tokens spliced into the text afterwards)
const RAW = [
  '1e400',
  '-1e400',
  '-0',
  '0',
  '-1',
  '0.5',
  '1e16',
  '9007199254740993',
  '18446744073709551616',
  'NaN',
  'true',
  'null',
  '""',
  '"abc"',
  '[]',
  '{}',
  '[[[]]]',
  '"\\ud800"',
];
const VALUES = [
  0,
  1,
  -1,
  0.5,
  2,
  3,
  8,
  64,
  1e9,
  1e15,
  2 ** 63,
  'fp16',
  'bf16',
  'adam',
  'sgd',
  'revolve',
  'optimal',
  true,
  false,
  null,
  [],
  {},
  '',
];
const MARK = '\u0001RAW\u0001';
const { randomPath } = requestPaths({ chance, pick, stop: 0.3 });
function mutate(r, raw) {
  const p = randomPath(r);
  const leaf = getAt(r, p);
  const kind = Math.floor(rand() * 8);
  if (typeof leaf === 'number' && kind < 3) {
    const f = pick([0.5, 2, 10, 0.1, 1.5, 1000]);
    return updateAt(r, p, Number.isInteger(leaf) ? Math.round(leaf * f) : leaf * f);
  }
  if (kind === 3 && raw.length < 3) {
    raw.push(pick(RAW));
    return updateAt(r, p, MARK);
  }
  if (kind === 4) return p.length ? updateAt(r, p, undefined) : r;
  if (kind === 5) {
    const o = randomPath(r, true);
    if (!o) return r;
    const keys = Object.keys(getAt(r, o));
    const key =
      keys.length && chance(0.6)
        ? pick(keys).slice(1)
        : pick(['microbatch', 'foo', 'snapshots', 'k']);
    return updateAt(r, [...o, key], pick(VALUES));
  }
  if (kind === 6)
    return updateAt(r, p, new Array(pick([0, 1, 2, 50])).fill(chance(0.5) ? 1 : layer(1, 10)));
  return updateAt(r, p, pick(VALUES));
}
// A snapshot file, damaged one time in three (cut short, a byte changed, garbage spliced in),
// so that the pickle reader's refusals are reached too.
function damage(file) {
  const t = Math.floor(rand() * 9);
  if (t > 2 || file.length === 0) return file;
  const at = Math.floor(rand() * file.length);
  if (t === 0) return file.subarray(0, at);
  const out = Buffer.from(file);
  if (t === 1) out[at] = Math.floor(rand() * 256);
  else for (let i = at; i < Math.min(out.length, at + 8); ++i) out[i] = Math.floor(rand() * 256);
  return out;
}
function requestText(base) {
  const raw = [];
  let r = base.request;
  const rounds = chance(0.4) ? 0 : 1 + Math.floor(rand() * 3);
  for (let i = 0; i < rounds; ++i) r = mutate(r, raw);
  let text = JSON.stringify(r === undefined ? null : r) ?? 'null';
  for (const tok of raw) text = text.replace(JSON.stringify(MARK), tok);
  const t = Math.floor(rand() * 30);
  if (t === 0) text = text.slice(0, Math.floor(rand() * text.length));
  else if (t === 1) text = text.replace(/^\{"([^"]+)":/, '{"$1":1,"$1":');
  else if (t === 2) text = text + ' x';
  return text;
}

// ---- Run (--jobs J: J processes with seeds SEED*1000+j, their summaries added up)
if (JOBS > 1) {
  const { spawn } = await import('node:child_process');
  const per = Math.ceil(TOTAL / JOBS);
  const runs = Array.from(
    { length: JOBS },
    (_, j) =>
      new Promise((done) => {
        const child = spawn(
          process.execPath,
          [
            fileURLToPath(import.meta.url),
            oldPath,
            newPath,
            '--n',
            String(per),
            '--seed',
            String(SEED * 1000 + j),
            '--json',
          ],
          { stdio: ['ignore', 'pipe', 'ignore'] },
        );
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('close', () => done(JSON.parse(out.slice(out.lastIndexOf('\n{') + 1))));
      }),
  );
  const parts = await Promise.all(runs);
  const sum = { total: 0, same: 0, counts: {}, intended: {}, errorCodes: {}, unexplained: [] };
  for (const p of parts) {
    sum.total += p.total;
    sum.same += p.same;
    for (const [fn, c] of Object.entries(p.counts)) {
      sum.counts[fn] ??= { valid: 0, error: 0 };
      sum.counts[fn].valid += c.valid;
      sum.counts[fn].error += c.error;
    }
    for (const [k, v] of Object.entries(p.intended)) sum.intended[k] = (sum.intended[k] ?? 0) + v;
    for (const [k, v] of Object.entries(p.errorCodes ?? {}))
      sum.errorCodes[k] = (sum.errorCodes[k] ?? 0) + v;
    sum.unexplained.push(...p.unexplained);
  }
  report(sum, `${JOBS} processes`);
  process.exit(sum.unexplained.length ? 1 : 0);
}
function report(sum, how) {
  console.log(`${sum.total} requests (seed ${SEED}, ${how}): ${sum.same} byte-identical`);
  for (const [fn, c] of Object.entries(sum.counts).sort())
    console.log(`  ${fn || '(empty name)'}: ${c.valid} results, ${c.error} errors`);
  for (const c of INTENDED)
    console.log(`intended: ${sum.intended[c.name] ?? 0} x ${c.name}: ${c.reason}`);
  console.log(`intended: ${sum.intended[MESSAGES] ?? 0} x ${MESSAGES} (the rest byte-identical)`);
  console.log(
    `intended: ${sum.intended[ERROR_MESSAGES] ?? 0} x ${ERROR_MESSAGES} (the rest, English included, byte-identical)`,
  );
  const reached = Object.keys(sum.errorCodes ?? {}).sort();
  console.log(`error codes reached: ${reached.length}: ${reached.join(' ')}`);
  console.log(`unexplained differences: ${sum.unexplained.length}`);
  for (const u of sum.unexplained.slice(0, 5)) console.log(JSON.stringify(u, null, 1));
}
const JSON_OUT = args.includes('--json');
// --dump FILE: the generated requests are written to FILE instead of being called, framed as
// "FUNCTION\nBYTES_FILE\nLENGTH\n<text>" for a native build's runner (cpp/tools/batch_call.cpp):
//   node tools/differential.mjs --dump /tmp/req.bin - --n 100000
//   build/native/trainmem_batch_call < /tmp/req.bin > new.txt  (and the older build's > old.txt)
const DUMP = opt('--dump', '');
if (DUMP) {
  const { openSync, writeSync, closeSync } = await import('node:fs');
  const fd = openSync(DUMP, 'w');
  for (let i = 0; i < TOTAL; ++i) {
    const base = rare.length && chance(1 / 2000) ? pick(rare) : pick(bases);
    const fn = chance(0.01) ? pick(['', 'describemodel', 'call']) : base.fn;
    const text = requestText(base);
    const snap =
      fn === 'readSnapshot' || fn === 'compareSnapshot' ? snapDir + pick(snapNames) : '-';
    const body = Buffer.from(text, 'utf8');
    writeSync(fd, `${fn}\n${snap}\n${body.length}\n`);
    writeSync(fd, body);
  }
  closeSync(fd);
  process.exit(0);
}
const load = async (p) => (await import(pathToFileURL(p).href)).default();
let [oldM, newM] = [await load(oldPath), await load(newPath)];
// A module that aborts (e.g. out of memory) is unusable afterwards: a fresh instance replaces it,
// and the abort is the response compared.
const silence = (f) => {
  const [log, warn, err] = [console.log, console.warn, console.error];
  console.log = console.warn = console.error = () => {};
  try {
    return f();
  } finally {
    [console.log, console.warn, console.error] = [log, warn, err];
  }
};
console.log(
  `old ${oldPath} (version ${oldM.version()})\nnew ${newPath} (version ${newM.version()})`,
);
const byIntent = new Map([...INTENDED.map((c) => [c.name, 0]), [MESSAGES, 0], [ERROR_MESSAGES, 0]]);
let same = 0;
const unexplained = [];
const counts = {};
const t0 = Date.now();
for (let i = 0; i < TOTAL; ++i) {
  const base = rare.length && chance(1 / 2000) ? pick(rare) : pick(bases);
  const fn = chance(0.01) ? pick(['', 'describemodel', 'call']) : base.fn;
  const text = requestText(base);
  const bytes =
    fn === 'readSnapshot' || fn === 'compareSnapshot' ? damage(pick(snapFiles)) : undefined;
  const run = (m) => (bytes === undefined ? m.call(fn, text) : m.callBytes(fn, text, bytes));
  if (process.env.DIFF_TRACE) console.error(i, fn, text.length, text.slice(0, 300));
  let a, b;
  try {
    a = silence(() => run(oldM));
  } catch (e) {
    a = JSON.stringify({ ok: false, crashed: String(e) });
    oldM = await load(oldPath);
  }
  try {
    b = silence(() => run(newM));
  } catch (e) {
    b = JSON.stringify({ ok: false, crashed: String(e) });
    newM = await load(newPath);
  }
  const ok = JSON.parse(b).ok;
  if (!ok)
    for (const m of JSON.parse(b).error?.messages ?? [])
      errorCodes[m.code] = (errorCodes[m.code] ?? 0) + 1;
  counts[fn] ??= { valid: 0, error: 0 };
  counts[fn][ok ? 'valid' : 'error'] += 1;
  if (a === b) {
    ++same;
    continue;
  }
  const oa = JSON.parse(a);
  const ob = JSON.parse(b);
  // result.messages (the sentences of the result as catalog codes) is new on purpose: compare
  // the rest.
  if (ob.ok && ob.result && 'messages' in ob.result && !(oa.ok && 'messages' in oa.result)) {
    const { messages, ...rest } = ob.result;
    if (JSON.stringify({ ...ob, result: rest }) === JSON.stringify(oa)) {
      byIntent.set(MESSAGES, byIntent.get(MESSAGES) + 1);
      continue;
    }
  }
  if (!ob.ok && !oa.ok && ob.error?.messages && !oa.error.messages) {
    const { messages, ...rest } = ob.error;
    if (JSON.stringify({ ...ob, error: rest }) === JSON.stringify(oa)) {
      byIntent.set(ERROR_MESSAGES, byIntent.get(ERROR_MESSAGES) + 1);
      continue;
    }
  }
  const intent = INTENDED.find((c) => c.explains(fn, oa, ob, text));
  if (ob.crashed !== undefined) unexplained.push({ fn, text: text.slice(0, 2000), new: b });
  else if (intent) byIntent.set(intent.name, byIntent.get(intent.name) + 1);
  else
    unexplained.push({
      fn,
      text: text.slice(0, 2000),
      old: a.slice(0, 2000),
      new: b.slice(0, 2000),
    });
}
const secs = ((Date.now() - t0) / 1000).toFixed(1);
const sum = {
  total: TOTAL,
  same,
  counts,
  intended: Object.fromEntries(byIntent),
  errorCodes,
  unexplained,
};
if (JSON_OUT) console.log('\n' + JSON.stringify(sum));
else report(sum, `${secs} s`);
process.exit(unexplained.length ? 1 : 0);
