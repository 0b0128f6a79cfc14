// The device bytes of a GPTQ / AWQ base's weights (trainmem/quantization.hpp); the packed
// layout itself is read at the edge (io/quantized_config.cpp).
#include "trainmem/quantization.hpp"

#include <algorithm>

namespace trainmem {

uint64_t quantized_weight_bytes(const ModelDescription& m, uint64_t other_bytes) {
  const Quantization& q = *m.quantization;
  uint64_t covered = q.quantized_params;
  for (const auto& t : q.packed)
    if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0)
      covered += t.numel();
  return q.packed_bytes + (m.params - std::min(m.params, covered)) * other_bytes;
}

}  // namespace trainmem
