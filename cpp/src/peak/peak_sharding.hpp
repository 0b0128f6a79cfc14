// Internal to peak memory: the parameters ZeRO-3 and FSDP hold unsharded around one op of the
// step (and FSDP's unsharded gradients in a unit's backward), for the allocation trace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

enum class OpPhase { forward, recompute, backward, loss };

// Per chain layer: its parameters' elements, their bytes once gathered (each tensor in the
// dtype it is gathered in: FSDP's param_dtype, a 4-bit base's packing, ...), and its trainable
// elements (whose gradients FSDP unshards in the backward).
struct UnitSizes {
  std::vector<uint64_t> numel, bytes, trainable;
  std::vector<uint64_t> expert_trainable;  // of `trainable`, routed experts' (own shard group)
  uint64_t bytes_of(size_t layer, uint64_t elements) const {
    return numel[layer]
               ? static_cast<uint64_t>(static_cast<double>(elements) * bytes[layer] / numel[layer])
               : 0;
  }
};

// The allocations gathered while `layer` (a chain layer; -1 for the loss) runs in `phase`, one
// per unit (FSDP: the root, each block; ZeRO-3: each layer fetched, the prefetch).
// `grad_bytes`: bytes per element of the parameters as held sharded (FSDP's gradients
// unshard in param_dtype when one is set, else in this width).
// Whether FSDP gathers a copy of the root unit around the forward and backward ops (the first
// allocation of gathered_units then): false for NO_SHARD without a param_dtype cast.
bool fsdp_root_gathered(const Request& rq, uint64_t grad_bytes);

// FSDP2's per-unit settings against the model: a list of block settings has one per block
// (`chain_layers` - 2), and units of their own for the embeddings or the head need untied
// weights and one pipeline stage. Throws a RequestError naming the field.
void check_fsdp_units(const Request& rq, size_t chain_layers, bool tied);

// The assumptions of the settings that shape the sharded step beyond its units: DeepSpeed's
// gradient buckets, FSDP's per-unit resharding and FSDP1's rate limiter.
void sharding_assumptions(const Request& rq, std::vector<Text>* out);

std::vector<uint64_t> gathered_units(const Request& rq, const UnitSizes& u, uint64_t grad_bytes,
                                     OpPhase phase, int32_t layer);

}  // namespace peak
}  // namespace trainmem
