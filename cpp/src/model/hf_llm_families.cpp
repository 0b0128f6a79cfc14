// The tensor recipes of the decoder families whose layout is not Llama's: falcon, phi
// (phi-1/1.5/2), gptj, starcoder2, olmo, olmo2; and PyTorch's own torch.nn.Transformer
// (model/hf_recipes.hpp; io/llm_families.cpp reads their configs). Sources
// (huggingface/transformers): models/falcon/modeling_falcon.py @00dcc6dd (FalconAttention,
// FalconMLP, FalconDecoderLayer: query_key_value of (num_kv_heads x 2 + heads) x head_dim with
// new_decoder_architecture, hidden + 2 x head_dim with multi_query; ln_attn and ln_mlp when
// num_ln_in_parallel_attn is 2), models/phi/modeling_phi.py, models/gptj/modeling_gptj.py,
// models/starcoder2/modeling_starcoder2.py, models/olmo/modeling_olmo.py (OlmoLayerNorm: no
// parameters), models/olmo2/modeling_olmo2.py (post-norms, q_norm / k_norm over all heads).
// torch.nn.Transformer: torch/nn/modules/transformer.py and activation.py MultiheadAttention
// (in_proj_weight [3d, d], in_proj_bias, out_proj).
#include <string>

#include "model/hf_builder.hpp"
#include "model/hf_recipes.hpp"

