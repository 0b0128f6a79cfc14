// Internal to activations: the decoder families with their own recipes
// (llm_families_activations.cpp: gptj, phi, falcon, starcoder2, olmo, olmo2, gemma) and
// torch.nn.Transformer (torch_transformer_activations.cpp).
#pragma once
#include "trainmem/activations.hpp"

namespace trainmem {
namespace activations {

bool llm_family(const Architecture& ar);
ModelActivations llm_family_activations(const ModelDescription& m, const Settings& s);
ModelActivations torch_transformer_activations(const ModelDescription& m, const Settings& s);

}  // namespace activations
}  // namespace trainmem
