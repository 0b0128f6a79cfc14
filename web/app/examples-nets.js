// @ts-check
// Worked examples for vision and speech networks, as data: a published recipe's inputs (the
// page state it sets), a few variants of it, and the card whose memory it must fit. One
// explanation serves them all: each run's peak (what nvidia-smi shows) and whether it fits,
// then the largest micro-batch that fits as the recipe runs. Every number is the core's, from
// the same request the page sends (requests.js). Strings: ex.<id>.title / .question / .short /
// .s1 / .r<i>, and the shared ex.nets.*.
/** @import { PeakMemoryResult, Trainmem } from '../lib/index.js' */
/** @import { PageError, State, Translator } from './types.js' */
import { h } from './dom.js';
import { defaults } from './state.js';
import { peakMemoryRequest } from './requests.js';

// google/vit-base-patch16-224-in21k's config.json (huggingface.co/google/vit-base-patch16-224-in21k)
// as run_image_classification.py loads it for the beans dataset (3 labels).
export const VIT_B16_BEANS = {
  model_type: 'vit',
  architectures: ['ViTForImageClassification'],
  hidden_size: 768,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  intermediate_size: 3072,
  hidden_act: 'gelu',
  hidden_dropout_prob: 0.0,
  attention_probs_dropout_prob: 0.0,
  image_size: 224,
  patch_size: 16,
  num_channels: 3,
  qkv_bias: true,
  layer_norm_eps: 1e-12,
  id2label: { 0: 'angular_leaf_spot', 1: 'bean_rust', 2: 'healthy' },
};

// openai/whisper-small's config.json (huggingface.co/openai/whisper-small), the fields the
// core reads.
export const WHISPER_SMALL = {
  model_type: 'whisper',
  architectures: ['WhisperForConditionalGeneration'],
  d_model: 768,
  encoder_layers: 12,
  decoder_layers: 12,
  encoder_attention_heads: 12,
  decoder_attention_heads: 12,
  encoder_ffn_dim: 3072,
  decoder_ffn_dim: 3072,
  vocab_size: 51865,
  num_mel_bins: 80,
  max_source_positions: 1500,
  max_target_positions: 448,
  activation_function: 'gelu',
  dropout: 0.0,
  attention_dropout: 0.0,
  activation_dropout: 0.0,
  scale_embedding: false,
  tie_word_embeddings: true,
};

/**
 * The cards: id, the page state of the recipe, the variants run beside it (state patches),
 * the sources of the recipe.
 */
/**
 * @type {Array<{ id: string, state: Partial<State>, variants: Partial<State>[],
 *   sources: Array<{ label: string, url: string }> }>}
 */
export const NET_CARDS = [
  {
    // transformers examples/pytorch/image-classification/README.md: run_image_classification.py
    // on beans, --per_device_train_batch_size 8, fp32 (no --fp16), the Trainer's AdamW
    id: 'vit-b16-finetune',
    state: {
      modelSource: 'config',
      config: JSON.stringify(VIT_B16_BEANS),
      microBatch: 8,
      precision: 'fp32',
      optimizer: 'adamw',
      gpu: 't4',
    },
    variants: [{}, { microBatch: 64 }, { microBatch: 64, precision: 'amp-fp16' }],
    sources: [
      {
        label: 'transformers: image-classification example',
        url: 'https://github.com/huggingface/transformers/tree/main/examples/pytorch/image-classification',
      },
      {
        label: 'google/vit-base-patch16-224-in21k',
        url: 'https://huggingface.co/google/vit-base-patch16-224-in21k',
      },
    ],
  },
  {
    // huggingface.co/blog/fine-tune-whisper: whisper-small, per_device_train_batch_size=16,
    // gradient_checkpointing=True, fp16=True, the Trainer's AdamW; on a 16 GB T4
    id: 'whisper-small-finetune',
    state: {
      modelSource: 'config',
      config: JSON.stringify(WHISPER_SMALL),
      microBatch: 16,
      precision: 'amp-fp16',
      checkpointing: 'full',
      optimizer: 'adamw',
      gpu: 't4',
    },
    variants: [{}, { checkpointing: 'none' }, { checkpointing: 'none', microBatch: 4 }],
    sources: [
      {
        label: 'Fine-Tune Whisper For Multilingual ASR (Hugging Face blog)',
        url: 'https://huggingface.co/blog/fine-tune-whisper',
      },
      { label: 'openai/whisper-small', url: 'https://huggingface.co/openai/whisper-small' },
    ],
  },
  {
    // pytorch/vision references/classification/README.md: ResNet-50 from scratch, batch 32 per
    // GPU, SGD with momentum 0.9, fp32 (--amp optional), on V100s
    id: 'resnet50-scratch',
    state: {
      modelSource: 'preset',
      preset: 'torchvision/resnet50',
      method: 'scratch',
      microBatch: 32,
      precision: 'fp32',
      optimizer: 'sgd-momentum',
      gpu: 'v100-16gb',
    },
    variants: [{}, { precision: 'amp-fp16' }, { microBatch: 128, precision: 'amp-fp16' }],
    sources: [
      {
        label: 'torchvision: classification reference scripts',
        url: 'https://github.com/pytorch/vision/tree/main/references/classification',
      },
    ],
  },
];

