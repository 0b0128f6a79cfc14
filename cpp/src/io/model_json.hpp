// Reading the `model` field of a request, and writing a model description (describeModel).
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// Parses the `model` field of any request (the four forms). `model` is an Obj at its path
// ("model"), so errors name e.g. "model.config.hidden_size". Calls model.finish().
ModelDescription parse_model(const Obj& model);
// The same, shared and immutable: a preset is built once per process and then shared, so a
// 70B preset's ~720 tensors are not rebuilt on every peak-memory call (bench/peak.mjs).
std::shared_ptr<const ModelDescription> parse_model_shared(const Obj& model);

// JSON of a description (the describeModel result).
nlohmann::json describe_model(const ModelDescription& m);

// Builds the exact tensor list of a HuggingFace config.json (model_type gpt2, bert, llama,
// mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma2, gemma3_text, phi3, deepseek_v3, gpt_neox,
// t5, mt5); any other model_type with the standard decoder fields gets a generic Llama-style
// decoder, marked approximate in `assumptions`. `config` is an Obj at "model.config";
// `arch_override` (may be empty) replaces config.architectures[0]. Throws RequestError naming the
// field.
ModelDescription model_from_config(const Obj& config, const std::string& arch_override);
// The families of io/llm_families.cpp (falcon, phi, gptj, starcoder2, olmo, olmo2, and
// "nn.Transformer": torch.nn.Transformer's constructor arguments): false for another type.
bool model_from_llm_family(const Obj& config, const std::string& type,
                           const std::string& arch_override, ModelDescription& m);
// A diffusers config.json (`_class_name`: UNet2DConditionModel, SD3Transformer2DModel,
// FluxTransformer2DModel, DiTTransformer2DModel, PixArtTransformer2DModel, AutoencoderKL):
// io/diffusers_build.cpp. model_from_config calls it for a config with `_class_name`.
ModelDescription model_from_diffusers_config(const Obj& config);
// The model type trainmem gives a diffusers class ("unet", "sd3", "flux", "dit", "pixart", "vae";
// "" for others): the model picker lists it without building the model.
const char* diffusers_model_type(const std::string& class_name);

}  // namespace trainmem
