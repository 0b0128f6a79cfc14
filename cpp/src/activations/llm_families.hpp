// Internal to activations: the decoder families with their own recipes
// (llm_families_activations.cpp: gptj, phi, falcon, starcoder2, olmo, olmo2, gemma) and
// torch.nn.Transformer (torch_transformer_activations.cpp).
#pragma once
#include "trainmem/activations.hpp"

namespace trainmem {
namespace activations {

// Whether the model type has its own recipe here. Gemma asks for tensor or sequence parallelism,
// float8 or a chunked / fused loss go to the Llama recipe (which models them) instead.
bool llm_family(const Architecture& ar, const Settings& s);
ModelActivations llm_family_activations(const ModelDescription& m, const Settings& s);
ModelActivations torch_transformer_activations(const ModelDescription& m, const Settings& s);

// LoRA (Settings::lora) on these recipes and the diffusion ones: each adapted linear's own saves
// at the rows linear_rows gives (`default_rows` where the layer sets none) and autocast's 16-bit
// copies of an fp32 frozen base's block matmul weights (lora_adapters.cpp). No-op without LoRA.
void add_lora_adapters(const ModelDescription& m, const Settings& s, uint64_t default_rows,
                       ModelActivations* acts);

}  // namespace activations
}  // namespace trainmem
