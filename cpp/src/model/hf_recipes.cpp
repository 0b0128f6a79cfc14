// The tensor recipes of GPT-2, BERT, GPT-NeoX and T5/MT5 (model/hf_recipes.hpp); the
// Llama-style decoders are in hf_decoder.cpp. Sources: transformers/models/{gpt2,bert,gpt_neox,
// t5,mt5}/modeling_*.py.
#include "model/hf_recipes.hpp"

#include <string>

#include "model/hf_builder.hpp"

namespace trainmem {
namespace hf {
namespace {

// ---------------------------------------------------------------- gpt2 (modeling_gpt2.py)
// One GPT2Block under `h` (with cross-attention when the config adds it).
void gpt2_block(Builder& b, const std::string& h, uint64_t e, uint64_t in, bool cross) {
  b.mod(h);
  b.layer_norm(h, ".ln_1", e);
  b.mod(h, ".attn");
  b.conv1d(h, ".attn.c_attn", e, 3 * e);
  b.conv1d(h, ".attn.c_proj", e, e);
  b.mod(h, ".attn.attn_dropout");
  b.mod(h, ".attn.resid_dropout");
  b.layer_norm(h, ".ln_2", e);
  if (cross) {
    b.mod(h, ".crossattention");
    b.conv1d(h, ".crossattention.c_attn", e, 2 * e);
    b.mod(h, ".crossattention.q_attn");
    b.scratch.assign(h).append(".crossattention.q_attn");
    b.param(b.scratch, ".weight", {e, e}).linear = LinearKind::conv1d;
    b.param(b.scratch, ".bias", {e});
    b.conv1d(h, ".crossattention.c_proj", e, e);
    b.mod(h, ".crossattention.attn_dropout");
    b.mod(h, ".crossattention.resid_dropout");
    b.layer_norm(h, ".ln_cross_attn", e);
  }
  b.mod(h, ".mlp");
  b.conv1d(h, ".mlp.c_fc", e, in);
  b.conv1d(h, ".mlp.c_proj", in, e);
  b.mod(h, ".mlp.act");
  b.mod(h, ".mlp.dropout");
}

// ---------------------------------------------------------------- bert (modeling_bert.py)
// BertSelfOutput / BertOutput under `base`: dense, LayerNorm (after the residual), dropout.
void bert_output(Builder& b, const std::string& base, uint64_t in, uint64_t h) {
  b.mod(base);
  b.linear(base, ".dense", in, h, true);
  b.layer_norm(base, ".LayerNorm", h);
  b.mod(base, ".dropout");
}

// One BertLayer under `l`.
void bert_layer(Builder& b, const std::string& l, uint64_t h, uint64_t inner) {
  b.mod(l);
  b.mod(l, ".attention");
  b.mod(l, ".attention.self");
  b.linear(l, ".attention.self.query", h, h, true);
  b.linear(l, ".attention.self.key", h, h, true);
  b.linear(l, ".attention.self.value", h, h, true);
  b.mod(l, ".attention.self.dropout");
  bert_output(b, l + ".attention.output", h, h);
  b.mod(l, ".intermediate");
  b.linear(l, ".intermediate.dense", h, inner, true);
  b.mod(l, ".intermediate.intermediate_act_fn");
  bert_output(b, l + ".output", inner, h);
}

// BertEmbeddings under `emb`: word, position and token type embeddings, LayerNorm, dropout.
void bert_embeddings(Builder& b, const std::string& emb, const Architecture& a, uint64_t types) {
  const uint64_t h = a.hidden;
  b.mod(emb);
  b.embedding(emb, ".word_embeddings", a.vocab, h);
  b.embedding(emb, ".position_embeddings", a.max_positions, h);
  b.embedding(emb, ".token_type_embeddings", types, h);
  b.layer_norm(emb, ".LayerNorm", h);
  b.mod(emb, ".dropout");
  // transformers >= 4.31: position_ids / token_type_ids are registered persistent=False.
  b.buffer(emb + ".position_ids", {1, a.max_positions}, DType::int64, false);
  b.buffer(emb + ".token_type_ids", {1, a.max_positions}, DType::int64, false);
}

// BertPreTrainingHeads / BertOnlyMLMHead under "cls"; `word` is the input embedding's weight.
void bert_lm_head(Builder& b, const Architecture& a, const std::string& word, bool pre) {
  const uint64_t h = a.hidden;
  // BertLMPredictionHead: bias [V] (own parameter), transform, decoder tied to embeddings.
  b.mod("cls");
  b.mod("cls.predictions");
  b.param(std::string("cls.predictions"), ".bias", {a.vocab});
  b.mod("cls.predictions.transform");
  b.linear("cls.predictions.transform.dense", "", h, h, true);
  b.mod("cls.predictions.transform.transform_act_fn");
  b.layer_norm("cls.predictions.transform.LayerNorm", "", h);
  b.mod("cls.predictions.decoder");
  b.head(std::string("cls.predictions.decoder"), {a.vocab, h},
         a.tied_embeddings ? word : std::string());
  b.param(std::string("cls.predictions.decoder"), ".bias", {a.vocab},
          std::string("cls.predictions.bias"));
  if (pre) b.linear("cls.seq_relationship", "", h, 2, true);
}

// ---------------------------------------------------------------- gpt_neox
// One GPTNeoXLayer under `l` (modeling_gpt_neox.py).
void neox_layer(Builder& b, const std::string& l, uint64_t h, uint64_t inner, bool bias) {
  b.mod(l);
  b.layer_norm(l, ".input_layernorm", h);
  b.layer_norm(l, ".post_attention_layernorm", h);
  b.mod(l, ".post_attention_dropout");
  b.mod(l, ".post_mlp_dropout");
  b.mod(l, ".attention");
  b.linear(l, ".attention.query_key_value", h, 3 * h, bias);
  b.linear(l, ".attention.dense", h, h, bias);
  b.mod(l, ".attention.attention_dropout");
  b.mod(l, ".mlp");
  b.linear(l, ".mlp.dense_h_to_4h", h, inner, true);
  b.linear(l, ".mlp.dense_4h_to_h", inner, h, true);
  b.mod(l, ".mlp.act");
}

// ------------------------------------------------ t5, mt5 (modeling_t5.py, modeling_mt5.py)
// T5LayerSelfAttention / T5LayerCrossAttention under `l`: the attention `kind` (q, k, v, o; the
// relative attention bias in each stack's first block), layer_norm, dropout.
void t5_attention(Builder& b, const std::string& l, const char* kind, const Architecture& a,
                  uint64_t buckets, bool rel) {
  const uint64_t d = a.hidden, inner = a.heads * a.head_dim;
  b.mod(l);
  const std::string at = l + "." + kind;
  b.mod(at);
  b.linear(at, ".q", d, inner, false);
  b.linear(at, ".k", d, inner, false);
  b.linear(at, ".v", d, inner, false);
  b.linear(at, ".o", inner, d, false);
  if (rel) b.embedding(at, ".relative_attention_bias", buckets, a.heads);
  b.layer_norm(l, ".layer_norm", d, false);
  b.mod(l, ".dropout");
}

// T5LayerFF under `l`: DenseReluDense (T5DenseActDense, or T5DenseGatedActDense: wi_0, wi_1).
void t5_feed_forward(Builder& b, const std::string& l, const Architecture& a) {
  const uint64_t d = a.hidden;
  b.mod(l);
  const std::string f = l + ".DenseReluDense";
  b.mod(f);
  if (a.gated_mlp) {
    b.linear(f, ".wi_0", d, a.intermediate, false);
    b.linear(f, ".wi_1", d, a.intermediate, false);
  } else {
    b.linear(f, ".wi", d, a.intermediate, false);
  }
  b.linear(f, ".wo", a.intermediate, d, false);
  b.mod(f, ".dropout");
  b.mod(f, ".act");
  b.layer_norm(l, ".layer_norm", d, false);
  b.mod(l, ".dropout");
}

// T5Stack `s` ("encoder" or "decoder") of `blocks` T5Blocks.
void t5_stack(Builder& b, const std::string& s, uint64_t blocks, bool decoder,
              const Architecture& a, uint64_t buckets) {
  const uint64_t d = a.hidden;
  b.mod(s);
  b.mod(s, ".embed_tokens");  // the same module as `shared`: its weight repeats
  b.param(s, ".embed_tokens.weight", {a.vocab, d}, std::string("shared.weight"));
  b.mod(s, ".block");
  for (uint64_t i = 0; i < blocks; ++i) {
    const std::string blk = s + ".block." + std::to_string(i);
    b.mod(blk);
    b.mod(blk, ".layer");
    t5_attention(b, blk + ".layer.0", "SelfAttention", a, buckets, i == 0);
    uint64_t next = 1;
    if (decoder)
      t5_attention(b, blk + ".layer." + std::to_string(next++), "EncDecAttention", a, buckets,
                   false);
    t5_feed_forward(b, blk + ".layer." + std::to_string(next), a);
  }
  b.layer_norm(s, ".final_layer_norm", d, false);
  b.mod(s, ".dropout");
}

}  // namespace

void build_gpt2(const Gpt2Recipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  m->tensors.reserve(a.layers * (r.cross_attention ? 20 : 12) + 6);
  const std::string t = r.lm_head ? "transformer" : "";
  const uint64_t e = a.hidden, in = a.intermediate;
  Builder b{*m};
  b.root_modules(t);
  b.embedding(b.join(t, "wte"), "", a.vocab, e);
  b.embedding(b.join(t, "wpe"), "", a.max_positions, e);
  b.mod(b.join(t, "drop"));
  b.mod(b.join(t, "h"));
  for (uint64_t i = 0; i < a.layers; ++i)
    gpt2_block(b, join(t, "h." + std::to_string(i)), e, in, r.cross_attention);
  b.layer_norm(b.join(t, "ln_f"), "", e);
  if (r.lm_head) b.output_head("lm_head", a, e, b.join(t, "wte.weight"));
  // transformers >= 4.x registers attn.bias / masked_bias with persistent=False (no longer in
  // state_dict; old hub .bin files still hold them).
}

void build_bert(const BertRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  const bool mlm = r.cls == BertClass::masked_lm;
  const bool pre = r.cls == BertClass::pretraining;
  const bool pooler = !mlm;  // BertForMaskedLM builds BertModel(add_pooling_layer=False)
  const std::string p = r.cls == BertClass::model ? "" : "bert";
  m->tensors.reserve(a.layers * 16 + 20);
  const uint64_t h = a.hidden;
  Builder b{*m};
  b.root_modules(p);
  const std::string emb = join(p, "embeddings");
  bert_embeddings(b, emb, a, r.type_vocab);
  const std::string enc = join(p, "encoder");
  b.mod(enc);
  b.mod(enc, ".layer");
  for (uint64_t i = 0; i < a.layers; ++i)
    bert_layer(b, enc + ".layer." + std::to_string(i), h, a.intermediate);
  if (pooler) {
    b.mod(b.join(p, "pooler"));
    b.linear(b.join(p, "pooler.dense"), "", h, h, true);
    b.mod(b.join(p, "pooler.activation"));
  }
  if (mlm || pre) bert_lm_head(b, a, emb + ".word_embeddings.weight", pre);
  if (r.cls == BertClass::sequence_classification) {
    b.mod("dropout");
    b.linear("classifier", "", h, a.num_labels, true);
  }
}

void build_gpt_neox(const GptNeoxRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  m->tensors.reserve(a.layers * 12 + 4);
  const std::string p = r.lm_head ? "gpt_neox" : "";
  const uint64_t h = a.hidden;
  Builder b{*m};
  b.root_modules(p);
  b.embedding(b.join(p, "embed_in"), "", a.vocab, h);
  b.mod(b.join(p, "emb_dropout"));
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i)
    neox_layer(b, join(p, "layers." + std::to_string(i)), h, a.intermediate, r.attention_bias);
  b.layer_norm(b.join(p, "final_layer_norm"), "", h);
  b.mod(b.join(p, "rotary_emb"));
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {a.head_dim / 2}, DType::fp32, false);
  if (r.lm_head) b.output_head("embed_out", a, h, b.join(p, "embed_in.weight"));
}

void build_t5(const T5Recipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  m->tensors.reserve((a.layers + a.encoder_layers) * 16 + 8);
  Builder b{*m};
  b.mod("");
  b.embedding("shared", "", a.vocab, a.hidden);
  t5_stack(b, "encoder", a.encoder_layers, false, a, r.relative_attention_buckets);
  t5_stack(b, "decoder", a.layers, true, a, r.relative_attention_buckets);
  if (r.lm_head) b.output_head("lm_head", a, a.hidden, std::string("shared.weight"));
}

}  // namespace hf
}  // namespace trainmem
