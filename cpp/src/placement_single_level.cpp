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

// All Pareto fronts, as parallel arrays (the merge reads only R and c). Point k of front i:
// the suffix from layer i needs headroom R[i][k] above what precedes it and costs c[i][k] to
// recompute (along a front R rises and c falls); its first unit ends at next[i][k] - 1 and
// continues with point link[i][k] & kIxMask of front next[i][k]; link[i][k] & kCkpt marks a
// checkpointed segment (else a plain layer). Fronts are packed into large blocks that never
// reallocate, so the pointers stay valid and there is no per-front allocation.
constexpr uint32_t kCkpt = uint32_t{1} << 31;
constexpr uint32_t kIxMask = kCkpt - 1;
struct Fronts {
  struct Block {
    std::vector<uint64_t> R;
    std::vector<double> c;
    std::vector<uint32_t> next, link;
  };
  std::vector<Block> blocks;
  std::vector<const uint64_t*> R;
  std::vector<const double*> c;
  std::vector<const uint32_t*> next, link;
  std::vector<uint32_t> size;
  explicit Fronts(size_t n) : R(n + 1), c(n + 1), next(n + 1), link(n + 1), size(n + 1, 0) {}
  void set(size_t i, const std::vector<uint64_t>& r, const std::vector<double>& cv,
           const std::vector<uint32_t>& nx, const std::vector<uint32_t>& lk) {
    const size_t m = r.size();
    if (m > kIxMask) throw RequestError(code::kTooLarge, "chain.layers", "Pareto front too large");
    if (blocks.empty() || blocks.back().R.size() + m > blocks.back().R.capacity()) {
      const size_t cap = std::max<size_t>(size_t{1} << 16, m);
      blocks.emplace_back();
      Block& b = blocks.back();
      b.R.reserve(cap);
      b.c.reserve(cap);
      b.next.reserve(cap);
      b.link.reserve(cap);
    }
    Block& b = blocks.back();  // within capacity: nothing moves
    const size_t at = b.R.size();
    b.R.insert(b.R.end(), r.begin(), r.end());
    b.c.insert(b.c.end(), cv.begin(), cv.end());
    b.next.insert(b.next.end(), nx.begin(), nx.end());
    b.link.insert(b.link.end(), lk.begin(), lk.end());
    R[i] = b.R.data() + at;
    c[i] = b.c.data() + at;
    next[i] = b.next.data() + at;
    link[i] = b.link.data() + at;
    size[i] = static_cast<uint32_t>(m);
  }
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
  // Calls f(g, S, cost, next, ckpt) for every unit starting at i with g and S within `lim`
  // (the plain layer first, then the segments [i..e] by rising e).
  template <class F>
  void units(size_t i, uint64_t lim, F&& f) const {
    const size_t n = c.layers.size();
    const Layer& Li = c.layers[i];
    f(plain_g(i), Li.saved_bytes, 0.0, i + 1, false);
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes;  // F_ck(i)
    uint64_t xb_sum = 0;                                     // savedBytes of i..p
    uint64_t rec_max = 0;  // max over p of (savedBytes i..p) + forwardTemp_p   (recompute)
    uint64_t bwd_max = 0;  // max over p of (savedBytes i..p) + outputBytes_p + backwardTemp_p
    double cost = 0;
    for (size_t e = i; e < n; ++e) {
      const Layer& Le = c.layers[e];
      if (e > i) fwd = std::max(fwd, x(e) + Le.output_bytes + Le.forward_temp_bytes);  // F_n(e)
      xb_sum += Le.saved_bytes;
      rec_max = std::max(rec_max, xb_sum + Le.forward_temp_bytes);
      bwd_max = std::max(bwd_max, xb_sum + Le.output_bytes + Le.backward_temp_bytes);
      cost += Le.forward_cost;
      if (xb_sum > lim || fwd > lim) break;  // both only grow with e
      const uint64_t S = Le.output_bytes;
      f(std::max({fwd, S + rec_max, bwd_max}), S, cost, e + 1, true);
    }
  }
};

