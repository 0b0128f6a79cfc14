// Benchmark (not a test): a full peak-memory computation for a 70B preset in the WASM core
// under Node. Run after `bash tools/build.sh wasm`:  node bench/peak.mjs
// (TRAINMEM_LIB=/other/checkout/web/lib/index.js node bench/peak.mjs: another build)
// Targets: <= 1 ms per computation without the allocator simulation, <= 5 ms with it (three
// training steps through the caching-allocator simulator). Results: bench/RESULTS.md
// ("Peak memory").
const { load } = await import(process.env.TRAINMEM_LIB || '../web/lib/index.js');

const tm = await load();
// The bench's 70B request; each case varies it.
const base = {
  model: { preset: 'llama-2-70b' },
  microBatch: 1,
  seqLen: 4096,
  precision: 'amp-bf16',
  optimizer: 'adamw',
  checkpointing: 'full',
  zeroStage: 3,
  dataParallel: 64,
};
const cases = [
  [
    'llama-2-70b, bf16 AdamW, full checkpointing, one evaluation, no allocator simulation',
    { ...base, timeline: false, simulateAllocator: false },
  ],
  [
    'llama-2-70b, bf16 AdamW, full checkpointing, one evaluation with the allocator simulation',
    { ...base, timeline: false },
  ],
  ['the same with the timeline (163 points)', { ...base }],
  [
    'the same on an h100-80gb incl. the maxMicroBatch search',
    { ...base, gpu: 'h100-80gb', timeline: false },
  ],
];
for (const [name, req] of cases) {
  for (let i = 0; i < 20; i++) tm.peakMemory(req); // warm-up
  const n = 200;
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    tm.peakMemory(req);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name}: median ${times[n / 2].toFixed(3)} ms, p90 ${times[Math.floor(n * 0.9)].toFixed(3)} ms`,
  );
}
