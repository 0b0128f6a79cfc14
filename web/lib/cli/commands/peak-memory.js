// @ts-check
// trainmem peak-memory
/** @type {import('./index.js').Command} */
export default {
  fn: 'peakMemory',
  summary: 'peak memory of one training step, with breakdown and timeline',
  examples: [
    'trainmem peak-memory --model llama-2-7b --optimizer adamw --precision amp-bf16 --micro-batch 4 --seq-len 2048 --gpu a100-80gb',
  ],
};
