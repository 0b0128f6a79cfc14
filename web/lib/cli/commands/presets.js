// @ts-check
// trainmem presets
/** @type {import('./index.js').Command} */
export default {
  fn: 'presets',
  summary: 'the presets this build knows (models, GPUs, examples)',
  examples: ['trainmem presets'],
};
