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
#include <memory>

#include "placement/placement_internal.hpp"
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
  struct Block {  // fixed capacity: never reallocates
    std::unique_ptr<uint64_t[]> R;
    std::unique_ptr<double[]> c;
    std::unique_ptr<uint32_t[]> next, link;
    size_t used = 0, cap = 0;
  };
  std::vector<Block> blocks;
  std::vector<const uint64_t*> R;
  std::vector<const double*> c;
  std::vector<const uint32_t*> next, link;
  std::vector<uint32_t> size;
  Fronts() = default;
  explicit Fronts(size_t n) : R(n + 1), c(n + 1), next(n + 1), link(n + 1), size(n + 1, 0) {}
  // Where the next front goes (m points): written in place, then close().
  struct Out {
    uint64_t* R;
    double* c;
    uint32_t *next, *link;
  };
  Out open(size_t m) {
    if (m > kIxMask) fail(code::kTooLarge, "chain.layers", Message{"error.singleLevel.pareto", {}});
    if (blocks.empty() || blocks.back().used + m > blocks.back().cap) {
      Block b;
      b.cap = std::max<size_t>(size_t{1} << 16, m);
      b.R.reset(new uint64_t[b.cap]);
      b.c.reset(new double[b.cap]);
      b.next.reset(new uint32_t[b.cap]);
      b.link.reset(new uint32_t[b.cap]);
      blocks.push_back(std::move(b));
    }
    Block& b = blocks.back();
    return {b.R.get() + b.used, b.c.get() + b.used, b.next.get() + b.used, b.link.get() + b.used};
  }
  void close(size_t i, size_t m) {  // front i: the m points written at open()
    Block& b = blocks.back();
    R[i] = b.R.get() + b.used;
    c[i] = b.c.get() + b.used;
    next[i] = b.next.get() + b.used;
    link[i] = b.link.get() + b.used;
    size[i] = static_cast<uint32_t>(m);
    b.used += m;
  }
};

// g and S of units starting at layer i, in the same memory model as the simulator. With a
// quantum q > 1 every size is counted in units of q bytes, rounded up (`up`: a plan that fits
// the rounded sizes fits the bytes) or down (a relaxation: no plan that fits the bytes is lost).
struct UnitScan {
  const Chain& c;
  uint64_t q = 1;
  bool up = true;
  // Units start and end at multiples of `block` layers (and at the chain's end); a plain unit is
  // then a run of `block` plain layers. block = 1: every single-level plan (exact).
  size_t block = 1;
  uint64_t qz(uint64_t v) const { return q == 1 ? v : v / q + (up && v % q != 0 ? 1 : 0); }
  uint64_t x(size_t k) const { return k == 0 ? c.input_bytes : c.layers[k - 1].output_bytes; }
  size_t next(size_t i) const { return std::min(i + block, c.layers.size()); }
  // The index of segment [i..e] among the segment units starting at i.
  size_t seg_index(size_t i, size_t e) const { return (e + 1 - i + block - 1) / block - 1; }
  uint64_t out(size_t i) const { return qz(c.layers[i].output_bytes); }
  // The plain unit at i (layers i..next(i)-1 each run with autograd): what it keeps, S, and
  // its highest point above P, g (each layer's F_all and B peaks above what the run keeps
  // before it).
  uint64_t saved(size_t i) const {
    uint64_t S = 0;
    for (size_t p = i; p < next(i); ++p) S += c.layers[p].saved_bytes;
    return qz(S);
  }
  uint64_t plain_g(size_t i) const {
    uint64_t before = 0, g = 0;
    for (size_t p = i; p < next(i); ++p) {
      const Layer& L = c.layers[p];
      g = std::max(g, before + L.saved_bytes +
                          std::max(L.forward_temp_bytes, L.output_bytes + L.backward_temp_bytes));
      before += L.saved_bytes;
    }
    return qz(g);
  }
  // Calls f(g, S, cost, next, ckpt) for every unit starting at i with g and S within `lim`
  // (the plain unit first, then the segments [i..e] by rising e); adds the layers scanned to
  // *steps.
  template <class F>
  void units(size_t i, uint64_t lim, uint64_t* steps, F&& f) const {
    const size_t n = c.layers.size();
    const Layer& Li = c.layers[i];
    f(plain_g(i), saved(i), 0.0, next(i), false);
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
      ++*steps;
      if (qz(xb_sum) > lim || qz(fwd) > lim) break;          // both only grow with e
      if ((e + 1 - i) % block != 0 && e + 1 != n) continue;  // ends inside a block
      const uint64_t S = Le.output_bytes;
      f(qz(std::max({fwd, S + rec_max, bwd_max})), qz(S), cost, e + 1, true);
    }
  }
};

