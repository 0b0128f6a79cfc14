// @ts-check
// What the chosen model reads, which decides the inputs the page shows and sends: token
// sequences (seqLen), images (imageSize, and numClasses for a classifier), a diffusion network
// (imageSize; its text tokens are the pipeline's own) or audio (Whisper's 3000 mel frames and
// wav2vec2's samples: the core's defaults). A preset is known by its model type (the page's
// preset index, tools/preset-index.mjs, or the core's presets() unbundled); a pasted
// config.json by its model_type or diffusers' _class_name.
/** @import { State } from './types.js' */
import { knownPresets } from './resolve.js';

// The model types the core builds as vision and speech networks (cpp/src/io/net_config.cpp,
// is_net_model_type). clip_text_model and siglip_text_model read tokens. tests/js/page-requests.test.js
// checks each against the core: an image network refuses seqLen.
const IMAGE_TYPES = new Set([
  'torchvision',
  'vit',
  'deit',
  'dinov2',
  'clip',
  'clip_vision_model',
  'siglip',
  'siglip_vision_model',
  'convnext',
  'resnet',
  'swin',
  'segformer',
]);
const AUDIO_TYPES = new Set(['whisper', 'wav2vec2']);
// The core's model type of each diffusers class (presets() without counts).
const DIFFUSION_TYPES = new Set(['unet', 'sd3', 'flux', 'dit', 'pixart', 'vae']);

/** @typedef {'tokens' | 'image' | 'diffusion' | 'audio'} ModelInput */

/** @param {string} type @returns {ModelInput} */
function inputOfType(type) {
  if (IMAGE_TYPES.has(type)) return 'image';
  if (AUDIO_TYPES.has(type)) return 'audio';
  if (DIFFUSION_TYPES.has(type)) return 'diffusion';
  return 'tokens';
}

// A pasted config's kind, read once per text.
let lastText = '';
/** @type {ModelInput} */
let lastInput = 'tokens';
/** @param {string} text @returns {ModelInput} */
function inputOfConfig(text) {
  if (text === lastText) return lastInput;
  lastText = text;
  lastInput = 'tokens';
  try {
    const c = JSON.parse(text);
    if (c && typeof c === 'object' && !Array.isArray(c)) {
      if (typeof c._class_name === 'string') lastInput = 'diffusion';
      else if (typeof c.model_type === 'string') lastInput = inputOfType(c.model_type);
    }
  } catch {
    /* not JSON: the request builder reports it */
  }
  return lastInput;
}

/**
 * What the state's model reads (a parameter count, a traced model and a text model: tokens).
 * @param {Pick<State, 'modelSource' | 'config' | 'preset'>} st
 * @returns {ModelInput}
 */
export function modelInput(st) {
  if (st.modelSource === 'config') return inputOfConfig(String(st.config || ''));
  if (st.modelSource !== 'preset') return 'tokens';
  const p = knownPresets().models?.find((m) => m.id === st.preset);
  return p?.modelType ? inputOfType(p.modelType) : 'tokens';
}

/**
 * Whether the model reads imageSize (a vision or a diffusion network).
 * @param {State} st
 */
export const readsImage = (st) => ['image', 'diffusion'].includes(modelInput(st));

// A config's routed experts (Mixtral num_local_experts, Qwen-MoE num_experts, DeepSeek
// n_routed_experts: cpp/src/io/model_config.cpp).
const EXPERT_KEYS = ['num_local_experts', 'num_experts', 'n_routed_experts'];
let moeText = '';
let moeConfig = false;

/**
 * Whether the state's model is a mixture of experts (a preset the index marks, or a pasted
 * config with routed experts): expert parallelism's inputs are shown for it.
 * @param {Pick<State, 'modelSource' | 'config' | 'preset'>} st
 */
export function isMoE(st) {
  if (st.modelSource === 'preset')
    return !!knownPresets().models?.find((m) => m.id === st.preset)?.moe;
  if (st.modelSource !== 'config') return false;
  const text = String(st.config || '');
  if (text !== moeText) {
    moeText = text;
    try {
      const c = JSON.parse(text);
      moeConfig = EXPERT_KEYS.some((k) => Number(c?.[k]) > 1);
    } catch {
      moeConfig = false;
    }
  }
  return moeConfig;
}
