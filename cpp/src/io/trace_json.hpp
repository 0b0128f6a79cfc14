// Reading the `trace` form of the `model` field (io/trace_json.cpp).
#pragma once

#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// The model of a trace (model.trace: the trace object, or its JSON text): parameters and buffers
// as a ModelDescription whose `trace` holds the step. Throws RequestError naming the field.
ModelDescription model_from_trace(const Obj& model);

}  // namespace trainmem
