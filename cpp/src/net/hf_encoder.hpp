// The pieces HuggingFace's vision and speech transformers share: the attention of
// ViTSelfAttention / CLIPAttention / WhisperAttention (q, k, v linears, view + transpose,
// eager_attention_forward or SDPA, transpose + reshape, the output linear) and pre-LN encoder
// layers. Sources: transformers src/transformers/models/{vit,clip,dinov2,whisper}/modeling_*.py
// (commits cited in the family files).
#pragma once
#include <string>

#include "net/recipes.hpp"

namespace trainmem {
namespace net {

struct HfAttention {
  std::string q, k, v, o;  // module paths of the four linears
  bool q_bias = true, k_bias = true, v_bias = true, o_bias = true;
  uint64_t heads = 1;
  double dropout = 0;         // attention_probs_dropout_prob / attention_dropout
  bool mask = false;          // an additive mask (causal text, padding) in the eager path
  bool kv_first = true;       // ViT computes key, value, then query; CLIP query first
  bool output_module = true;  // register the output linear (false: the caller does)
};
// Self-attention over x [B, T, h] (cross-attention: kv [B, S, h] given).
V hf_attention(Graph& g, V x, const HfAttention& a, V kv = V{});

// nn.Linear without registering the module (the caller registered it), with its bias flag.
V hf_linear(Graph& g, const std::string& mod, V x, uint64_t out, bool bias);

}  // namespace net
}  // namespace trainmem
