// @ts-check
// The articles' worked examples, one click each: each sets the page inputs, then explains the
// answer as the articles do — steps, then the result — with every number computed by the core.
//
// An example is an entry of EXAMPLES:
//   id        its name in links (?ex=) and in the <trainmem-calculator example="…"> attribute;
//   tab       the calculator it opens (size | peak | accum | place);
//   article   optional: the article it comes from (a key of ARTICLES), shown and cited;
//   sources   optional: [{ label, url }], what its numbers are checked against (linked);
//   state(p)  the inputs it sets, over the page's defaults (p: preset ids found in this build);
//   explain(tm, t, p)  → { steps: Node[], result: Node, patch? }: its explanation, computed.
// Its strings are i18n keys ex.<id>.title and ex.<id>.question, in both languages.
/** @import { CheckpointSizeResult, DType, DiffusionPipeline, FunctionName, Functions, ModelByPipeline, ModelInput, Optimizer, PeakMemoryRequest, PeakMemoryResult, PlacementPlanResult, PlacementRequest, Trainmem } from '../lib/index.js' */
/** @import { Ctx, PageError, PickerPresets, State, Tab, Translator } from './types.js' */
/** @import { Child } from './dom.js' */
import { h } from './dom.js';
import { uniformChain } from './requests.js';
import { NET_EXAMPLES } from './examples-nets.js';

export const LLAMA2_7B_PARAMS = 6738415616; // Llama-2-7b-hf model index (published count)
export const GPT2_PARAMS = 124439808; // GPT-2 124M (published count)
// Seed 000's model: bert-large-uncased's config.json (huggingface.co/google-bert/bert-large-uncased)
// as AutoModelForSequenceClassification loads it in HF's perf_train_gpu_one guide (2 labels).
export const BERT_LARGE_SEQ_CLS = {
  model_type: 'bert',
  architectures: ['BertForSequenceClassification'],
  vocab_size: 30522,
  hidden_size: 1024,
  num_hidden_layers: 24,
  num_attention_heads: 16,
  intermediate_size: 4096,
  hidden_act: 'gelu',
  hidden_dropout_prob: 0.1,
  attention_probs_dropout_prob: 0.1,
  max_position_embeddings: 512,
  type_vocab_size: 2,
  initializer_range: 0.02,
  layer_norm_eps: 1e-12,
  pad_token_id: 0,
  num_labels: 2,
};

/**
 * The two Arabic articles the page grew out of, which its examples come from. `url`: where
 * the article is published ('' while unknown: its title is then cited, not linked).
 */
export const ARTICLES = {
  accumulation: {
    title: 'نقاط تحقّق التّدرّج وتراكم التّدرّج',
    author: 'م. عمّار وضّاح',
    url: '',
  },
  size: {
    title: 'حجم نقطة التحقّق',
    author: '',
    url: '',
  },
};

const SOURCES = {
  llama2: {
    label: 'Llama-2-7b-hf (Hugging Face)',
    url: 'https://huggingface.co/meta-llama/Llama-2-7b-hf',
  },
  adamw: {
    label: 'torch.optim.AdamW',
    url: 'https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html',
  },
  sgd: {
    label: 'torch.optim.SGD',
    url: 'https://pytorch.org/docs/stable/generated/torch.optim.SGD.html',
  },
  hfOne: {
    label: 'Hugging Face: Efficient training on a single GPU',
    url: 'https://huggingface.co/docs/transformers/perf_train_gpu_one',
  },
  anatomy: {
    label: 'Hugging Face: Model training anatomy',
    url: 'https://huggingface.co/docs/transformers/model_memory_anatomy',
  },
  bert: {
    label: 'google-bert/bert-large-uncased',
    url: 'https://huggingface.co/google-bert/bert-large-uncased',
  },
  chen: { label: 'Chen et al. 2016, arXiv:1604.06174', url: 'https://arxiv.org/abs/1604.06174' },
  checkpoint: {
    label: 'torch.utils.checkpoint',
    url: 'https://pytorch.org/docs/stable/checkpoint.html',
  },
  gpt2: { label: 'openai-community/gpt2', url: 'https://huggingface.co/openai-community/gpt2' },
};

