// Dumps what the native CLI answers for the HuggingFace config recipes, so that a refactoring of
// the config readers and tensor builders can be shown to change no byte of any answer:
//
//   node tools/model-recipes-dump.mjs CLI OUT_DIR
//   (change the code, rebuild)
//   node tools/model-recipes-dump.mjs CLI OUT_DIR2 && diff -r OUT_DIR OUT_DIR2
//
// CLI: build/native/trainmem_cli_native. Each case is one file OUT_DIR/<case>.json holding the
// request and the envelope. The cases:
// - every shipped preset (cpp/data/models/*.json): describeModel, peakMemory and checkpointSize
//   (torch format: it counts the modules and their names);
// - every config object in tests/fixtures and cpp/data (an object with "model_type", or a
//   diffusers "_class_name"): the same three;
// - variants of the preset configs that select the other architecture classes and family flags;
// - error cases: each key of each family's preset config removed, and set to 0, -1, 2^40, a
//   string, a fraction, an empty list; plus named inconsistencies (heads not dividing the hidden
//   size, an unknown architecture, a generic model_type missing a field, ...).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [cli, out] = process.argv.slice(2);
if (!cli || !out) {
  console.error('usage: node tools/model-recipes-dump.mjs CLI OUT_DIR');
  process.exit(2);
}
const root = fileURLToPath(new URL('..', import.meta.url));
mkdirSync(out, { recursive: true });

const counts = {};
function call(group, name, fn, request) {
  const r = spawnSync(resolve(cli), [fn], {
    input: JSON.stringify(request),
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (r.status !== 0) throw new Error(`${cli} ${fn}: ${r.error ?? `exit ${r.status}`} ${r.stderr}`);
  const file = `${group}__${name}__${fn}.json`.replace(/[^A-Za-z0-9_.-]/g, '_');
  writeFileSync(join(out, file), `${JSON.stringify(request)}\n${r.stdout}`);
  counts[group] = (counts[group] ?? 0) + 1;
}
const peak = (model) => ({
  microBatch: 1,
  seqLen: 512,
  timeline: false,
  model,
  optimizer: 'adam',
  precision: 'amp-bf16',
  gpu: 'a100-80gb',
});
// checkpointSize in torch.save's format also counts the modules and their names' bytes.
const checkpoint = (model) => ({ model, optimizer: 'adam', weightDtype: 'fp32', format: 'torch' });
function both(group, name, model) {
  call(group, name, 'describeModel', { model });
  call(group, name, 'peakMemory', peak(model));
  call(group, name, 'checkpointSize', checkpoint(model));
}

// Presets.
const presets = readdirSync(join(root, 'cpp/data/models'))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(root, 'cpp/data/models', f), 'utf8')));
for (const p of presets) both('preset', p.id, { preset: p.id });

// Every config object in the fixtures and data files.
function walkFiles(dir, acc) {
  for (const f of readdirSync(dir).sort()) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) walkFiles(p, acc);
    else if (f.endsWith('.json')) acc.push(p);
  }
  return acc;
}
function walkConfigs(v, acc) {
  if (Array.isArray(v)) for (const x of v) walkConfigs(x, acc);
  else if (v && typeof v === 'object') {
    if (typeof v.model_type === 'string' || typeof v._class_name === 'string') acc.push(v);
    for (const x of Object.values(v)) walkConfigs(x, acc);
  }
  return acc;
}
const seen = new Set();
let n = 0;
for (const file of [
  ...walkFiles(join(root, 'tests/fixtures'), []),
  ...walkFiles(join(root, 'cpp/data'), []),
]) {
  for (const cfg of walkConfigs(JSON.parse(readFileSync(file, 'utf8')), [])) {
    const key = JSON.stringify(cfg);
    if (seen.has(key)) continue;
    seen.add(key);
    both('config', String(n++).padStart(4, '0'), { config: cfg });
  }
}

// Variants: the other architecture classes and the family flags.
const cfgOf = (id) => structuredClone(presets.find((p) => p.id === id).config);
const variants = [];
const v = (name, base, patch, architecture) => {
  const config = Object.assign(cfgOf(base), patch);
  for (const [k, x] of Object.entries(patch)) if (x === undefined) delete config[k];
  variants.push([name, architecture ? { config, architecture } : { config }]);
};
v('gpt2-cross', 'gpt2', { add_cross_attention: true });
v('gpt2-model', 'gpt2', { architectures: ['GPT2Model'] });
v('gpt2-model-override', 'gpt2', {}, 'GPT2Model');
v('gpt2-untied-inner', 'gpt2', { tie_word_embeddings: false, n_inner: 1000 });
for (const cls of [
  'BertModel',
  'BertForSequenceClassification',
  'BertForMaskedLM',
  'BertForPreTraining',
])
  v(`bert-${cls}`, 'bert-base-uncased', { architectures: [cls] });
