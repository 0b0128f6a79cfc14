// The diffusers tensor builder (model/diffusers_builder.hpp): tensors named as diffusers'
// state_dict() names them (modules in registration order). Sources:
// huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/
// (embeddings.py TimestepEmbedding, attention_processor.py Attention, attention.py FeedForward,
// activations.py GEGLU / GELU).
#include "model/diffusers_builder.hpp"

namespace trainmem {
namespace diffusers {

TensorSpec& Builder::param(const std::string& name, std::initializer_list<uint64_t> shape) {
  m.tensors.emplace_back();
  TensorSpec& t = m.tensors.back();
  t.name = name;
  t.shape.assign(shape);
  t.block = unit - 1;  // chain layer = block + 1; the stem (unit 0) is outside the blocks
  t.block_set = true;
  return t;
}

void Builder::linear(const std::string& base, uint64_t in, uint64_t out, bool bias) {
  mod(base);
  param(base + ".weight", {out, in}).linear = LinearKind::linear;
  if (bias) param(base + ".bias", {out});
}

void Builder::conv(const std::string& base, uint64_t in, uint64_t out, uint64_t k, bool bias) {
  mod(base);
  param(base + ".weight", {out, in, k, k});
  if (bias) param(base + ".bias", {out});
}

void Builder::group_norm(const std::string& base, uint64_t c) {
  mod(base);
  param(base + ".weight", {c});
  param(base + ".bias", {c});
}

void Builder::layer_norm(const std::string& base, uint64_t c, bool affine) {
  mod(base);
  if (!affine) return;
  param(base + ".weight", {c});
  param(base + ".bias", {c});
}

void Builder::rms_norm(const std::string& base, uint64_t c) {
  mod(base);
  param(base + ".weight", {c});
}

void Builder::timestep_embedding(const std::string& base, uint64_t in, uint64_t out,
                                 uint64_t cond) {
  mod(base);
  linear(base + ".linear_1", in, out);
  if (cond) linear(base + ".cond_proj", cond, in, false);
  mod(base + ".act");
  linear(base + ".linear_2", out, out);
}

void Builder::attention(const std::string& base, uint64_t q_in, uint64_t kv_in, uint64_t inner,
                        bool qkv_bias, uint64_t out_dim) {
  mod(base);
  linear(base + ".to_q", q_in, inner, qkv_bias);
  linear(base + ".to_k", kv_in, inner, qkv_bias);
  linear(base + ".to_v", kv_in, inner, qkv_bias);
  mod(base + ".to_out");
  linear(base + ".to_out.0", inner, out_dim, true);
  mod(base + ".to_out.1");
}

void Builder::feed_forward(const std::string& base, uint64_t dim, uint64_t inner, bool geglu,
                           uint64_t out) {
  mod(base);
  mod(base + ".net");
  mod(base + ".net.0");
  linear(base + ".net.0.proj", dim, geglu ? 2 * inner : inner);
  mod(base + ".net.1");
  linear(base + ".net.2", inner, out);
}

void Builder::start(const diffusion::Unit& u) {
  net.units.push_back(u);
  unit = static_cast<int64_t>(net.units.size()) - 1;
}

}  // namespace diffusers
}  // namespace trainmem
