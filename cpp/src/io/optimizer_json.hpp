// Reading the `optimizer` field of a request.
#pragma once
#include "io/request.hpp"
#include "trainmem/optimizer.hpp"

namespace trainmem {

// Parses the request's optimizer field: a name string or {name, momentum, nesterov, amsgrad,
// centered, beta1, blockSize, min8bitSize, weightDecay}. `key` is the field name in `parent`.
OptimizerSpec parse_optimizer(const Obj& parent, const char* key);
}  // namespace trainmem
