// HuggingFace attention (hf_encoder.hpp): transformers src/transformers/models/vit/
// modeling_vit.py @005db8208dee358fe8fe63ae3cc49dd054aad48d (ViTSelfAttention,
// eager_attention_forward: matmul(q, k^T) * scaling, softmax(dtype=float32).to(q.dtype),
// dropout, matmul, transpose(1, 2).contiguous()), clip/modeling_clip.py
// @000f1ffdbf1ce6190cc8863af9a2fff817590937 (CLIPAttention: the same with an additive mask);
// the sdpa path: integrations/sdpa_attention.py (scaled_dot_product_attention on the
// transposed views, then transpose(1, 2).contiguous()).
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {

V hf_linear(Graph& g, const std::string& mod, V x, uint64_t out, bool bias) {
  return linear(g, mod, x, out, bias);
}

V hf_attention(Graph& g, V x, const HfAttention& a, V kv) {
  const Shape s = g.shape(x);
  const uint64_t B = s[0], T = s[1], h = s[2], d = h / a.heads;
  const V src = kv ? kv : x;
  const uint64_t S = g.shape(src)[1];
  V q, k, v;
  if (a.kv_first) {
    k = linear(g, a.k, src, h, a.k_bias);
    v = linear(g, a.v, src, h, a.v_bias);
    q = linear(g, a.q, x, h, a.q_bias);
  } else {
    q = linear(g, a.q, x, h, a.q_bias);
    k = linear(g, a.k, src, h, a.k_bias);
    v = linear(g, a.v, src, h, a.v_bias);
  }
  // .view(B, T, heads, d).transpose(1, 2)
  q = permute(g, view(g, q, {B, T, a.heads, d}), {0, 2, 1, 3});
  k = permute(g, view(g, k, {B, S, a.heads, d}), {0, 2, 1, 3});
  v = permute(g, view(g, v, {B, S, a.heads, d}), {0, 2, 1, 3});
  V ctx = attention(g, q, k, v, {a.dropout, true, a.mask, false});
  // attn_output.transpose(1, 2).contiguous(), then reshape to [B, T, h]
  ctx = contiguous(g, permute(g, ctx, {0, 2, 1, 3}));
  ctx = view(g, ctx, {B, T, h});
  if (!a.output_module) return linear_op(g, ctx, h);
  return linear(g, a.o, ctx, h, a.o_bias);
}

}  // namespace net
}  // namespace trainmem
