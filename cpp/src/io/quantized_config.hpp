// config.json quantization_config (GPTQ, AWQ): io/quantized_config.cpp.
#pragma once
#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// Reads config.quantization_config and attaches the packed layout to `m` (its tensors already
// finalized: the block linears are the ones packed). Throws RequestError naming the field.
void apply_quantization(const Obj& config, ModelDescription* m);

// The state_dict a GPTQ / AWQ model holds: each quantized module's packed entries (qweight,
// qzeros, scales, g_idx, bias) in place of its logical weight and bias (checkpointSize).
ModelDescription packed_state_dict(const ModelDescription& m);

}  // namespace trainmem
