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

// Heap pops allowed per search (a few seconds natively): the problem contains knapsack, so an
// exact search has no polynomial bound; past this the request is refused, never approximated.
constexpr uint64_t kMaxWork = uint64_t{200} << 20;

// One candidate list: a unit (plain layer or segment) starting at i followed by any point of
// the front where it ends; mapped as R = max(g, S + R'), c = cost + c'. Along the list R does
// not fall and c falls, so the lists can be merged lazily: a point costing at least the
// cheapest point already emitted (at a smaller or equal R) is dominated, and the list skips
// past all such points by binary search.
// The head's (R, c) are cached in r and cv so that heap comparisons stay inside the heap.
struct Cand {
  const Front* f;
  uint32_t q, end;  // current index; end of the usable range (R within the room)
  uint64_t g, S;
  double cost;
  uint32_t next;
  bool ckpt;
  uint64_t r;
  double cv;
  void load() {
    r = std::max(g, S + (*f)[q].R);
    cv = cost + (*f)[q].c;
  }
  uint64_t R() const { return r; }
  double c() const { return cv; }
};

// Builds all fronts; room = budget - input (UINT64_MAX: no pruning).
std::vector<Front> build(const Chain& chain, uint64_t room) {
  const size_t n = chain.layers.size();
  const UnitScan u{chain};
  std::vector<Front> fronts(n + 1);
  fronts[n].push_back({0, 0.0, static_cast<uint32_t>(n), 0, false});
  // The heap holds indices into `cands` (a Cand is ~56 bytes; moving indices keeps the
  // sift loops free of struct copies, which cost a memcpy call each in the -Oz WASM build).
  std::vector<Cand> cands;
  std::vector<uint32_t> heap;
  uint64_t work = 0;
  auto later = [&cands](uint32_t x, uint32_t y) {  // heap order: smallest (R, c) on top
    const Cand& a = cands[x];
    const Cand& b = cands[y];
    return a.r != b.r ? a.r > b.r : a.cv > b.cv;
  };
  auto sift_down = [&]() {  // the top of `heap` may be out of place
    const size_t m = heap.size();
    if (m < 2) return;
    size_t at = 0;
    const uint32_t v = heap[0];
    for (;;) {
      size_t ch = 2 * at + 1;
      if (ch >= m) break;
      if (ch + 1 < m && later(heap[ch], heap[ch + 1])) ++ch;
      if (!later(v, heap[ch])) break;
      heap[at] = heap[ch];
      at = ch;
    }
    heap[at] = v;
  };
  auto add = [&](const Front& f, uint64_t g, uint64_t S, double cost, size_t next, bool ckpt) {
    if (g > room || f.empty() || S + f[0].R > room) return;
    // end: first point whose R exceeds the room; q0: the last point clamped to R = g (the
    // cheapest of those; earlier ones are dominated).
    uint32_t lo = 0, hi = static_cast<uint32_t>(f.size());
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (S + f[mid].R > room)
        hi = mid;
      else
        lo = mid + 1;
    }
    const uint32_t end = lo;
    lo = 0;
    hi = end;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (S + f[mid].R <= g)
        lo = mid + 1;
      else
        hi = mid;
    }
    const uint32_t q0 = lo > 0 ? lo - 1 : 0;
    cands.push_back({&f, q0, end, g, S, cost, static_cast<uint32_t>(next), ckpt, 0, 0.0});
    cands.back().load();
    heap.push_back(static_cast<uint32_t>(cands.size() - 1));
  };
  for (size_t i = n; i-- > 0;) {
    heap.clear();
    cands.clear();
    const Layer& Li = chain.layers[i];
    add(fronts[i + 1], u.plain_g(i), Li.saved_bytes, 0.0, i + 1, false);  // plain layer i
    // checkpointed segment [i..e]
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes;  // F_ck(i)
    uint64_t xb_sum = 0;                                     // savedBytes of i..p
    uint64_t rec_max = 0;  // max over p of (savedBytes i..p) + forwardTemp_p   (recompute)
    uint64_t bwd_max = 0;  // max over p of (savedBytes i..p) + outputBytes_p + backwardTemp_p
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
      add(fronts[e + 1], std::max({fwd, S + rec_max, bwd_max}), S, cost, e + 1, true);
    }
    Front& out = fronts[i];
    double best = std::numeric_limits<double>::infinity();
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      if (++work > kMaxWork)
        throw RequestError(code::kTooLarge, "chain.layers",
                           "the exact single-level search for this chain and budget exceeds its "
                           "work limit (its Pareto fronts are too large): use strategy optimal, "
                           "whose budget grid bounds the work, or a smaller budgetBytes");
      Cand& t = cands[heap.front()];
      if (t.c() < best) {
        best = t.c();
        out.push_back({t.R(), best, t.next, t.q, t.ckpt});
        ++t.q;
      } else {
        // skip to the first point cheaper than `best` (c falls along the list)
        uint32_t lo = t.q + 1, hi = t.end;
        while (lo < hi) {
          const uint32_t mid = (lo + hi) / 2;
          if (t.cost + (*t.f)[mid].c < best)
            hi = mid;
          else
            lo = mid + 1;
        }
        t.q = lo;
      }
      // The top changed in place (or left): restore the heap by one sift-down.
      if (t.q < t.end) {
        t.load();
      } else {
        heap.front() = heap.back();
        heap.pop_back();
      }
      sift_down();
    }
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
  const uint64_t room = budget == 0 ? std::numeric_limits<uint64_t>::max()
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
