// @ts-check
// trainmem accumulation
/** @type {import('./index.js').Command} */
export default {
  fn: 'accumulation',
  summary: 'effective batch of a gradient-accumulation setup, or the plan that fits a target batch',
  examples: [
    'trainmem accumulation --micro-batch 4 --accumulation-steps 8 --data-parallel 2 --seq-len 2048',
    'trainmem accumulation --target-global-batch 64 --model bert-large-uncased --seq-len 512 --optimizer adamw --precision fp32 --gpu v100-16gb',
  ],
};
