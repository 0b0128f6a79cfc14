// Internal to peak memory: what a result says of context and expert parallelism (Request::
// context, Request::expert; docs/parallelism.md).
#pragma once
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// The assumptions of context and expert parallelism for this request (none when both are off).
std::vector<Text> parallel_assumptions(const Request& rq);

// Whether the request's model and attention admit ring attention (throws RequestError naming
// contextParallel).
void check_context_model(const Request& r);

// Context parallelism of `context.size` > 1 applied to a request read with the full sequence:
// checks the model, makes seq_len one rank's tokens and the data-parallel (and FSDP shard)
// group dataParallel x contextParallel. Throws RequestError naming the field.
void apply_context_parallel(Request* r);

// Expert parallelism of `expert.size` x `expert.tensor` > 1 checked against the model, the
// ranks (after apply_context_parallel) and the sharding. Throws RequestError naming the field.
void apply_expert_parallel(Request* r);

// The ranks the routed experts' shares shard over when the other parameters shard over
// `ranks` (ZeRO's data-parallel group, FSDP's shard group): the expert-data-parallel group,
// ranks x tensorParallel / (expertParallel x expertTensorParallel); `ranks` itself when
// nothing shards or expert parallelism is off.
uint64_t expert_shard_ranks(const Request& rq, uint64_t ranks);

}  // namespace peak
}  // namespace trainmem
