// Benchmark (not a test): the CPU time of the accumulation planner's call on the DeepSeek-V3
// preset (targetGlobalBatch 4096, seqLen 4096, h100-80gb, amp-bf16), WebAssembly under Node:
// each call's process CPU time (the first includes reading the model presets), so that a
// loaded machine's wall time does not hide the core's own work. Goal: <= 1 s per call.
//   node bench/planner-cpu.mjs [CALLS]
//   TRAINMEM_LIB=/other/checkout/web/lib/index.js node bench/planner-cpu.mjs   (another build)
// Results: bench/RESULTS.md ("The counted step trace").
import { cpus, loadavg } from 'node:os';

const lib = process.env.TRAINMEM_LIB || new URL('../web/lib/index.js', import.meta.url).href;
const { load } = await import(lib);
const tm = await load();
const request = {
  model: { preset: 'deepseek-v3' },
  targetGlobalBatch: 4096,
  seqLen: 4096,
  gpu: 'h100-80gb',
  precision: 'amp-bf16',
};
const calls = Number(process.argv[2] || 4);
const ms = [];
for (let i = 0; i < calls; i++) {
  const c0 = process.cpuUsage();
  tm.accumulation(request);
  const c = process.cpuUsage(c0);
  ms.push((c.user + c.system) / 1000);
}
console.log(
  `accumulation planner, DeepSeek-V3: CPU ms per call ${ms.map((x) => x.toFixed(0)).join(', ')} ` +
    `(load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores)`,
);