// The search stopped at its work limit (caught in this file: a coarser grid is tried).
struct WorkLimit {};

// Steps allowed to the searches of one request (units scanned, steps of first_live, points
// merged): the problem contains knapsack, so an exact search has no polynomial bound. Set with
// bench/bounded.bench.mjs so that any 1,000-layer chain is answered within 50 ms in
// WebAssembly at every budget (bench/RESULTS.md, "Bounded work"; 3 Mi steps took 30-54 ms
// natively, 85-150 ms in WebAssembly; 1 Mi: 9-18 ms natively, the recompute of the bench's
// chains 0-6 % higher); see refine().
constexpr uint64_t kSearchWork = uint64_t{1} << 20;
constexpr uint64_t kLowestPeakWork = uint64_t{64} << 20;  // units scanned for the lowest peak
constexpr uint64_t kPolishSteps = uint64_t{1} << 20;      // layers passed over by polish()

// One candidate list: a segment [i..e] followed by any point of front e+1; mapped as
// R = max(g, S + R'), c = cost + c'. Along the list R does not fall and c falls.
struct Cand {
  const uint64_t* R;
  const double* c;
  uint32_t end;  // end of the usable range (R within the room)
  uint64_t g, S;
  double cost;
  uint32_t next;
  uint32_t u;  // P points with R <= the current point's R, plus one (see first_live)
};

// Builds all fronts; room = budget - input (UINT64_MAX: no pruning).
//
// Exact pruning by the prefix: pmin[i] is the least any feasible prefix ending at boundary i
// keeps stored (a plain forward pass: the smaller the storage, the more every later unit may
// use, so the minimum is reached greedily per boundary). A suffix point needing R > room -
// pmin[i] cannot follow any feasible prefix, so front i keeps only R <= room - pmin[i].
//
// Most of front i is front i+1 carried over. A staircase U of exact plans of front i is first
// derived from front i+1 in linear time: A, the plain layer i before each point (the whole
// plain candidate list); B, segment [i..e] in place of [i+1..e] before the same continuation
// (kept while R stays sorted). Each point is computed exactly as its candidate list computes
// it. Then each segment list is merged into the staircase P (U at first), one list at a time:
// a list point that a P point dominates or equals can never be on the front, so a list walks
// P (first_live) and skips such points, and whole lists, without sorting or heap work; its
// other points replace what they dominate in P's tail. After the last list, P is front i.
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint32_t kNoPos = std::numeric_limits<uint32_t>::max();

// Staircase points (R, c, next, link) as parallel arrays.
struct Points {
  std::vector<uint64_t> R;
  std::vector<double> c;
  std::vector<uint32_t> next, link;
  void grow(size_t m) {  // at least m entries
    if (R.size() >= m) return;
    R.resize(m);
    c.resize(m);
    next.resize(m);
    link.resize(m);
  }
  void set(size_t k, uint64_t r, double cost, uint32_t nx, uint32_t lk) {
    R[k] = r;
    c[k] = cost;
    next[k] = nx;
    link[k] = lk;
  }
};

struct FrontBuilder {
  const Chain& chain;
  const size_t n;
  const uint64_t room;  // in units of u.q
  const UnitScan u;
  const uint64_t max_work;
  std::vector<uint64_t> pmin;
  Fronts fr;
  std::vector<Cand> cands;
  std::vector<uint32_t> order;  // the order in which the lists are merged
  // Segment units of position i by end e (index e - i): g and cost, g = kNone if not a unit.
  std::vector<uint64_t> seg_g;
  std::vector<double> seg_cost;
  // P (see above): R strictly rising, c strictly falling, with its plans (next, link); P holds
  // its points at [1, um] between sentinels (R 0 at cost +inf; R kNone). B's points wait in B.
  Points P, B;
  Points V;  // the new tail of P while a list is merged
  // Per segment end e, the last position i whose list [i..e] added points to P.
  std::vector<uint32_t> emitted_at;
  uint32_t um = 0;  // P's points, at [1, um]
  uint64_t work = 0;

