// Internal to peak memory: the parameters ZeRO-3 and FSDP hold unsharded around one op of the
// step (and FSDP's unsharded gradients in a unit's backward), for the allocation trace.
#pragma once
#include <cstdint>
#include <vector>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

enum class OpPhase { forward, recompute, backward, loss };

// The allocations gathered while `layer` (a chain layer; -1 for the loss) runs in `phase`, one
// per unit (FSDP: the root, each block; ZeRO-3: each layer fetched, the prefetch), for
// parameters of `per_layer` elements per chain layer held in `weight_bytes` per element.
std::vector<uint64_t> gathered_units(const Request& rq, const std::vector<uint64_t>& per_layer,
                                     uint64_t weight_bytes, OpPhase phase, int32_t layer);

}  // namespace peak
}  // namespace trainmem
