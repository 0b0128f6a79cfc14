// The layout planner's extra parallel dimensions (layout_planner.hpp Dimension): each is one
// line giving its peakMemory request field, how a candidate sets it and which sizes the model
// admits. The planner enumerates a dimension only when the request's `explore` allows it a
// size above 1 (e.g. explore: { contextParallel: 8 }).
#include "peak/peak_parallel.hpp"
#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {
namespace {

void set_context(peak::Request* r, uint64_t n) {
  if (n <= 1) return;
  r->parallelism.context.size = n;
  peak::apply_context_parallel(r);
}

void set_experts(peak::Request* r, uint64_t n) {
  if (n <= 1) return;
  r->parallelism.expert.size = n;
  peak::apply_expert_parallel(r);
}

// zig-zag load balancing (the planner's default) needs seqLen in 2 x cp chunks
// (torch _attention.py _RoundRobinLoadBalancer; peak_parallel.cpp apply_context_parallel)
bool context_fits(const peak::Request& r, uint64_t n) { return r.training.seq_len % (2 * n) == 0; }

// expertParallel must divide the routed experts (Megatron-Core: num_moe_experts % ep == 0)
bool experts_fit(const peak::Request& r, uint64_t n) {
  const uint64_t e = r.model.description().arch.num_experts;
  return e > 0 && e % n == 0;
}

}  // namespace

const std::vector<Dimension>& extra_dimensions() {
  // (context parallelism first: expert parallelism carves its ranks out of dp x cp x tp)
  static const std::vector<Dimension> kDimensions = {
      {"contextParallel", set_context, context_fits, true, false},
      {"expertParallel", set_experts, experts_fit, false, true},
  };
  return kDimensions;
}

}  // namespace layout
}  // namespace trainmem
