// One source for every name and limit: the core's tables (tm.vocabulary(), from
// cpp/include/trainmem/vocabulary.hpp and limits.hpp) against every hand-written list — the
// d.ts unions, the CLI help and the page's option lists. A name added to a table fails here
// until each list has it (or, for the page, until it is listed below as left out, with why).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, run } from './fixtures/packed.js';
import { load } from '../../web/lib/index.js';
import { FIELDS, OPTIMIZERS, DTYPES } from '../../web/app/state.js';

let tm;
let v;
before(async () => {
  tm = await load();
  v = tm.vocabulary();
});

const dts = readFileSync(join(repoRoot, 'web/lib/index.d.ts'), 'utf8');
const sorted = (a) => [...a].sort();
const same = (actual, expected, what) =>
  assert.deepEqual(sorted(actual), sorted(expected), `${what} disagrees with the core's table`);

// The string literals of `export type NAME = ...;`, following references to other such types.
function unionOf(name) {
  const m = dts.match(new RegExp(`export type ${name} =([^;]*);`));
  assert.ok(m, `index.d.ts has no type ${name}`);
  const names = [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
  // references are the names outside the string literals
  for (const ref of m[1].replace(/'[^']*'/g, '').matchAll(/\b([A-Z]\w+)\b/g))
    names.push(...unionOf(ref[1]));
  return names;
}
// The string literals of an inline field type `field?: 'a' | 'b'` (up to the first `;` or `{`),
// of the first field of that name whose type is a string union.
// The first string union of `field`, after `within` (an interface's declaration) when given.
function fieldUnion(field, within = '') {
  const from = within ? dts.indexOf(within) : 0;
  assert.ok(from >= 0, `index.d.ts has no ${within}`);
  for (const m of dts.slice(from).matchAll(new RegExp(`\\n\\s*${field}\\??:([^;{]*)[;{]`, 'g'))) {
    const names = [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
    if (names.length > 0) return names;
  }
  assert.fail(`index.d.ts has no field ${field} with a string union`);
}

test('the wrapper has one method per function of the core', () => {
  assert.ok(v.functions.includes('vocabulary'));
  for (const name of v.functions) assert.equal(typeof tm[name], 'function', name);
  // the d.ts Functions map and the Trainmem interface list the same functions
  const fm = dts.match(/export interface Functions \{([^}]*)\}/);
  const keys = [...fm[1].matchAll(/^\s*(\w+):/gm)].map((x) => x[1]);
  same([...keys, 'readSnapshot', 'compareSnapshot'], v.functions, 'd.ts Functions');
});

test('the d.ts unions are the core tables', () => {
  same(unionOf('OptimizerName'), v.optimizers, 'OptimizerName');
  same(unionOf('DType'), v.dtypeSpellings, 'DType');
  same(unionOf('Precision'), v.precisions, 'Precision');
  same(unionOf('PlacementStrategy'), v.placementStrategies, 'PlacementStrategy');
  same(unionOf('CheckpointingStrategy'), v.checkpointing, 'CheckpointingStrategy');
  same(unionOf('CheckpointFormat'), v.checkpointFormats, 'CheckpointFormat');
  same(unionOf('Runtime'), v.runtimes, 'Runtime');
  same(unionOf('PipelineSchedule'), v.pipelineSchedules, 'PipelineSchedule');
  same(
    unionOf('ErrorCode'),
    v.errorCodes.map((c) => c.code),
    'ErrorCode',
  );
  same(fieldUnion('attention'), v.attention, 'PeakMemoryRequest.attention');
  same(
    fieldUnion('optimizerImplementation'),
    v.optimizerImplementations,
    'optimizerImplementation',
  );
  same(fieldUnion('loss'), v.losses, 'PeakMemoryRequest.loss');
  same(fieldUnion('activation', 'interface MlpInput'), v.mlpActivations, 'MlpInput.activation');
  same(unionOf('SaveOp'), v.saveOps, 'SaveOp');
  same(unionOf('FsdpShardingStrategy'), v.fsdpStrategies, 'FsdpShardingStrategy');
  same(unionOf('Float8Recipe'), v.float8Recipes, 'Float8Recipe');
  same(unionOf('ZeroMixedPrecision'), v.zeroMixedPrecision, 'ZeroMixedPrecision');
});

test('the generated lists are up to date (node tools/vocabulary.mjs)', () => {
  const r = run(process.execPath, [join(repoRoot, 'tools/vocabulary.mjs'), '--check']);
  assert.equal(r.status, 0, r.stderr);
});

// The budget rule, from the strategies' sources: Chen et al. 2016 Alg. 3 takes a budget B and
// searches one when none is given; Rotor (Beaumont et al. 2019) and the single-level dynamic
// programme minimise time under a memory limit, which they cannot do without one; the others
// place checkpoints by a count (k, segments, snapshots) or a rule (sqrt).
test('one budget rule: budgetStrategies, peakMemory, placement and the page agree', async () => {
  const budget = {
    'chen-greedy': 'optional',
    'optimal-single-level': 'required',
    optimal: 'required',
  };
  for (const [name, s] of Object.entries(v.strategies)) {
    assert.equal(s.budget, budget[name] ?? 'none', name);
    assert.equal(s.placement, v.placementStrategies.includes(name), name);
  }
  same(v.budgetStrategies, Object.keys(budget), 'budgetStrategies');
  same(Object.keys(v.strategies), v.checkpointing, 'strategies');
  // peakMemory takes budgetBytes with these strategies and refuses it, naming them, with others
  const model = { preset: 'gpt2' };
  const base = { model, microBatch: 1, seqLen: 128, precision: 'fp32', optimizer: 'adamw' };
  const big = 4 * 2 ** 30;
  for (const strategy of v.budgetStrategies) {
    const r = tm.peakMemory({ ...base, checkpointing: { strategy, budgetBytes: big } });
    assert.ok(r.peakBytes > 0, strategy);
  }
  assert.throws(
    () => tm.peakMemory({ ...base, checkpointing: { strategy: 'sqrt', budgetBytes: big } }),
    (e) =>
      e.code === 'inconsistent' &&
      e.field === 'checkpointing.budgetBytes' &&
      v.budgetStrategies.every((n) => e.message.includes(n)),
  );
  // placement: a required budget is missing without it
  const { uniformChain } = await import('../../web/app/requests.js');
  const chain = uniformChain(8, 1e6);
  for (const [name, s] of Object.entries(v.strategies)) {
    if (s.budget !== 'required') continue;
    assert.throws(
      () => tm.placement({ chain, strategy: name }),
      (e) => e.code === 'missing_field' && e.field === 'budgetBytes',
      name,
    );
  }
  // the page asks for a budget exactly for these strategies (form.js visible, requests.js)
  const { visible } = await import('../../web/app/form.js');
  const { placementRequest, peakMemoryRequest } = await import('../../web/app/requests.js');
  const { defaults } = await import('../../web/app/state.js');
  for (const strategy of v.placementStrategies) {
    const st = { ...defaults(), strategy, checkpointing: strategy, budgetGB: 3 };
    const wants = v.budgetStrategies.includes(strategy);
    assert.equal(visible('budgetGB', st, 'place'), wants, `place ${strategy}`);
    assert.equal(visible('budgetGB', st, 'peak'), wants, `peak ${strategy}`);
    assert.equal(placementRequest(st).budgetBytes === 3e9, wants, `placement request ${strategy}`);
    const ck = peakMemoryRequest(st).checkpointing;
    assert.equal(
      typeof ck === 'object' && ck.budgetBytes === 3e9,
      wants,
      `peak request ${strategy}`,
    );
  }
});

test('the d.ts doc comments quote the limits header', () => {
  const grouped = (n) => n.toLocaleString('en-US');
  const pow = (n) => `(2^${Math.log2(n)})`;
  // each doc comment of these fields (the line before, or the block before) quotes its limit
  const quotes = {
    microBatch: v.limits.microBatch,
    seqLen: v.limits.seqLen,
    gradientAccumulationSteps: v.limits.accumulationSteps,
    accumulationSteps: v.limits.accumulationSteps,
    targetGlobalBatch: v.limits.globalBatch,
    compareMicroBatch: v.limits.microBatch,
    dataParallel: v.limits.ranks,
  };
  assert.equal(v.limits.microBatch, 2 ** 24);
  for (const [field, limit] of Object.entries(quotes)) {
    const docs = [
      ...dts.matchAll(new RegExp(`/\\*\\*((?:(?!\\*/)[\\s\\S])*)\\*/\\s*${field}\\??:`, 'g')),
    ];
    const inRequests = docs.filter((d) => /\d/.test(d[1]) && /whole|to|at most/.test(d[1]));
    assert.ok(inRequests.length > 0, `no doc comment of ${field} quotes a limit`);
    for (const d of inRequests) {
      const text = d[1].replace(/\s*\*\s*/g, ' ');
      assert.ok(
        text.includes(grouped(limit)) && text.includes(pow(limit)),
        `${field}: "${text.trim()}" does not quote ${grouped(limit)} ${pow(limit)}`,
      );
    }
  }
  // the Vocabulary.limits doc comments quote every value
  const lim = dts.match(/limits: \{([\s\S]*?)\n {2}\};/)[1];
  for (const [key, value] of Object.entries(v.limits)) {
    const m = lim.match(new RegExp(`/\\*\\*([^*]*)\\*/\\s*${key}: number;`));
    assert.ok(m, `Vocabulary.limits.${key} has no doc comment`);
    assert.ok(m[1].includes(grouped(value)), `Vocabulary.limits.${key}: ${m[1]} vs ${value}`);
  }
});

// `--flag <value>   path: a | b | c (note)` lines of `trainmem <command> --help`.
function helpList(command, flag) {
  const r = run(process.execPath, [join(repoRoot, 'web/lib/cli.js'), command, '--help']);
  assert.equal(r.status, 0, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.trimStart().startsWith(`--${flag} `));
  assert.ok(line, `${command} --help has no --${flag}`);
  const list = line.slice(line.indexOf(': ') + 2);
  // names are separated by " | "; a parenthesis after a name is a note about it
  return list.split(' | ').map((x) => x.replace(/\s*\(.*$/, '').trim());
}

test('the CLI help lists every name of the core tables', () => {
  // [command, flag, the core's list]
  const lists = [
    ['checkpoint-size', 'optimizer', v.optimizers],
    ['peak-memory', 'optimizer', v.optimizers],
    ['checkpoint-size', 'weight-dtype', v.dtypes],
    ['checkpoint-size', 'file-format', v.checkpointFormats],
    ['peak-memory', 'precision', v.precisions],
    ['peak-memory', 'checkpointing', v.checkpointing],
    ['peak-memory', 'attention', v.attention],
    ['peak-memory', 'runtime', v.runtimes],
    ['peak-memory', 'optimizer-impl', v.optimizerImplementations],
    ['peak-memory', 'loss', v.losses],
    ['peak-memory', 'schedule', v.pipelineSchedules],
    ['placement', 'strategy', v.placementStrategies],
    ['peak-memory', 'save-ops', v.saveOps],
    ['peak-memory', 'fsdp-sharding', v.fsdpStrategies],
    ['peak-memory', 'float8', v.float8Recipes],
    ['peak-memory', 'zero-mixed-precision', v.zeroMixedPrecision],
  ];
  for (const [command, flag, names] of lists)
    same(helpList(command, flag), names, `CLI ${command} --${flag}`);
});

// Names the page leaves out on purpose: each needs an input the page does not have.
const PAGE_LEAVES_OUT = {
  // peak and accumulation tabs: the page has a budget input (optimal) and no per-strategy
  // parameter inputs there
  checkpointing: {
    manual: 'needs a list of segments',
    block: 'needs k, which the page asks for on the placement tab only',
    'chen-greedy': 'a placement strategy: shown on the placement tab',
    revolve: 'a placement strategy: shown on the placement tab',
    'optimal-single-level': 'a placement strategy: shown on the placement tab',
  },
  strategy: {
    manual: 'needs a list of segments',
    block: 'needs k layers from the start; the k input is for every-k',
  },
  // element types the page's size calculator offers: the common weight dtypes
  dtypes: {
    fp8: 'not a checkpoint weight dtype the page offers',
    int4: 'not a checkpoint weight dtype the page offers',
    uint8: 'not a checkpoint weight dtype the page offers',
    int32: 'not a checkpoint weight dtype the page offers',
    int64: 'not a checkpoint weight dtype the page offers',
    fp64: 'not a checkpoint weight dtype the page offers',
    bool: 'not a checkpoint weight dtype the page offers',
    float32: 'another spelling of fp32',
    float16: 'another spelling of fp16',
    bfloat16: 'another spelling of bf16',
  },
  attention: { flash: 'the same saved tensors as sdpa, which the page offers' },
};
const pageList = (values) => values.filter((x) => x !== '');
const withoutLeftOut = (names, key) => names.filter((n) => !(n in (PAGE_LEAVES_OUT[key] || {})));

test("the page's option lists are the core tables", () => {
  same(OPTIMIZERS, v.optimizers, 'page optimizers');
  same(pageList(FIELDS.optimizer.values), v.optimizers, 'page optimizer field');
  same(DTYPES, withoutLeftOut(v.dtypes, 'dtypes'), 'page dtypes');
  same(pageList(FIELDS.format.values), v.checkpointFormats, 'page formats');
  same(pageList(FIELDS.precision.values), v.precisions, 'page precisions');
  same(pageList(FIELDS.runtime.values), v.runtimes, 'page runtimes');
  same(pageList(FIELDS.fsdp.values), v.fsdpStrategies, 'page FSDP strategies');
  same(
    pageList(FIELDS.optImpl.values),
    v.optimizerImplementations,
    'page optimizer implementations',
  );
  same(
    pageList(FIELDS.attention.values),
    withoutLeftOut(v.attention, 'attention'),
    'page attention',
  );
  same(
    FIELDS.checkpointing.values,
    withoutLeftOut(v.checkpointing, 'checkpointing'),
    'page checkpointing',
  );
  same(
    FIELDS.strategy.values,
    withoutLeftOut(v.placementStrategies, 'strategy'),
    'page strategies',
  );
  // every name left out is still a name of the core
  for (const [key, names] of Object.entries(PAGE_LEAVES_OUT)) {
    const table =
      { checkpointing: v.checkpointing, strategy: v.placementStrategies }[key] || v[key];
    for (const n of Object.keys(names))
      assert.ok(table.includes(n), `${key}: ${n} is not in the core`);
  }
});

test("the page's number limits are the core's", () => {
  assert.equal(FIELDS.microBatch.max, v.limits.microBatch);
  assert.equal(FIELDS.accumSteps.max, v.limits.accumulationSteps);
  assert.equal(FIELDS.seqLen.max, v.limits.seqLen);
  assert.equal(FIELDS.dataParallel.max, v.limits.ranks);
  assert.equal(FIELDS.targetGlobalBatch.max, v.limits.globalBatch);
  assert.equal(FIELDS.layers.max, v.limits.chainLayers);
});

test('every page option has an English and an Arabic label', () => {
  for (const lang of ['en', 'ar']) {
    const labels = JSON.parse(readFileSync(join(repoRoot, `web/app/i18n/${lang}.json`), 'utf8'));
    for (const key of ['optimizer', 'precision', 'runtime', 'checkpointing']) {
      for (const value of pageList(FIELDS[key].values)) {
        assert.ok(labels[`opt.${key}.${value}`], `${lang}: no label opt.${key}.${value}`);
      }
    }
  }
});