v('bert-labels', 'bert-base-uncased', { architectures: undefined, num_labels: 5 });
v('bert-id2label', 'bert-base-uncased', {
  architectures: ['BertForSequenceClassification'],
  id2label: { 0: 'a', 1: 'b', 2: 'c' },
});
v('bert-untied-mlm', 'bert-base-uncased', {
  architectures: ['BertForMaskedLM'],
  tie_word_embeddings: false,
});
v('bert-no-arch', 'bert-base-uncased', { architectures: undefined });
v('neox-model', 'pythia-160m', { architectures: ['GPTNeoXModel'], attention_bias: false });
v('neox-tied', 'pythia-160m', { tie_word_embeddings: true });
v('t5-model', 't5-small', { architectures: ['T5Model'] });
v('t5-gated', 't5-small', { feed_forward_proj: 'gated-gelu', num_decoder_layers: 3 });
v('mt5', 't5-small', { model_type: 'mt5', architectures: ['MT5ForConditionalGeneration'] });
v('mt5-model', 't5-small', { model_type: 'mt5', architectures: undefined }, 'MT5Model');
v('llama-model', 'llama-3-8b', { architectures: ['LlamaModel'] });
v('llama-biases', 'llama-3-8b', { attention_bias: true, mlp_bias: true, num_hidden_layers: 2 });
v('llama-head-dim', 'llama-3-8b', { head_dim: 64, num_hidden_layers: 2 });
v('mistral-model', 'mistral-7b', { architectures: undefined }, 'MistralModel');
v('qwen2-bias', 'qwen2.5-0.5b', { attention_bias: true });
v('qwen3-moe-sparse', 'qwen3-30b-a3b', { decoder_sparse_step: 2, mlp_only_layers: [0, 5] });
v('gemma3-model', 'gemma-3-1b', { architectures: ['Gemma3TextModel'] });
v('phi3-model', 'phi-3-mini-4k', { architectures: ['Phi3Model'] });
v('deepseek-q-null', 'deepseek-v3', { q_lora_rank: null, num_hidden_layers: 4 });
v('deepseek-defaults', 'deepseek-v3', {
  n_routed_experts: undefined,
  n_shared_experts: undefined,
  moe_intermediate_size: undefined,
  first_k_dense_replace: undefined,
  kv_lora_rank: undefined,
  qk_nope_head_dim: undefined,
  qk_rope_head_dim: undefined,
  v_head_dim: undefined,
  num_hidden_layers: 5,
});
v('generic', 'llama-3-8b', { model_type: 'my_decoder', architectures: ['MyDecoderForCausalLM'] });
v('generic-model', 'llama-3-8b', { model_type: 'my_decoder', architectures: ['MyDecoderModel'] });
v('generic-override', 'llama-3-8b', { model_type: 'my_decoder' }, 'OtherModel');
v('gemma1-defaults', 'gemma-2b', { head_dim: undefined, hidden_act: undefined });
v('falcon-serial', 'falcon-7b', { parallel_attn: false, bias: true, num_hidden_layers: 2 });
v('falcon-mha', 'falcon-7b', { multi_query: false, num_hidden_layers: 2 });
v('falcon-one-ln', 'falcon-180b', { num_ln_in_parallel_attn: 1, num_hidden_layers: 2 });
v('falcon-old-names', 'falcon-7b', {
  hidden_size: undefined,
  num_hidden_layers: undefined,
  num_attention_heads: undefined,
  n_embed: 4544,
  n_layer: 2,
  n_head: 71,
});
v('phi-qk-ln', 'phi-2', { qk_layernorm: true, num_hidden_layers: 2 });
v('gptj-defaults', 'gpt-j-6b', { rotary_dim: undefined, n_positions: undefined, n_inner: 100 });
v('starcoder2-nobias', 'starcoder2-3b', { use_bias: false, num_hidden_layers: 2 });
v('olmo-bias', 'olmo-1b', { attention_bias: true, tie_word_embeddings: true });
v('torch-transformer-nobias', 'torch-nn-transformer', { bias: false, norm_first: true });
v('torch-transformer-gelu', 'torch-nn-transformer', { activation: 'gelu', num_decoder_layers: 1 });
for (const [name, model] of variants) both('variant', name, model);

