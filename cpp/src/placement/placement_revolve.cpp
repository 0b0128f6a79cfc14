// revolve: binomial checkpointing for homogeneous chains, Griewank & Walther, "Algorithm 799:
// Revolve" (ACM TOMS 26(1), 2000). With c snapshots (the one holding the chain input included)
// and l steps, the minimal number of forward steps that are not the taping step of their own
// adjoint is t(l, c) = r*l - C(c + r, c + 1), r minimal with C(c + r, c) >= l. The schedule
// follows the recursion t(l, c) = min_{0<l'<l} l' + t(l - l', c - 1) + t(l', c): advance l'
// steps, take a snapshot there, reverse the tail with one snapshot fewer, then the head.
// Chains over kRevolveScheduleLayers layers or kRevolveScheduleOps operations get the closed form
// only: the cost of the schedule
// (one forward and one backward per layer, plus t(l, c) forward steps) without the schedule.
#include <cmath>
#include <limits>
#include <vector>

#include "placement/placement_internal.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace placement {
namespace {

// C(n, k) as a double, saturating at 1e300 (only compared with l <= 2^32).
double binom(uint64_t n, uint64_t k) {
  if (k > n) return 0;
  k = std::min(k, n - k);
  double r = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
    if (r > 1e300) return 1e300;
  }
  return std::round(r);
}

// t(l', c') for every l' <= l and c' <= c, from the closed form (r grows with l').
class Steps {
 public:
  Steps(uint64_t l, uint64_t c) : l_(l), t_((c + 1) * (l + 1), 0) {
    for (uint64_t cc = 0; cc <= c; ++cc) {
      uint64_t r = 0;
      for (uint64_t ll = 0; ll <= l; ++ll) {
        if (ll <= 1) continue;
        if (cc == 0) {
          t_[cc * (l + 1) + ll] = std::numeric_limits<double>::infinity();
          continue;
        }
        while (binom(cc + r, cc) < static_cast<double>(ll)) ++r;
        t_[cc * (l + 1) + ll] =
            static_cast<double>(r) * static_cast<double>(ll) - binom(cc + r, cc + 1);
      }
    }
  }
  double at(uint64_t l, uint64_t c) const { return t_[c * (l_ + 1) + l]; }

 private:
  uint64_t l_;
  std::vector<double> t_;
};

void reverse(const Steps& t, uint32_t s, uint32_t e, uint64_t c, uint32_t n, std::vector<Op>& ops) {
  const uint64_t l = e - s;
  if (l == 1) {
    ops.push_back({OpKind::kForwardAll, s});
    if (s + 1 == n) ops.push_back({OpKind::kLoss, n});
    ops.push_back({OpKind::kBackward, s});
    return;
  }
  // Best split by the recursion's right-hand side (ties: the largest l').
  uint64_t best_l = 0;
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t lp = 1; lp < l; ++lp) {
    const double v = static_cast<double>(lp) + t.at(l - lp, c - 1) + t.at(lp, c);
    if (v <= best) {
      best = v;
      best_l = lp;
    }
  }
  ops.push_back({OpKind::kForwardCheck, s});
  for (uint32_t p = s + 1; p < s + best_l; ++p) ops.push_back({OpKind::kForwardNoGrad, p});
  reverse(t, static_cast<uint32_t>(s + best_l), e, c - 1, n, ops);
  reverse(t, s, static_cast<uint32_t>(s + best_l), c, n, ops);
}

}  // namespace

uint64_t revolve_repetitions(uint64_t l, uint64_t c) {
  uint64_t r = 0;
  while (binom(c + r, c) < static_cast<double>(l)) ++r;
  return r;
}

double revolve_extra_steps(uint64_t l, uint64_t c) {
  if (l <= 1) return 0;
  if (c == 0) return std::numeric_limits<double>::infinity();
  // Griewank & Walther 2000, Prop. 1: t(l, c) = r*l - C(c + r, c + 1).
  const uint64_t r = revolve_repetitions(l, c);
  return static_cast<double>(r) * static_cast<double>(l) - binom(c + r, c + 1);
}

bool revolve_schedulable(uint64_t l, uint64_t c) {
  if (l > kRevolveScheduleLayers) return false;
  // One forward-all and one backward per layer, the loss, and t(l, c) further forward steps.
  const double ops = 2.0 * static_cast<double>(l) + 1 + revolve_extra_steps(l, std::min(c, l));
  return ops <= static_cast<double>(kRevolveScheduleOps);
}

PlanResult revolve_plan(const Chain& chain, uint32_t snapshots) {
  const uint32_t n = static_cast<uint32_t>(chain.layers.size());
  const Layer& a = chain.layers[0];
  for (uint32_t i = 1; i < n; ++i) {
    const Layer& b = chain.layers[i];
    if (b.forward_cost != a.forward_cost || b.backward_cost != a.backward_cost ||
        b.output_bytes != a.output_bytes || b.saved_bytes != a.saved_bytes ||
        b.forward_temp_bytes != a.forward_temp_bytes ||
        b.backward_temp_bytes != a.backward_temp_bytes)
      fail(code::kUnsupported, "chain.layers[" + std::to_string(i) + "]",
           Message{"error.revolve.homogeneous", {{"i", std::to_string(i)}}});
  }
  const uint64_t c = std::min<uint64_t>(snapshots, n);
  const double t = revolve_extra_steps(n, c);
  PlanResult r;
  if (revolve_schedulable(n, c)) {
    std::vector<Op> ops;
    const Steps steps(n, c);
    reverse(steps, 0, n, c, n, ops);
    r = simulate(chain, ops);
    r.schedule = std::move(ops);
  } else {
    // Griewank & Walther 2000: every layer runs one taping forward and one backward, and the
    // schedule runs t(l, c) further forward steps; the chain is homogeneous (checked above).
    r.scheduled = false;
    r.forward_cost = static_cast<double>(n) * a.forward_cost;
    r.backward_cost = static_cast<double>(n) * a.backward_cost;
    r.recompute_cost = t * a.forward_cost;
    r.total_cost = r.forward_cost + r.backward_cost + r.recompute_cost;
    const double base = r.forward_cost + r.backward_cost;
    r.overhead_fraction = base > 0 ? r.recompute_cost / base : 0.0;
    r.details.push_back(count_fact("scheduleLayerLimit", kRevolveScheduleLayers));
    r.details.push_back(count_fact("scheduleOperationLimit", kRevolveScheduleOps));
  }
  r.details.push_back(count_fact("snapshots", snapshots));
  r.details.push_back(count_fact("repetitions", revolve_repetitions(n, c)));
  r.details.push_back(real_fact("extraForwardSteps", t));
  return r;
}

}  // namespace placement
}  // namespace trainmem