  FrontBuilder(const Chain& c, uint64_t rm, const UnitScan& scan, uint64_t limit)
      : chain(c),
        n(c.layers.size()),
        room(rm),
        u(scan),
        max_work(limit),
        pmin(n + 1, kNone),
        fr(n),
        emitted_at(n, kNoPos) {}

  // pmin (see above), and the last front: the empty suffix, if a feasible prefix reaches it.
  void start() {
    pmin[0] = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t p = pmin[i];
      if (p > room) continue;
      u.units(i, room - p, &work, [&](uint64_t g, uint64_t S, double, size_t next, bool) {
        if (g <= room - p && p + S < pmin[next]) pmin[next] = p + S;
      });
      if (work > max_work) throw WorkLimit();
    }
    if (pmin[n] <= room) {
      const Fronts::Out o = fr.open(1);
      o.R[0] = 0;
      o.c[0] = 0.0;
      o.next[0] = static_cast<uint32_t>(n);
      o.link[0] = 0;
      fr.close(n, 1);
    }
  }

  // First point of t at or after q that neither `best` (cheapest point merged, at a smaller
  // R) nor a P point (P's cheapest with R <= its R) dominates or equals; t.end if none. Lists
  // and P mostly interleave point by point (fronts of neighbouring positions are alike), so
  // this walks both in step, a few points linearly, then by galloping (runs of dominated list
  // points, or of P points between two list points). t.u - 1 counts the P points with R <= the
  // list's current R; it only grows.
  inline uint32_t first_live(Cand& t, uint32_t q, double best) {
    const uint64_t* ur = P.R.data();
    const double* ucp = P.c.data();
    const uint64_t* tR = t.R;
    const double* tc = t.c;
    const uint64_t g = t.g, S = t.S;
    const double cost = t.cost;
    const uint32_t end = t.end;
    const double cost_last = cost + tc[end - 1];
    uint32_t j = t.u;               // ur[j - 1] <= R of point q (sentinels at both ends)
    const uint32_t p_end = um + 1;  // P's end sentinel
    uint32_t steps = 0;
    while (q < end) {
      ++steps;
      const uint64_t rq = std::max(g, S + tR[q]);
      if (ur[j] <= rq) {
        uint32_t k = 0;
        do ++j, ++k;
        while (ur[j] <= rq && k < 8);
        if (ur[j] <= rq) {  // a run of P points: gallop, then bisect the last step
          uint32_t lo = j + 1, step = 1;
          while (ur[lo] <= rq) {
            j = lo;
            lo += step;
            step *= 2;
            if (lo > p_end) lo = p_end;
          }
          j = static_cast<uint32_t>(std::upper_bound(ur + j + 1, ur + lo, rq) - ur);
        }
      }
      // the cheapest P point with R <= rq (P keeps equal points: they are its)
      const double lim_c = std::min(best, ucp[j - 1]);
      if (cost + tc[q] < lim_c) break;
      if (!(cost_last < lim_c)) {  // even the cheapest point left is dominated
        q = end;
        break;
      }
      q = skip_dominated(t, q, lim_c);
    }
    work += steps;
    t.u = j;
    return q;
  }

  // Past q, the first point of t costing less than lim_c (later points cost less): a few
  // linearly, then a run by galloping and bisecting the last step; t.end if none.
  static inline uint32_t skip_dominated(const Cand& t, uint32_t q, double lim_c) {
    const double* tc = t.c;
    const double cost = t.cost;
    const uint32_t end = t.end;
    uint32_t k = 0;
    do ++q, ++k;
    while (q < end && !(cost + tc[q] < lim_c) && k < 4);
    if (q == end || cost + tc[q] < lim_c) return q;
    uint32_t lo = q + 1, step = 1;
    while (lo < end && !(cost + tc[lo] < lim_c)) {
      q = lo;
      lo += step;
      step *= 2;
    }
    uint32_t hi = std::min(lo, end);
    lo = q + 1;  // the answer lies in [lo, hi]; cost + c[p] >= lim_c for p < lo
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (cost + tc[mid] < lim_c)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }

  // The segment units starting at i within lim (seg_g, seg_cost) and their candidate lists,
  // each cut at its first point whose R exceeds lim.
  void collect_lists(size_t i, uint64_t lim) {
    cands.clear();
    seg_g.clear();
    seg_cost.clear();
    u.units(i, lim, &work, [&](uint64_t g, uint64_t S, double cost, size_t next, bool ckpt) {
      if (!ckpt) return;  // the plain layer's list is part of U (below)
      const bool ok = g <= lim && fr.size[next] > 0 && S + fr.R[next][0] <= lim;
      seg_g.push_back(ok ? g : kNone);
      seg_cost.push_back(cost);
      if (ok) cands.push_back({fr.R[next], fr.c[next], 0, g, S, cost, uint32_t(next), 0});
    });
    for (Cand& t : cands) {  // end: first point whose R exceeds the room
      uint32_t lo = 0, hi = fr.size[t.next];
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (t.S + t.R[mid] > lim)
          hi = mid;
        else
          lo = mid + 1;
      }
      t.end = lo;
    }
  }

  // B's points (see above) into B; returns their count. B is nearly sorted (by R of the front
  // i+1 point, unless segment [i..e] raises it): out-of-order points are dropped.
  uint32_t swapped_segments(size_t i, uint64_t lim, uint32_t m1) {
    const size_t i1 = u.next(i);
    const uint32_t* nx1 = fr.next[i1];
    const uint32_t* lk1 = fr.link[i1];
    uint32_t nb = 0;
    for (uint32_t k = 0; k < m1; ++k) {
      if (!(lk1[k] & kCkpt)) continue;
      const size_t e = nx1[k] - 1, at = u.seg_index(i, e);
      if (at >= seg_g.size() || seg_g[at] == kNone) continue;
      const uint32_t kk = lk1[k] & kIxMask;
      const uint64_t r = std::max(seg_g[at], u.out(e) + fr.R[e + 1][kk]);
      if (r > lim || (nb > 0 && r < B.R[nb - 1])) continue;
      B.set(nb, r, seg_cost[at] + fr.c[e + 1][kk], static_cast<uint32_t>(e + 1), kk | kCkpt);
      ++nb;
    }
    return nb;
  }

  // U from front i+1 (see above) into P at [1, um], with its sentinels.
  void staircase(size_t i, uint64_t lim) {
    const size_t i1 = u.next(i);
    const uint32_t m1 = fr.size[i1];
    work += m1;
    P.grow(size_t{m1} * 2 + 2);
    B.grow(m1);
    um = 0;
    P.R[0] = 0;
    P.c[0] = kInf;
    if (m1 > 0) {
      const uint64_t* R1 = fr.R[i1];
      const double* c1 = fr.c[i1];
      const uint32_t nb = swapped_segments(i, lim, m1);
      // A's points: the plain list (R = max(pg, saved + R'), c = 0 + c'), while R <= lim.
      const uint64_t pg = u.plain_g(i), saved = u.saved(i);
      const uint32_t na = pg <= lim ? m1 : 0;
      uint32_t x = 0, y = 0;
      uint64_t ra = na > 0 ? std::max(pg, saved + R1[0]) : kNone;
      if (ra > lim) ra = kNone;
      // Merge A and B by R into the staircase (c strictly falling, R strictly rising).
      while (ra != kNone || y < nb) {
        const bool takeA = y == nb || (ra != kNone && ra <= B.R[y]);
        uint64_t r;
        double c;
        uint32_t nx, lk;
        if (takeA) {
          r = ra;
          c = c1[x];
          nx = static_cast<uint32_t>(i1);
          lk = x;
          ++x;
          ra = x < na ? std::max(pg, saved + R1[x]) : kNone;
          if (ra > lim) ra = kNone;
        } else {
          r = B.R[y];
          c = B.c[y];
          nx = B.next[y];
          lk = B.link[y];
          ++y;
        }
        if (!(c < P.c[um])) continue;
        if (um == 0 || P.R[um] != r) ++um;  // (same R, cheaper: replaces)
        P.set(um, r, c, nx, lk);
      }
    }
    P.R[um + 1] = kNone;  // sentinel
  }

  // Merges list t into P at position i (see above).
  void merge_list(Cand& t, size_t i) {
    if (++work > max_work) throw WorkLimit();
    t.u = static_cast<uint32_t>(std::upper_bound(P.R.data() + 1, P.R.data() + um + 1, t.g) -
                                P.R.data());
    // All points have R >= g: dropped at once if even the cheapest costs at least P's
    // cheapest with R <= g.
    if (!(t.cost + t.c[t.end - 1] < P.c[t.u - 1])) return;
    // q0: the last point clamped to R = g (the cheapest of those; earlier ones are
    // dominated).
    uint32_t lo = 0, hi = t.end;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (t.S + t.R[mid] <= t.g)
        lo = mid + 1;
      else
        hi = mid;
    }
    uint32_t q = first_live(t, lo > 0 ? lo - 1 : 0, kInf);
    if (q == t.end) return;
    // Merge: P's points before R(q) stay; the rest of P and the list's live points are
    // merged into V, which then replaces P's tail.
    uint64_t rq = std::max(t.g, t.S + t.R[q]);
    uint32_t p = t.u;  // P's first point with R > rq
    uint32_t a = p;    // P's tail starts at a (a point at R = rq costs more: dropped)
    if (a > 1 && P.R[a - 1] == rq) --a;
    V.grow((um + 1 - a) + (t.end - q) + 2);
    size_t w = 0;
    double best = kInf;
    emitted_at[t.next - 1] = static_cast<uint32_t>(i);
    for (;;) {
      // the list's point q (cheaper than every point before it, of P or the list)
      best = t.cost + t.c[q];
      V.set(w, rq, best, t.next, q | kCkpt);
      ++w;
      q = first_live(t, q + 1, best);
      rq = q < t.end ? std::max(t.g, t.S + t.R[q]) : kNone;
      // P's points up to the list's next live point; those costing at least `best` are
      // dominated (P's costs fall: they form a run).
      while (P.R[p] < rq) {
        if (P.c[p] < best) {
          best = P.c[p];
          V.set(w, P.R[p], best, P.next[p], P.link[p]);
          ++w;
        }
        ++p;
      }
      if (q == t.end) break;
      // a P point at R = rq costs more than q (first_live): skipped by the loop above
      // next time (its cost is at least best then)
    }
    work += w;
    um = static_cast<uint32_t>(a - 1 + w);
    P.grow(size_t{um} + 2);
    std::copy(V.R.begin(), V.R.begin() + w, P.R.begin() + a);
    std::copy(V.c.begin(), V.c.begin() + w, P.c.begin() + a);
    std::copy(V.next.begin(), V.next.begin() + w, P.next.begin() + a);
    std::copy(V.link.begin(), V.link.begin() + w, P.link.begin() + a);
    P.R[um + 1] = kNone;
  }

  // Front i: U, then every segment list merged into it.
  void front(size_t i) {
    const uint64_t lim = room - pmin[i];
    collect_lists(i, lim);
    staircase(i, lim);
    // The lists are merged into P (U to begin with) one at a time: lists that beat U at
    // position i+1 (new points there) first, as they likely do again; each later list mostly
    // dies in first_live against the points the earlier ones added.
    order.clear();
    for (uint32_t k = 0; k < cands.size(); ++k)
      if (emitted_at[cands[k].next - 1] == u.next(i)) order.push_back(k);
    for (uint32_t k = 0; k < cands.size(); ++k)
      if (emitted_at[cands[k].next - 1] != u.next(i)) order.push_back(k);
    for (const uint32_t k : order) merge_list(cands[k], i);
    const Fronts::Out o = fr.open(um);
    std::copy(P.R.begin() + 1, P.R.begin() + um + 1, o.R);
    std::copy(P.c.begin() + 1, P.c.begin() + um + 1, o.c);
    std::copy(P.next.begin() + 1, P.next.begin() + um + 1, o.next);
    std::copy(P.link.begin() + 1, P.link.begin() + um + 1, o.link);
    fr.close(i, um);
  }
};

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

