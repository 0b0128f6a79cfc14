// Op-level selective activation checkpointing through the npm API, against a hand calculation
// (torchtitan's op policy on a small Llama config) and the measured torch 1.13 emulation
// (tests/fixtures/torch_sac.json), and the refusal of the ambiguous name "selective".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, TrainmemError } from '../../web/lib/index.js';
import { repoRoot } from './fixtures/packed.js';

const tm = await load();

const CONFIG = {
  model_type: 'llama',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 4,
  intermediate_size: 128,
  num_hidden_layers: 2,
  vocab_size: 128,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-6,
  hidden_act: 'silu',
  tie_word_embeddings: false,
};
const base = (extra) => ({
  model: { config: CONFIG },
  microBatch: 1,
  seqLen: 8,
  precision: 'bf16',
  attention: 'sdpa',
  simulateAllocator: false,
  searchMaxMicroBatch: false,
  timeline: false,
  ...extra,
});

test('torchtitan-op keeps wq, wv, SDPA out + logsumexp, w1, w2 per block (by hand)', () => {
  // T = 8, h = 64, 4 heads x 16, i = 128, 2 bytes: 1024 + 1024 + (1024 + 1*4*8*4) + 2048 + 1024
  // = 6272 bytes per block beyond full checkpointing; 2 blocks.
  const full = tm.peakMemory(base({ checkpointing: 'full' }));
  const op = tm.peakMemory(base({ checkpointing: 'torchtitan-op' }));
  assert.equal(op.storedActivationBytes - full.storedActivationBytes, 2 * 6272);
  const list = tm.peakMemory(
    base({ checkpointing: { strategy: 'selective-op', saveOps: ['mm'], everyOtherMm: true } }),
  );
  // without sdpa: 6272 - 1152 per block
  assert.equal(list.storedActivationBytes - full.storedActivationBytes, 2 * (6272 - 1152));
});

test('selective-op cache sizes equal the torch 1.13 measurement (eager attention, CPU)', () => {
  const fx = JSON.parse(readFileSync(join(repoRoot, 'tests/fixtures/torch_sac.json'), 'utf8'));
  for (const c of fx.cases) {
    const k = c.config;
    const cfg = {
      model_type: 'llama',
      hidden_size: k.hidden_size,
      num_attention_heads: k.num_attention_heads,
      num_key_value_heads: k.num_key_value_heads,
      intermediate_size: k.intermediate_size,
      num_hidden_layers: 1,
      vocab_size: k.vocab_size,
      max_position_embeddings: k.max_position_embeddings,
      rms_norm_eps: k.rms_norm_eps,
      hidden_act: 'silu',
      tie_word_embeddings: false,
    };
    const req = (checkpointing) => ({
      model: { config: cfg },
      microBatch: c.microBatch,
      seqLen: c.seqLen,
      precision: c.dtype,
      attention: 'eager',
      runtime: 'pytorch-cpu',
      searchMaxMicroBatch: false,
      timeline: false,
      checkpointing,
    });
    const full = tm.peakMemory(req('full'));
    for (const [name, p] of Object.entries(c.policies)) {
      const saveOps = p.saveOps.map((o) => (o === '_softmax' ? 'softmax' : o));
      const r = tm.peakMemory(
        req({ strategy: 'selective-op', saveOps, everyOtherMm: p.everyOtherMm }),
      );
      assert.equal(
        r.storedActivationBytes - full.storedActivationBytes,
        p.cachedBytes,
        `${c.name}, ${name}`,
      );
    }
  }
});

test('plain "selective" is refused with both meanings; op names are checked', () => {
  assert.throws(
    () => tm.peakMemory(base({ checkpointing: 'selective' })),
    (e) =>
      e instanceof TrainmemError &&
      e.code === 'unknown_value' &&
      e.field === 'checkpointing' &&
      /attention-recompute/.test(e.message) &&
      /selective-op/.test(e.message),
  );
  assert.throws(
    () => tm.peakMemory(base({ checkpointing: { strategy: 'selective-op', saveOps: ['nm'] } })),
    (e) =>
      e.code === 'unknown_value' &&
      e.field === 'checkpointing.saveOps[0]' &&
      /'mm'/.test(e.message),
  );
  const k2 = tm.peakMemory(base({ checkpointing: { strategy: 'selective-layer', k: 2 } }));
  const manual = tm.peakMemory(
    base({ checkpointing: { strategy: 'manual', checkpointed: [[2, 2]] } }),
  );
  assert.equal(k2.storedActivationBytes, manual.storedActivationBytes);
});
