// Context and expert parallelism's assumptions (peak_parallel.hpp).
#include "peak/peak_parallel.hpp"

#include <cstdio>
#include <string>

#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {
namespace {

std::string number(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

// Catalog peak.assume.cp, .cp.ring, .cp.group (cpp/data/messages.json).
Text context_assumption(const Request& rq) {
  const ContextParallel& c = rq.parallelism.context;
  Text t("peak.assume.cp", {{"ranks", std::to_string(c.size)},
                            {"rankTokens", std::to_string(rq.training.seq_len)},
                            {"tokens", std::to_string(c.full_seq_len)}});
  t.then({"peak.assume.cp.ring", {}});
  t.then({"peak.assume.cp.group", {{"group", std::to_string(rq.parallelism.data)}}});
  return t;
}

// Catalog peak.assume.ep, .ep.buffers, then .ep.capacity or .ep.dropless.
Text expert_assumption(const Request& rq) {
  const ExpertParallel& e = rq.parallelism.expert;
  const Architecture& a = rq.model.description().arch;
  Text t("peak.assume.ep", {{"ranks", std::to_string(e.size)},
                            {"tensor", std::to_string(e.tensor)},
                            {"local", std::to_string(a.num_experts / e.size)},
                            {"experts", std::to_string(a.num_experts)}});
  t.then({"peak.assume.ep.buffers", {{"topK", std::to_string(a.experts_per_token)}}});
  if (e.capacity_factor > 0)
    t.then({"peak.assume.ep.capacity", {{"factor", number(e.capacity_factor)}}});
  else
    t.then({"peak.assume.ep.dropless", {{"imbalance", number(e.imbalance)}}});
  return t;
}

// The ranks ZeRO or FSDP shard the other parameters over (1: nothing shards).
uint64_t sharding_ranks(const Request& r) {
  if (r.parallelism.fsdp.enabled) return r.parallelism.fsdp.shard_degree;
  return r.parallelism.zero.stage > 0 ? r.parallelism.data : 1;
}

// ZeRO / FSDP with expert parallelism: DeepSpeed refuses MoE under ZeRO-3 (runtime/engine.py
// _configure_zero_optimizer: "MoE not supported with Stage 3"); the experts' shard group must
// be whole ranks.
void check_expert_sharding(const Request& r, const char* field) {
  if (r.parallelism.zero.stage == 3) fail(code::kUnsupported, field, Message{"error.ep.zero3", {}});
  const uint64_t n = sharding_ranks(r),
                 product = r.parallelism.expert.size * r.parallelism.expert.tensor;
  if (n > 1 && (n * r.parallelism.tensor) % product != 0)
    fail(code::kInconsistent, field,
         Message{"error.ep.shard",
                 {{"product", std::to_string(product)},
                  {"ranks", std::to_string(n * r.parallelism.tensor)}}});
}

// Catalog peak.assume.ep.shard: the experts' and the other parameters' shard groups.
Text expert_shard_assumption(const Request& rq) {
  const uint64_t n = sharding_ranks(rq);
  return Text("peak.assume.ep.shard", {{"experts", std::to_string(expert_shard_ranks(rq, n))},
                                       {"ranks", std::to_string(n)}});
}

}  // namespace

// Ring attention shards the sequence of a causal decoder whose attention is SDPA (torch
// context_parallel dispatches the flash, efficient and cuDNN SDPA kernels only).
void check_context_model(const Request& r) {
  const ModelDescription& m = r.model.description();
  const bool decoder = !r.model.is_mlp && m.has_architecture() && !m.trace && !m.diffusion &&
                       !m.arch.net && !m.arch.encoder_only && m.arch.encoder_layers == 0;
  if (!decoder) fail(code::kUnsupported, "contextParallel", Message{"error.cp.model", {}});
  if (r.training.attention != activations::Attention::sdpa)
    fail(code::kInconsistent, "contextParallel", Message{"error.cp.attention", {}});
  if (r.training.samples.given)
    fail(code::kUnsupported, "contextParallel", Message{"error.cp.samples", {}});
}

void apply_context_parallel(Request* out) {
  Request& r = *out;
  ContextParallel& c = r.parallelism.context;
  check_context_model(r);
  // zig-zag: the sequence in 2 x cp chunks, rank r holding chunks r and 2cp - 1 - r
  // (_attention.py _RoundRobinLoadBalancer; Megatron-CP get_batch_on_this_cp_rank)
  const uint64_t chunks = c.zigzag ? 2 * c.size : c.size;
  if (r.training.seq_len % chunks != 0)
    fail(code::kInconsistent, "seqLen",
         Message{
             c.zigzag ? "error.cp.seqLen.zigzag" : "error.cp.seqLen",
             {{"seqLen", std::to_string(r.training.seq_len)}, {"chunks", std::to_string(chunks)}}});
  c.full_seq_len = r.training.seq_len;
  r.training.seq_len /= c.size;
  // the parameters are replicated over the CP ranks: gradients are reduced and ZeRO / FSDP
  // shard over dp x cp (torchtitan ParallelDims dp_shard_cp; Megatron-Core
  // get_data_parallel_group(with_context_parallel=True))
  c.data_parallel = r.parallelism.data;
  r.parallelism.data *= c.size;
  if (r.parallelism.fsdp.enabled && r.parallelism.fsdp.strategy != vocab::FsdpStrategy::no_shard)
    r.parallelism.fsdp.shard_degree *= c.size;
}

void apply_expert_parallel(Request* out) {
  Request& r = *out;
  const ExpertParallel& e = r.parallelism.expert;
  const char* field = e.size > 1 ? "expertParallel" : "expertTensorParallel";
  const Architecture& a = r.model.description().arch;
  if (r.model.is_mlp || a.num_experts == 0 || !r.model.description().has_tensors())
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
  const uint64_t ranks = r.parallelism.data * r.parallelism.tensor;
  if (ranks % (e.size * e.tensor) != 0)
    fail(code::kInconsistent, field,
         Message{
             "error.ep.ranks",
             {{"product", std::to_string(e.size * e.tensor)}, {"ranks", std::to_string(ranks)}}});
  check_expert_sharding(r, field);
  if (r.model.lora.enabled) fail(code::kUnsupported, field, Message{"error.ep.lora", {}});
}

// The expert-data-parallel group: Megatron-Core expert_data_parallel_size = world /
// (etp x ep x pp) = dp x cp x tp / (ep x etp) (NVIDIA/Megatron-LM@934c8260
// megatron/core/parallel_state.py initialize_model_parallel), over which the distributed
// optimizer shards the experts; torchtitan fully_shards the experts over dp_shard x cp x tp /
// (ep x etp) ranks for etp = tp or 1 (pytorch/torchtitan@0119de15
// torchtitan/distributed/parallel_dims.py build_mesh: dp_shard_in_ep).
uint64_t expert_shard_ranks(const Request& rq, uint64_t ranks) {
  const uint64_t product = rq.parallelism.expert.size * rq.parallelism.expert.tensor;
  if (ranks <= 1 || product <= 1) return ranks;
  return ranks * rq.parallelism.tensor / product;
}

std::vector<Text> parallel_assumptions(const Request& rq) {
  std::vector<Text> out;
  if (rq.parallelism.context.size > 1) out.push_back(context_assumption(rq));
  if (rq.parallelism.expert.size > 1 || rq.parallelism.expert.tensor > 1) {
    out.push_back(expert_assumption(rq));
    if (sharding_ranks(rq) > 1) out.push_back(expert_shard_assumption(rq));
  }
  return out;
}

}  // namespace peak
}  // namespace trainmem