namespace {

// The lowest peak of any single-level plan and one plan reaching it: the recurrence of the
// fronts with the cost ignored, minR(i) = min over units of max(g, S + minR(next)).
struct LowestPeak {
  uint64_t bytes = 0;
  std::vector<Segment> plan;
};

LowestPeak lowest_peak(const Chain& chain) {
  const size_t n = chain.layers.size();
  const UnitScan u{chain};
  std::vector<uint64_t> best(n + 1, 0);
  std::vector<uint32_t> end(n, 0);  // the unit chosen at i: [i..end[i]] (end = i: plain)
  std::vector<uint8_t> ckpt(n, 0);
  uint64_t steps = 0;
  for (size_t i = n; i-- > 0;) {
    const Layer& Li = chain.layers[i];
    uint64_t b = std::max(u.plain_g(i), Li.saved_bytes + best[i + 1]);
    end[i] = static_cast<uint32_t>(i);
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes, xb_sum = 0, rec_max = 0, bwd_max = 0;
    for (size_t e = i; e < n; ++e) {
      const Layer& Le = chain.layers[e];
      if (e > i) fwd = std::max(fwd, u.x(e) + Le.output_bytes + Le.forward_temp_bytes);
      xb_sum += Le.saved_bytes;
      rec_max = std::max(rec_max, xb_sum + Le.forward_temp_bytes);
      bwd_max = std::max(bwd_max, xb_sum + Le.output_bytes + Le.backward_temp_bytes);
      if (xb_sum >= b || fwd >= b) break;  // every later segment needs at least these
      if (++steps > kLowestPeakWork)
        fail(code::kTooLarge, "chain.layers", Message{"error.singleLevel.tooMany", {}});
      const uint64_t g = std::max({fwd, Le.output_bytes + rec_max, bwd_max});
      const uint64_t v = std::max(g, Le.output_bytes + best[e + 1]);
      if (v < b) {
        b = v;
        end[i] = static_cast<uint32_t>(e);
        ckpt[i] = 1;
      }
    }
    best[i] = b;
  }
  LowestPeak r;
  r.bytes = chain.input_bytes + best[0];
  for (size_t i = 0; i < n; i = end[i] + 1)
    if (ckpt[i]) r.plan.push_back({static_cast<uint32_t>(i), end[i]});
  return r;
}

// The fronts of the finest blocks whose search ends within kSearchWork, all searches together:
// blocks of 2^k layers from the coarsest (a block at most 1/8 of the chain) down to 1 layer
// (every single-level plan: exact). Each finer search gets the work the coarser ones left;
// the first that runs out ends the refinement. block: the blocks of the fronts returned
// (0: none finished, which needs a chain of over ~2^20 units at its coarsest).
struct Refined {
  Fronts fr;
  size_t block = 0;
};

Refined refine(const Chain& chain, uint64_t room) {
  const size_t n = chain.layers.size();
  size_t coarsest = 1;
  while (coarsest * 2 * 8 <= n) coarsest *= 2;
  Refined out;
  uint64_t left = kSearchWork;
  for (size_t block = coarsest; block >= 1; block /= 2) {
    UnitScan u{chain};
    u.block = block;
    FrontBuilder b(chain, room, u, left);
    try {
      b.start();
      for (size_t i = n; i-- > 0;) {
        if (b.pmin[i] <= room) b.front(i);  // else no feasible prefix reaches boundary i
        if (b.work > left) throw WorkLimit();
      }
    } catch (const WorkLimit&) {
      break;
    }
    left -= std::min(left, b.work);
    out.fr = std::move(b.fr);
    out.block = block;
  }
  return out;
}

// A bounded answer improved by local moves: each checkpointed segment's first and last layer
// shifted by up to block - 1 layers (also the lowest-peak plan's, by up to 8), a move kept
// when the plan then recomputes less and still fits (the one-pass figures, placement_metrics:
// equal to the simulator). At most kPolishSteps / layers plans are tried (each a pass over the
// chain). The result is never worse than the plan it starts from.
std::vector<Segment> polish(const Chain& chain, uint64_t budget, std::vector<Segment> segs,
                            uint32_t reach) {
  if (!metrics_apply(chain) || segs.empty()) return segs;
  const uint32_t n = static_cast<uint32_t>(chain.layers.size());
  const ChainCosts costs = chain_costs(chain);
  double cost = metrics(chain, segs, costs).recompute_cost;
  uint64_t trials = 0;
  const uint64_t max_trials = std::max<uint64_t>(1, kPolishSteps / n);
  for (bool moved = true; moved && trials < max_trials;) {
    moved = false;
    for (size_t k = 0; k < segs.size() && trials < max_trials; ++k) {
      const uint32_t lo = k > 0 ? segs[k - 1].last + 1 : 0;
      const uint32_t hi = k + 1 < segs.size() ? segs[k + 1].first - 1 : n - 1;
      for (uint32_t d = 1; d <= reach && trials < max_trials; ++d) {
        // candidates: a later start or an earlier end (shorter: less recompute), then the
        // reverse (longer: needed when a shorter neighbour must fit)
        const Segment tries[] = {{segs[k].first + d, segs[k].last},
                                 {segs[k].first, segs[k].last >= d ? segs[k].last - d : 0},
                                 {segs[k].first >= lo + d ? segs[k].first - d : lo, segs[k].last},
                                 {segs[k].first, std::min(hi, segs[k].last + d)}};
        for (const Segment& t : tries) {
          if (t.first > t.last || t.first < lo || t.last > hi) continue;
          if (t.first == segs[k].first && t.last == segs[k].last) continue;
          std::vector<Segment> cand = segs;
          cand[k] = t;
          ++trials;
          const PlanMetrics m = metrics(chain, cand, costs);
          if (m.peak_bytes <= budget && m.recompute_cost < cost) {
            segs = std::move(cand);
            cost = m.recompute_cost;
            moved = true;
            break;
          }
        }
      }
    }
  }
  return segs;
}

}  // namespace

