// The core's sentences in the user's language: every sentence a result or an error holds comes
// from codes of the core's message catalog (cpp/data/messages.json), returned in
// result.messages / error.messages, and the page translates every code (web/app/i18n/ar.json,
// keys core.<code>; English is the catalog). The requests: tests/fixtures/message_requests.json
// (tools/message_requests.py) and the golden cases. The core renders English from the same
// codes, and tests/cpp/test_message_codes.cpp checks natively that the codes spell each
// sentence; here the module's results are checked for codes, each one in the catalog.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';

const json = (p) => JSON.parse(readFileSync(new URL(p, import.meta.url), 'utf8'));
const catalog = json('../../cpp/data/messages.json').messages;
const ar = json('../../web/app/i18n/ar.json');
const en = json('../../web/app/i18n/en.json');
const requests = [
  ...json('../fixtures/message_requests.json').requests,
  ...json('../fixtures/golden.json').cases.map((c) => [c.function, c.request]),
];
const tm = await load();

// Text from data files, not the core's sentences: preset names and their citations.
const DATA = [/^presets:/, /^describeModel:(sourceNote|name)$/];
const NAMES = new Set(['name', 'field', 'id']);
// Catalog entries that no request of the fixture reaches, with the reason.
const UNREACHED = {
  'acc.ck.noHelp': 'a checkpointed plan never needs more memory than the same plan without',
  'acc.warn.recompute': 'every strategy the accumulation planner takes gives a plan',
  'peak.assume.searchBound':
    'reached by tests/cpp/test_peak_bounded.cpp (a 32,768-expert config): too slow for this fixture',
  'error.layout.links': 'every GPU preset has its links in cpp/data/interconnects.json',
  'error.layout.noPeak': 'every GPU preset lists its dense fp32 and 16-bit peaks',
  'error.layout.tooMany':
    'reached by tests/cpp/test_layout_planner.cpp (720,720 GPUs and 720 heads): no preset has them',
  'runtime.name.pytorch-cpu':
    'the CPU profile neither simulates the allocator nor sums gradients in place (torch 1.13)',
  'runtime.context.noGpu':
    'every CUDA runtime profile has a context measurement or derivation for every GPU preset',
  'error.infeasible.stages':
    'the optimal strategy groups layers into stages only on chains longer than any request here',
  'advise.time.noTflops':
    'every GPU preset lists its dense fp32 and fp16 peaks, and bf16 where it has bf16 (which a bf16 precision needs)',
};

function sentences(v, path, key, out) {
  if (typeof v === 'string') {
    if (v.includes(' ') && !NAMES.has(key)) out.push([path, v]);
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => sentences(x, `${path}[${i}]`, key, out));
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v))
      if (!(path === '' && k === 'messages')) sentences(x, path ? `${path}.${k}` : k, k, out);
  }
  return out;
}

