// optimal-single-level: the cheapest plan torch.utils.checkpoint can apply (contiguous
// segments; each checkpointed segment recomputed once in the backward) whose simulated peak
// fits the budget. Exact: a dynamic programme over Pareto fronts, no discretisation.
//
// Why it is exact. Split a plan into units u_1..u_T (a plain layer or a checkpointed segment)
// and let P_t = input + sum of what units before t keep after the forward (S(u): savedBytes of
// a plain layer, outputBytes of a segment's last layer). Under the simulator's memory model
// every event of unit t (its forward, and its backward, which runs after every later unit has
// been freed) has live bytes P_t + g(u_t), with g depending on the unit only; the loss is never
// higher than the last unit's backward. So peak = max_t (P_t + g(u_t)). From the right, the
// headroom a suffix needs is R(t) = max(g(u_t), S(u_t) + R(t+1)); the Pareto set of
// (R, recompute cost) of all suffixes starting at layer i is built from the sets at i+1.. n,
// keeping only non-dominated points: peak = input + R(1) exactly.
#include <algorithm>
#include <limits>

#include "placement_internal.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace placement {
namespace {

struct Point {
  uint64_t R;        // headroom the suffix needs above what precedes it
  double c;          // recompute cost of the suffix
  uint32_t next;     // start of the following suffix (= end of this unit + 1)
  uint32_t next_ix;  // index of the point chosen there
  bool ckpt;         // this unit is a checkpointed segment (else a plain layer)
};

// g and S of units starting at layer i, in the same memory model as the simulator.
struct UnitScan {
  const Chain& c;
  uint64_t x(size_t k) const { return k == 0 ? c.input_bytes : c.layers[k - 1].output_bytes; }
  // plain layer i: F_all peak and B(i) peak above P.
  uint64_t plain_g(size_t i) const {
    const Layer& L = c.layers[i];
    return L.saved_bytes + std::max(L.forward_temp_bytes, L.output_bytes + L.backward_temp_bytes);
  }
};

using Front = std::vector<Point>;

// Builds all fronts; budget_room = budget - input (UINT64_MAX: no pruning).
std::vector<Front> build(const Chain& chain, uint64_t room) {
  const size_t n = chain.layers.size();
  const UnitScan u{chain};
  std::vector<Front> fronts(n + 1);
  fronts[n].push_back({0, 0.0, static_cast<uint32_t>(n), 0, false});
  std::vector<Point> cand;
  for (size_t i = n; i-- > 0;) {
    cand.clear();
    const Layer& Li = chain.layers[i];
    // plain layer i
    {
      const uint64_t g = u.plain_g(i), S = Li.saved_bytes;
      const Front& nx = fronts[i + 1];
      for (size_t q = 0; q < nx.size(); ++q) {
        const uint64_t R = std::max(g, S + nx[q].R);
        if (R > room) break;  // R grows along the front
        cand.push_back({R, nx[q].c, static_cast<uint32_t>(i + 1), static_cast<uint32_t>(q), false});
      }
    }
    // checkpointed segment [i..e]
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes;  // F_ck(i)
    uint64_t xb_sum = 0;     // savedBytes of i..p
    uint64_t rec_max = 0;    // max over p of (savedBytes i..p) + forwardTemp_p   (recompute)
    uint64_t bwd_max = 0;    // max over p of (savedBytes i..p) + outputBytes_p + backwardTemp_p
    double cost = 0;
    for (size_t e = i; e < n; ++e) {
      const Layer& Le = chain.layers[e];
      if (e > i) fwd = std::max(fwd, u.x(e) + Le.output_bytes + Le.forward_temp_bytes);  // F_n(e)
      xb_sum += Le.saved_bytes;
      rec_max = std::max(rec_max, xb_sum + Le.forward_temp_bytes);
      bwd_max = std::max(bwd_max, xb_sum + Le.output_bytes + Le.backward_temp_bytes);
      cost += Le.forward_cost;
      if (xb_sum > room || fwd > room) break;  // both only grow with e
      const uint64_t S = Le.output_bytes;
      const uint64_t g = std::max({fwd, S + rec_max, bwd_max});
      if (g > room) continue;
      const Front& nx = fronts[e + 1];
      for (size_t q = 0; q < nx.size(); ++q) {
        const uint64_t R = std::max(g, S + nx[q].R);
        if (R > room) break;
        cand.push_back(
            {R, cost + nx[q].c, static_cast<uint32_t>(e + 1), static_cast<uint32_t>(q), true});
      }
    }
    std::sort(cand.begin(), cand.end(), [](const Point& a, const Point& b) {
      return a.R != b.R ? a.R < b.R : a.c < b.c;
    });
    Front& f = fronts[i];
    for (const Point& p : cand)
      if (f.empty() || p.c < f.back().c) f.push_back(p);
  }
  return fronts;
}

std::vector<Segment> plan_of(const std::vector<Front>& fronts, size_t ix) {
  std::vector<Segment> segs;
  size_t i = 0;
  while (i + 1 < fronts.size()) {
    const Point& p = fronts[i][ix];
    if (p.ckpt) segs.push_back({static_cast<uint32_t>(i), p.next - 1});
    i = p.next;
    ix = p.next_ix;
  }
  return segs;
}

}  // namespace

