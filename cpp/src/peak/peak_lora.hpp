// Internal to peak memory: which linear layers LoRA adapts, matched on the model's tensor list
// the way PEFT matches `target_modules` (peft/tuners/tuners_utils.py check_target_module_exists,
// _maybe_include_all_linear_layers; peft/utils/constants.py for the per-model defaults).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

struct LoraPlan {
  // (in_features, out_features) of every adapted linear, per chain layer (embeddings,
  // blocks..., head); the encoder's blocks come before the decoder's.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> per_layer;
  // the adapted linears' module names, per chain layer (the activations recipes match them)
  std::vector<std::vector<std::string>> per_layer_modules;
  uint64_t params = 0;               // r x (in + out) summed: PEFT's trainable parameters
  uint64_t modules = 0;              // adapted linears
  std::vector<std::string> targets;  // the names matched (after a default / all-linear)
  std::vector<Text> assumptions;     // e.g. targets that match nothing (PEFT ignores them)
};

// Throws RequestError naming lora.targetModules for a default PEFT does not have, a target
// PEFT would refuse (a module that is not a linear layer), or targets matching nothing.
LoraPlan plan_lora(const ModelDescription& m, const Lora& l, size_t chain_layers);

}  // namespace peak
}  // namespace trainmem
