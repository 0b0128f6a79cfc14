// Internal to peak memory: the model's parameter tensors assigned to the chain layers whose
// backward makes their gradients (embeddings first, the blocks, the rest last), one list for
// every part of the step model (weights, gradients, optimizer state, casts, sharding).
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

struct ParamRef {
  const TensorSpec* spec = nullptr;
  uint64_t numel = 0;
  bool matrix = false;    // a 2-D (or conv) weight outside the embeddings: a matmul's operand
  bool in_block = false;  // inside a block (QLoRA quantises the blocks' linear weights)
  bool expert = false;    // a routed expert's share under expert parallelism (own shard group)
};

// A weight shared by two layers (tie_word_embeddings): the owner is listed in its own layer;
// the user layer's backward runs first and makes the .grad the owner's backward adds to.
struct TiedUse {
  size_t user_layer = 0;
  size_t owner_layer = 0;
  ParamRef owner;
};

struct ParamsByLayer {
  std::vector<std::vector<ParamRef>> layers;
  std::vector<TiedUse> tied;
  std::vector<uint64_t> per_layer;  // parameters per chain layer (distinct tensors)
  uint64_t largest_tensor = 0;
  uint64_t largest_layer = 0;
  uint64_t block_linear = 0;  // 2-D weights inside blocks
  uint64_t total = 0;
  std::deque<TensorSpec> owned;  // tensors made up for an MLP or a parameter count
};

// Whether a tensor is a routed expert's (Megatron-Core moe/experts.py; HF's `.experts.N.`
// modules), not a shared expert's.
bool routed_expert(const std::string& name);

// The assignment for a request (its model, or its MLP) over `chain_layers` layers.
ParamsByLayer params_by_layer(const Request& rq, const activations::ModelActivations& acts);

}  // namespace peak
}  // namespace trainmem
