// Internal to the diffusers config readers (diffusers_unet.cpp, diffusers_transformers.cpp):
// a builder of parameter tensors named as diffusers' state_dict() names them, each assigned to
// the chain unit it belongs to, and the config fields the readers share.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "io/request.hpp"
#include "trainmem/diffusion.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace diffusers {

constexpr uint64_t kMaxWidth = 1ULL << 20;  // channels, widths, heads
constexpr uint64_t kMaxUnits = 2000;        // blocks, layers per block, transformer layers

struct Builder {
  ModelDescription& m;
  diffusion::Net& net;
  int64_t unit = -1;  // the chain layer the next tensors belong to (-1: stem / head)
  void mod(const std::string& name) {
    ++m.module_count;
    m.module_name_bytes += name.size();
  }
  TensorSpec& param(const std::string& name, std::initializer_list<uint64_t> shape);
  void linear(const std::string& base, uint64_t in, uint64_t out, bool bias = true);
  void conv(const std::string& base, uint64_t in, uint64_t out, uint64_t k, bool bias = true);
  void group_norm(const std::string& base, uint64_t c);
  void layer_norm(const std::string& base, uint64_t c, bool affine);
  void rms_norm(const std::string& base, uint64_t c);
  // TimestepEmbedding(in, out): linear_1, act, linear_2 (cond_proj when cond > 0).
  void timestep_embedding(const std::string& base, uint64_t in, uint64_t out, uint64_t cond = 0);
  // Attention: to_q, to_k, to_v (k/v from `kv_in`), to_out (Linear, Dropout).
  void attention(const std::string& base, uint64_t q_in, uint64_t kv_in, uint64_t inner,
                 bool qkv_bias, uint64_t out_dim);
  // FeedForward(dim, mult 4): net.0 (GEGLU proj to 2x inner, or GELU proj), net.1, net.2.
  void feed_forward(const std::string& base, uint64_t dim, uint64_t inner, bool geglu,
                    uint64_t out);
  // Starts chain unit `u` (its tensors get block u - 1).
  void start(const diffusion::Unit& u);
};

// Reads an int or a list of `n` ints (diffusers' `int | tuple[int]` config fields).
std::vector<uint64_t> int_or_list(const Obj& c, const char* key, uint64_t fallback, size_t n,
                                  uint64_t min, uint64_t max);
// A key that must be absent or null (a feature trainmem does not model): names it when set, by
// `what` (a phrase of the catalog, error.diffusers.*) or by its key.
void require_null(const Obj& c, const char* key, const char* what = nullptr);
// A string key that must equal `expected` when present.
void require_value(const Obj& c, const char* key, const char* expected);

ModelDescription unet_from_config(const Obj& c);
ModelDescription vae_from_config(const Obj& c);
ModelDescription sd3_from_config(const Obj& c);
ModelDescription flux_from_config(const Obj& c);
ModelDescription dit_from_config(const Obj& c, bool pixart);

}  // namespace diffusers
}  // namespace trainmem