// Errors the page can meet, one per sentence of the catalog's error.* templates: their message
// comes back as codes too (error.messages), so that the page can say it in its language.
const LLAMA = { model: { preset: 'llama-2-7b' }, microBatch: 1, seqLen: 512, optimizer: 'adamw' };
const A100 = { ...LLAMA, gpu: 'a100-80gb' };
const GPT2_SMALL = { model: { preset: 'gpt2' }, microBatch: 1, seqLen: 128, timeline: false };
const ERROR_REQUESTS = [
  ['peakMemory', { ...LLAMA, gpu: 't4', precision: 'bf16' }],
  ['peakMemory', { ...LLAMA, model: { params: 7e9 }, lora: { rank: 16 } }],
  ['peakMemory', { ...A100, offload: { optimizer: true } }],
  ['peakMemory', { ...A100, offload: { params: true }, zeroStage: 2, dataParallel: 2 }],
  ['peakMemory', { ...A100, tensorParallel: 3 }],
  ['peakMemory', { ...A100, seqLen: 8192 }],
  [
    'peakMemory',
    { ...LLAMA, gpu: 'h100-80gb', lora: { rank: 16 }, float8: { recipe: 'tensorwise' } },
  ],
  ['peakMemory', { ...A100, float8: { recipe: 'tensorwise' } }],
  ['peakMemory', { ...A100, optimizerInBackward: true, gradientAccumulationSteps: 4 }],
  ['peakMemory', { ...A100, optimizerInBackward: true, zeroStage: 2, dataParallel: 2 }],
  [
    'peakMemory',
    {
      ...A100,
      optimizerInBackward: true,
      fsdp: { shardingStrategy: 'FULL_SHARD' },
      dataParallel: 2,
    },
  ],
  ['peakMemory', { ...A100, checkpointing: 'selective-op', lora: { rank: 8 } }],
  ['peakMemory', { ...A100, checkpointing: 'selective-op', tensorParallel: 2 }],
  ['peakMemory', { ...A100, model: { preset: 'mixtral-8x7b' }, checkpointing: 'selective-op' }],
  ['accumulation', { ...LLAMA, microBatch: undefined, targetGlobalBatch: 8, gpuMemoryBytes: 80e9 }],
  ['accumulation', { ...A100, microBatch: undefined, targetGlobalBatch: 2, dataParallel: 4 }],
  ['peakMemory', { ...A100, fsdp: { shardingStrategy: 'HYBRID_SHARD' }, dataParallel: 16 }],
  [
    'peakMemory',
    { ...A100, fsdp: { shardingStrategy: 'HYBRID_SHARD', shardGroupSize: 3 }, dataParallel: 16 },
  ],
  [
    'peakMemory',
    { ...A100, fsdp: { shardingStrategy: 'FULL_SHARD' }, zeroStage: 2, dataParallel: 8 },
  ],
  ['peakMemory', { ...A100, ddp: { bucketCapMb: 100 } }],
  ['peakMemory', { ...A100, zero3: { maxLiveParameters: 1e8 } }],
  ['peakMemory', { ...A100, targetLen: 128 }],
  ['peakMemory', { ...A100, samples: { packed: true, lengths: [100] } }],
  ['peakMemory', { ...A100, microBatch: 4, samples: { lengths: [100, 200] } }],
  ['peakMemory', { ...A100, runtime: 'pytorch-cpu', simulateAllocator: true }],
  ['peakMemory', { ...A100, allocator: 'foo:1' }],
  ['peakMemory', { ...A100, lora: { rank: 8, targetModules: ['foo'] } }],
  ['peakMemory', { ...A100, checkpointing: { strategy: 'optimal', budgetBytes: 1 } }],
  [
    'placement',
    {
      chain: {
        inputBytes: 1,
        layers: [{ forwardCost: 1, backwardCost: 2, outputBytes: 10, savedBytes: 10 }],
      },
      strategy: 'chen-greedy',
      budgetBytes: 1,
    },
  ],
  [
    'placement',
    {
      chain: {
        inputBytes: 1,
        layers: [{ forwardCost: 1, backwardCost: 2, outputBytes: 10, savedBytes: 10 }],
      },
      strategy: 'optimal-single-level',
      budgetBytes: 1,
    },
  ],
  ['peakMemory', { ...A100, model: { config: '{"model_type":"llama"}' } }],
  ['peakMemory', { ...A100, model: { config: '{"model_type":"llama","hidden_size":-4}' } }],
  ['peakMemory', { ...A100, model: { config: '{"model_type":"foo","hidden_size":64}' } }],
  ['peakMemory', { ...A100, microBatch: 2 ** 30 }],
  ['peakMemory', { ...A100, microBatch: 1.5 }],
  ['advise', { ...A100, marginFraction: 2 }],
  ['peakMemory', { ...A100, microbatch: 1 }],
  ['peakMemory', { ...A100, zzzzzzzzzz: 1 }],
  ['peakMemory', { ...A100, precision: 'amp' }],
  ['peakMemory', { ...A100, precision: 'zzzzzzzzzz' }],
  ['peakMemory', { ...A100, precision: 'amp-bf1' }],
  ['peakMemory', { ...A100, microBatch: -1.5 }],
  ['peakMemory', { ...A100, microBatch: 1e30 }],
  ['peakMemory', { ...A100, schedule: 'gpipe' }],
  ['peakMemory', { ...A100, pipelineParallel: 2, virtualStages: 2 }],
  ['peakMemory', { ...A100, pipelineParallel: 2, schedule: 'interleaved-1f1b', virtualStages: 1 }],
  [
    'peakMemory',
    { mlp: { sizes: [8, 8, 8] }, microBatch: 1, gpu: 'a100-80gb', pipelineParallel: 2 },
  ],
  ['peakMemory', { ...A100, pipelineParallel: 2, lora: { rank: 8 } }],
  ['peakMemory', { ...A100, pipelineParallel: 2, checkpointing: 'selective-op' }],
  ['peakMemory', { ...A100, pipelineParallel: 2, stageBlocks: [1, 1] }],
  ['peakMemory', { ...A100, pipelineParallel: 64 }],
  ['peakMemory', { ...A100, model: { params: 7e9 }, pipelineParallel: 2 }],
  ['peakMemory', { ...A100, model: { preset: 'bert-large-uncased' }, contextParallel: 2 }],
  ['peakMemory', { ...A100, contextParallel: 2, attention: 'eager' }],
  ['peakMemory', { ...A100, contextParallel: 2, samples: { packed: true } }],
  ['peakMemory', { ...A100, contextParallelism: { rotate: 'alltoall' } }],
  ['peakMemory', { ...A100, seqLen: 510, contextParallel: 4 }],
  [
    'peakMemory',
    { ...A100, seqLen: 510, contextParallel: 4, contextParallelism: { loadBalance: 'none' } },
  ],
  ['peakMemory', { ...A100, expertParallel: 2 }],
  [
    'peakMemory',
    { ...A100, model: { preset: 'mixtral-8x7b' }, expertParallelism: { routingImbalance: 2 } },
  ],
  [
    'peakMemory',
    {
      ...A100,
      model: { preset: 'mixtral-8x7b' },
      dataParallel: 8,
      expertParallel: 8,
      expertParallelism: { capacityFactor: 1, routingImbalance: 2 },
    },
  ],
  [
    'peakMemory',
    { ...A100, model: { preset: 'mixtral-8x7b' }, dataParallel: 3, expertParallel: 3 },
  ],
  [
    'peakMemory',
    { ...A100, model: { preset: 'mixtral-8x7b' }, dataParallel: 6, expertTensorParallel: 6 },
  ],
  [
    'peakMemory',
    { ...A100, model: { preset: 'mixtral-8x7b' }, dataParallel: 2, expertParallel: 4 },
  ],
  [
    'peakMemory',
    {
      ...A100,
      model: { preset: 'mixtral-8x7b' },
      dataParallel: 8,
      expertParallel: 8,
      zeroStage: 3,
    },
  ],
  [
    'peakMemory',
    {
      ...A100,
      model: { preset: 'mixtral-8x7b' },
      dataParallel: 8,
      expertParallel: 8,
      fsdp: { shardingStrategy: 'HYBRID_SHARD', shardGroupSize: 4 },
    },
  ],
  [
    'peakMemory',
    {
      ...A100,
      model: { preset: 'mixtral-8x7b' },
      dataParallel: 8,
      expertParallel: 8,
      lora: { rank: 8 },
    },
  ],
];
// planLayout's errors and its reasons for the layouts it rules out
const CLUSTER = {
  model: { preset: 'llama-3-70b' },
  gpu: 'a100-80gb',
  gpus: 64,
  globalBatch: 64,
  seqLen: 8192,
  precision: 'amp-bf16',
};
ERROR_REQUESTS.push(
  ['planLayout', { ...CLUSTER, tensorParallel: 2 }],
  ['planLayout', { ...CLUSTER, gpusPerNode: 3 }],
  ['planLayout', { ...CLUSTER, gpu: undefined }],
  ['planLayout', { ...CLUSTER, model: { params: 7e9 } }],
  ['planLayout', { ...CLUSTER, lora: { rank: 8 } }],
  ['planLayout', { ...CLUSTER, compare: { tensorParallel: 3 } }],
  ['planLayout', { ...CLUSTER, compare: { microBatch: 3 } }],
  ['planLayout', { ...CLUSTER, compare: { contextParallel: 3 } }],
  ['planLayout', { ...CLUSTER, explore: { expertParallel: 8 } }],
);
requests.push(['planLayout', CLUSTER]);
// each GPU family's links, cited by a sentence of the catalog (cpp/data/interconnects.json)
for (const gpu of [
  'h100-80gb',
  'h200-141gb',
  'v100-32gb',
  'a10',
  'l4',
  't4',
  'rtx-3090',
  'rtx-4090',
])
  requests.push([
    'planLayout',
    { model: { preset: 'gpt2' }, gpu, gpus: 2, globalBatch: 8, seqLen: 512, precision: 'fp32' },
  ]);
