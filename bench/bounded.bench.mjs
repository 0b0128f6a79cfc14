// Benchmark (not a test) of the bounded-work goals (issue "bounded work"), WebAssembly under
// Node: every request within the documented limits answers or refuses in <= 1 s, and
//   - placement: optimal (Rotor) at 400 layers x 500 slots <= 1 s; optimal-single-level on a
//     1,000-layer chain <= 50 ms at every budget; chen-greedy and sqrt at 100,000 layers
//     <= 200 ms;
//   - the accumulation planner on DeepSeek-V3 and Llama 3.1 405B (targetGlobalBatch 4096,
//     seqLen 4096, h100-80gb, amp-bf16) <= 1 s;
//   - the layout planner on 1,024 H100s (Llama 3 70B, Llama 3.1 405B, DeepSeek-V3) <= 1 s;
//   - a crafted 3.8 KB snapshot: refused or read without hundreds of MB of heap.
// The 665 MB snapshot: node bench/snapshot.bench.mjs 665.
//   node bench/bounded.bench.mjs [filter]
// TRAINMEM_LIB=/path/to/web/lib/index.js times another build (e.g. main's, for "before").
// TRAINMEM_BENCH_LIMIT_MS (default 120000): a call of the old build slower than this is not
// waited for (each case runs in a child process, killed at the limit). Results: bench/RESULTS.md
// ("Bounded work"), and the README's benchmark section.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const LIB = process.env.TRAINMEM_LIB || new URL('../web/lib/index.js', import.meta.url).href;
const LIMIT = Number(process.env.TRAINMEM_BENCH_LIMIT_MS || 120000);

function lcg(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}
const MiB = 2 ** 20;
// The issue's chain: {forwardCost 1, backwardCost 2, outputBytes 10, savedBytes 20} x n.
const uniform = (n) => ({
  inputBytes: 10,
  layers: Array.from({ length: n }, () => ({
    forwardCost: 1,
    backwardCost: 2,
    outputBytes: 10,
    savedBytes: 20,
  })),
});
// Heterogeneous layers (bench/placement.bench.mjs's generator), whole-number costs.
function heterogeneous(n, seed) {
  const r = lcg(seed);
  const layers = [];
  for (let i = 0; i < n; i++) {
    const out = (1 + Math.floor(r() * 64)) * MiB;
    layers.push({
      forwardCost: 1 + Math.floor(r() * 4),
      backwardCost: 2 + Math.floor(r() * 8),
      outputBytes: out,
      savedBytes: out + Math.floor(r() * 128) * MiB,
      forwardTempBytes: Math.floor(r() * 16) * MiB,
      backwardTempBytes: Math.floor(r() * 32) * MiB,
    });
  }
  return { inputBytes: 32 * MiB, layers };
}
// The audit's "random 1,000-layer chain": fractional costs, sizes in bytes.
function random(n, seed) {
  const r = lcg(seed);
  const layers = [];
  for (let i = 0; i < n; i++) {
    const o = 1 + Math.floor(r() * 1000);
    layers.push({
      forwardCost: r(),
      backwardCost: 2 * r(),
      outputBytes: o,
      savedBytes: o + Math.floor(r() * 3000),
      forwardTempBytes: Math.floor(r() * 500),
      backwardTempBytes: Math.floor(r() * 500),
    });
  }
  return { inputBytes: 100, layers };
}
const saved = (c) => c.layers.reduce((a, l) => a + l.savedBytes, 0);
// Llama 3.1 405B (meta-llama/Llama-3.1-405B config.json).
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
    rms_norm_eps: 1e-5,
    tie_word_embeddings: false,
  },
};

const cases = [];
const add = (name, goalMs, fn, request) => cases.push({ name, goalMs, fn, request });
const het400 = heterogeneous(400, 3);
add('optimal, 400 het. layers, 500 slots, budget Σsaved/4', 1000, 'placement', {
  chain: het400,
  strategy: 'optimal',
  slots: 500,
  budgetBytes: Math.floor(saved(het400) / 4),
  timeline: false,
});
for (const n of [2000, 100000])
  add(`optimal, ${n} uniform layers, budgetBytes 1e6 (the audit's)`, 1000, 'placement', {
    chain: uniform(n),
    strategy: 'optimal',
    budgetBytes: 1e6,
    timeline: false,
  });
