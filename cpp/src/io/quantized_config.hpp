// config.json quantization_config (GPTQ, AWQ): io/quantized_config.cpp.
#pragma once
#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// Reads config.quantization_config and attaches the packed layout to `m` (its tensors already
// finalized: the block linears are the ones packed). Throws RequestError naming the field.
void apply_quantization(const Obj& config, ModelDescription* m);

}  // namespace trainmem