uint64_t single_level_min_budget(const Chain& chain) { return lowest_peak(chain).bytes; }

PlanResult single_level_optimal(const Chain& chain, uint64_t budget) {
  if (metrics_apply(chain) && metrics(chain, {}).peak_bytes <= budget) {
    PlanResult all = evaluate(chain, {});  // nothing to recompute: the cheapest plan of all
    all.details = {flag_fact("exact", true)};
    return all;
  }
  const LowestPeak low = lowest_peak(chain);
  if (budget < low.bytes) throw_infeasible("optimal-single-level", budget, low.bytes);
  // Bounded (docs/placement.md, "Bounded answers"): with blocks of more than one layer, the
  // cheapest plan whose segments start and end at multiples of the block. Sizes stay exact,
  // so the plan fits; it is the optimum of that smaller set of plans.
  const Refined rf = refine(chain, budget - chain.input_bytes);
  PlanResult r;
  if (rf.block > 0 && rf.fr.size[0] > 0) {
    // Cost falls along the front: the last point within the room is the cheapest.
    std::vector<Segment> plan = plan_of(rf.fr, rf.fr.size[0] - 1);
    if (rf.block > 1) plan = polish(chain, budget, std::move(plan), rf.block - 1);
    r = evaluate(chain, plan);
    if (r.peak_bytes > budget)
      fail(code::kInternal, "", Message{"error.internal.singleLevelBudget", {}});
    r.details = {flag_fact("exact", rf.block == 1)};
    if (rf.block > 1) r.details.push_back(count_fact("blockLayers", rf.block));
    return r;
  }
  // No search finished (or none found a plan on its blocks): the plan of the lowest peak,
  // which fits (budget >= its peak), improved by local moves.
  r = evaluate(chain, polish(chain, budget, low.plan, 8));
  r.details = {flag_fact("exact", false), flag_fact("lowestPeak", true)};
  return r;
}

