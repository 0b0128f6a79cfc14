// Bounded work and typed errors through the WebAssembly module and the CLI (issue "bounded
// work"): each repro of the audit is a case here. These tests check answers and refusals (the
// field named, the bound checked before the work), not times: bench/ measures those.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrainmemError, load } from '../../web/lib/index.js';
import { main } from '../../web/lib/cli.js';
import { USAGE_CODES } from '../../web/lib/cli/usage-error.js';
import { repoRoot, run } from './fixtures/packed.js';

let tm;
before(async () => {
  tm = await load();
});
const work = mkdtempSync(join(tmpdir(), 'trainmem-bounded-'));
after(() => rmSync(work, { recursive: true, force: true }));

const throwsCode = (fn, code, field) =>
  assert.throws(fn, (e) => {
    assert.ok(e instanceof TrainmemError, `not a TrainmemError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (field !== undefined) assert.equal(e.field, field, e.message);
    return true;
  });

// The chain: {forwardCost 1, backwardCost 2, outputBytes 10, savedBytes 20} x n.
const uniform = (n) => ({
  inputBytes: 10,
  layers: Array.from({ length: n }, () => ({
    forwardCost: 1,
    backwardCost: 2,
    outputBytes: 10,
    savedBytes: 20,
  })),
});

test('NaN and Infinity are invalid_number naming the field; null is invalid_type', () => {
  // accumulation dataParallel: NaN used to become the default (JSON.stringify writes null).
  throwsCode(
    () => tm.accumulation({ microBatch: 8, accumulationSteps: 4, dataParallel: NaN }),
    'invalid_number',
    'dataParallel',
  );
  throwsCode(
    () => tm.placement({ chain: { inputBytes: 1, layers: [{ forwardCost: Infinity }] } }),
    'invalid_number',
    'chain.layers[0].forwardCost',
  );
  throwsCode(
    () => tm.accumulation({ microBatch: 8, accumulationSteps: 4, dataParallel: null }),
    'invalid_type',
    'dataParallel',
  );
  // as raw text, null is the same wrong type (not an unknown key, not the default)
  throwsCode(
    () => tm.call('peakMemory', '{"model":{"preset":"gpt2"},"microBatch":1,"seqLen":null}'),
    'invalid_type',
    'seqLen',
  );
  // a pasted HF config.json keeps transformers' meaning of null (unset): GPT-2's n_inner
  const r = tm.describeModel({
    model: {
      config: {
        model_type: 'gpt2',
        n_embd: 64,
        n_head: 4,
        n_layer: 2,
        n_positions: 128,
        vocab_size: 100,
        n_inner: null,
      },
    },
  });
  assert.ok(r.params > 0);
});

test('every error of the JS API is a TrainmemError', () => {
  throwsCode(() => tm.call(42, '{}'), 'invalid_type', '');
  const buf = new ArrayBuffer(8);
  const view = new Uint8Array(buf);
  structuredClone(buf, { transfer: [buf] }); // detaches buf (as postMessage to a worker does)
  throwsCode(() => tm.readSnapshot(buf), 'invalid_type', 'snapshot');
  throwsCode(() => tm.readSnapshot(view), 'invalid_type', 'snapshot');
  // a request over the text limit is refused before it is copied into the module
  throwsCode(() => tm.call('placement', ' '.repeat(16 * 2 ** 20 + 1)), 'too_large', '');
  // and the module keeps working
  assert.equal(tm.placement({ chain: uniform(3) }).strategy, 'none');
});

test('string limits are stated in bytes', () => {
  // "é" is one character but two bytes of UTF-8: 200 of them are 400 bytes > 256.
  assert.throws(
    () =>
      tm.placement({
        chain: { inputBytes: 1, layers: [{ ...uniform(1).layers[0], name: 'é'.repeat(200) }] },
      }),
    (e) => e.code === 'too_large' && /256 bytes/.test(e.message),
  );
});

test('searchMaxMicroBatch: false gives maxMicroBatch null, not 0 beside fits', () => {
  const r = tm.peakMemory({
    model: { preset: 'gpt2' },
    microBatch: 1,
    seqLen: 128,
    gpu: 'h100-80gb',
    searchMaxMicroBatch: false,
    timeline: false,
  });
  assert.equal(r.fits, true);
  assert.equal(r.maxMicroBatch, null);
});

test('placement: the issue repros answer, bounded where stated', () => {
  // optimal on 2,000 and 100,000 uniform layers with budgetBytes 1e6 (27.8 s, then an
  // internal error before). 2,000: storing everything peaks at 10 + 20 x 2,000 + 10 B.
  const a = tm.placement({ chain: uniform(2000), strategy: 'optimal', budgetBytes: 1e6 });
  assert.equal(a.recomputeCost, 0);
  assert.equal(a.peakActivationBytes, 40020);
  const b = tm.placement({
    chain: uniform(100000),
    strategy: 'optimal',
    budgetBytes: 1e6,
    timeline: false,
  });
  assert.ok(b.details.stageLayers > 1);
  assert.ok(b.peakActivationBytes <= 1e6);
  // sqrt and chen-greedy on 100,000 layers; the timeline holds at most 10,000 events
  for (const strategy of ['sqrt', 'chen-greedy']) {
    const r = tm.placement({ chain: uniform(100000), strategy });
    assert.equal(r.timeline.length, tm.vocabulary().limits.timelineEvents);
    assert.ok(r.timelineEvents > r.timeline.length);
    assert.equal(Math.max(...r.timeline.slice(0, 1).map((e) => e.liveBytes)) >= 0, true);
    assert.equal(
      r.timeline.reduce((m, e) => Math.max(m, e.liveBytes), 0),
      r.peakActivationBytes,
    );
  }
  // optimal-single-level at 100 % of the saved bytes answers (it refused before)
  const chain = uniform(1000);
  const all = tm.placement({ chain, timeline: false }).peakActivationBytes;
  const s = tm.placement({
    chain,
    strategy: 'optimal-single-level',
    budgetBytes: all,
    timeline: false,
  });
  assert.equal(s.recomputeCost, 0);
  assert.equal(s.details.exact, true);
});

test('accumulation planner: DeepSeek-V3 answers; too_large never names a field not asked', () => {
  const r = tm.accumulation({
    model: { preset: 'deepseek-v3' },
    targetGlobalBatch: 4096,
    seqLen: 4096,
    gpu: 'h100-80gb',
    precision: 'amp-bf16',
  });
  assert.equal(r.recommended, null); // 671 B parameters do not fit one GPU
  assert.ok(r.plans.every((p) => p.fits === false && p.fitsFrom === 'allocated-bytes'));
  assert.ok(r.plans.length + r.omittedPlans >= 2 * 13); // 4096 = 2^12: 13 splits x 2 strategies
  // A target whose largest splits overflow 2^63 bytes (a 405B model at 128K tokens): those
  // splits do not fit; too_large used to name microBatch, which the request does not have.
  const llama405 = {
    config: {
      model_type: 'llama',
      hidden_size: 16384,
      intermediate_size: 53248,
      num_attention_heads: 128,
      num_key_value_heads: 8,
      num_hidden_layers: 126,
      vocab_size: 128256,
      max_position_embeddings: 131072,
    },
  };
  const big = tm.accumulation({
    model: llama405,
    targetGlobalBatch: 2 ** 31,
    seqLen: 131072,
    gpu: 'h100-80gb',
  });
  assert.equal(big.recommended, null);
  assert.ok(big.omittedPlans > 0);
});

// The CLI in this process (one module load), as tests/js/cli.test.js runs it.
const cli = async (args, input = '') => {
  let stdout = '';
  let stderr = '';
  const status = await main(args, {
    out: (t) => (stdout += t),
    err: (t) => (stderr += t),
    stdin: () => input,
  });
  return { status, stdout, stderr, error: stderr ? JSON.parse(stderr).error : null };
};

test('CLI: __proto__ paths, duplicate keys, repeated flags and endless input are refused', async () => {
  let r = await cli(['checkpoint-size', '--params', '7e9', '--set', '__proto__.run=1']);
  assert.equal(r.status, 2);
  assert.equal(r.error.code, 'invalid_set');
  assert.equal({}.run, undefined);
  r = await cli(['checkpoint-size', '--set', 'a.constructor.prototype.x=1']);
  assert.equal(r.error.code, 'invalid_set');
  // duplicate keys: the core's reader refuses them (JSON.parse kept the last)
  const dup = join(work, 'dup.json');
  writeFileSync(dup, '{"model":{"params":5,"params":7},"optimizer":"adam"}');
  r = await cli(['checkpoint-size', '--json', dup]);
  assert.equal(r.status, 2);
  assert.equal(r.error.code, 'invalid_json');
  assert.equal(r.error.field, 'model.params');
  assert.equal(r.error.flag, '--json');
  // a repeated flag does not silently keep its last value
  r = await cli([
    'checkpoint-size',
    '--params',
    '7e9',
    '--optimizer',
    'adam',
    '--optimizer',
    'sgd',
  ]);
  assert.equal(r.status, 2);
  assert.equal(r.error.code, 'repeated_flag');
  assert.equal(r.error.flag, '--optimizer');
  r = await cli([
    'checkpoint-size',
    '--params',
    '7e9',
    '--set',
    'optimizer=adam',
    '--set',
    'optimizer=sgd',
  ]);
  assert.equal(r.error.code, 'repeated_flag');
});

test('CLI: --json /dev/zero and an endless stdin end with too_large', () => {
  const cliPath = join(repoRoot, 'web/lib/cli.js');
  const a = run(process.execPath, [cliPath, 'checkpoint-size', '--json', '/dev/zero'], {
    timeout: 60000,
  });
  assert.equal(a.status, 2, a.stderr);
  assert.equal(JSON.parse(a.stderr).error.code, 'too_large');
  const b = run(
    '/bin/sh',
    [
      '-c',
      `head -c 17000000 /dev/zero | "${process.execPath}" "${cliPath}" checkpoint-size --json -`,
    ],
    {
      timeout: 60000,
    },
  );
  assert.equal(b.status, 2, b.stderr);
  assert.equal(JSON.parse(b.stderr).error.code, 'too_large');
});

test("one list per vocabulary of error codes: the core's, and the CLI usage codes", () => {
  const core = new Set(tm.vocabulary().errorCodes.map((c) => c.code));
  assert.ok(core.has('invalid_number'));
  // every code the JS wrapper throws itself is the core's
  const wrapper = readFileSync(join(repoRoot, 'web/lib/index.js'), 'utf8');
  for (const [, code] of wrapper.matchAll(/new TrainmemError\(\s*'([a-z_]+)'/g)) {
    assert.ok(core.has(code), `web/lib/index.js throws ${code}, not in the core's errorCodes`);
  }
  // every usage error of the CLI is in USAGE_CODES (or is one of the core's codes)
  const dir = join(repoRoot, 'web/lib/cli');
  const files = readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.js'));
  for (const f of files) {
    const text = readFileSync(join(dir, String(f)), 'utf8');
    for (const [, code] of text.matchAll(/new UsageError\(\s*'([a-z_]+)'/g)) {
      assert.ok(
        Object.hasOwn(USAGE_CODES, code) || core.has(code),
        `${f}: UsageError code ${code} is not listed`,
      );
    }
  }
});