const rnd = random(1000, 11);
const het = heterogeneous(1000, 7);
for (const [label, chain] of [
  ['random', rnd],
  ['heterogeneous', het],
]) {
  const all = saved(chain);
  for (const pct of [5, 10, 30, 100])
    add(`optimal-single-level, 1,000 ${label} layers, ${pct} % of Σsaved`, 50, 'placement', {
      chain,
      strategy: 'optimal-single-level',
      budgetBytes: Math.floor((all * pct) / 100),
      timeline: false,
    });
}
for (const st of ['sqrt', 'chen-greedy']) {
  add(`${st}, 100,000 uniform layers (default request: with timeline)`, 200, 'placement', {
    chain: uniform(100000),
    strategy: st,
  });
  add(`${st}, 100,000 uniform layers, timeline: false`, 200, 'placement', {
    chain: uniform(100000),
    strategy: st,
    timeline: false,
  });
}
// The same chain as columns of typed arrays (the JS API's fast way in: no JSON text for the
// layers' numbers).
const uniformColumns = (n) => ({
  inputBytes: 10,
  layers: {
    forwardCost: new Float64Array(n).fill(1),
    backwardCost: new Float64Array(n).fill(2),
    outputBytes: new Float64Array(n).fill(10),
    savedBytes: new Float64Array(n).fill(20),
  },
});
for (const st of ['sqrt', 'chen-greedy']) {
  add(`${st}, 100,000 uniform layers as Float64Array columns, timeline: false`, 200, 'placement', {
    chain: uniformColumns(100000),
    strategy: st,
    timeline: false,
  });
  add(`${st}, 100,000 uniform layers as Float64Array columns (with timeline)`, 200, 'placement', {
    chain: uniformColumns(100000),
    strategy: st,
  });
}
add('chen-greedy frontier, 100,000 uniform layers', 1000, 'placement', {
  chain: uniform(100000),
  strategy: 'chen-greedy',
  frontier: true,
  timeline: false,
});
const planner = { targetGlobalBatch: 4096, seqLen: 4096, gpu: 'h100-80gb', precision: 'amp-bf16' };
add('accumulation planner, DeepSeek-V3', 1000, 'accumulation', {
  model: { preset: 'deepseek-v3' },
  ...planner,
});
add('accumulation planner, Llama 3.1 405B (config)', 1000, 'accumulation', {
  model: llama405,
  ...planner,
});
add('accumulation planner, Llama 3.1 8B, ZeRO-3 over 64 ranks', 1000, 'accumulation', {
  model: { preset: 'llama-3.1-8b' },
  ...planner,
  zeroStage: 3,
  dataParallel: 64,
});
// The layout planner (planLayout) on 1,024 H100s: <= 1 s.
const cluster = {
  gpu: 'h100-80gb',
  gpus: 1024,
  gpusPerNode: 8,
  globalBatch: 1024,
  seqLen: 4096,
  precision: 'amp-bf16',
  optimizer: 'adamw',
};
add('layout planner, Llama 3 70B, 1,024 GPUs', 1000, 'planLayout', {
  model: { preset: 'llama-3-70b' },
  ...cluster,
});
add('layout planner, Llama 3.1 405B (config), 1,024 GPUs', 1000, 'planLayout', {
  model: llama405,
  ...cluster,
});
add('layout planner, DeepSeek-V3, 1,024 GPUs', 1000, 'planLayout', {
  model: { preset: 'deepseek-v3' },
  ...cluster,
});
// context and expert parallelism enumerated as well (explore)
add('layout planner, DeepSeek-V3, cp <= 8 and ep <= 64, 1,024 GPUs', 1000, 'planLayout', {
  model: { preset: 'deepseek-v3' },
  ...cluster,
  explore: { contextParallel: 8, expertParallel: 64 },
});
add('layout planner, Mixtral 8x7B, cp <= 8 and ep <= 8, 1,024 GPUs', 1000, 'planLayout', {
  model: { preset: 'mixtral-8x7b' },
  ...cluster,
  explore: { contextParallel: 8, expertParallel: 8 },
});

