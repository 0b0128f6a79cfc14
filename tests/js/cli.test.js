// The CLI (web/lib/cli.js) from the working tree: flags -> request fields, request files,
// scenarios (--vs), output formats, and errors that name the flag. Expected numbers are
// hand calculations from seed 003 (size = params x copies x bytes per copy) or GPT-2's
// published architecture. The packed bin is tested in pack.test.js.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, run } from './fixtures/packed.js';
import { COMMANDS, FLAGS, main } from '../../web/lib/cli.js';

const cliPath = join(repoRoot, 'web/lib/cli.js');
// Most cases run the CLI's main() in this process (one WASM load); the last tests spawn it.
const work = mkdtempSync(join(tmpdir(), 'trainmem-cli-'));
after(() => rmSync(work, { recursive: true, force: true }));
const file = (name, value) => {
  const path = join(work, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};
const cli = async (args, input = '') => {
  let stdout = '';
  let stderr = '';
  const status = await main(args, {
    out: (t) => (stdout += t),
    err: (t) => (stderr += t),
    stdin: () => input,
  });
  return { status, stdout, stderr };
};
const spawnCli = (args, input) => run(process.execPath, [cliPath, ...args], { cwd: work, input });
const ok = async (args, input) => {
  const r = await cli(args, input);
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stderr}`);
  assert.equal(r.stderr, '');
  return r.stdout;
};
const json = async (args, input) => JSON.parse(await ok(args, input));
const bad = async (args, input) => {
  const r = await cli(args, input);
  assert.equal(r.status, 2, `expected exit 2, got ${r.status}: ${r.stdout}${r.stderr}`);
  assert.equal(r.stdout, '');
  return JSON.parse(r.stderr).error;
};

// peak-memory for a preset at a micro-batch and sequence length, more flags after it
const peak = (model, microBatch, seqLen) => [
  'peak-memory',
  '--model',
  model,
  '--micro-batch',
  String(microBatch),
  '--seq-len',
  String(seqLen),
];

// Seed 003 worked examples, one command each.
test('seed 003 example 1: LLaMA-2 7B, AdamW, fp16 weights (preset)', async () => {
  const r = await json([
    'checkpoint-size',
    '--model',
    'llama-2-7b',
    '--optimizer',
    'adamw',
    '--weight-dtype',
    'fp16',
  ]);
  // Seed 003's formula: 6,738,415,616 params (Llama-2-7b-hf model index) x 3 copies (W, m, v)
  // x 2 B. The exact size adds AdamW's `step`, a float32 scalar tensor per parameter tensor
  // (torch/optim/adamw.py, PyTorch >= 1.12): Llama-2-7B has 32 x 9 + 3 = 291 tensors (q, k, v,
  // o, gate, up, down, two norms per block; embeddings, final norm, lm_head).
  assert.equal(r.simple.totalBytes, 40430493696);
  assert.equal(r.totalBytes, 40430493696 + 291 * 4);
});

test('seed 003 example 2: 100 M params, SGD fp32 vs Adam bf16, in one command (--vs)', async () => {
  const r = await json([
    'checkpoint-size',
    '--params',
    '100M',
    '--optimizer',
    'sgd',
    '--weight-dtype',
    'fp32',
    '--vs',
    '--optimizer',
    'adam',
    '--weight-dtype',
    'bf16',
  ]);
  assert.equal(r.length, 2);
  assert.equal(r[0].totalBytes, 400e6); // 1e8 x 1 copy x 4 B
  assert.equal(r[1].totalBytes, 600e6); // 1e8 x 3 copies x 2 B
});

test('counts take k/M/B/T suffixes exactly; --model takes a count too', async () => {
  // 6.738415616B is 6,738,415,616 exactly (no floating-point residue).
  assert.equal(
    (await json(['checkpoint-size', '--params', '6.738415616B', '--optimizer', 'sgd'])).params,
    6738415616,
  );
  assert.equal(
    (await json(['checkpoint-size', '--model', '7e9', '--optimizer', 'sgd'])).totalBytes,
    28e9,
  );
  assert.equal(
    (await json(['checkpoint-size', '--params', '1_000', '--optimizer', 'sgd'])).totalBytes,
    4000,
  );
});

test('boolean flags: --master-weights, --master-weights false, --no-master-weights', async () => {
  const base = [
    'checkpoint-size',
    '--params',
    '1e9',
    '--optimizer',
    'adamw',
    '--weight-dtype',
    'fp16',
  ];
  // Mixed precision: 2 B weights + 4 B master + 2 x 4 B moments = 14 B/param (seed 003).
  assert.equal((await json([...base, '--master-weights'])).totalBytes, 14e9);
  assert.equal((await json([...base, '--master-weights', 'false'])).totalBytes, 6e9);
  // given twice (even as --x and --no-x) it is refused, not resolved by the last one
  const twice = await bad([...base, '--master-weights', '--no-master-weights']);
  assert.deepEqual([twice.code, twice.flag], ['repeated_flag', '--master-weights']);
  assert.equal((await json([...base, '--master-weights=yes'])).totalBytes, 14e9);
});

test('--config reads a HuggingFace config.json (GPT-2 shapes, counted by hand)', async () => {
  const config = file('gpt2-tiny.json', {
    model_type: 'gpt2',
    n_layer: 2,
    n_head: 4,
    n_embd: 32,
    vocab_size: 100,
    n_positions: 64,
  });
  // HF GPT-2: wte 100x32 + wpe 64x32 + 2 blocks x (ln 2x32 + c_attn 32x96+96 + c_proj 32x32+32
  // + ln 2x32 + c_fc 32x128+128 + c_proj 128x32+32) + ln_f 2x32, lm_head tied to wte.
  const params = 3200 + 2048 + 2 * (64 + 3168 + 1056 + 64 + 4224 + 4128) + 64;
  const r = await json(['checkpoint-size', '--config', config, '--optimizer', 'sgd']);
  assert.equal(r.totalBytes, params * 4);
  // A model modifier before or after the model form reaches model.architecture.
  for (const args of [
    ['--architecture', 'GPT2Model', '--config', config],
    ['--config', config, '--architecture', 'GPT2Model'],
  ]) {
    assert.equal((await json(['describe-model', ...args])).architecture, 'GPT2Model');
  }
});

test('--json request file, flags override it, and an array of requests', async () => {
  const req = file('req.json', { model: { params: 1e8 }, optimizer: 'adam', weightDtype: 'bf16' });
  assert.equal((await json(['checkpoint-size', '--json', req])).totalBytes, 600e6);
  assert.equal(
    (await json(['checkpoint-size', '--json', req, '--optimizer', 'sgd'])).totalBytes,
    200e6,
  );
  // A model flag replaces the file's model.
  assert.equal((await json(['checkpoint-size', '--json', req, '--params', '1e9'])).totalBytes, 6e9);
  const list = file('list.json', [
    { model: { params: 1e8 }, optimizer: 'sgd', weightDtype: 'fp32' },
    { model: { params: 1e8 }, optimizer: 'adam', weightDtype: 'bf16' },
  ]);
  assert.deepEqual(
    (await json(['checkpoint-size', '--json', list])).map((r) => r.totalBytes),
    [400e6, 600e6],
  );
  const stdin = await json(
    ['checkpoint-size', '--json', '-'],
    '{"model":{"params":1e8},"optimizer":"sgd"}',
  );
  assert.equal(stdin.totalBytes, 400e6);
});

test('--set sets any request field (JSON values, bare words as strings)', async () => {
  const r = await json([
    'checkpoint-size',
    '--params',
    '1e8',
    '--set',
    'optimizer=adam',
    '--set',
    'weightDtype="bf16"',
  ]);
  assert.equal(r.totalBytes, 600e6);
  const e = await bad([
    'checkpoint-size',
    '--params',
    '1e8',
    '--optimizer',
    'sgd',
    '--set',
    'weightDtyp=fp16',
  ]);
  assert.deepEqual([e.code, e.field, e.flag], ['unknown_key', 'weightDtyp', '--set']);
});

test('--format table and markdown show bytes in GB (10^9) and GiB (2^30)', async () => {
  const args = [
    'checkpoint-size',
    '--params',
    '100M',
    '--optimizer',
    'adam',
    '--weight-dtype',
    'bf16',
  ];
  const table = await ok([...args, '--format', 'table']);
  // 600,000,000 B = 600.00 MB = 572.20 MiB (600e6 / 2^20 = 572.204...).
  assert.match(table, /^totalBytes\s+600,000,000 \(600\.00 MB, 572\.20 MiB\)$/m);
  const md = await ok([...args, '--format', 'markdown', '--vs', '--optimizer', 'sgd']);
  assert.match(md, /^\| field \| #1 \| #2 \|$/m);
  assert.match(
    md,
    /^\| totalBytes \| 600,000,000 \(600\.00 MB, 572\.20 MiB\) \| 200,000,000 \(200\.00 MB, 190\.73 MiB\) \|$/m,
  );
});

test('byte sizes take decimal and binary units', async () => {
  // A budget in GiB reaches the request as bytes: the flag table maps --budget to budgetBytes.
  const e = await bad(['placement', '--budget', '1.5GiBs']);
  assert.deepEqual([e.code, e.flag], ['invalid_number', '--budget']);
});

test('errors from the core name the flag that set the field', async () => {
  let e = await bad(['checkpoint-size', '--params', '-5', '--optimizer', 'adam']);
  assert.deepEqual([e.code, e.field, e.flag], ['out_of_range', 'model.params', '--params']);
  e = await bad(['checkpoint-size', '--params', '1e9', '--optimizer', 'adamx']);
  assert.deepEqual([e.code, e.field, e.flag], ['unknown_value', 'optimizer', '--optimizer']);
  assert.match(e.message, /adam/);
  e = await bad([
    'checkpoint-size',
    '--params',
    '1e9',
    '--optimizer',
    'adam',
    '--weight-dtype',
    'fp12',
  ]);
  assert.deepEqual([e.field, e.flag], ['weightDtype', '--weight-dtype']);
  const config = file('no-embd.json', {
    model_type: 'gpt2',
    n_layer: 2,
    n_head: 4,
    vocab_size: 100,
  });
  e = await bad(['describe-model', '--config', config]);
  assert.equal(e.flag, '--config');
  assert.match(e.field, /^model\.config\./);
  e = await bad(['checkpoint-size', '--optimizer', 'adam']);
  assert.deepEqual([e.code, e.field, e.flag], ['missing_field', 'model', null]);
  e = await bad([
    'checkpoint-size',
    '--params',
    '1e8',
    '--optimizer',
    'sgd',
    '--vs',
    '--optimizer',
    'adamx',
  ]);
  assert.deepEqual([e.flag, e.scenario], ['--optimizer', 2]);
});

test('usage errors name the flag: unknown, misplaced, missing value, not a number, conflicts', async () => {
  let e = await bad(['checkpoint-size', '--optimiser', 'adam']);
  assert.deepEqual([e.code, e.flag], ['unknown_flag', '--optimiser']);
  assert.match(e.message, /did you mean --optimizer/);
  e = await bad(['checkpoint-size', '--params', '1e9', '--micro-batch', '4']);
  assert.deepEqual([e.code, e.flag], ['flag_not_for_command', '--micro-batch']);
  e = await bad(['checkpoint-size', '--params']);
  assert.deepEqual([e.code, e.flag], ['missing_value', '--params']);
  e = await bad(['checkpoint-size', '--params', 'seven']);
  assert.deepEqual([e.code, e.flag], ['invalid_number', '--params']);
  e = await bad(['checkpoint-size', '--params', '1e9', '--model', 'gpt2']);
  assert.deepEqual([e.code, e.flag], ['conflicting_flags', '--model']);
  e = await bad(['checkpoint-size', '--json', join(work, 'missing.json')]);
  assert.deepEqual([e.code, e.flag], ['file_not_readable', '--json']);
  e = await bad(['checkpoint-size', '--json', file('broken.json', '{"model":')]);
  assert.deepEqual([e.code, e.flag], ['invalid_json', '--json']);
  e = await bad(['checkpoint-size', '--format', 'yaml']);
  assert.deepEqual([e.code, e.flag], ['invalid_format', '--format']);
  e = await bad(['checkpoint-sise']);
  assert.equal(e.code, 'unknown_command');
  assert.match(e.message, /did you mean "checkpoint-size"/);
  e = await bad([]);
  assert.equal(e.code, 'missing_command');
});

test('--help: global and per command, with examples; --version', async () => {
  const global = await ok(['--help']);
  assert.match(global, /usage: trainmem <command>/);
  assert.match(
    global,
    /trainmem checkpoint-size --model llama-2-7b --optimizer adamw --weight-dtype fp16/,
  );
  const perCommand = await ok(['peak-memory', '--help']);
  assert.match(perCommand, /--micro-batch <number>\s+microBatch/);
  assert.match(perCommand, /--accumulation-steps <number>\s+gradientAccumulationSteps/);
  assert.match(
    await ok(['accumulation', '-h']),
    /--accumulation-steps <number>\s+accumulationSteps/,
  );
  assert.match(await ok(['--version']), /^\d+\.\d+\.\d+\n$/);
});

test('as a process: result on stdout with exit 0; bad input on stderr with exit 2; stdin', () => {
  const good = spawnCli(
    ['checkpoint-size', '--json', '-'],
    '{"model":{"params":1e8},"optimizer":"sgd"}',
  );
  assert.equal(good.status, 0, good.stderr);
  assert.equal(JSON.parse(good.stdout).totalBytes, 400e6);
  const wrong = spawnCli(['checkpoint-size', '--params', '0', '--optimizer', 'sgd']);
  assert.equal(wrong.status, 2);
  assert.equal(wrong.stdout, '');
  assert.equal(JSON.parse(wrong.stderr).error.flag, '--params');
  const usage = spawnCli(['checkpoint-size', '--nope']);
  assert.equal(usage.status, 2);
  assert.equal(JSON.parse(usage.stderr).error.code, 'unknown_flag');
});

test('every flag sets a field the core knows (no unknown_key for any flag of any command)', async () => {
  const { load } = await import('../../web/lib/index.js');
  const tm = await load();
  const chain = {
    inputBytes: 1,
    layers: [{ forwardCost: 1, backwardCost: 1, outputBytes: 1, savedBytes: 1 }],
  };
  const tinyGpt2 = {
    model_type: 'gpt2',
    n_layer: 1,
    n_head: 2,
    n_embd: 8,
    vocab_size: 16,
    n_positions: 8,
  };
  // A valid request per command; each flag's field is added to it in turn.
  const base = {
    'checkpoint-size': { model: { params: 1e8 }, optimizer: 'adam' },
    'describe-model': { model: { params: 1e8 } },
    'peak-memory': { model: { params: 1e8 }, microBatch: 1, seqLen: 128 },
    advise: { model: { params: 1e8 }, microBatch: 1, seqLen: 128 },
    accumulation: [
      { microBatch: 1, accumulationSteps: 1 },
      { targetGlobalBatch: 4, model: { params: 1e8 }, seqLen: 128, gpu: 'a100-80gb' },
    ],
    placement: { chain },
    'plan-layout': {
      model: { params: 1e8 },
      gpu: 'a100-80gb',
      gpus: 8,
      globalBatch: 8,
      seqLen: 128,
    },
    'compare-snapshot': {
      request: { model: { params: 1e8 }, microBatch: 1, seqLen: 128 },
      measured: { nvidiaSmiUsedBytes: 1e9 },
    },
  };
  // The field is unknown only if every base request of the command (its modes) rejects it.
  const rejects = (command, path, value) =>
    [base[command]].flat().every((b) => {
      const request = structuredClone(b);
      // Model modifiers (--architecture) go with a HF config (GPT-2 shapes, tiny).
      if (path.startsWith('model.')) request.model = { config: tinyGpt2 };
      const parts = path.split('.');
      let cur = request;
      for (const p of parts.slice(0, -1)) cur = cur[p] ??= {};
      cur[parts.at(-1)] = value;
      try {
        tm[COMMANDS[command].fn](request);
        return false;
      } catch (e) {
        return e.code === 'unknown_key';
      }
    });
  const sample = {
    number: 1,
    count: 1e8,
    bytes: 1e9,
    boolean: true,
    string: 'x',
    list: ['x'],
    jsonFile: {},
    textFile: '{}',
  };
  const unknown = [];
  for (const def of FLAGS) {
    for (const command of def.commands) {
      if (def.modelForm) continue; // the model forms are checked by the golden vectors
      const path = typeof def.path === 'string' ? def.path : def.path[command];
      if (rejects(command, path, sample[def.kind]))
        unknown.push(`${command} --${def.flag} -> ${path}`);
    }
  }
  assert.deepEqual(unknown, []);
});

test('placement from a chain file: the Rotor check and checkpoint_sequential, by flags', async () => {
  // Issue 5's check (Beaumont et al. 2019): 4 uniform layers, forward = backward = 1,
  // output = saved = 1, input 1: memory 4 -> total cost 13, 5 -> 10, 6 -> 8, 3 infeasible.
  const layer = { forwardCost: 1, backwardCost: 1, outputBytes: 1, savedBytes: 1 };
  const chain = file('chain4.json', { inputBytes: 1, layers: [layer, layer, layer, layer] });
  const cost = async (budget) =>
    (await json(['placement', '--chain', chain, '--strategy', 'optimal', '--budget', budget]))
      .totalCost;
  assert.deepEqual([await cost('4'), await cost('5B'), await cost('6')], [13, 10, 8]);
  const e = await bad(['placement', '--chain', chain, '--strategy', 'optimal', '--budget', '3']);
  assert.deepEqual([e.code, e.field, e.flag], ['infeasible', 'budgetBytes', '--budget']);
  // PyTorch checkpoint_sequential(4 layers, segments=2): k = 4 // 2; the first s - 1 = 1
  // segment [0, 1] is checkpointed, the last never; recompute 2 -> 4 + 4 + 2 = 10.
  const seq = await json([
    'placement',
    '--chain',
    chain,
    '--strategy',
    'sequential',
    '--segments',
    '2',
  ]);
  assert.deepEqual(seq.checkpointed, [[0, 1]]);
  assert.equal(seq.totalCost, 10);
});

test('--lora-targets: a comma-separated list or all-linear', async () => {
  const lora = (targets) =>
    json([...peak('gpt2', 1, 64), '--lora-rank', '8', '--lora-targets', targets]);
  // GPT-2 r = 8 (Conv1D weights [in, out]), per block: c_attn 8 x (768 + 2304) = 24,576;
  // attn.c_proj 8 x (768 + 768) = 12,288; c_fc and mlp.c_proj 8 x (768 + 3072) = 30,720 each.
  assert.equal((await lora('c_attn,c_fc')).trainableParams, 12 * (24576 + 30720));
  assert.equal((await lora('all-linear')).trainableParams, 12 * (24576 + 12288 + 2 * 30720));
});

test('context- and expert-parallel flags reach their fields', async () => {
  const cp = await json([
    ...peak('llama-3-8b', 1, 8192),
    '--context-parallel',
    '4',
    '--cp-rotate',
    'alltoall',
    '--cp-load-balance',
    'none',
  ]);
  assert.deepEqual(
    [cp.contextParallel.rankSeqLen, cp.contextParallel.rotate, cp.contextParallel.loadBalance],
    [2048, 'alltoall', 'none'],
  );
  const ep = await json([
    ...peak('mixtral-8x7b', 1, 256),
    '--data-parallel',
    '8',
    '--expert-parallel',
    '4',
    '--expert-tensor-parallel',
    '2',
    '--capacity-factor',
    '1.5',
  ]);
  // Mixtral's 8 experts over 4 ranks
  assert.deepEqual(
    [ep.expertParallel.expertsPerRank, ep.expertParallel.expertTensorParallel],
    [2, 2],
  );
  assert.equal(ep.expertParallel.capacityFactor, 1.5);
  const skew = await json([
    ...peak('mixtral-8x7b', 1, 256),
    '--data-parallel',
    '8',
    '--expert-parallel',
    '8',
    '--routing-imbalance',
    '1.25',
  ]);
  assert.equal(skew.expertParallel.routedTokensFactor, 1.25);
});

test('--sample-lengths, --packed, --float8 and the torchao optimizers reach their fields', async () => {
  const base = ['peak-memory', '--model', 'llama-2-7b', '--micro-batch', '2', '--seq-len', '512'];
  // lengths 100..400 in micro-batches of 2: padded to the longest (400); the six pairs pad to
  // 200, 300, 400, 300, 400, 400, a mean of 2000 / 6 (torchtune padded_collate_sft)
  const padded = await json([
    ...base,
    '--sample-lengths',
    file('lengths.json', [300, 100, 400, 200]),
  ]);
  assert.equal(padded.samples.memorySeqLen, 400);
  assert.ok(Math.abs(padded.samples.expectedPaddedLength - 2000 / 6) < 1e-9);
  const packed = await json([...base, '--packed']);
  assert.equal(packed.samples.packed, true);
  assert.equal(packed.samples.memorySeqLen, 512);
  const f8 = await json([
    ...base,
    '--precision',
    'bf16',
    '--gpu',
    'h100-80gb',
    '--float8',
    'tensorwise',
  ]);
  assert.ok(f8.assumptions.some((a) => a.includes('float8')));
  // torch._scaled_mm needs compute capability 8.9: an A100 (8.0) is refused, naming the field
  const e = await bad([
    ...base,
    '--precision',
    'bf16',
    '--gpu',
    'a100-80gb',
    '--float8',
    'tensorwise',
  ]);
  assert.equal(e.field, 'float8');
  // torchao AdamW4bit (subclass_4bit.py): 4096 x 4096 -> 8,388,608 B codes + 131,072 x 4 B
  // scales + 64 B qmap per state, two states + the 4-byte step
  const ck = await json([
    'checkpoint-size',
    '--tensors',
    file('t.json', [{ name: 'w', shape: [4096, 4096], dtype: 'bf16' }]),
    '--optimizer',
    'torchao-adamw-4bit',
  ]);
  assert.equal(ck.breakdown.optimizerState, 2 * 8912960 + 4);
});

test('accumulation and peak-memory flags reach their fields', async () => {
  // Hand calculation (HF Trainer / DDP): 4 x 8 x 2 = 64 samples, x 2048 tokens; 1000 samples
  // over 2 ranks = 500 each, ceil(500 / 4) = 125 micro-batches, ceil(125 / 8) = 16 steps
  // (15 full, the last one with 125 - 120 = 5 micro-batches).
  const acc = await json([
    'accumulation',
    '--micro-batch',
    '4',
    '--accumulation-steps',
    '8',
    '--data-parallel',
    '2',
    '--seq-len',
    '2048',
    '--dataset-size',
    '1000',
  ]);
  assert.deepEqual(
    [acc.effectiveBatch, acc.tokensPerStep, acc.samplesPerRank, acc.microBatchesPerEpoch],
    [64, 131072, 500, 125],
  );
  assert.deepEqual(
    [acc.optimizerStepsPerEpoch, acc.fullOptimizerStepsPerEpoch, acc.remainderMicroBatches],
    [16, 15, 5],
  );
  // --gpu-memory 80GB is 80e9 bytes: the headroom is what the device-used memory (nvidia-smi,
  // what `fits` judges) leaves of it.
  const on80 = await json([...peak('gpt2', 2, 128), '--gpu-memory', '80GB']);
  assert.equal(on80.headroomBytes + on80.deviceUsedBytes, 80e9);
  // the allocator flags reach their fields (expandable segments cannot reserve more)
  const expandable = await json([
    ...peak('gpt2', 2, 128),
    '--allocator',
    'expandable_segments:True',
    '--runtime',
    'pytorch-1.13-cuda',
    '--optimizer-impl',
    'transformers',
    '--zero-grad-set-to-none',
    'true',
  ]);
  assert.ok(expandable.assumptions.some((a) => a.includes('set_to_none=True')));
  assert.ok(expandable.assumptions.some((a) => a.includes('optimizer transformers')));
  const off = await json([...peak('gpt2', 2, 128), '--no-simulate-allocator']);
  assert.equal(off.deviceUsedBytes, null);
  const e = await bad(['peak-memory', '--model', 'gpt2', '--micro-batch', '0', '--seq-len', '128']);
  assert.deepEqual([e.field, e.flag], ['microBatch', '--micro-batch']);
});

test('a config.json file reaches the core as text: a duplicate key is an error naming it', async () => {
  // JSON.parse would keep the second n_embd silently; the core's strict reader refuses it.
  const cfg = file(
    'dup-config.json',
    '{"model_type":"gpt2","n_layer":2,"n_head":2,"n_embd":8,"vocab_size":16,"n_positions":8,"n_embd":16}',
  );
  const e = await bad(['describe-model', '--config', cfg]);
  assert.equal(e.code, 'invalid_json');
  assert.equal(e.field, 'model.config.n_embd');
  // tm.call takes the request's text too
  const { load } = await import('../../web/lib/index.js');
  const tm = await load();
  assert.throws(
    () => tm.call('describeModel', '{"model":{"params":1e8},"model":{"params":2e8}}'),
    (err) => err.code === 'invalid_json' && err.field === 'model',
  );
  assert.equal(tm.call('describeModel', '{"model":{"params":100000000}}').params, 1e8);
});

test('--trace reads a trace of the model (python/trainmem_trace) as its text', async () => {
  // a tiny language model traced at batch 2, length 4 (tests/fuzz/trace_seeds)
  const lm = join(repoRoot, 'tests/fuzz/trace_seeds/lm.trace.json');
  const r = await json(['peak-memory', '--trace', lm, '--micro-batch', '4', '--seq-len', '16']);
  assert.deepEqual([r.trace.tracedBatch, r.trace.tracedSeqLen], [2, 4]);
  assert.ok(r.trace.savedBytes > 0 && r.peakBytes > r.trace.savedBytes);
  const d = await json(['describe-model', '--trace', lm]);
  assert.equal(d.source, 'trace');
  // a damaged file: the error names the field inside it, and the flag
  const broken = file(
    'broken.trace.json',
    readFileSync(lm, 'utf8').replace('"trainmem-trace"', '"other-format"'),
  );
  const e = await bad(['describe-model', '--trace', broken]);
  assert.deepEqual([e.code, e.field, e.flag], ['unknown_value', 'model.trace.format', '--trace']);
});

test('--save-ops, --every-other-mm and --checkpointing-k join --checkpointing in either order', async () => {
  const common = ['peak-memory', '--model', 'llama-2-7b', '--micro-batch', '1', '--seq-len', '512'];
  const titan = await json([...common, '--checkpointing', 'torchtitan-op']);
  // torchtitan's op mode is the list mm, sdpa with its every-second-mm rule
  for (const order of [
    ['--checkpointing', 'selective-op', '--save-ops', 'mm,sdpa', '--every-other-mm'],
    ['--save-ops', 'mm,sdpa', '--every-other-mm', '--checkpointing', 'selective-op'],
  ]) {
    const r = await json([...common, ...order]);
    assert.equal(r.storedActivationBytes, titan.storedActivationBytes, order.join(' '));
  }
  const full = await json([...common, '--checkpointing', 'full']);
  const k1 = await json([
    ...common,
    '--checkpointing',
    'selective-layer',
    '--checkpointing-k',
    '1',
  ]);
  assert.equal(k1.storedActivationBytes, full.storedActivationBytes);
  const e = await bad([...common, '--checkpointing', 'selective-op', '--save-ops', 'mm,spda']);
  assert.equal(e.flag, '--save-ops');
  assert.match(e.message, /did you mean 'sdpa'/);
});

test('advise: the verdict with the margin, the step time and the changes, from the peak-memory flags', async () => {
  // LLaMA-2 7B full fine-tuning with AdamW: 16 B × 6,738,415,616 = 107.8 GB > 80 GiB (A100
  // datasheet); 5 % of 80 GiB = 4 GiB = 4,294,967,296 B.
  const r = await json([
    'advise',
    '--model',
    'llama-2-7b',
    '--gpu',
    'a100-80gb',
    '--optimizer',
    'adamw',
    '--micro-batch',
    '1',
    '--seq-len',
    '512',
    '--margin-fraction',
    '0.05',
  ]);
  assert.equal(r.verdict.status, 'doesNotFit');
  assert.equal(r.verdict.marginBytes, 4294967296);
  assert.ok(r.changes.some((c) => c.status === 'fits'));
  const scratch = await json([
    'advise',
    '--model',
    'llama-2-7b',
    '--gpu',
    'rtx-4090',
    '--seq-len',
    '512',
    '--micro-batch',
    '1',
    '--optimizer',
    'adamw',
    '--from-scratch',
  ]);
  assert.ok(!scratch.changes.some((c) => c.id === 'lora'));
});
