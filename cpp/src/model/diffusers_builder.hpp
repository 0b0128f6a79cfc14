// Internal to the diffusers tensor recipes (model/diffusers_transformers.cpp) and the diffusers
// config readers (io/diffusers_unet.cpp): a builder of parameter tensors named as diffusers'
// state_dict() names them, each assigned to the chain unit it belongs to.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "trainmem/diffusion.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace diffusers {

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

}  // namespace diffusers
}  // namespace trainmem
