// The allocated-bytes peak without the allocator replay (simulateAllocator: false) against the
// replay's nvidia-smi figure, over 1,296 runs of six presets: the spread advise relies on when it
// tells a change far over the GPU without the replay (cpp/src/io/advise_json.cpp).
// Run: node tools/coarse-vs-replay.mjs (after `bash tools/build.sh wasm`).
import { load } from '../web/lib/index.js';
const tm = await load();
let bad = 0,
  n = 0;
globalThis.mx = 0;
for (const preset of [
  'gpt2',
  'llama-2-7b',
  'qwen2.5-0.5b',
  'bert-large-uncased',
  'tinyllama-1.1b',
  'mistral-7b',
]) {
  for (const mb of [1, 4, 16])
    for (const ckpt of ['none', 'full'])
      for (const opt of ['adamw', 'sgd', 'adamw-8bit'])
        for (const prec of ['amp-bf16', 'bf16', 'fp32'])
          for (const extra of [
            {},
            { lora: { rank: 16 } },
            { optimizerImplementation: 'for-loop' },
            { zeroStage: 3, dataParallel: 8 },
          ]) {
            const req = {
              model: { preset },
              microBatch: mb,
              seqLen: 512,
              optimizer: opt,
              precision: prec,
              checkpointing: ckpt,
              gpu: 'a100-80gb',
              timeline: false,
              searchMaxMicroBatch: false,
              ...extra,
            };
            try {
              const a = tm.peakMemory({ ...req, simulateAllocator: false });
              const b = tm.peakMemory(req);
              n++;
              const r = a.peakBytes / b.deviceUsedBytes;
              if (r < (globalThis.mn ?? 9)) globalThis.mn = r;
              if (r > globalThis.mx) {
                globalThis.mx = r;
                globalThis.at = [preset, mb, ckpt, opt, prec, JSON.stringify(extra)];
              }
              if (a.peakBytes > b.deviceUsedBytes) bad++;
            } catch (e) {}
          }
}
console.log(
  'cases',
  n,
  'coarse above device-used',
  bad,
  'min ratio',
  globalThis.mn,
  'max ratio',
  globalThis.mx,
  globalThis.at,
);
