// A model given as a parameter count, optionally with its layers, hidden size and heads: the
// count alone has no shapes (peak memory answers with the persistent state, a lower bound);
// with the shape hints a generic Llama-style decoder of that size stands in (approximate).
#include "io/model_count.hpp"

#include "trainmem/error.hpp"

namespace trainmem {

const std::initializer_list<const char*>& count_hint_keys() {
  static const std::initializer_list<const char*> keys = {"layers", "hidden", "heads", "vocab",
                                                          "intermediate"};
  return keys;
}

void read_count_hints(const Obj& model, ModelDescription* m) {
  bool any = false;
  for (const char* k : count_hint_keys()) any = any || model.has(k);
  if (!any) return;
  for (const char* k : {"layers", "hidden", "heads"})
    if (!model.has(k))
      fail(code::kMissingField, model.field(k),
           Message{"error.count.missing", {{"field", model.field(k)}}});
  Architecture& a = m->arch;
  a.layers = model.u64("layers", 1, 1000);
  a.hidden = model.u64("hidden", 1, 1u << 20);
  a.heads = model.u64("heads", 1, 1u << 16);
  if (a.hidden % a.heads != 0)
    fail(code::kInconsistent, model.field("heads"),
         Message{"error.count.heads",
                 {{"field", model.field("heads")}, {"hidden", std::to_string(a.hidden)}}});
  a.kv_heads = a.heads;
  a.head_dim = a.hidden / a.heads;
  // gated MLP of 8h/3 (Llama): 12 h^2 parameters per block with the 4 h^2 of the attention
  a.intermediate = model.u64_or("intermediate", (8 * a.hidden + 2) / 3, 1, 1u << 22);
  const double block = 4.0 * a.hidden * a.hidden + 3.0 * a.hidden * a.intermediate;
  const double blocks = block * static_cast<double>(a.layers);
  if (model.has("vocab")) {
    a.vocab = model.u64("vocab", 1, 1ull << 32);
  } else {
    // the parameters beyond the blocks: an input embedding and an untied output head
    const double rest = static_cast<double>(m->params) - blocks;
    if (rest < 2.0 * a.hidden)
      fail(code::kInconsistent, model.field("params"),
           Message{"error.count.small", {{"field", model.field("params")}}});
    a.vocab = static_cast<uint64_t>(rest / (2.0 * a.hidden));
  }
  a.model_type = "generic";
  a.generic = true;
  a.norm = "rmsnorm";
  a.gated_mlp = true;
  a.activation = "silu";
  m->assumptions.push_back(Text("model.assume.count.shape", {}));
}

}  // namespace trainmem