// expert parallelism with ZeRO (the experts' shard group) and the planner with CP and EP
const MIXTRAL = { ...CLUSTER, model: { preset: 'mixtral-8x7b' }, seqLen: 4096, globalBatch: 256 };
requests.push(
  [
    'peakMemory',
    {
      ...A100,
      model: { preset: 'mixtral-8x7b' },
      dataParallel: 16,
      expertParallel: 8,
      zeroStage: 1,
    },
  ],
  [
    'planLayout',
    { ...MIXTRAL, gpu: 'h100-80gb', explore: { contextParallel: 4, expertParallel: 8 } },
  ],
);
// an encoder-decoder's FLOPs (the time model of T5)
requests.push([
  'accumulation',
  { ...A100, model: { preset: 't5-small' }, microBatch: undefined, targetGlobalBatch: 32 },
]);
// advise's sentences: why a step is not timed (a custom memory size; tensor parallelism)
requests.push(
  ['advise', { ...LLAMA, gpuMemoryBytes: 80e9, timeline: false, changes: false }],
  ['advise', { ...A100, tensorParallel: 2, timeline: false, changes: false }],
);

// the CUDA context's sentence for each GPU: torch 1.10's (measured or derived per GPU), and
// the lazy-loading lines' (measured on the A100-80GB, shifted for the others)
const CONTEXT_GPUS = ['v100-16gb', 'v100-32gb', 't4', 'a10', 'rtx-3090', 'a100-40gb', 'a100-80gb'];
for (const gpu of [...CONTEXT_GPUS, 'l4', 'rtx-4090'])
  requests.push(['peakMemory', { ...GPT2_SMALL, runtime: 'pytorch-1.10-cuda', gpu }]);
