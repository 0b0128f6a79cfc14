// @ts-check
// trainmem plan-layout
/** @type {import('./index.js').Command} */
export default {
  fn: 'planLayout',
  summary:
    'the tensor, pipeline and data-parallel layouts of a cluster that fit, with micro-batch, checkpointing and sharding, fastest first',
  examples: [
    'trainmem plan-layout --model llama-3-70b --gpu h100-80gb --gpus 64 --gpus-per-node 8 --global-batch 1024 --seq-len 4096 --precision amp-bf16 --optimizer adamw',
  ],
};
