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
  // the one-pass figures follow the simulator for plain chains; skip connections, early-freed
  // inputs and concatenations change when tensors die, so those chains go to the simulator
  for (const Layer& L : chain.layers)
    if (L.selective || !L.skips.empty() || !L.input_saved || L.concat_input) return false;
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

std::vector<ChenLayer> chen_layers(const Chain& chain) {
  std::vector<ChenLayer> out(chain.layers.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const Layer& L = chain.layers[i];
    out[i] = {i == 0 ? chain.input_bytes : chain.layers[i - 1].output_bytes, L.output_bytes,
              L.saved_bytes, L.forward_temp_bytes, L.backward_temp_bytes};
  }
  return out;
}

uint64_t chen_peak(uint64_t input_bytes, const std::vector<ChenLayer>& layers, uint64_t threshold,
                   uint64_t stop) {
  // Alg. 3's walk (chen_greedy) with metrics()' figures of each segment as it closes
  // (segment_g above): P is what the segments before keep (their last outputs), g the
  // segment's highest point above P.
  const size_t n = layers.size();
  uint64_t P = input_bytes, peak = P;
  uint64_t fwd = 0, xb_sum = 0, rec_max = 0, bwd_max = 0;
  for (size_t i = 0, first = 0; i < n; ++i) {
    const ChenLayer& L = layers[i];
    // F_ck of the segment's first layer; F_n of the others (input and output live)
    fwd = std::max(fwd, (i > first ? L.x : 0) + L.output + L.forward_temp);
    xb_sum += L.saved;  // Alg. 3's temp
    rec_max = std::max(rec_max, xb_sum + L.forward_temp);
    bwd_max = std::max(bwd_max, xb_sum + L.output + L.backward_temp);
    if (xb_sum <= threshold && i + 1 < n) continue;
    peak = std::max(peak, P + std::max({fwd, L.output + rec_max, bwd_max}));
    if (peak >= stop) return peak;  // not below the best so far
    P += L.output;
    fwd = xb_sum = rec_max = bwd_max = 0;
    first = i + 1;
  }
  return peak;
}

uint64_t chen_peak(const Chain& chain, uint64_t threshold, uint64_t stop) {
  return chen_peak(chain.input_bytes, chen_layers(chain), threshold, stop);
}

}  // namespace placement
}  // namespace trainmem