for (const gpu of ['a100-80gb', 'h100-80gb'])
  requests.push(['peakMemory', { ...GPT2_SMALL, runtime: 'pytorch-2.1-cuda', gpu }]);

// FSDP2's units of their own and a per-block reshard list, and their refusals
const FSDP7B = { ...A100, model: { preset: 'llama-2-7b' }, dataParallel: 8 };
const perBlock = (n, kept) => Array.from({ length: n }, (_, i) => i !== kept);
const fsdpUnits = (reshardAfterForward) => ({ ...FSDP7B, fsdp: { reshardAfterForward } });
requests.push(
  ['peakMemory', fsdpUnits({ embedding: true, head: false })],
  ['peakMemory', fsdpUnits({ embedding: true })],
  ['peakMemory', fsdpUnits({ head: false })],
  ['peakMemory', fsdpUnits({ blocks: perBlock(32, 3) })],
);
ERROR_REQUESTS.push(
  ['peakMemory', { ...fsdpUnits({ embedding: true }), model: { preset: 'gpt2' } }],
  [
    'peakMemory',
    { ...fsdpUnits({ head: false }), pipelineParallel: 2, gradientAccumulationSteps: 4 },
  ],
  ['peakMemory', fsdpUnits({ blocks: perBlock(3, 0) })],
  ['peakMemory', fsdpUnits({ blocks: [] })],
  ['peakMemory', fsdpUnits({ blocks: [true, 1] })],
  ['peakMemory', fsdpUnits({ blocks: perBlock(32, -1), lastBlock: false })],
);
// Errors of the request readers (types, ranges, names, and the chain, trace and allocator
// readers): every one is thrown as codes too.
const LAYER = { forwardCost: 1, backwardCost: 2, outputBytes: 10, savedBytes: 10 };
ERROR_REQUESTS.push(
  ['peakMemory', { ...A100, microBatch: 'one' }],
  ['peakMemory', { ...A100, seqLen: true }],
  ['peakMemory', { ...A100, gpu: 'a100' }],
  ['peakMemory', { ...A100, runtime: 'pytorch' }],
  ['peakMemory', { ...A100, model: { preset: 'llama-2-7' } }],
  ['peakMemory', { ...A100, checkpointing: 'selective' }],
  ['peakMemory', { ...A100, gpuMemoryBytes: 1e9 }],
  ['peakMemory', { ...A100, mlp: { sizes: [8, 8] } }],
  ['peakMemory', { ...A100, allocator: 'max_split_size_mb:1.5' }],
  ['peakMemory', { ...A100, model: { trace: { format: 'x' } } }],
  ['peakMemory', { ...A100, model: { config: '{"model_type":' } }],
  ['placement', { chain: { inputBytes: 1, layers: [] }, strategy: 'sqrt' }],
  ['placement', { chain: { inputBytes: 1, layers: [LAYER] }, strategy: 'every-k' }],
  ['placement', { chain: { inputBytes: 1, layers: [{ ...LAYER, savedBytes: 1 }] } }],
  ['placement', { chain: { inputBytes: 1, layers: [LAYER] }, model: { preset: 'gpt2' } }],
);