/**
 * The preset id whose id matches one of the patterns (presets come from the core's data).
 * @param {PickerPresets} presets
 * @param {string[]} patterns
 */
export function findPreset(presets, patterns) {
  const ids = (presets?.models || []).map((m) => m.id);
  for (const p of patterns) {
    const hit = ids.find((id) => id.toLowerCase().replace(/[^a-z0-9]/g, '') === p);
    if (hit) return hit;
  }
  for (const p of patterns) {
    const hit = ids.find((id) =>
      id
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '')
        .includes(p),
    );
    if (hit) return hit;
  }
  return '';
}

/**
 * A core call's outcome: its result, or the error it threw.
 * @template R
 * @typedef {{ ok: true, result: R, error?: undefined, request: object }
 *   | { ok: false, result?: undefined, error: PageError, request: object }} Attempt
 */

/**
 * @template {FunctionName} K
 * @param {Trainmem} tm
 * @param {K} fn
 * @param {Functions[K][0]} req
 * @returns {Attempt<Functions[K][1]>}
 */
function attempt(tm, fn, req) {
  try {
    return {
      ok: true,
      result: /** @type {(r: Functions[K][0]) => Functions[K][1]} */ (tm[fn])(req),
      request: req,
    };
  } catch (e) {
    return { ok: false, error: /** @type {PageError} */ (e), request: req };
  }
}

/**
 * A checkpoint-size request of the examples: a model, its optimizer and its weights' dtype.
 * @param {Trainmem} tm
 * @param {ModelInput} model
 * @param {Optimizer} optimizer
 * @param {DType} weightDtype
 */
const sizeOf = (tm, model, optimizer, weightDtype, more = {}) =>
  attempt(tm, 'checkpointSize', { model, optimizer, weightDtype, ...more });

/**
 * @param {Translator} t
 * @param {number} b
 */
const GB = (t, b) => t.n(`${t.gb(b)} = ${t.gib(b)}`);

/**
 * @param {Translator} t
 * @param {PageError} e
 */
function errorNote(t, e) {
  return h(
    'span',
    { class: 'muted' },
    e.code === 'unsupported' ? t('ex.notYet') : `${t('error.title')}: ${e.message}`,
  );
}

