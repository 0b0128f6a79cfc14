// advise through the WebAssembly core: one call holds what the page's answer shows. Its step time
// is the accumulation planner's for the same plan (before, the page ran the whole planner for
// it, twice); the margin decides "tight"; the changes fit the method; the run's peakMemory result
// is peakMemory's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';

const tm = await load();
const GPT2 = {
  model: { preset: 'gpt2' },
  microBatch: 4,
  seqLen: 1024,
  optimizer: 'adamw',
  precision: 'amp-bf16',
  gpu: 'a100-80gb',
  timeline: false,
};

test("the step time is the accumulation planner's for the same micro-batch, steps and checkpointing", () => {
  for (const [micro, steps, ckpt] of [
    [4, 2, 'none'],
    [2, 4, 'full'],
    [8, 1, 'none'],
  ]) {
    const a = tm.advise({
      ...GPT2,
      microBatch: micro,
      gradientAccumulationSteps: steps,
      checkpointing: ckpt,
    });
    const planner = tm.accumulation({
      ...GPT2,
      microBatch: undefined,
      timeline: undefined,
      targetGlobalBatch: micro * steps,
      checkpointing: ckpt === 'none' ? 'auto' : ckpt,
    });
    const plan = planner.plans.find(
      (p) => p.microBatch === micro && p.accumulationSteps === steps && p.checkpointing === ckpt,
    );
    assert.ok(plan, `the planner's ${micro} × ${steps} ${ckpt}`);
    assert.ok(
      Math.abs(a.stepTime.stepSeconds - plan.stepSeconds) <= 1e-12 * plan.stepSeconds,
      `${micro} × ${steps} ${ckpt}: ${a.stepTime.stepSeconds} against ${plan.stepSeconds}`,
    );
    assert.equal(a.stepTime.globalBatch, micro * steps);
  }
});

test("the run's result is peakMemory's, and the margin decides fits or tight", () => {
  const a = tm.advise(GPT2);
  const p = tm.peakMemory({ ...GPT2 });
  assert.equal(a.peak.deviceUsedBytes, p.deviceUsedBytes);
  assert.equal(a.peak.maxMicroBatch, p.maxMicroBatch);
  assert.equal(a.verdict.usedBytes, p.deviceUsedBytes);
  assert.equal(a.verdict.usedMemory, 'nvidia-smi');
  assert.equal(a.verdict.status, 'fits');
  assert.deepEqual(a.changes, [], 'a run that fits is offered no change');
  // keep one byte more free than is left: it still fits the GPU, but tight; the changes follow
  const left = a.verdict.headroomBytes;
  const tight = tm.advise({ ...GPT2, marginBytes: left + 1 });
  assert.equal(tight.verdict.status, 'tight');
  assert.equal(tight.verdict.fits, true);
  assert.ok(tight.changes.length > 0);
  assert.equal(tm.advise({ ...GPT2, marginBytes: left }).verdict.status, 'fits');
  assert.throws(
    () => tm.advise({ ...GPT2, marginBytes: 1, marginFraction: 0.1 }),
    (e) => e.code === 'inconsistent' && e.field === 'marginFraction',
  );
});

test('the changes fit the method, and say what they set', () => {
  // LLaMA-2 7B on a 24 GB RTX 4090: full fine-tuning does not fit
  const run = { ...GPT2, model: { preset: 'llama-2-7b' }, microBatch: 1, seqLen: 512 };
  const full = tm.advise({ ...run, gpu: 'rtx-4090' });
  const ids = (a) => a.changes.map((c) => c.id);
  assert.equal(full.verdict.status, 'doesNotFit');
  for (const id of ['bf16-checkpointing', 'lora', 'qlora', 'adam-8bit'])
    assert.ok(ids(full).includes(id), `${id}: ${ids(full)}`);
  assert.deepEqual(full.changes.find((c) => c.id === 'bf16-checkpointing').set, {
    checkpointing: 'full',
    precision: 'bf16',
  });
  const scratch = tm.advise({ ...run, gpu: 'rtx-4090', fromScratch: true });
  assert.equal(scratch.settings.method, 'from-scratch');
  assert.ok(!ids(scratch).some((id) => id === 'lora' || id === 'qlora'), ids(scratch).join());
  const lora = tm.advise({ ...run, gpu: 'rtx-4090', lora: { rank: 16 } });
  assert.equal(lora.settings.method, 'lora');
  for (const id of ['adam-8bit', 'zero2-offload', 'for-loop', 'lora'])
    assert.ok(!ids(lora).includes(id), `${id} offered to LoRA: ${ids(lora)}`);
  // those that fit come first
  const order = full.changes.map((c) => c.status);
  assert.deepEqual(
    order,
    [...order].sort(
      (x, y) =>
        ['fits', 'tight', 'doesNotFit'].indexOf(x) - ['fits', 'tight', 'doesNotFit'].indexOf(y),
    ),
  );
  // a V100 has no bf16 (datasheet): fp32 there is offered mixed fp16, never bf16
  const volta = tm.advise({ ...run, gpu: 'v100-16gb', precision: 'fp32' });
  assert.ok(!ids(volta).includes('bf16') && !ids(volta).includes('bf16-checkpointing'));
  assert.deepEqual(volta.changes.find((c) => c.id === 'mixed-precision')?.set, {
    precision: 'amp-fp16',
  });
});

test('a custom memory size is judged but not timed, and says why', () => {
  const a = tm.advise({ ...GPT2, gpu: undefined, gpuMemoryBytes: 80 * 2 ** 30 });
  assert.equal(a.verdict.capacityBytes, 80 * 2 ** 30);
  assert.equal(typeof a.stepTime.stepSeconds, 'undefined');
  assert.match(a.stepTime.note, /TFLOP\/s/);
  assert.ok(a.messages['stepTime.note'], 'the note comes back as a catalog code');
});
