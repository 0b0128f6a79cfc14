// @ts-check
// trainmem advise
/** @type {import('./index.js').Command} */
export default {
  fn: 'advise',
  summary:
    'will the run fit, and how fast: the verdict with a safety margin, the time per step, and the changes that make it fit',
  examples: [
    'trainmem advise --model llama-2-7b --gpu a100-80gb --optimizer adamw --micro-batch 1 --seq-len 512 --margin-fraction 0.05',
  ],
};