std::vector<FrontierPoint> single_level_frontier(const Chain& chain, uint64_t budget) {
  // The frontier ends at the plan that stores everything (nothing needs more room).
  const uint64_t top = evaluate(chain, {}).peak_bytes;
  const uint64_t cap = budget == 0 ? top : std::min(budget, top);
  const uint64_t room = cap < chain.input_bytes ? 0 : cap - chain.input_bytes;
  const Refined rf = refine(chain, room);
  std::vector<FrontierPoint> pts;
  if (rf.block == 0) return pts;
  const bool fast = metrics_apply(chain);
  const ChainCosts costs = chain_costs(chain);
  for (size_t q = 0; q < rf.fr.size[0]; ++q) {
    FrontierPoint p;
    p.checkpointed = plan_of(rf.fr, q);
    if (fast) {
      const PlanMetrics m = metrics(chain, p.checkpointed, costs);
      p.peak_bytes = m.peak_bytes;
      p.total_cost = m.total_cost;
      p.recompute_cost = m.recompute_cost;
    } else {
      const PlanResult r = evaluate(chain, p.checkpointed);
      p.peak_bytes = r.peak_bytes;
      p.total_cost = r.total_cost;
      p.recompute_cost = r.recompute_cost;
    }
    pts.push_back(std::move(p));
  }
  return pareto(std::move(pts));
}

}  // namespace placement
}  // namespace trainmem
