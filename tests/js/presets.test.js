// presets({ parameterCounts: false }): the model picker's fast listing. Its ids, names, model
// types and sources must be those of the data files (cpp/data/models/*.json, read here
// directly), and it must not carry the counts that only building a model gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';

const dir = new URL('../../cpp/data/models/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(new URL(f, dir))));
const tm = await load();
// diffusers configs name their class, not a model_type: the type trainmem gives each class
const DIFFUSERS_TYPES = {
  UNet2DConditionModel: 'unet',
  SD3Transformer2DModel: 'sd3',
  FluxTransformer2DModel: 'flux',
  DiTTransformer2DModel: 'dit',
  PixArtTransformer2DModel: 'pixart',
  AutoencoderKL: 'vae',
};

test('presets without parameter counts: the data files, nothing built', () => {
  const light = tm.presets({ parameterCounts: false }).models;
  const want = files
    .map((p) => ({
      id: p.id,
      name: p.name,
      modelType: p.config.model_type ?? DIFFUSERS_TYPES[p.config._class_name],
      source: p.source,
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
  assert.deepEqual(
    [...light].sort((a, b) => a.id.localeCompare(b.id)),
    want,
  );
});

test('presets without parameter counts: same models as the full listing', () => {
  const full = tm.presets({}).models;
  const light = tm.presets({ parameterCounts: false }).models;
  assert.deepEqual(
    light.map((m) => [m.id, m.name, m.modelType]),
    full.map((m) => [m.id, m.name, m.modelType]),
  );
  // the full listing's counts are the published ones where the data file has one
  for (const m of full) {
    const p = files.find((f) => f.id === m.id);
    if (p.publishedParams) assert.equal(m.params, p.publishedParams, m.id);
  }
});

test('presets: parameterCounts must be a boolean', () => {
  assert.throws(
    () => tm.presets({ parameterCounts: 'no' }),
    (e) => e instanceof TrainmemError && e.field === 'parameterCounts',
  );
});

test("the page's bundled preset index lists what the core lists, in the same order", async () => {
  const { presetIndex } = await import('../../tools/preset-index.mjs');
  const index = presetIndex();
  const core = tm.presets({ parameterCounts: false });
  // (with the model type the page's inputs follow: web/app/model-input.js)
  assert.deepEqual(
    index.models.map((m) => ({ id: m.id, name: m.name, modelType: m.modelType })),
    core.models.map((m) => ({ id: m.id, name: m.name, modelType: m.modelType })),
  );
  assert.deepEqual(
    index.gpus.map((g) => ({ id: g.id, name: g.name })),
    core.gpus.map((g) => ({ id: g.id, name: g.name })),
  );
  // what the page reads besides: a GPU's memory and whether it computes in bf16 (the T4 and
  // the V100 do not: NVIDIA's datasheets list no bf16 before Ampere), a model's Hub id
  const gpu = (id) => index.gpus.find((g) => g.id === id);
  assert.equal(gpu('a100-80gb').memoryBytes, 80 * 2 ** 30);
  assert.equal(gpu('a100-80gb').bf16, true);
  assert.equal(gpu('t4').bf16, false);
  assert.equal(gpu('v100-16gb').bf16, false);
  assert.equal(index.models.find((m) => m.id === 'llama-3.1-8b').hub, 'meta-llama/Llama-3.1-8B');
  assert.ok(index.models.some((m) => m.id === 'llama-2-7b'));
  assert.ok(index.gpus.length >= 5);
});