// Heap pops allowed per search (a few seconds natively): the problem contains knapsack, so an
// exact search has no polynomial bound; past this the request is refused, never approximated.
constexpr uint64_t kMaxWork = uint64_t{200} << 20;

// One candidate list: a unit (plain layer or segment) starting at i followed by any point of
// the front where it ends; mapped as R = max(g, S + R'), c = cost + c'. Along the list R does
// not fall and c falls, so the lists can be merged lazily: a point costing at least the
// cheapest point already emitted (at a smaller or equal R) is dominated, and the list skips
// past all such points (galloping search: the next useful point is usually close).
struct Cand {
  const uint64_t* R;
  const double* c;
  uint32_t q, end;  // current index; end of the usable range (R within the room)
  uint64_t g, S;
  double cost;
  uint32_t next;
  bool ckpt;
};

// Builds all fronts; room = budget - input (UINT64_MAX: no pruning).
//
// Exact pruning by the prefix: pmin[i] is the least any feasible prefix ending at boundary i
// keeps stored (a plain forward pass: the smaller the storage, the more every later unit may
// use, so the minimum is reached greedily per boundary). A suffix point needing R > room -
// pmin[i] cannot follow any feasible prefix, so front i keeps only R <= room - pmin[i].
Fronts build(const Chain& chain, uint64_t room) {
  const size_t n = chain.layers.size();
  const UnitScan u{chain};
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  std::vector<uint64_t> pmin(n + 1, kNone);
  pmin[0] = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t p = pmin[i];
    if (p > room) continue;
    u.units(i, room - p, [&](uint64_t g, uint64_t S, double, size_t next, bool) {
      if (g <= room - p && p + S < pmin[next]) pmin[next] = p + S;
    });
  }
  Fronts fr(n);
  if (pmin[n] <= room) fr.set(n, {0}, {0.0}, {static_cast<uint32_t>(n)}, {0});
  // Front i is merged into these buffers, then copied into `fr`.
  std::vector<uint64_t> oR;
  std::vector<double> oc;
  std::vector<uint32_t> onext, olink;
  // The heap holds the head (R, c) of each candidate inline, in parallel arrays, so that the
  // sift loops compare without indirection and move only scalars (struct copies cost a
  // memcpy call each in the -Oz WASM build).
  std::vector<Cand> cands;
  std::vector<uint64_t> hr;
  std::vector<double> hc;
  std::vector<uint32_t> hid;
  uint64_t work = 0;
  auto sift_down = [&](size_t at) {  // entry `at` may be later than its children
    const size_t m = hid.size();
    const uint64_t vr = hr[at];
    const double vc = hc[at];
    const uint32_t vi = hid[at];
    for (;;) {
      size_t ch = 2 * at + 1;
      if (ch >= m) break;
      if (ch + 1 < m && (hr[ch + 1] < hr[ch] || (hr[ch + 1] == hr[ch] && hc[ch + 1] < hc[ch])))
        ++ch;
      if (vr < hr[ch] || (vr == hr[ch] && vc <= hc[ch])) break;
      hr[at] = hr[ch];
      hc[at] = hc[ch];
      hid[at] = hid[ch];
      at = ch;
    }
    hr[at] = vr;
    hc[at] = vc;
    hid[at] = vi;
  };
  for (size_t i = n; i-- > 0;) {
    if (pmin[i] > room) continue;  // no feasible prefix reaches boundary i
    const uint64_t lim = room - pmin[i];
    cands.clear();
    hr.clear();
    hc.clear();
    hid.clear();
    u.units(i, lim, [&](uint64_t g, uint64_t S, double cost, size_t next, bool ckpt) {
      const uint64_t* fR = fr.R[next];
      if (g > lim || fr.size[next] == 0 || S + fR[0] > lim) return;
      // end: first point whose R exceeds the room; q0: the last point clamped to R = g (the
      // cheapest of those; earlier ones are dominated).
      uint32_t lo = 0, hi = fr.size[next];
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (S + fR[mid] > lim)
          hi = mid;
        else
          lo = mid + 1;
      }
      const uint32_t end = lo;
      lo = 0;
      hi = end;
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (S + fR[mid] <= g)
          lo = mid + 1;
        else
          hi = mid;
      }
      const uint32_t q0 = lo > 0 ? lo - 1 : 0;
      const double* fc = fr.c[next];
      hr.push_back(std::max(g, S + fR[q0]));
      hc.push_back(cost + fc[q0]);
      hid.push_back(static_cast<uint32_t>(cands.size()));
      cands.push_back({fR, fc, q0, end, g, S, cost, static_cast<uint32_t>(next), ckpt});
    });
    for (size_t k = hid.size() / 2; k-- > 0;) sift_down(k);
    oR.clear();
    oc.clear();
    onext.clear();
    olink.clear();
    double best = std::numeric_limits<double>::infinity();
    while (!hid.empty()) {
      if (++work > kMaxWork)
        throw RequestError(code::kTooLarge, "chain.layers",
                           "the exact single-level search for this chain and budget exceeds its "
                           "work limit (its Pareto fronts are too large): use strategy optimal, "
                           "whose budget grid bounds the work, or a smaller budgetBytes");
      Cand& t = cands[hid[0]];
      if (hc[0] < best) {
        best = hc[0];
        oR.push_back(hr[0]);
        oc.push_back(best);
        onext.push_back(t.next);
        olink.push_back(t.q | (t.ckpt ? kCkpt : 0));
        ++t.q;
      } else {
        // skip to the first point cheaper than `best` (c falls along the list): gallop, then
        // bisect the last step
        const double lim_c = best - t.cost;
        uint32_t lo = t.q + 1, step = 1;
        while (lo < t.end && !(t.c[lo] < lim_c)) {
          lo += step;
          step *= 2;
        }
        uint32_t hi = std::min(lo, t.end);
        lo = hi > step / 2 ? std::max(t.q + 1, hi - step / 2) : t.q + 1;
        // invariant: the answer lies in [lo, hi]; t.c[p] >= lim_c for p < lo
        while (lo < hi) {
          const uint32_t mid = (lo + hi) / 2;
          if (t.c[mid] < lim_c)
            hi = mid;
          else
            lo = mid + 1;
        }
        t.q = lo;
      }
      // The top changed in place (or left): restore the heap by one sift-down.
      if (t.q < t.end) {
        hr[0] = std::max(t.g, t.S + t.R[t.q]);
        hc[0] = t.cost + t.c[t.q];
      } else {
        hr[0] = hr.back();
        hc[0] = hc.back();
        hid[0] = hid.back();
        hr.pop_back();
        hc.pop_back();
        hid.pop_back();
        if (hid.empty()) break;
      }
      sift_down(0);
    }
    fr.set(i, oR, oc, onext, olink);
  }
  return fr;
}