// The tracer's notes that no traced fixture model gives (python/trainmem_trace/build.py writes
// them when a model's bfloat16 step fails or differs), on the fixture language model's trace.
const TINYLM = json('../fixtures/traces/tinylm.trace.json');
const tracerNote = (code, params = {}) => ({ code, params }); // build.py's _note
requests.push([
  'peakMemory',
  {
    model: {
      trace: {
        ...TINYLM,
        notes: [
          tracerNote('trace.note.noBf16.error', {
            error: '"addmm_impl_cpu_" not implemented for \'BFloat16\'',
          }),
          tracerNote('trace.note.noBf16.chain'),
        ],
      },
    },
    microBatch: 2,
    seqLen: 32,
  },
]);

// The snapshot comparison's files that are not snapshots (compareSnapshot's errors).
const GPT2 = { model: { preset: 'gpt2' }, microBatch: 1, seqLen: 128 };
const SNAPSHOT_ERRORS = [
  new Uint8Array(0),
  new Uint8Array([0x89, 0x50, 0x4e, 0x47]), // a PNG's first bytes
  new Uint8Array([0x80, 4, 0x95]), // a pickle cut short
  new TextEncoder().encode('{"a":1}'), // JSON that is not memory_stats()
  // protocol 2, GLOBAL 'os system': a pickle that would import code
  new Uint8Array([0x80, 2, 0x63, 0x6f, 0x73, 0x0a, 0x73, 0x79, 0x73, 0x74, 0x65, 0x6d, 0x0a]),
];
for (const snapshot of SNAPSHOT_ERRORS)
  ERROR_REQUESTS.push(['compareSnapshot', { request: GPT2, snapshot }]);