namespace trainmem {
namespace hf {
namespace {

std::string layer(const char* prefix, uint64_t i) {
  return std::string(prefix) + std::to_string(i);
}

// `<l>.self_attn` with its q, k, v and output projections, in the registration order of HF's
// *Attention.__init__ (modeling_phi.py, modeling_olmo.py, modeling_starcoder2.py)
void attention(Builder& b, const std::string& l, uint64_t h, uint64_t q, uint64_t kvd,
               const char* out, bool bias) {
  b.mod(l, ".self_attn");
  b.linear(l, ".self_attn.q_proj", h, q, bias);
  b.linear(l, ".self_attn.k_proj", h, kvd, bias);
  b.linear(l, ".self_attn.v_proj", h, kvd, bias);
  b.linear(l + ".self_attn." + out, "", q, h, bias);
}

// The output embedding lm_head [vocab, h] (tied to `tied` when the config ties embeddings),
// with an optional bias (PhiForCausalLM, GPTJForCausalLM).
void lm_head(Builder& b, const Architecture& a, uint64_t h, const std::string& tied, bool bias) {
  b.output_head("lm_head", a, h, tied);
  if (bias) b.param(std::string("lm_head"), ".bias", {a.vocab});
}

// One FalconDecoderLayer under `l`.
void falcon_layer(Builder& b, const std::string& l, const Architecture& a, uint64_t qkv,
                  const FalconRecipe& r) {
  const uint64_t h = a.hidden;
  b.mod(l);
  b.mod(l, ".self_attention");
  b.linear(l, ".self_attention.query_key_value", h, qkv, r.bias);
  b.linear(l, ".self_attention.dense", h, h, r.bias);
  b.mod(l, ".self_attention.attention_dropout");
  b.mod(l, ".mlp");
  b.linear(l, ".mlp.dense_h_to_4h", h, a.intermediate, r.bias);
  b.mod(l, ".mlp.act");
  b.linear(l, ".mlp.dense_4h_to_h", a.intermediate, h, r.bias);
  if (!a.parallel_block) {
    b.norm(l, ".post_attention_layernorm", h, true, true);
    b.norm(l, ".input_layernorm", h, true, true);
  } else if (r.ln_in_parallel_attn == 2) {
    b.norm(l, ".ln_attn", h, true, true);
    b.norm(l, ".ln_mlp", h, true, true);
  } else {
    b.norm(l, ".input_layernorm", h, true, true);
  }
}

// One GPTJBlock under `l`: ln_1, k/v/q/out projections without bias, fc_in/fc_out.
void gptj_block(Builder& b, const std::string& l, uint64_t h, uint64_t inner) {
  b.mod(l);
  b.norm(l, ".ln_1", h, true, true);
  b.mod(l, ".attn");
  b.mod(l, ".attn.attn_dropout");
  b.mod(l, ".attn.resid_dropout");
  b.linear(l, ".attn.k_proj", h, h, false);
  b.linear(l, ".attn.v_proj", h, h, false);
  b.linear(l, ".attn.q_proj", h, h, false);
  b.linear(l, ".attn.out_proj", h, h, false);
  b.mod(l, ".mlp");
  b.linear(l, ".mlp.fc_in", h, inner, true);
  b.linear(l, ".mlp.fc_out", inner, h, true);
  b.mod(l, ".mlp.act");
  b.mod(l, ".mlp.dropout");
}

// One Starcoder2 / OLMo / OLMo 2 decoder layer under `l`.
void llama_like_layer(Builder& b, const std::string& l, const Architecture& a,
                      const LlamaLikeRecipe& r) {
  const bool sc2 = r.family == LlamaLikeFamily::starcoder2;
  const bool olmo2 = r.family == LlamaLikeFamily::olmo2;
  const bool nw = r.family == LlamaLikeFamily::olmo;  // OlmoLayerNorm: no parameters
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kvd = a.kv_heads * a.head_dim;
  b.mod(l);
  attention(b, l, h, q, kvd, "o_proj", r.bias);
  if (olmo2) {
    b.norm(l, ".self_attn.q_norm", q, true, false);
    b.norm(l, ".self_attn.k_norm", kvd, true, false);
  }
  b.mod(l, ".mlp");
  if (sc2) {
    b.linear(l, ".mlp.c_fc", h, a.intermediate, r.bias);
    b.linear(l, ".mlp.c_proj", a.intermediate, h, r.bias);
    b.mod(l, ".mlp.act");
  } else {
    b.linear(l, ".mlp.gate_proj", h, a.intermediate, false);
    b.linear(l, ".mlp.up_proj", h, a.intermediate, false);
    b.linear(l, ".mlp.down_proj", a.intermediate, h, false);
    b.mod(l, ".mlp.act_fn");
  }
  if (olmo2) {
    b.norm(l, ".post_attention_layernorm", h, true, false);
    b.norm(l, ".post_feedforward_layernorm", h, true, false);
  } else {
    b.norm(l, ".input_layernorm", h, !nw, sc2);
    b.norm(l, ".post_attention_layernorm", h, !nw, sc2);
  }
}

// torch.nn.MultiheadAttention under `n`: in_proj_weight [3d, d], in_proj_bias, out_proj.
void mha(Builder& b, const std::string& n, uint64_t d, bool bias) {
  b.mod(n);
  b.param(n, ".in_proj_weight", {3 * d, d}).linear = LinearKind::linear;
  if (bias) b.param(n, ".in_proj_bias", {3 * d});
  b.linear(n, ".out_proj", d, d, bias);
}

// TransformerEncoder / TransformerDecoder `s` of `n` layers, with its final LayerNorm.
void torch_stack(Builder& b, const char* s, uint64_t n, bool dec, const Architecture& a,
                 bool bias) {
  const uint64_t d = a.hidden, ff = a.intermediate;
  b.mod(s);
  b.mod(std::string(s) + ".layers");
  for (uint64_t i = 0; i < n; ++i) {
    const std::string l = std::string(s) + ".layers." + std::to_string(i);
    b.mod(l);
    mha(b, l + ".self_attn", d, bias);
    if (dec) mha(b, l + ".multihead_attn", d, bias);
    b.linear(l, ".linear1", d, ff, bias);
    b.mod(l, ".dropout");
    b.linear(l, ".linear2", ff, d, bias);
    for (int k = 1; k <= (dec ? 3 : 2); ++k)
      b.norm(l + ".norm" + std::to_string(k), "", d, true, bias);
    for (int k = 1; k <= (dec ? 3 : 2); ++k) b.mod(l + ".dropout" + std::to_string(k));
  }
  b.norm(std::string(s) + ".norm", "", d, true, bias);
}

}  // namespace

void build_falcon(const FalconRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  const uint64_t h = a.hidden, hd = a.head_dim;
  const uint64_t qkv = r.new_decoder_architecture ? (a.kv_heads * 2 + a.heads) * hd
                       : r.multi_query            ? h + 2 * hd
                                                  : 3 * h;
  Builder b{*m};
  b.root_modules("transformer");
  b.embedding("transformer.word_embeddings", "", a.vocab, h);
  b.mod("transformer.h");
  for (uint64_t i = 0; i < a.layers; ++i) falcon_layer(b, layer("transformer.h.", i), a, qkv, r);
  b.norm("transformer.ln_f", "", h, true, true);
  b.rotary("transformer.rotary_emb", hd);
  lm_head(b, a, h, "transformer.word_embeddings.weight", false);
}

// LayerNorm, q/k/v/dense with biases, fc1/fc2, one norm feeding attention and MLP in parallel,
// lm_head with a bias.
void build_phi(const PhiRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kvd = a.kv_heads * a.head_dim;
  Builder b{*m};
  b.root_modules("model");
  b.embedding("model.embed_tokens", "", a.vocab, h);
  b.mod("model.layers");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = layer("model.layers.", i);
    b.mod(l);
    attention(b, l, h, q, kvd, "dense", true);
    if (r.qk_layernorm) {
      b.norm(l, ".self_attn.q_layernorm", a.head_dim, true, true);
      b.norm(l, ".self_attn.k_layernorm", a.head_dim, true, true);
    }
    b.mod(l, ".mlp");
    b.mod(l, ".mlp.activation_fn");
    b.linear(l, ".mlp.fc1", h, a.intermediate, true);
    b.linear(l, ".mlp.fc2", a.intermediate, h, true);
    b.norm(l, ".input_layernorm", h, true, true);
    b.mod(l, ".resid_dropout");
  }
  b.rotary("model.rotary_emb", static_cast<uint64_t>(a.head_dim * a.partial_rotary));
  b.mod("model.embed_dropout");
  b.norm("model.final_layernorm", "", h, true, true);
  lm_head(b, a, h, "model.embed_tokens.weight", true);
}

void build_gptj(ModelDescription* m) {
  const Architecture& a = m->arch;
  const uint64_t h = a.hidden;
  Builder b{*m};
  b.root_modules("transformer");
  b.embedding("transformer.wte", "", a.vocab, h);
  b.mod("transformer.drop");
  b.mod("transformer.h");
  for (uint64_t i = 0; i < a.layers; ++i)
    gptj_block(b, layer("transformer.h.", i), h, a.intermediate);
  b.norm("transformer.ln_f", "", h, true, true);
  lm_head(b, a, h, "transformer.wte.weight", true);
}

void build_llama_like(const LlamaLikeRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  const bool sc2 = r.family == LlamaLikeFamily::starcoder2;
  const bool nw = r.family == LlamaLikeFamily::olmo;  // OlmoLayerNorm: no parameters
  Builder b{*m};
  b.root_modules("model");
  b.embedding("model.embed_tokens", "", a.vocab, a.hidden);
  b.mod("model.layers");
  for (uint64_t i = 0; i < a.layers; ++i) llama_like_layer(b, layer("model.layers.", i), a, r);
  b.norm("model.norm", "", a.hidden, !nw, sc2);
  b.rotary("model.rotary_emb", a.head_dim);
  lm_head(b, a, a.hidden, "model.embed_tokens.weight", false);
}

void build_torch_transformer(const TorchTransformerRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  Builder b{*m};
  b.mod("");
  torch_stack(b, "encoder", a.encoder_layers, false, a, r.bias);
  torch_stack(b, "decoder", a.layers, true, a, r.bias);
}

}  // namespace hf
}  // namespace trainmem