// Error cases: every key of each family's preset config removed or replaced.
const families = [
  'gpt2',
  'bert-base-uncased',
  'pythia-160m',
  't5-small',
  'llama-3-8b',
  'mistral-7b',
  'mixtral-8x7b',
  'qwen2.5-0.5b',
  'qwen3-8b',
  'qwen3-30b-a3b',
  'gemma-2b',
  'gemma-2-2b',
  'gemma-3-1b',
  'phi-3-mini-4k',
  'deepseek-v3',
  'falcon-7b',
  'falcon-180b',
  'phi-2',
  'gpt-j-6b',
  'starcoder2-3b',
  'olmo-1b',
  'olmo-2-7b',
  'torch-nn-transformer',
  'sd3-medium-transformer',
  'sd3.5-large-transformer',
  'flux-1-dev-transformer',
  'dit-xl-2-256',
  'pixart-alpha-xl-2-1024',
  'sd-1.5-unet',
  'sdxl-base-unet',
  'sd-vae',
];
const bad = { zero: 0, minus: -1, huge: 2 ** 40, text: 'x', fraction: 1.5, list: [] };
for (const id of families) {
  const base = cfgOf(id);
  for (const key of Object.keys(base)) {
    const gone = cfgOf(id);
    delete gone[key];
    call('error', `${id}-${key}-missing`, 'describeModel', { model: { config: gone } });
    for (const [what, x] of Object.entries(bad)) {
      const c = cfgOf(id);
      c[key] = x;
      call('error', `${id}-${key}-${what}`, 'describeModel', { model: { config: c } });
    }
  }
}
const errors = [];
const e = (name, base, patch, architecture) => {
  const config = Object.assign(cfgOf(base), patch);
  for (const [k, x] of Object.entries(patch)) if (x === undefined) delete config[k];
  errors.push([name, architecture ? { config, architecture } : { config }]);
};
e('gpt2-heads-divide', 'gpt2', { n_head: 7 });
e('bert-heads-divide', 'bert-base-uncased', { num_attention_heads: 5 });
e('neox-heads-divide', 'pythia-160m', { num_attention_heads: 5 });
e('llama-heads-divide', 'llama-3-8b', { num_attention_heads: 7 });
e('llama-kv-heads', 'llama-3-8b', { num_key_value_heads: 3 });
e('llama-arch', 'llama-3-8b', { architectures: ['LlamaForSequenceClassification'] });
e('llama-arch-override', 'llama-3-8b', {}, 'LlamaForTokenClassification');
e('gpt2-arch', 'gpt2', { architectures: ['GPT2ForSequenceClassification'] });
e('bert-arch', 'bert-base-uncased', { architectures: ['BertForQuestionAnswering'] });
e('t5-arch', 't5-small', { architectures: ['T5EncoderModel'] });
e('mixtral-experts', 'mixtral-8x7b', { num_local_experts: 5000 });
e('mixtral-per-token', 'mixtral-8x7b', { num_experts_per_tok: 9 });
e('qwen3-moe-mlp-only', 'qwen3-30b-a3b', { mlp_only_layers: [0, 48] });
e('qwen3-moe-mlp-only-text', 'qwen3-30b-a3b', { mlp_only_layers: ['a'] });
e('deepseek-experts', 'deepseek-v3', { n_routed_experts: 60000 });
e('generic-missing', 'llama-3-8b', { model_type: 'my_decoder', intermediate_size: undefined });
e('generic-missing-vocab', 'llama-3-8b', { model_type: 'my_decoder', vocab_size: undefined });
e('empty-type', 'llama-3-8b', { model_type: '' });
e('layers-too-many', 'llama-3-8b', { num_hidden_layers: 1001 });
e('t5-ff', 't5-small', { feed_forward_proj: 7 });
e('dropout', 'bert-base-uncased', { hidden_dropout_prob: 1.5 });
e('falcon-alibi', 'falcon-7b', { alibi: true });
e('falcon-arch', 'falcon-7b', { architectures: ['FalconModel'] }, 'FalconModel');
e('phi-heads', 'phi-2', { num_attention_heads: 7 });
e('olmo-clip', 'olmo-1b', { clip_qkv: 8 });
e('olmo-kv', 'olmo-1b', { num_key_value_heads: 3 });
e('torch-transformer-heads', 'torch-nn-transformer', { nhead: 7 });
e('torch-transformer-act', 'torch-nn-transformer', { activation: 'tanh' });
e('unknown-key-type', 'gpt2', { architectures: 'GPT2LMHeadModel' });
for (const [name, model] of errors) call('error', name, 'describeModel', { model });

console.log(JSON.stringify(counts));
