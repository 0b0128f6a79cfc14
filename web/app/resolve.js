// @ts-check
// The inputs left to the page ('' in the state) resolved for this run: the precision follows
// the GPU (mixed bf16 where it computes in bf16, else mixed fp16: a T4 or a V100 is never
// refused a precision nobody chose), LoRA's frozen base is loaded in 16 bits as PEFT users load
// it, and the checkpoint file's dtype follows the training precision. The request builders
// (requests.js) take the resolved state; the verdict states what was resolved.
/** @import { DType, Precision } from '../lib/index.js' */
/** @import { PickerPresets, ResolvedState, State } from './types.js' */

/** @typedef {{ id: string, name?: string, memoryBytes?: number, bf16?: boolean }} GpuPreset */

/** @type {{ gpus: GpuPreset[], models?: Array<{ id: string, name?: string, hub?: string, modelType?: string, moe?: boolean }> }} */
let known = { gpus: [] };
/**
 * The presets of this build (app.js, at start).
 * @param {PickerPresets} presets
 */
export function usePresets(presets) {
  known = presets || { gpus: [] };
}

/** The presets of this build. */
export const knownPresets = () => known;

/**
 * The known model whose Hugging Face id this is (case-insensitive), or null.
 * @param {string} id
 */
export function presetOfHubId(id) {
  const want = String(id).toLowerCase();
  return known.models?.find((m) => m.hub && m.hub.toLowerCase() === want) || null;
}

/**
 * The GPU preset of a state, or null for a custom size (or a build without presets).
 * @param {{ gpu: string }} st
 * @param {{ gpus: GpuPreset[] }} presets
 * @returns {GpuPreset | null}
 */
export function gpuOf(st, presets = known) {
  return (st.gpu && presets?.gpus?.find((g) => g.id === st.gpu)) || null;
}

/**
 * Whether the run's GPU computes in bf16 (a custom size: assumed, as every GPU since Ampere).
 * @param {State} st
 */
export function gpuBf16(st, presets = known) {
  const g = gpuOf(st, presets);
  return !g || g.bf16 !== false;
}

// The dtype a training precision keeps the weights in (autocast trains fp32 parameters).
/** @type {Record<string, DType>} */
const WEIGHTS_OF = {
  fp32: 'fp32',
  'amp-fp16': 'fp32',
  'amp-bf16': 'fp32',
  bf16: 'bf16',
  fp16: 'fp16',
};

/**
 * The state with its automatic inputs resolved; `auto` lists which were (key: value).
 * @param {State} st
 * @param {{ gpus: GpuPreset[] }} presets
 * @returns {{ st: ResolvedState, auto: Record<string, string>, bf16: boolean }}
 */
export function resolve(st, presets = known) {
  const bf16 = gpuBf16(st, presets);
  /** @type {Record<string, string>} */
  const auto = {};
  /**
   * @param {string} key
   * @param {string} value
   */
  const pick = (key, value) => {
    const set = /** @type {Record<string, string>} */ (/** @type {unknown} */ (st))[key];
    if (set) return set;
    auto[key] = value;
    return value;
  };
  const precision = /** @type {Precision} */ (pick('precision', bf16 ? 'amp-bf16' : 'amp-fp16'));
  const baseDtype = /** @type {State['baseDtype']} */ (
    ['lora', 'qlora'].includes(st.method) ? pick('baseDtype', bf16 ? 'bf16' : 'fp16') : st.baseDtype
  );
  const weightDtype = /** @type {DType} */ (pick('weightDtype', WEIGHTS_OF[precision] || 'fp32'));
  return { st: { ...st, precision, baseDtype, weightDtype }, auto, bf16 };
}