/** @type {Example[]} */
export const EXAMPLES = [
  {
    id: 'llama2-7b',
    tab: 'size',
    article: 'size',
    sources: [SOURCES.llama2, SOURCES.adamw],
    /** @param {Ctx['known']} p */
    state: (p) => ({
      modelSource: p.llama ? 'preset' : 'params',
      preset: p.llama || '',
      params: LLAMA2_7B_PARAMS,
      optimizer: 'adamw',
      weightDtype: 'fp16',
      stateDtype: '',
      masterWeights: false,
      // The calculator shows the file the example's exact answer is about: torch.save's.
      format: p.llama ? 'torch' : '',
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     * @param {Ctx['known']} p
     */
    explain(tm, t, p) {
      const N = LLAMA2_7B_PARAMS;
      const simple = sizeOf(tm, { params: N }, 'adamw', 'fp16');
      const mixed = sizeOf(tm, { params: N }, 'adamw', 'fp16', { masterWeights: true });
      const steps = [
        h('li', {}, t('ex.llama.s1', { n: '' }), t.n(t.int(N))),
        h('li', {}, t('ex.llama.s2')),
        h('li', {}, t('ex.llama.s3')),
      ];
      if (simple.ok) {
        steps.push(
          h(
            'li',
            {},
            t.n(`${t.int(N)} × 3 × 2 = ${t.int(simple.result.totalBytes)}`),
            ' ',
            t('unit.bytes'),
            ' = ',
            GB(t, simple.result.totalBytes),
          ),
        );
      }
      if (mixed.ok) {
        const b = mixed.result.totalBytes;
        steps.push(
          h(
            'li',
            {},
            t('ex.llama.s5'),
            ' ',
            t.n(`${t.int(N)} × ${t.num(mixed.result.bytesPerParam)} = ${t.gb(b)} = ${t.gib(b)}`),
          ),
        );
      }
      /** @type {Attempt<CheckpointSizeResult> | null} */
      let exact = null;
      if (p.llama) {
        exact = sizeOf(tm, { preset: p.llama }, 'adamw', 'fp16', { format: 'torch' });
      }
      const result = [
        h(
          'p',
          {},
          h('strong', {}, t('ex.simple')),
          ' ',
          simple.ok ? GB(t, simple.result.totalBytes) : errorNote(t, simple.error),
        ),
        h(
          'p',
          {},
          h('strong', {}, t('ex.exact')),
          ' ',
          exact?.ok
            ? [
                GB(t, exact.result.totalBytes),
                ' ',
                t.n(`(${t.int(exact.result.totalBytes)} ${t('unit.bytes')})`),
              ]
            : exact
              ? errorNote(t, exact.error)
              : h('span', { class: 'muted' }, t('ex.notYet')),
        ),
      ];
      return { steps, result };
    },
  },
  {
    id: 'sgd-vs-adam',
    tab: 'size',
    article: 'size',
    sources: [SOURCES.sgd, SOURCES.adamw],
    state: () => ({
      modelSource: 'params',
      params: 100000000,
      optimizer: 'adam',
      weightDtype: 'bf16',
      stateDtype: '',
      masterWeights: false,
      format: '',
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     */
    explain(tm, t) {
      const N = 1e8;
      const a = sizeOf(tm, { params: N }, 'sgd', 'fp32');
      const b = sizeOf(tm, { params: N }, 'adam', 'bf16');
      // "N × copies × bytes = total bytes = GB", or why the core could not say
      /**
       * @param {string} key
       * @param {Attempt<CheckpointSizeResult>} r
       * @param {string} formula
       */
      const line = (key, r, formula) =>
        h(
          'li',
          {},
          t(key),
          ' ',
          r.ok
            ? [
                t.n(`${formula} = ${t.int(r.result.totalBytes)}`),
                ' ',
                t('unit.bytes'),
                ' = ',
                GB(t, r.result.totalBytes),
              ]
            : errorNote(t, r.error),
        );
      const steps = [
        line('ex.sgd.s1', a, `${t.int(N)} × 1 × 4`),
        line('ex.sgd.s2', b, `${t.int(N)} × 3 × 2`),
      ];
      const result =
        a.ok && b.ok
          ? h(
              'p',
              {},
              t('ex.sgd.result', { ratio: t.num(b.result.totalBytes / a.result.totalBytes) }),
            )
          : null;
      return { steps, result };
    },
  },
  {
    id: 'bert-hf',
    tab: 'accum',
    article: 'accumulation',
    sources: [SOURCES.hfOne, SOURCES.anatomy, SOURCES.bert],
    /** @param {Ctx['known']} p */
    state: (p) => ({
      modelSource: 'config',
      config: JSON.stringify(BERT_LARGE_SEQ_CLS, null, 2),
      optimizer: 'adamw',
      precision: 'fp32',
      seqLen: 512,
      microBatch: 1,
      accumSteps: 4,
      accMode: 'plan',
      targetGlobalBatch: 4,
      gpu: p.v100 || '',
      gpuGiB: 16,
      checkpointing: 'full',
      dataParallel: 1,
      // As the 2022 run was set up: PyTorch 1.10, eager attention (BERT had no SDPA then) and
      // transformers' own AdamW (adamw_hf); the defaults of today's PyTorch are shown beside.
      attention: 'eager',
      runtime: 'pytorch-1.10-cuda',
      optImpl: 'transformers',
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     * @param {Ctx['known']} p
     */
    explain(tm, t, p) {
      const model = { config: BERT_LARGE_SEQ_CLS };
      const gpu = p.v100 ? { gpu: p.v100 } : { gpuMemoryBytes: 16e9 };
      // the CUDA context measured in the same guide: 1343 MiB (model_memory_anatomy)
      /** @type {Partial<PeakMemoryRequest>} */
      const then = {
        attention: 'eager',
        runtime: 'pytorch-1.10-cuda',
        optimizerImplementation: 'transformers',
        runtimeOverheadBytes: 1343 * 2 ** 20,
      };
      /** @type {Partial<PeakMemoryRequest>} */
      const base = { model, seqLen: 512, precision: 'fp32', optimizer: 'adamw', ...gpu };
      const acc = { microBatch: 1, gradientAccumulationSteps: 4 };
      /** @param {Partial<PeakMemoryRequest>} req with its microBatch */
      const peak = (req) =>
        attempt(
          tm,
          'peakMemory',
          /** @type {PeakMemoryRequest} */ ({ ...base, ...req, timeline: false }),
        );
      /** @type {Array<[string, Attempt<PeakMemoryResult>]>} */
      const runs = [
        ['ex.bert.b4', peak({ ...then, microBatch: 4, checkpointing: 'none' })],
        ['ex.bert.acc', peak({ ...then, ...acc, checkpointing: 'none' })],
        ['ex.bert.accCkpt', peak({ ...then, ...acc, checkpointing: 'full' })],
      ];
      // nvidia-smi prints MiB (2^20 bytes) and labels them "MB": the prediction in the same unit.
      /** @param {number} b */
      const mibs = (b) => t.int(Math.round(b / 2 ** 20));
      /** @param {number} b */
      const mib = (b) => t.n(`${mibs(b)} MiB`);
      // what nvidia-smi shows (the caching allocator's reserve + the context), when simulated
      /** @param {PeakMemoryResult} r */
      const smi = (r) => (typeof r.deviceUsedBytes === 'number' ? r.deviceUsedBytes : r.peakBytes);
      const steps = [h('li', {}, t('ex.bert.s1')), h('li', {}, t('ex.bert.s2'))];
      for (const [key, r] of runs) {
        steps.push(
          h(
            'li',
            {},
            t(key),
            ': ',
            r.ok ? [mib(smi(r.result)), ' (', GB(t, smi(r.result)), ')'] : errorNote(t, r.error),
          ),
        );
      }
      // The same two runs with today's defaults (SDPA attention, foreach AdamW).
      /** @type {Partial<PeakMemoryRequest>} */
      const now = {
        attention: 'sdpa',
        optimizerImplementation: 'foreach',
        runtime: 'pytorch-cuda',
      };
      const nowAcc = peak({ ...now, ...acc, checkpointing: 'none' });
      const nowCkpt = peak({ ...now, ...acc, checkpointing: 'full' });
      if (nowAcc.ok && nowCkpt.ok) {
        const stepPeak = [nowAcc, nowCkpt].every((r) => r.result.peakPhase === 'optimizer');
        steps.push(
          h(
            'li',
            {},
            t('ex.bert.today', {
              acc: mibs(smi(nowAcc.result)),
              ckpt: mibs(smi(nowCkpt.result)),
            }),
            stepPeak ? [' ', t('ex.bert.todayWhy')] : null,
          ),
        );
      }
      const result = h('p', {}, t('ex.bert.reported'));
      return { steps, result, runs };
    },
  },
  {
    id: 'chain-1000',
    tab: 'place',
    article: 'accumulation',
    sources: [SOURCES.chen, SOURCES.checkpoint],
    state: () => ({
      chainSource: 'uniform',
      layers: 1000,
      layerMB: 10,
      strategy: 'sqrt',
      frontier: false,
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     */
    explain(tm, t) {
      const chain = uniformChain(1000, 10e6);
      // (single-level strategies: plans)
      const none = /** @type {Attempt<PlacementPlanResult>} */ (
        attempt(tm, 'placement', { chain, strategy: 'none' })
      );
      const sq = /** @type {Attempt<PlacementPlanResult>} */ (
        attempt(tm, 'placement', { chain, strategy: 'sqrt' })
      );
      const steps = [
        h('li', {}, t('ex.chain.s1')),
        h('li', {}, t('ex.chain.s2', { k: Math.floor(Math.sqrt(1000)) })),
      ];
      if (none.ok)
        steps.push(h('li', {}, t('ex.chain.none'), ' ', GB(t, none.result.peakActivationBytes)));
      if (sq.ok) {
        steps.push(
          h(
            'li',
            {},
            t('ex.chain.sqrt'),
            ' ',
            GB(t, sq.result.peakActivationBytes),
            ' · ',
            t('place.overhead'),
            ' ',
            t.n(`${t.num(100 * sq.result.overheadFraction)} %`),
          ),
        );
      }
      const result =
        none.ok && sq.ok
          ? h(
              'p',
              {},
              t('ex.chain.result', {
                ratio: t.num(none.result.peakActivationBytes / sq.result.peakActivationBytes),
              }),
            )
          : h('p', {}, errorNote(t, /** @type {PageError} */ ((none.ok ? sq : none).error)));
      return { steps, result };
    },
  },
  {
    id: 'sdxl-lora-24gb',
    tab: 'peak',
    state: () => ({
      modelSource: 'preset',
      preset: 'sdxl-base-unet',
      microBatch: 1,
      imageSize: 1024,
      precision: 'amp-bf16',
      method: 'lora',
      loraRank: 4,
      loraTargets: '',
      checkpointing: 'full',
      gpu: 'rtx-4090',
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     */
    explain(tm, t) {
      // diffusers examples/dreambooth/train_dreambooth_lora_sdxl.py at 1024 x 1024, batch 1,
      // rank 4, bf16 mixed precision, gradient checkpointing: the UNet trains, the VAE (fp32) and
      // both CLIP text encoders (bf16) stay on the card.
      const base = {
        imageSize: 1024,
        microBatch: 1,
        seqLen: 77,
        precision: 'amp-bf16',
        lora: { rank: 4 },
        checkpointing: 'full',
        gpu: 'rtx-4090',
        timeline: false,
      };
      /** @param {object} more */
      /**
       * @param {Partial<DiffusionPipeline>} more
       * @returns {ModelByPipeline}
       */
      const pipe = (more) => ({ pipeline: { denoiser: { preset: 'sdxl-base-unet' }, ...more } });
      // The script casts the frozen UNet to weight_dtype (bf16): lora.baseDtype where the core
      // takes it, else the core's default for the base.
      /**
       * @param {ModelInput | ModelByPipeline} model
       * @param {Partial<PeakMemoryRequest>} [more]
       */
      const peak = (model, more = {}) => {
        const r = attempt(
          tm,
          'peakMemory',
          /** @type {PeakMemoryRequest} */ ({
            ...base,
            lora: { rank: 4, baseDtype: 'bf16' },
            ...more,
            model,
          }),
        );
        if (r.ok || !String(r.error?.field || '').startsWith('lora')) return r;
        return attempt(
          tm,
          'peakMemory',
          /** @type {PeakMemoryRequest} */ ({ ...base, ...more, model }),
        );
      };
      /** @param {PeakMemoryResult} r */
      const smi = (r) => (typeof r.deviceUsedBytes === 'number' ? r.deviceUsedBytes : r.peakBytes);
      /** @type {Array<[string, Attempt<PeakMemoryResult>]>} */
      const runs = [
        ['ex.sdxl.unet', peak({ preset: 'sdxl-base-unet' })],
        ['ex.sdxl.pipeline', peak(pipe({}))],
        ['ex.sdxl.prior', peak(pipe({ priorPreservation: true }))],
        ['ex.sdxl.cached', peak(pipe({ precomputed: { latents: true }, vae: false }))],
      ];
      const steps = [h('li', {}, t('ex.sdxl.s1')), h('li', {}, t('ex.sdxl.s2'))];
      for (const [key, r] of runs) {
        steps.push(
          h(
            'li',
            {},
            t(key),
            ': ',
            r.ok
              ? [GB(t, smi(r.result)), ' ', t(r.result.fits ? 'ex.sdxl.fits' : 'ex.sdxl.over')]
              : errorNote(t, r.error),
          ),
        );
      }
      const full = runs[1][1];
      const result = full.ok
        ? h(
            'p',
            {},
            t('ex.sdxl.result', {
              // (a pipeline's result has its pipeline figures)
              frozen: t.gb(/** @type {Pipe} */ (full.result.pipeline).residentBytes),
              encode: t.gb(/** @type {Pipe} */ (full.result.pipeline).encodeBytes),
              batch: t.int(full.result.maxMicroBatch ?? 0),
            }),
          )
        : h('p', {}, errorNote(t, full.error));
      return { steps, result, runs };
    },
  },
  {
    id: 'gpt2-budget',
    tab: 'place',
    article: 'accumulation',
    sources: [SOURCES.gpt2, SOURCES.chen, SOURCES.checkpoint],
    /** @param {Ctx['known']} p */
    state: (p) => ({
      chainSource: 'model',
      modelSource: p.gpt2 ? 'preset' : 'params',
      preset: p.gpt2 || '',
      params: GPT2_PARAMS,
      microBatch: 8,
      seqLen: 1024,
      precision: 'fp32',
      strategy: 'optimal-single-level',
      budgetGB: 2,
      frontier: true,
    }),
    /**
     * @param {Trainmem} tm
     * @param {Translator} t
     * @param {Ctx['known']} p
     */
    explain(tm, t, p) {
      const model = p.gpt2 ? { preset: p.gpt2 } : { params: GPT2_PARAMS };
      const base = { model, microBatch: 8, seqLen: 1024, precision: 'fp32' };
      // (the model form, which index.d.ts's PlacementRequest does not describe: a plan)
      const none = /** @type {Attempt<PlacementPlanResult>} */ (
        attempt(
          tm,
          'placement',
          /** @type {PlacementRequest} */ (/** @type {unknown} */ ({ ...base, strategy: 'none' })),
        )
      );
      const steps = [h('li', {}, t('ex.gpt2.s1'))];
      if (!none.ok) return { steps, result: h('p', {}, errorNote(t, none.error)) };
      const budget = Math.round(none.result.peakActivationBytes / 2);
      steps.push(h('li', {}, t('ex.chain.none'), ' ', GB(t, none.result.peakActivationBytes)));
      steps.push(h('li', {}, t('ex.gpt2.s3'), ' ', GB(t, budget)));
      const plan = /** @type {Attempt<PlacementPlanResult>} */ (
        attempt(
          tm,
          'placement',
          /** @type {PlacementRequest} */ (
            /** @type {unknown} */ ({
              ...base,
              strategy: 'optimal-single-level',
              budgetBytes: budget,
            })
          ),
        )
      );
      const result = plan.ok
        ? h(
            'p',
            {},
            t('ex.gpt2.result', {
              segs: plan.result.checkpointed.map(([a, b]) => `${a + 1}–${b + 1}`).join(', ') || '—',
              over: t.num(100 * plan.result.overheadFraction),
            }),
          )
        : h('p', {}, errorNote(t, plan.error));
      return { steps, result, patch: { budgetGB: Math.round(budget / 1e6) / 1e3 } };
    },
  },
  ...NET_EXAMPLES,
];

/**
 * A worked example: its calculator and article, the state it sets (from the presets this build
 * has) and its explanation, computed by the core.
 * @typedef {object} Example
 * @property {string} id
 * @property {Tab} tab
 * @property {string} [article] the article it comes from (ARTICLES)
 * @property {Array<{ label: string, url: string }>} [sources]
 * @property {(p: Ctx['known']) => Partial<State>} state
 * @property {(tm: Trainmem, t: Translator, p: Ctx['known']) => { steps: Child[], result: Child, patch?: Partial<State> }} explain
 */

/**
 * A diffusion pipeline's figures (peakMemory's `pipeline`).
 * @typedef {NonNullable<PeakMemoryResult['pipeline']>} Pipe
 */
