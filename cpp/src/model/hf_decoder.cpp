// The Llama-style decoders' tensor recipe (model/hf_recipes.hpp): one builder for the decoders
// that share Llama's layout (embed_tokens, layers.N.{self_attn, mlp, norms}, norm, lm_head);
// DecoderSpec holds what each modeling_*.py changes. Sources (the versions read): llama,
// mistral, mixtral, qwen2: modeling_*.py; qwen3 modeling_qwen3.py @9ee3f43; qwen3_moe
// modeling_qwen3_moe.py @16b6c53; gemma2 modeling_gemma2.py @006e869; gemma3_text
// modeling_gemma3.py @f14d0cb; phi3 modeling_phi3.py @00d4b3d; deepseek_v3
// modeling_deepseek_v3.py @00b676f (all huggingface/transformers).
#include <algorithm>
#include <string>
#include <utility>

#include "model/hf_builder.hpp"
#include "model/hf_recipes.hpp"

namespace trainmem {
namespace hf {
namespace {

void build_attention(Builder& b, const std::string& l, const Architecture& a,
                     const DecoderSpec& s) {
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
  const std::string at = l + ".self_attn";
  b.mod(at);
  if (a.mla) {
    if (s.q_lora_rank) {
      b.linear(at, ".q_a_proj", h, s.q_lora_rank, s.o_bias);
      b.layer_norm(at, ".q_a_layernorm", s.q_lora_rank, false);
      b.linear(at, ".q_b_proj", s.q_lora_rank, q, false);
    } else {
      b.linear(at, ".q_proj", h, q, false);
    }
    b.linear(at, ".kv_a_proj_with_mqa", h, s.kv_lora_rank + s.qk_rope, s.o_bias);
    b.layer_norm(at, ".kv_a_layernorm", s.kv_lora_rank, false);
    b.linear(at, ".kv_b_proj", s.kv_lora_rank, a.heads * (s.qk_nope + s.v_head), false);
    b.linear(at, ".o_proj", a.heads * s.v_head, h, s.o_bias);
    return;
  }
  if (s.fused_qkv) {  // Phi3Attention registers o_proj before qkv_proj
    b.linear(at, ".o_proj", q, h, false);
    b.linear(at, ".qkv_proj", h, q + 2 * kv, false);
  } else {
    b.linear(at, ".q_proj", h, q, s.qkv_bias);
    b.linear(at, ".k_proj", h, kv, s.qkv_bias);
    b.linear(at, ".v_proj", h, kv, s.qkv_bias);
    b.linear(at, ".o_proj", q, h, s.o_bias);
  }
  if (s.qk_norm) {
    b.layer_norm(at, ".q_norm", a.head_dim, false);
    b.layer_norm(at, ".k_norm", a.head_dim, false);
  }
}

// gate_proj, up_proj, down_proj (or Phi3's gate_up_proj, down_proj) under `base`.
void gated_mlp(Builder& b, const std::string& base, uint64_t h, uint64_t inner, bool fused,
               bool bias) {
  b.mod(base);
  if (fused) {
    b.linear(base, ".gate_up_proj", h, 2 * inner, false);
  } else {
    b.linear(base, ".gate_proj", h, inner, bias);
    b.linear(base, ".up_proj", h, inner, bias);
  }
  b.linear(base, ".down_proj", inner, h, bias);
  b.mod(base, fused ? ".activation_fn" : ".act_fn");
}

void routed_experts(Builder& b, const std::string& base, const Architecture& a) {
  b.mod(base);
  for (uint64_t x = 0; x < a.num_experts; ++x)
    gated_mlp(b, base + "." + std::to_string(x), a.hidden, a.intermediate, false, false);
}

bool sparse_layer(const DecoderSpec& s, uint64_t i) {
  if (s.moe == Moe::deepseek) return i >= s.first_dense;  // DeepseekV3DecoderLayer
  if (s.moe == Moe::qwen3)                                // Qwen3MoeDecoderLayer
    return std::find(s.mlp_only.begin(), s.mlp_only.end(), i) == s.mlp_only.end() &&
           (i + 1) % s.sparse_step == 0;
  return s.moe == Moe::mixtral;
}

void build_mlp(Builder& b, const std::string& l, uint64_t i, const Architecture& a,
               const DecoderSpec& s) {
  const uint64_t h = a.hidden;
  if (!sparse_layer(s, i)) {
    const uint64_t inner = s.moe == Moe::none ? a.intermediate : s.dense_intermediate;
    gated_mlp(b, l + ".mlp", h, inner, s.fused_gate_up, s.mlp_bias);
  } else if (s.moe == Moe::mixtral) {
    // Hub checkpoint naming (transformers 4.x MixtralSparseMoeBlock): gate + experts.N.w1..3
    const std::string m = l + ".block_sparse_moe";
    b.mod(m);
    b.linear(m, ".gate", h, a.num_experts, false);
    b.mod(m, ".experts");
    for (uint64_t x = 0; x < a.num_experts; ++x) {
      const std::string ex = m + ".experts." + std::to_string(x);
      b.mod(ex);
      b.linear(ex, ".w1", h, a.intermediate, false);
      b.linear(ex, ".w2", a.intermediate, h, false);
      b.linear(ex, ".w3", h, a.intermediate, false);
      b.mod(ex, ".act_fn");
    }
  } else if (s.moe == Moe::qwen3) {  // Qwen3MoeSparseMoeBlock: gate, then experts
    b.mod(l + ".mlp");
    b.linear(l, ".mlp.gate", h, a.num_experts, false);
    routed_experts(b, l + ".mlp.experts", a);
  } else {  // DeepseekV3MoE: experts, gate (TopkRouter), shared_experts
    b.mod(l + ".mlp");
    routed_experts(b, l + ".mlp.experts", a);
    b.mod(l, ".mlp.gate");
    b.param(l, ".mlp.gate.weight", {a.num_experts, h});
    // register_buffer (persistent): in state_dict and the checkpoint, not a parameter
    b.buffer(l + ".mlp.gate.e_score_correction_bias", {a.num_experts}, DType::fp32, true);
    gated_mlp(b, l + ".mlp.shared_experts", h, a.intermediate * a.shared_experts, false, false);
  }
}

void build_decoder_layer(Builder& b, const std::string& l, uint64_t i, const Architecture& a,
                         const DecoderSpec& s) {
  b.mod(l);
  build_attention(b, l, a, s);
  build_mlp(b, l, i, a, s);
  b.layer_norm(l, ".input_layernorm", a.hidden, false);
  b.layer_norm(l, ".post_attention_layernorm", a.hidden, false);
  if (s.sandwich_norm) {
    b.layer_norm(l, ".pre_feedforward_layernorm", a.hidden, false);
    b.layer_norm(l, ".post_feedforward_layernorm", a.hidden, false);
  }
  if (s.fused_qkv) {
    b.mod(l, ".resid_attn_dropout");
    b.mod(l, ".resid_mlp_dropout");
  }
}

}  // namespace

void build_decoder(const DecoderRecipe& r, ModelDescription* m) {
  const Architecture& a = m->arch;
  const DecoderSpec& s = r.spec;
  m->tensors.reserve(a.layers * (a.num_experts ? 9 + 3 * a.num_experts : 16) + 4);
  const std::string p = r.lm_head ? "model" : "";
  Builder b{*m};
  b.root_modules(p);
  b.embedding(b.join(p, "embed_tokens"), "", a.vocab, a.hidden);
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i)
    build_decoder_layer(b, join(p, "layers." + std::to_string(i)), i, a, s);
  b.layer_norm(b.join(p, "norm"), "", a.hidden, false);
  // Rotary inverse frequencies: registered persistent=False (not in state_dict).
  const uint64_t rope_dim = a.mla ? s.qk_rope : a.head_dim;
  b.mod(b.join(p, "rotary_emb"));
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {rope_dim / 2}, DType::fp32, false);
  if (s.local_rope) {
    b.mod(b.join(p, "rotary_emb_local"));
    b.buffer(b.join(p, "rotary_emb_local.inv_freq"), {rope_dim / 2}, DType::fp32, false);
  }
  if (r.lm_head) b.output_head("lm_head", a, a.hidden, b.join(p, "embed_tokens.weight"));
  if (a.generic)
    m->assumptions.push_back(Text("model.generic", {{"modelType", a.model_type.substr(0, 64)}}));
}

const char* decoder_class(const std::string& model_type) {
  static const std::pair<const char*, const char*> kCls[] = {
      {"llama", "Llama"}, {"mistral", "Mistral"},       {"mixtral", "Mixtral"},
      {"qwen2", "Qwen2"}, {"qwen3", "Qwen3"},           {"qwen3_moe", "Qwen3Moe"},
      {"gemma", "Gemma"}, {"gemma2", "Gemma2"},         {"gemma3_text", "Gemma3"},
      {"phi3", "Phi3"},   {"deepseek_v3", "DeepseekV3"}};
  for (const auto& p : kCls)
    if (model_type == p.first) return p.second;
  return "";
}

}  // namespace hf
}  // namespace trainmem