const holes = (s) => [...String(s).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
// The codes of one sentence: each in the catalog, with a value for each of its parameters (a
// string, or a sentence of its own: a list of clauses, checked likewise).
function checkCodes(parts, where, used) {
  for (const p of parts) {
    assert.equal(typeof catalog[p.code], 'string', `${where}: ${p.code} is not in the catalog`);
    for (const hole of holes(catalog[p.code])) {
      const v = p.params[hole];
      if (Array.isArray(v)) checkCodes(v, `${where} ${p.code}.${hole}`, used);
      else assert.equal(typeof v, 'string', `${where}: ${p.code} lacks {${hole}}`);
    }
    used.add(p.code);
  }
}

test('every sentence of every result and error comes from catalog codes', () => {
  const used = new Set();
  const missing = [];
  let checked = 0;
  for (const [fn, request] of requests) {
    let result;
    try {
      result = tm[fn](request);
    } catch (e) {
      if (e instanceof TrainmemError) continue;
      throw e;
    }
    for (const [path, text] of sentences(result, '', '', [])) {
      if (DATA.some((re) => re.test(`${fn}:${path.replace(/\[\d+\]/g, '[]')}`))) continue;
      const parts = result.messages?.[path];
      if (!parts) {
        missing.push(`${fn} ${path}: ${text}`);
        continue;
      }
      checkCodes(parts, `${fn} ${path}`, used);
      checked++;
    }
  }
  assert.deepEqual([...new Set(missing)], [], 'sentences written without codes');
  for (const [fn, request] of ERROR_REQUESTS) {
    let error = null;
    try {
      tm[fn](request);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof TrainmemError, `${fn} ${JSON.stringify(request)} is refused`);
    assert.ok(Array.isArray(error.messages), `error codes for: ${error.message}`);
    checkCodes(error.messages, `${fn} error`, used);
  }
  assert.ok(checked > 1000, `only ${checked} sentences checked`);
  // (An error's sentence is checked against the core's source below: the error requests reach
  // a sample of them; tools/differential.mjs reaches more.)
  const unused = Object.keys(catalog).filter(
    (c) => !used.has(c) && !(c in UNREACHED) && !c.startsWith('error.'),
  );
  assert.deepEqual(unused, [], 'catalog entries no request reaches (list them in UNREACHED)');
  for (const c of Object.keys(UNREACHED)) assert.ok(!used.has(c), `${c} is reached now`);
});

// A parameter is shown inside a sentence of the page's language, so it must not be an English
// phrase: each value is a number, a name (no space: a field, a model, an op, a dtype, a key, a
// value the user gave), a list of names ("a, b and c" of such), or a sentence of the catalog
// (nested clauses, checked likewise). QUOTED lists the parameters that carry other text on
// purpose, each with the reason.
const QUOTED = {
  'trace.note.file note': "an older trace file's note (a plain sentence): the file's own text",
  'trace.note.noBf16.error error': "torch's error message, quoted as torch wrote it",
  'error.loraTargets.none layers':
    "the model's linear layers by their module names, one space apart",
};
const NUMBER_UNIT = /^[\d.,]+ ?(%|[KMGT]i?B|B)$/; // "18.5 %": a figure and its unit
const NAME = String.raw`[^\s,]+(?: \(\d+\))?`; // "aten.add (2)": an op and how often it ran
const NAME_LIST = new RegExp(`^${NAME}(?:(?:,| and| or) ${NAME})*$`);
function englishParams(parts, out) {
  for (const p of parts)
    for (const [k, v] of Object.entries(p.params)) {
      if (Array.isArray(v)) englishParams(v, out);
      else if (
        /\s/.test(v) &&
        !NAME_LIST.test(v) &&
        !NUMBER_UNIT.test(v) &&
        !(`${p.code} ${k}` in QUOTED)
      )
        out.add(`${p.code} {${k}}: ${v}`);
    }
  return out;
}

test('no parameter reaching the page is an English phrase', () => {
  const found = new Set();
  for (const [fn, request] of [...requests, ...ERROR_REQUESTS]) {
    try {
      const r = tm[fn](request);
      for (const parts of Object.values(r.messages ?? {})) englishParams(parts, found);
    } catch (e) {
      if (!(e instanceof TrainmemError)) throw e;
      englishParams(e.messages ?? [], found);
    }
  }
  assert.deepEqual([...found], []);
  // the check itself: a phrase is found, names and nested sentences are not
  const phrase = [{ code: 'error.field.mustBe', params: { field: 'x', what: 'a power of 2' } }];
  assert.equal(englishParams(phrase, new Set()).size, 1);
  const names = [{ code: 'error.value.expected', params: { values: 'a, b-c, d_e and f' } }];
  assert.equal(englishParams(names, new Set()).size, 0);
});

test('every error the core throws is a code of the catalog, and every error code is thrown', () => {
  // The compiler refuses a plain English sentence (cpp/include/trainmem/error.hpp deletes those
  // overloads of fail and RequestError); here each error code written in cpp/src must be in the
  // catalog (a code outside it would show as "(message code)"), and each error.* entry of the
  // catalog must be thrown somewhere.
  const written = new Set();
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (/\.(cpp|hpp)$/.test(e.name))
        for (const m of readFileSync(p, 'utf8').matchAll(/"(error\.[\w.]+)"/g)) written.add(m[1]);
    }
  };
  walk(new URL('../../cpp/src', import.meta.url).pathname);
  assert.ok(written.size > 300, `only ${written.size} error codes found in cpp/src`);
  assert.deepEqual(
    [...written].filter((c) => typeof catalog[c] !== 'string'),
    [],
    'error codes thrown but not in the catalog',
  );
  assert.deepEqual(
    Object.keys(catalog).filter((c) => c.startsWith('error.') && !written.has(c)),
    [],
    'error codes in the catalog that nothing throws',
  );
});

