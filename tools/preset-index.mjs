// The page's model and GPU pickers need only each preset's id and display name. They are read
// here, at page build time, from the same data files the core embeds (cpp/data/models/*.json,
// cpp/data/gpus/*.json), and bundled into the page (tools/build-page.mjs): the page then lists
// the presets without calling the core at start-up. That call parsed every data file and made
// V8 tier the JSON parser up in the background during the first result (bench/RESULTS.md,
// session 4). tests/js/presets.test.js checks this index against the core's presets().
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const data = fileURLToPath(new URL('../cpp/data/', import.meta.url));

function list(kind, more) {
  return readdirSync(`${data}${kind}`)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(`${data}${kind}/${f}`, 'utf8')))
    .filter((p) => p && typeof p.id === 'string')
    .map((p) => ({ id: p.id, name: typeof p.name === 'string' ? p.name : p.id, ...more(p) }));
}

// A model's Hugging Face id, from the config.json its data file cites ("huggingface.co/org/name"):
// the page recognises it when it is pasted where a config.json goes.
// A model's type as the core's presets() gives it: its config's model_type, or the type trainmem
// gives a diffusers class (cpp/src/io/diffusers_build.cpp; tests/js/presets.test.js compares).
const DIFFUSERS_TYPES = {
  UNet2DConditionModel: 'unet',
  SD3Transformer2DModel: 'sd3',
  FluxTransformer2DModel: 'flux',
  DiTTransformer2DModel: 'dit',
  PixArtTransformer2DModel: 'pixart',
  AutoencoderKL: 'vae',
};
const modelType = (p) => p.config?.model_type ?? DIFFUSERS_TYPES[p.config?._class_name] ?? '';

// A mixture of experts: its config routes to experts (the keys cpp/src/io/model_config.cpp reads).
const moe = (p) =>
  ['num_local_experts', 'num_experts', 'n_routed_experts'].some((k) => p.config?.[k] > 1);

const hubId = (p) => /huggingface\.co\/([\w.-]+\/[\w.-]+)/.exec(String(p.source || ''))?.[1];

/**
 * { models: [{id, name, modelType, moe?, hub?}], gpus: [{id, name, memoryBytes, bf16}] }, in the core's order
 * (sorted by file name). A GPU's bf16: whether it lists a bf16 dense peak (Ampere and later),
 * which the page's automatic precision follows.
 */
export function presetIndex() {
  return {
    models: list('models', (p) => ({
      modelType: modelType(p),
      ...(moe(p) ? { moe: true } : {}),
      ...(hubId(p) ? { hub: hubId(p) } : {}),
    })),
    gpus: list('gpus', (p) => ({
      memoryBytes: p.memoryBytes,
      bf16: typeof p.peakTflops?.bf16 === 'number' && p.peakTflops.bf16 > 0,
    })),
  };
}