uint64_t single_level_min_budget(const Chain& chain) {
  // Same recurrence with the cost ignored: minR(i) = min over units of max(g, S + minR(next)).
  const size_t n = chain.layers.size();
  const UnitScan u{chain};
  std::vector<uint64_t> best(n + 1, 0);
  for (size_t i = n; i-- > 0;) {
    const Layer& Li = chain.layers[i];
    uint64_t b = std::max(u.plain_g(i), Li.saved_bytes + best[i + 1]);
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes, xb_sum = 0, rec_max = 0, bwd_max = 0;
    for (size_t e = i; e < n; ++e) {
      const Layer& Le = chain.layers[e];
      if (e > i) fwd = std::max(fwd, u.x(e) + Le.output_bytes + Le.forward_temp_bytes);
      xb_sum += Le.saved_bytes;
      rec_max = std::max(rec_max, xb_sum + Le.forward_temp_bytes);
      bwd_max = std::max(bwd_max, xb_sum + Le.output_bytes + Le.backward_temp_bytes);
      if (xb_sum >= b) break;  // every later segment needs at least xb_sum
      const uint64_t g = std::max({fwd, Le.output_bytes + rec_max, bwd_max});
      b = std::min(b, std::max(g, Le.output_bytes + best[e + 1]));
    }
    best[i] = b;
  }
  return chain.input_bytes + best[0];
}

PlanResult single_level_optimal(const Chain& chain, uint64_t budget) {
  const uint64_t need = single_level_min_budget(chain);
  if (budget < need) throw_infeasible("optimal-single-level", budget, need);
  const auto fronts = build(chain, budget - chain.input_bytes);
  const Front& f0 = fronts[0];
  if (f0.empty()) throw_infeasible("optimal-single-level", budget, need);
  // Cost falls along the front: the last point within the room is the cheapest.
  const PlanResult r = evaluate(chain, plan_of(fronts, f0.size() - 1));
  if (r.peak_bytes != chain.input_bytes + f0.back().R || r.peak_bytes > budget)
    throw RequestError(code::kInternal, "", "internal error: single-level plan/peak mismatch");
  return r;
}

std::vector<FrontierPoint> single_level_frontier(const Chain& chain, uint64_t budget) {
  const uint64_t room =
      budget == 0 ? std::numeric_limits<uint64_t>::max()
                  : (budget < chain.input_bytes ? 0 : budget - chain.input_bytes);
  const auto fronts = build(chain, room);
  std::vector<FrontierPoint> pts;
  for (size_t q = 0; q < fronts[0].size(); ++q) {
    FrontierPoint p;
    p.checkpointed = plan_of(fronts, q);
    const PlanResult r = evaluate(chain, p.checkpointed);
    p.peak_bytes = r.peak_bytes;
    p.total_cost = r.total_cost;
    p.recompute_cost = r.recompute_cost;
    pts.push_back(std::move(p));
  }
  return pareto(std::move(pts));
}

}  // namespace placement
}  // namespace trainmem
