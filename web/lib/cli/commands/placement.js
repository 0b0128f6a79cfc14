// @ts-check
// trainmem placement
/** @type {import('./index.js').Command} */
export default {
  fn: 'placement',
  summary: 'which layers to checkpoint (activation recompute) for a memory budget',
  examples: [
    'trainmem placement --chain chain.json --strategy sqrt',
    'trainmem placement --chain chain.json --strategy optimal --budget 6GiB',
  ],
};
