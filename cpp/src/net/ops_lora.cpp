// LoRA on the vision and speech networks: PEFT's lora.Linear around an nn.Linear the request
// adapts (activations::Settings::lora.adapted, peak's PEFT matching by module name).
#include <algorithm>

#include "net/ops.hpp"
#include "trainmem/dtype.hpp"

namespace trainmem {
namespace net {

bool lora_adapted(const Graph& g, const std::string& mod) {
  const activations::LoraSettings& l = g.settings().lora;
  if (!l.enabled) return false;
  for (const auto& names : l.adapted)
    if (std::find(names.begin(), names.end(), mod) != names.end()) return true;
  return false;
}

// PEFT lora.Linear.forward (peft/tuners/lora/layer.py): result = base_layer(x);
// x = x.to(lora_A.weight.dtype); result = result + lora_B(lora_A(dropout(x))) * scaling;
// result.to(the base result's dtype). lora_A keeps its input, lora_B lora_A's output
// (MmBackward0 keeps the input for the weight's gradient); the scaling (a Python number) keeps
// nothing.
V lora_adapter(Graph& g, V x, V result, uint64_t rows_out) {
  const activations::LoraSettings& l = g.settings().lora;
  const uint32_t aw = static_cast<uint32_t>(dtype_bytes_for(l.adapter_dtype, 1));
  const uint32_t base_w = g.width(result);
  V xa = g.width(x) == aw ? x : cast(g, x, aw);
  xa = dropout(g, xa, l.dropout);
  if (g.widths().autocast && g.width(xa) == 4) xa = cast(g, xa, 2);  // autocast's mm input
  Shape rs = g.shape(x);
  rs.back() = l.rank;
  g.begin_op({xa});
  const V a = g.make(rs, g.widths().autocast ? 2 : aw);
  g.save(xa, "lora_A input", "MmBackward0 keeps lora_A's input for its weight");
  Shape os = g.shape(x);
  os.back() = rows_out;
  g.begin_op({a});
  const V b = g.make(os, g.width(a));
  g.save(a, "lora_B input (lora_A output)", "MmBackward0 keeps lora_B's input for its weight");
  V sum = add(g, result, scale(g, b));
  return g.width(sum) == base_w ? sum : cast(g, sum, base_w);
}

}  // namespace net
}  // namespace trainmem