std::vector<Segment> plan_of(const Fronts& fr, size_t ix) {
  std::vector<Segment> segs;
  const size_t n = fr.size.size() - 1;
  size_t i = 0;
  while (i < n) {
    if (fr.link[i][ix] & kCkpt) segs.push_back({static_cast<uint32_t>(i), fr.next[i][ix] - 1});
    const size_t nx = fr.next[i][ix];
    ix = fr.link[i][ix] & kIxMask;
    i = nx;
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
  const Fronts fr = build(chain, budget - chain.input_bytes);
  if (fr.size[0] == 0) throw_infeasible("optimal-single-level", budget, need);
  // Cost falls along the front: the last point within the room is the cheapest.
  const size_t last = fr.size[0] - 1;
  const PlanResult r = evaluate(chain, plan_of(fr, last));
  if (r.peak_bytes != chain.input_bytes + fr.R[0][last] || r.peak_bytes > budget)
    throw RequestError(code::kInternal, "", "internal error: single-level plan/peak mismatch");
  return r;
}

std::vector<FrontierPoint> single_level_frontier(const Chain& chain, uint64_t budget) {
  const uint64_t room = budget == 0 ? std::numeric_limits<uint64_t>::max()
                                    : (budget < chain.input_bytes ? 0 : budget - chain.input_bytes);
  const Fronts fr = build(chain, room);
  std::vector<FrontierPoint> pts;
  for (size_t q = 0; q < fr.size[0]; ++q) {
    FrontierPoint p;
    p.checkpointed = plan_of(fr, q);
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
