// Context and expert parallelism's assumptions (peak_parallel.hpp).
#include "peak/peak_parallel.hpp"

#include <cstdio>

namespace trainmem {
namespace peak {
namespace {

std::string number(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

// Catalog peak.assume.cp, .cp.ring, .cp.group (cpp/data/messages.json).
std::string context_assumption(const Request& rq) {
  const Request::Context& c = rq.context;
  return "context parallelism over " + std::to_string(c.size) + " ranks: each rank holds " +
         std::to_string(rq.seq_len) + " of a sequence's " + std::to_string(c.full_seq_len) +
         " tokens and their activations; ring attention adds, per block, the exchanged keys and "
         "values and fp32 merge buffers in the forward and fp32 gradient accumulators and the "
         "exchanged key and value gradients in the backward; the parameters are replicated on "
         "these ranks, and gradients are reduced and ZeRO or FSDP shards split over " +
         std::to_string(rq.data_parallel) + " ranks (dataParallel x contextParallel)";
}

// Catalog peak.assume.ep, .ep.buffers, then .ep.capacity or .ep.dropless.
std::string expert_assumption(const Request& rq) {
  const Request::Expert& e = rq.expert;
  const Architecture& a = rq.model().arch;
  std::string s = "expert parallelism over " + std::to_string(e.size) +
                  " ranks, each expert split over " + std::to_string(e.tensor) +
                  ": each rank holds " + std::to_string(a.num_experts / e.size) + " of the " +
                  std::to_string(a.num_experts) +
                  " routed experts of each MoE layer, the router and the shared experts whole; "
                  "the dispatch and combine all-to-all buffers hold each token's " +
                  std::to_string(a.experts_per_token) + " routed copies";
  if (e.capacity_factor > 0)
    s += "; capacity factor " + number(e.capacity_factor) +
         ": each expert takes at most that multiple of its even share of the routed tokens (the "
         "rest are dropped), and the figures are those of a rank whose experts are full";
  else
    s += "; dropless routing: the figures are those of the rank whose experts receive the most "
         "tokens, assumed " +
         number(e.imbalance) +
         " x the mean (routingImbalance, as real routing varies from step to step)";
  return s;
}

}  // namespace

std::vector<std::string> parallel_assumptions(const Request& rq) {
  std::vector<std::string> out;
  if (rq.context.size > 1) out.push_back(context_assumption(rq));
  if (rq.expert.size > 1 || rq.expert.tensor > 1) out.push_back(expert_assumption(rq));
  return out;
}

}  // namespace peak
}  // namespace trainmem
