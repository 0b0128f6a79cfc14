// peakMemory's context- and expert-parallel fields (io/parallel_request.cpp): read after the
// lengths and the sharding, and applied to the request (docs/parallelism.md).
#pragma once
#include "io/request.hpp"
#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// contextParallel and contextParallelism: {loadBalance, rotate}. With contextParallel > 1 the
// request's seq_len becomes one rank's share and data_parallel (and FSDP's shard group) the
// ranks that reduce gradients: dataParallel x contextParallel. Throws RequestError.
void read_context_parallel(const Obj& req, Request* r);

// expertParallel, expertTensorParallel and expertParallelism: {capacityFactor,
// routingImbalance}. Throws RequestError naming the field.
void read_expert_parallel(const Obj& req, Request* r);

}  // namespace peak
}  // namespace trainmem
