// The layout planner (planLayout): for N GPUs of one type, the data x tensor x pipeline (x the
// extra dimensions) layouts, micro-batches, checkpointing and sharding that fit, ranked by the
// estimated time of one optimizer step. Memory: peak::evaluate of the pipeline's first and last
// ranks (parallel.hpp); time: the accumulation planner's FLOPs over the GPU's peak plus the
// collectives at the network's stated bandwidths. Model and sources: docs/parallelism.md
// "Layout planner".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/message.hpp"
#include "trainmem/parallel.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/time_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace layout {

// How the data-parallel ranks hold the model: Megatron's distributed optimizer (ZeRO-1: the
// fp32 master weights and moments sharded, gradients reduce-scattered) or FSDP2 FULL_SHARD.
enum class Sharding { zero1, fsdp };
const char* sharding_name(Sharding s);

// A parallel dimension besides TP, PP and DP (context, expert parallelism): its request field,
// how a candidate sets it (throws RequestError when peakMemory refuses it) and which sizes the
// model admits. `splits_tokens`: it divides each rank's tokens (compute and activations), as
// context parallelism does. `within_dp`: it takes no GPUs of its own but divides the data x
// token-splitting x tensor-parallel ranks, as expert parallelism does (Megatron-Core carves the
// expert groups out of dp x cp x tp); otherwise gpus = tp x pp x dp x its size. Memory per GPU
// does not grow with any of them at a fixed GPU count (the pruning's premise,
// docs/parallelism.md "Layout planner"). Listed in layout_dimensions.cpp, one line each.
struct Dimension {
  const char* field;
  void (*apply)(peak::Request* r, uint64_t size);
  bool (*admits)(const peak::Request& base, uint64_t size);
  bool splits_tokens;
  bool within_dp;
};
const std::vector<Dimension>& extra_dimensions();

// The GPUs' links: bytes per second per GPU, one direction, inside a node and across nodes.
struct Network {
  double intra_node = 0, inter_node = 0;
  Text intra_source, inter_source;  // the data's citation, or the request's field
};

struct Inputs {
  peak::Request base;  // the model, precision, optimizer, runtime and the GPU's memory
  uint64_t gpus = 1, gpus_per_node = 1, global_batch = 1;
  time_model::ForwardFlops flops;  // per token
  double gradient_bytes = 0;       // the whole model's gradients (trainable params x width)
  double optimizer_bytes = 0;      // read and written by one unsharded optimizer step
  double gather_bytes = 0;         // the whole model's parameters as FSDP gathers them
  // MoE: the routed experts' share of the trainable parameters, the blocks holding them, and the
  // bytes of one token's hidden state and of its keys and values in one block
  double expert_fraction = 0;
  uint64_t moe_layers = 0;
  double peak_flops = 0, memory_bandwidth = 0;
  Network network;
  time_model::Knobs knobs;
  // What is enumerated (each a list: adding a value is one line in the io default)
  std::vector<vocab::Strategy> checkpointing = {
      vocab::Strategy::none, vocab::Strategy::attention_recompute, vocab::Strategy::full};
  std::vector<vocab::PipelineSchedule> schedules;
  std::vector<Sharding> shardings = {Sharding::zero1, Sharding::fsdp};
  std::vector<uint64_t> extra_sizes_max;  // per extra dimension: largest size tried (1: off;
                                          // the request's `explore`)
  uint64_t top = 10;                      // fitting layouts to list
  uint64_t max_evaluations = 400;         // memory evaluations (each 1-2 peak evaluations)
};

struct Layout;
// The extra dimensions that split each rank's tokens (context parallelism): their product.
uint64_t token_split(const Layout& l);
// The ranks that hold the same parameters and shard them (ZeRO-1, FSDP): dp x token_split.
uint64_t shard_ranks(const Layout& l);
// The extra dimension carved out of the ranks (expert parallelism): its size, 1 when off.
uint64_t expert_ranks(const Layout& l);

struct Layout {
  uint64_t tp = 1, pp = 1, dp = 1, virtual_stages = 1;
  std::vector<uint64_t> extra;  // sizes of extra_dimensions(), in order
  bool pipelined = false;       // pp > 1 (schedule meaningful)
  vocab::PipelineSchedule schedule = vocab::PipelineSchedule::one_f_one_b;
  Sharding sharding = Sharding::zero1;
  vocab::Strategy checkpointing = vocab::Strategy::none;
  uint64_t micro_batch = 1, micro_batches = 1;  // per data-parallel rank and step
};

struct StepEstimate {
  double compute_s = 0;   // FLOPs of all micro-batches on one rank / (peak x utilisation)
  double overhead_s = 0;  // fixed cost per block and micro-batch
  double tp_comm_s = 0;   // tensor-parallel collectives (inside the node)
  double pp_comm_s = 0;   // stage-to-stage sends
  double bubble_fraction = 0;
  double bubble_s = 0;   // the pipeline's fill and drain
  double cp_comm_s = 0;  // context parallelism's key / value exchange
  double ep_comm_s = 0;  // expert parallelism's dispatch and combine all-to-alls
  double dp_comm_s = 0;  // gradient reduce (and FSDP's gathers)
  double optimizer_s = 0;
  double step_s = 0;
  double tokens_per_second_per_gpu = 0;
  double model_flops_utilization = 0;
};

// One layout as the planner saw it. `status`: fits | does_not_fit | pruned | error.
struct Verdict {
  Layout layout;
  StepEstimate time;
  std::string status;
  uint64_t peak_bytes = 0;  // the binding rank's device memory (0: not evaluated)
  uint32_t peak_stage = 0;
  Text reason;  // why it does not fit or was not evaluated
};

struct Result {
  std::vector<Verdict> fitting;  // fastest first, at most `top`
  std::vector<Verdict> faster;   // faster than the last listed layout, but pruned / not fitting
  uint64_t candidates = 0, evaluations = 0, peak_evaluations = 0, pruned = 0, not_fitting = 0;
  uint64_t not_evaluated = 0;  // left once `top` fitted or the evaluation bound was reached
  bool evaluation_bound_reached = false;
  std::vector<Text> assumptions;
};

// Every valid factorisation of `gpus` as tp x pp x dp x extras (tp dividing gpus_per_node,
// the model's heads and KV heads; pp at most the blocks), no candidate beyond the limits.
std::vector<Layout> factorizations(const Inputs& in, uint64_t blocks);
// Candidates: factorisations x schedules x micro-batches dividing the global batch per DP rank
// x checkpointing x sharding. Throws RequestError(too_large, "gpus") beyond kMaxCandidates.
inline constexpr uint64_t kMaxCandidates = 200000;
std::vector<Layout> candidates(const Inputs& in);

StepEstimate estimate(const Inputs& in, const Layout& l);
// The peak::Request of one layout (the base with its sizes, schedule, sharding, checkpointing).
peak::Request request_for(const Inputs& in, const Layout& l);

// Ranks every candidate by time and evaluates memory fastest first until `top` fit.
Result plan(const Inputs& in);

// One given layout (the request's `compare`): its time, its memory with the allocator replay,
// and in `reason` nothing; `faster` = the candidates the time model ranks before it.
Verdict judge(const Inputs& in, const Layout& l, uint64_t* faster);

}  // namespace layout
}  // namespace trainmem
