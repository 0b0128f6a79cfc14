// The figures of a single-level plan without running the simulator: its peak, what it stores
// and its costs, in O(layers) with no timeline, op list or plan strings. The searches that try
// many plans on one chain (chen-greedy's thresholds, the frontier's parameter sweeps) rank them
// with this; the plan they return is then measured by the simulator as every plan is.
//
// Same memory model as placement_simulator.cpp, in the unit form of
// placement_single_level.cpp: a plan is a sequence of units (a plain layer or a checkpointed
// segment); with P_t = input + what the units before t keep after the forward (S: savedBytes of
// a plain layer, outputBytes of a segment's last layer), every event of unit t (its forward,
// and its backward after all later units have been freed) has live bytes P_t + g(u_t), and the
// loss is never higher than the last unit's backward, so peak = max_t (P_t + g(u_t)).
// tests/cpp/test_placement_bounded.cpp checks it against simulate() on random chains and plans.
#include <algorithm>

#include "placement/placement_internal.hpp"

namespace trainmem {
namespace placement {

namespace {

uint64_t x_of(const Chain& c, size_t k) {
  return k == 0 ? c.input_bytes : c.layers[k - 1].output_bytes;
}

// g of a plain layer: F_all peak and B(i) peak above P.
uint64_t plain_g(const Layer& L) {
  return L.saved_bytes + std::max(L.forward_temp_bytes, L.output_bytes + L.backward_temp_bytes);
}

// g of the checkpointed segment [i..e]: its no-grad forward, its recompute and its backward.
uint64_t segment_g(const Chain& c, size_t i, size_t e) {
  const Layer& Li = c.layers[i];
  uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes;  // F_ck(i)
  uint64_t xb_sum = 0, rec_max = 0, bwd_max = 0;
  for (size_t p = i; p <= e; ++p) {
    const Layer& L = c.layers[p];
    if (p > i) fwd = std::max(fwd, x_of(c, p) + L.output_bytes + L.forward_temp_bytes);  // F_n
    xb_sum += L.saved_bytes;
    rec_max = std::max(rec_max, xb_sum + L.forward_temp_bytes);
    bwd_max = std::max(bwd_max, xb_sum + L.output_bytes + L.backward_temp_bytes);
  }
  return std::max({fwd, c.layers[e].output_bytes + rec_max, bwd_max});
}

}  // namespace

bool metrics_apply(const Chain& chain) {
  for (const Layer& L : chain.layers)
    if (L.selective) return false;
  return true;
}

ChainCosts chain_costs(const Chain& chain) {
  ChainCosts c;
  for (const Layer& L : chain.layers) c.forward += L.forward_cost;
  for (size_t i = chain.layers.size(); i-- > 0;) c.backward += chain.layers[i].backward_cost;
  return c;
}

PlanMetrics metrics(const Chain& chain, const std::vector<Segment>& checkpointed) {
  return metrics(chain, checkpointed, chain_costs(chain));
}

PlanMetrics metrics(const Chain& chain, const std::vector<Segment>& checkpointed,
                    const ChainCosts& costs) {
  PlanMetrics m;
  const size_t n = chain.layers.size();
  uint64_t P = chain.input_bytes;
  m.peak_bytes = P;
  size_t s = 0;
  for (size_t i = 0; i < n;) {
    if (s < checkpointed.size() && checkpointed[s].first == i) {
      const size_t e = checkpointed[s].last;
      m.peak_bytes = std::max(m.peak_bytes, P + segment_g(chain, i, e));
      P += chain.layers[e].output_bytes;
      i = e + 1;
      ++s;
    } else {
      m.peak_bytes = std::max(m.peak_bytes, P + plain_g(chain.layers[i]));
      P += chain.layers[i].saved_bytes;
      ++i;
    }
  }
  m.stored_bytes = P;
  // The costs summed in the simulator's order (its rounding too): the first forward pass, then
  // the segments' recomputation from the last; the backward from the last layer.
  double forward_work = costs.forward;
  for (size_t k = checkpointed.size(); k-- > 0;)
    for (size_t p = checkpointed[k].first; p <= checkpointed[k].last; ++p)
      forward_work += chain.layers[p].forward_cost;
  m.backward_cost = costs.backward;
  m.forward_cost = costs.forward;
  m.recompute_cost = std::max(0.0, forward_work - m.forward_cost);
  m.total_cost = m.forward_cost + m.backward_cost + m.recompute_cost;
  return m;
}

}  // namespace placement
}  // namespace trainmem