// One case in a child process: its time (median of up to 3 calls after one untimed warm-up
// when the first call is short) and the WebAssembly heap after it.
async function runCase(c) {
  const { load } = await import(LIB);
  const tm = await load();
  // wall time, and the process's CPU time (on a loaded machine, the time the call had a core)
  const once = () => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let out;
    try {
      out = tm[c.fn](c.request);
    } catch (e) {
      out = { error: `${e.code}: ${String(e.message).slice(0, 100)}` };
    }
    const cpu = process.cpuUsage(c0);
    return { ms: performance.now() - t0, cpu: (cpu.user + cpu.system) / 1000, out };
  };
  const first = once();
  const ts = [first.ms];
  const cpus = [first.cpu];
  if (first.ms < 5000)
    for (let k = 0; k < 3; k++) {
      const r = once();
      ts.push(r.ms);
      cpus.push(r.cpu);
    }
  ts.sort((a, b) => a - b);
  cpus.sort((a, b) => a - b);
  const o = first.out;
  const what = o.error
    ? o.error
    : c.fn === 'placement'
      ? JSON.stringify({ recompute: o.recomputeCost, details: o.details ?? null }).slice(0, 140)
      : c.fn === 'planLayout'
        ? `top TP${o.layouts[0]?.tensorParallel} PP${o.layouts[0]?.pipelineParallel} DP${o.layouts[0]?.dataParallel} CP${o.layouts[0]?.contextParallel} EP${o.layouts[0]?.expertParallel} ${o.layouts[0]?.schedule}, ${o.counts.candidates} candidates, ${o.counts.evaluated} evaluated`
        : `recommended ${o.recommended ? `${o.recommended.microBatch}x${o.recommended.accumulationSteps}` : 'none'}, ${o.plans.length} plans`;
  return {
    first: first.ms,
    median: ts[Math.floor(ts.length / 2)],
    cpu: cpus[Math.floor(cpus.length / 2)],
    what,
  };
}

// --dump DIR: each case's request as DIR/<index>.json (for the native timing: bench/native.sh).
if (process.argv[2] === '--dump') {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(process.argv[3], { recursive: true });
  for (const [i, c] of cases.entries())
    writeFileSync(
      `${process.argv[3]}/${i}.json`,
      JSON.stringify(c.request, (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v)),
    );
  writeFileSync(
    `${process.argv[3]}/cases.tsv`,
    cases.map((c, i) => `${i}\t${c.fn}\t${c.goalMs}\t${c.name}`).join('\n') + '\n',
  );
  process.exit(0);
}
if (process.argv[2] === '--case') {
  const c = cases[Number(process.argv[3])];
  process.stdout.write(JSON.stringify(await runCase(c)));
  process.exit(0);
}

const filter = process.argv[2] || '';
console.log(`module: ${LIB}`);
console.log('| case | goal | first call | median | median CPU | answer |');
console.log('| --- | ---: | ---: | ---: | ---: | --- |');
for (const [i, c] of cases.entries()) {
  if (!c.name.includes(filter)) continue;
  let row;
  try {
    const out = execFileSync(
      process.execPath,
      [fileURLToPath(import.meta.url), '--case', String(i)],
      {
        env: process.env,
        timeout: LIMIT,
        maxBuffer: 1 << 20,
      },
    );
    const r = JSON.parse(String(out));
    row = `| ${r.first.toFixed(0)} ms | ${r.median.toFixed(1)} ms | ${r.cpu.toFixed(1)} ms | ${r.what} |`;
  } catch (e) {
    row = `| > ${LIMIT / 1000} s | – | – | not finished (${e.signal || e.status}) |`;
  }
  console.log(`| ${c.name} | ${c.goalMs} ms ${row}`);
}