/**
 * @param {Translator} t
 * @param {number} b
 */
const GB = (t, b) => t.n(`${t.gb(b)} = ${t.gib(b)}`);

/**
 * One run of a card: its peakMemory result, or the error the core gave.
 * @param {Trainmem} tm
 * @param {State} st
 * @param {boolean} search whether to search the largest micro-batch
 * @returns {{ ok: true, result: PeakMemoryResult, error?: undefined }
 *   | { ok: false, result?: undefined, error: PageError }}
 */
function run(tm, st, search) {
  const req = { ...peakMemoryRequest(st), timeline: false };
  if (!search) req.searchMaxMicroBatch = false;
  try {
    return { ok: true, result: tm.peakMemory(req) };
  } catch (e) {
    return { ok: false, error: /** @type {PageError} */ (e) };
  }
}

/**
 * The explanation of a card: each variant's peak and verdict, then the largest batch.
 * @param {Trainmem} tm
 * @param {Translator} t
 * @param {NetCard} card
 */
function explainCard(card, tm, t) {
  /** @param {Partial<State>} patch */
  const st = (patch) => /** @type {State} */ ({ ...defaults(), ...card.state, ...patch });
  const steps = [h('li', {}, t(`ex.${card.id}.s1`))];
  /** @type {ReturnType<typeof run> | null} */
  let first = null;
  card.variants.forEach((patch, i) => {
    const r = run(tm, st(patch), i === 0); // (the largest batch: the recipe's own)
    if (i === 0) first = r;
    const used = r.ok ? (r.result.deviceUsedBytes ?? r.result.peakBytes) : 0;
    steps.push(
      h(
        'li',
        {},
        t(`ex.${card.id}.r${i}`),
        ': ',
        r.ok
          ? [GB(t, used), ' ', t(r.result.fits ? 'ex.nets.fits' : 'ex.nets.over')]
          : h('span', { class: 'muted' }, `${t('error.title')}: ${r.error.message}`),
      ),
    );
  });
  // (set in the loop above, which the checker does not follow)
  const firstRun = /** @type {ReturnType<typeof run> | null} */ (first);
  const most = firstRun?.ok ? firstRun.result.maxMicroBatch : undefined;
  const result = h(
    'p',
    {},
    typeof most === 'number' && most > 0
      ? t('ex.nets.result', { batch: t.int(most) })
      : t('ex.nets.none'),
  );
  return { steps, result };
}

/**
 * One card: its network, the state it sets and the variants it compares.
 * @typedef {(typeof NET_CARDS)[number]} NetCard
 */

/** The cards as entries of EXAMPLES (examples.js). */
/** @type {import('./examples.js').Example[]} */
export const NET_EXAMPLES = NET_CARDS.map((card) => ({
  id: card.id,
  tab: 'peak',
  sources: card.sources,
  state: () => ({ ...card.state }),
  /**
   * @param {Trainmem} tm
   * @param {Translator} t
   */
  explain: (tm, t) => explainCard(card, tm, t),
}));
