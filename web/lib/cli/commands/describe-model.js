// @ts-check
// trainmem describe-model
/** @type {import('./index.js').Command} */
export default {
  fn: 'describeModel',
  summary: 'parameter tensors, buffers and architecture of a model',
  examples: [
    'trainmem describe-model --model gpt2 --format table',
    'trainmem describe-model --config ./config.json',
  ],
};