test('Arabic translates every code of the catalog with the same parameters', () => {
  for (const [code, english] of Object.entries(catalog)) {
    const key = `core.${code}`;
    assert.equal(typeof ar[key], 'string', `ar.json lacks ${key}`);
    assert.deepEqual(holes(ar[key]), holes(english), key);
  }
  const extra = Object.keys(ar).filter((k) => k.startsWith('core.') && !(k.slice(5) in catalog));
  assert.deepEqual(extra, [], 'ar.json translates codes the catalog does not have');
  assert.deepEqual(
    Object.keys(en).filter((k) => k.startsWith('core.')),
    [],
    'English comes from the catalog',
  );
});

test('both languages explain every error code of the core', () => {
  const header = readFileSync(new URL('../../cpp/include/trainmem/error.hpp', import.meta.url));
  const codes = [...String(header).matchAll(/constexpr const char\* k\w+ = "(\w+)"/g)].map(
    (m) => m[1],
  );
  assert.ok(codes.length >= 10, 'error codes found in error.hpp');
  for (const c of codes)
    for (const [lang, s] of [
      ['en', en],
      ['ar', ar],
    ])
      assert.equal(typeof s[`coreError.${c}`], 'string', `${lang}.json lacks coreError.${c}`);
});

test("a parameter carries the user's text as written", () => {
  const r = tm.peakMemory({
    model: { preset: 'gpt2' },
    microBatch: 1,
    seqLen: 128,
    lora: { rank: 4, targetModules: ['c_attn', 'my layer'] },
  });
  const i = r.assumptions.findIndex((a) => a.includes("'my layer'"));
  assert.ok(i >= 0);
  assert.deepEqual(r.messages[`assumptions[${i}]`], [
    { code: 'peak.assume.lora.unmatched', params: { target: 'my layer' } },
  ]);
});
