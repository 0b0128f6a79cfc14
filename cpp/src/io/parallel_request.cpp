// Reading contextParallel / expertParallel (parallel_request.hpp).
#include "io/parallel_request.hpp"

#include <string>

#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {
namespace {

// Ring attention shards the sequence of a causal decoder whose attention is SDPA (torch
// context_parallel dispatches the flash, efficient and cuDNN SDPA kernels only).
void check_context_model(const Request& r) {
  const ModelDescription& m = r.model();
  const bool decoder = !r.is_mlp && m.has_architecture() && !m.trace && !m.diffusion &&
                       !m.arch.net && !m.arch.encoder_only && m.arch.encoder_layers == 0;
  if (!decoder) fail(code::kUnsupported, "contextParallel", Message{"error.cp.model", {}});
  if (r.attention != activations::Attention::sdpa)
    fail(code::kInconsistent, "contextParallel", Message{"error.cp.attention", {}});
  if (r.samples.given) fail(code::kUnsupported, "contextParallel", Message{"error.cp.samples", {}});
}

}  // namespace

void read_context_parallel(const Obj& req, Request* out) {
  Request& r = *out;
  Request::Context& c = r.context;
  c.size = req.u64_or("contextParallel", 1, 1, 1024);
  if (req.has("contextParallelism")) {
    const Obj o = req.obj("contextParallelism");
    c.zigzag = o.one_of_or("loadBalance", {"zigzag", "none"}, "zigzag") == "zigzag";
    c.all_gather = o.one_of_or("rotate", {"allgather", "alltoall"}, "allgather") == "allgather";
    o.finish();
    if (c.size == 1)
      fail(code::kInconsistent, "contextParallelism", Message{"error.cp.options", {}});
  }
  if (c.size == 1) return;
  check_context_model(r);
  // zig-zag: the sequence in 2 x cp chunks, rank r holding chunks r and 2cp - 1 - r
  // (_attention.py _RoundRobinLoadBalancer; Megatron-CP get_batch_on_this_cp_rank)
  const uint64_t chunks = c.zigzag ? 2 * c.size : c.size;
  if (r.seq_len % chunks != 0)
    fail(code::kInconsistent, "seqLen",
         Message{c.zigzag ? "error.cp.seqLen.zigzag" : "error.cp.seqLen",
                 {{"seqLen", std::to_string(r.seq_len)}, {"chunks", std::to_string(chunks)}}});
  c.full_seq_len = r.seq_len;
  r.seq_len /= c.size;
  // the parameters are replicated over the CP ranks: gradients are reduced and ZeRO / FSDP
  // shard over dp x cp (torchtitan ParallelDims dp_shard_cp; Megatron-Core
  // get_data_parallel_group(with_context_parallel=True))
  c.data_parallel = r.data_parallel;
  r.data_parallel *= c.size;
  if (r.fsdp.enabled && r.fsdp.strategy != "NO_SHARD") r.fsdp.shard_degree *= c.size;
}

void read_expert_parallel(const Obj& req, Request* out) {
  Request& r = *out;
  Request::Expert& e = r.expert;
  e.size = req.u64_or("expertParallel", 1, 1, 4096);
  e.tensor = req.u64_or("expertTensorParallel", 1, 1, 4096);
  const bool on = e.size > 1 || e.tensor > 1;
  if (req.has("expertParallelism")) {
    Obj o = req.obj("expertParallelism");
    o.null_as_absent();
    if (o.has("capacityFactor")) e.capacity_factor = o.num("capacityFactor", 0.01, 1024.0);
    e.imbalance = o.num_or("routingImbalance", 1.0, 1.0, 1024.0);
    if (o.has("capacityFactor") && o.has("routingImbalance"))
      fail(code::kInconsistent, "expertParallelism.routingImbalance", Message{"error.ep.both", {}});
    o.finish();
    if (!on) fail(code::kInconsistent, "expertParallelism", Message{"error.ep.options", {}});
  }
  if (!on) return;
  const char* field = e.size > 1 ? "expertParallel" : "expertTensorParallel";
  const Architecture& a = r.model().arch;
  if (r.is_mlp || a.num_experts == 0 || !r.model().has_tensors())
    fail(code::kInconsistent, field, Message{"error.ep.model", {}});
  if (a.num_experts % e.size != 0)
    fail(code::kInconsistent, "expertParallel",
         Message{"error.ep.experts",
                 {{"ep", std::to_string(e.size)}, {"experts", std::to_string(a.num_experts)}}});
  if (a.intermediate % e.tensor != 0)
    fail(code::kInconsistent, "expertTensorParallel",
         Message{"error.ep.intermediate",
                 {{"etp", std::to_string(e.tensor)}, {"size", std::to_string(a.intermediate)}}});
  // the expert ranks are carved out of the data x context x tensor parallel ranks
  // (Megatron-Core parallel_state.initialize_model_parallel: expert-data-parallel size =
  // dp x cp x tp / (ep x etp))
  const uint64_t ranks = r.data_parallel * r.tensor_parallel;
  if (ranks % (e.size * e.tensor) != 0)
    fail(code::kInconsistent, field,
         Message{
             "error.ep.ranks",
             {{"product", std::to_string(e.size * e.tensor)}, {"ranks", std::to_string(ranks)}}});
  if (r.zero_stage > 0 || r.fsdp.enabled)
    fail(code::kUnsupported, field, Message{"error.ep.zero", {}});
  if (r.lora.enabled) fail(code::kUnsupported, field, Message{"error.ep.lora", {}});
}

}  // namespace peak
}  // namespace trainmem
