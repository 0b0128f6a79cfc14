// @ts-check
// trainmem checkpoint-size
/** @type {import('./index.js').Command} */
export default {
  fn: 'checkpointSize',
  summary: 'size of a checkpoint: weights, master copy and optimizer state',
  examples: [
    'trainmem checkpoint-size --model llama-2-7b --optimizer adamw --weight-dtype fp16',
    'trainmem checkpoint-size --params 100M --optimizer sgd --weight-dtype fp32 --vs --optimizer adam --weight-dtype bf16',
    'trainmem checkpoint-size --params 6738415616 --optimizer adamw --weight-dtype fp16 --master-weights --format table',
  ],
};
