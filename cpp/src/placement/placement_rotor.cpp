// optimal: the multi-level checkpointing dynamic programme of Beaumont, Eyraud-Dubois,
// Herrmann, Joly, Shilova, "Optimal checkpointing for heterogeneous chains" (arXiv 1911.13214,
// "Rotor"), with the budget discretised into slots. Written from the paper's recurrence over
// (memory, first stage, last stage); the accounting is exactly the simulator's
// (placement_simulator.cpp), so the cost the table promises is the cost the simulator measures.
//
// Sub-problem C(i, j, m): a[i] is held outside m; the gradient d[j+1] (0 bytes after the loss)
// is live inside m; process stages i..j (stage n is the loss) and leave d[i]. Options:
//  - F_all(i), then C(i+1, j, m - xbar[i+1]), then B(i)                     ("chain");
//  - F_ck(i), F_n(i+1..k-1), then C(k, j, m - x[k]), then C(i, k-1, m)      ("leaf" at k).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "placement/placement_internal.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace placement {
namespace {

// 128-bit products of slot counts and bytes (a GCC/Clang extension: __extension__ keeps
// -Wpedantic quiet about it).
__extension__ typedef unsigned __int128 u128;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint64_t kBlock = 4;  // slots of the smallest pruning block of the leaf loop

// Stage sizes in some unit (bytes or slots). Index k of x is the activation entering stage k;
// stage n is the loss (no cost, no memory), x[n+1] = xb[n+1] = 0.
struct Sizes {
  std::vector<uint64_t> x, xb, ft, bt;
  std::vector<double> f, b;
};

// The slot grid: a size of v bytes takes ceil(v * den / num) slots, and the budget is `total`
// slots. When every size is a multiple of g (their gcd) and budget / g <= slots, the grid is
// g bytes per slot and exact; otherwise a slot is budget / slots bytes and sizes round up,
// so that a schedule fitting the slots always fits the budget in bytes.
struct Grid {
  uint64_t num = 1, den = 1, total = 0;
};

uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    const uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

Grid grid_for(const Chain& chain, uint64_t budget, uint32_t slots) {
  uint64_t g = chain.input_bytes;
  for (const Layer& L : chain.layers)
    for (uint64_t v : {L.output_bytes, L.saved_bytes, L.forward_temp_bytes, L.backward_temp_bytes})
      g = gcd64(g, v);
  if (g == 0) g = 1;
  if (budget / g <= slots) return {g, 1, budget / g};
  return {budget, slots, slots};
}

Sizes sizes_of(const Chain& chain, const Grid& grid) {
  const size_t n = chain.layers.size();
  Sizes s;
  s.x.assign(n + 2, 0);
  s.xb.assign(n + 2, 0);
  s.ft.assign(n + 1, 0);
  s.bt.assign(n + 1, 0);
  s.f.assign(n + 1, 0);
  s.b.assign(n + 1, 0);
  auto conv = [&](uint64_t v) -> uint64_t {
    const u128 num = static_cast<u128>(v) * grid.den;
    const u128 q = (num + grid.num - 1) / grid.num;
    return q > (uint64_t{1} << 40) ? (uint64_t{1} << 40) : static_cast<uint64_t>(q);
  };
  s.x[0] = conv(chain.input_bytes);
  for (size_t i = 0; i < n; ++i) {
    const Layer& L = chain.layers[i];
    s.x[i + 1] = conv(L.output_bytes);
    s.xb[i + 1] = conv(L.saved_bytes);
    s.ft[i] = conv(L.forward_temp_bytes);
    s.bt[i] = conv(L.backward_temp_bytes);
    s.f[i] = L.forward_cost;
    s.b[i] = L.backward_cost;
  }
  return s;
}

// Smallest m for which C(i, j, m) is finite, for every (i, j): O(n^3) without the m axis.
struct MinMemory {
  size_t n;
  std::vector<uint64_t> v;  // triangular, index tri(j) + i
  uint64_t at(size_t i, size_t j) const { return v[j * (j + 1) / 2 + i]; }
};

MinMemory min_memory(const Sizes& s, size_t n) {
  MinMemory mm{n, std::vector<uint64_t>((n + 1) * (n + 2) / 2, 0)};
  auto set = [&](size_t i, size_t j, uint64_t val) { mm.v[j * (j + 1) / 2 + i] = val; };
  for (size_t i = 0; i < n; ++i) set(i, i, s.x[i + 1] + s.xb[i + 1] + std::max(s.ft[i], s.bt[i]));
  set(n, n, 0);
  for (size_t d = 1; d <= n; ++d) {
    for (size_t i = 0; i + d <= n; ++i) {
      const size_t j = i + d;
      const uint64_t dj = s.x[j + 1];
      uint64_t best = std::max({dj + s.xb[i + 1] + s.ft[i], s.xb[i + 1] + s.x[i + 1] + s.bt[i],
                                s.xb[i + 1] + mm.at(i + 1, j)});
      uint64_t fp = s.x[i + 1] + s.ft[i];
      for (size_t k = i + 1; k <= j; ++k) {
        if (k > i + 1) fp = std::max(fp, s.x[k - 1] + s.x[k] + s.ft[k - 1]);
        if (dj + fp >= best) break;  // fp only grows with k
        best = std::min(best, std::max({dj + fp, s.x[k] + mm.at(k, j), mm.at(i, k - 1)}));
      }
      set(i, j, best);
    }
  }
  return mm;
}

class Table {
 public:
  // mm: the smallest finite m of every row (min_memory), so that a row stores only m >= it.
  Table(const Sizes& s, size_t n, uint64_t m_max, const MinMemory& mm) : s_(s), n_(n), M_(m_max) {
    const uint64_t pairs = (n + 1) * (n + 2) / 2;
    if (pairs * (M_ + 1) > kRotorMaxCells)  // rotor_grid bounds it before any work
      fail(code::kInternal, "", Message{"error.internal.optimalTable", {}});
    // Row (i, j) holds m in [lo, M] at base + m (base = off - lo); entries below lo are never
    // read (every read is guarded by a bound >= the row's minimum). A pad of M + 1 cells in
    // front keeps every base inside the buffer. The cells start uninitialised: solve() writes
    // each row whole, which saves a pass over the (often 20 MB) table.
    lo_.resize(pairs);
    base_.resize(pairs);
    uint64_t off = M_ + 1;
    for (size_t j = 0; j <= n; ++j)
      for (size_t i = 0; i <= j; ++i) {
        const size_t p = idx(i, j);
        lo_[p] = std::min<uint64_t>(mm.at(i, j), M_ + 1);
        base_[p] = off - lo_[p];
        off += M_ + 1 - lo_[p];
      }
    t_.reset(new double[off]);
    mn_.assign(pairs, M_ + 1);
    solve();
  }
  double at(size_t i, size_t j, uint64_t m) const { return row(i, j)[m]; }
  uint64_t min_m(size_t i, size_t j) const { return mn_[idx(i, j)]; }
  uint64_t m_max() const { return M_; }

  // Appends the schedule achieving C(i, j, m) (which must be finite).
  void schedule(size_t i, size_t j, uint64_t m, std::vector<Op>& ops) const {
    if (i == j) {
      if (i == n_) {
        ops.push_back({OpKind::kLoss, static_cast<uint32_t>(n_)});
      } else {
        ops.push_back({OpKind::kForwardAll, static_cast<uint32_t>(i)});
        ops.push_back({OpKind::kBackward, static_cast<uint32_t>(i)});
      }
      return;
    }
    const double target = row(i, j)[m];
    const uint64_t lo_chain = chain_lo(i, j);
    if (m >= lo_chain && chain_value(i, row(i + 1, j)[m - s_.xb[i + 1]]) == target) {
      ops.push_back({OpKind::kForwardAll, static_cast<uint32_t>(i)});
      schedule(i + 1, j, m - s_.xb[i + 1], ops);
      ops.push_back({OpKind::kBackward, static_cast<uint32_t>(i)});
      return;
    }
    bool found = false;
    leaves(i, j, [&](size_t k, double sf, uint64_t lo) {
      if (m < lo || leaf_value(sf, row(k, j)[m - s_.x[k]], row(i, k - 1)[m]) != target) return true;
      ops.push_back({OpKind::kForwardCheck, static_cast<uint32_t>(i)});
      for (size_t p = i + 1; p < k; ++p)
        ops.push_back({OpKind::kForwardNoGrad, static_cast<uint32_t>(p)});
      schedule(k, j, m - s_.x[k], ops);
      schedule(i, k - 1, m, ops);
      found = true;
      return false;
    });
    if (found) return;
    fail(code::kInternal, "", Message{"error.internal.optimalBacktrack", {}});
  }

 private:
  static double leaf_value(double sf, double a, double b) { return sf + a + b; }
  double chain_value(size_t i, double sub) const { return (s_.f[i] + s_.b[i]) + sub; }
  // The leaves of row (i, j) that fit in M slots, by rising k: F_ck(i), F_n(i+1..k-1), then
  // C(k, j, m - x[k]) and C(i, k-1, m). Calls f(k, sf, lo) with the leaf's forward cost sf and
  // the least slot lo it needs; f returns false to stop.
  template <class F>
  void leaves(size_t i, size_t j, F&& f) const {
    const uint64_t dj = s_.x[j + 1];
    uint64_t fp = s_.x[i + 1] + s_.ft[i];
    double sf = s_.f[i];
    for (size_t k = i + 1; k <= j; ++k) {
      if (k > i + 1) {
        fp = std::max(fp, s_.x[k - 1] + s_.x[k] + s_.ft[k - 1]);
        sf += s_.f[k - 1];
      }
      if (dj + fp > M_) break;  // fp only grows with k
      const uint64_t lo = std::max({dj + fp, s_.x[k] + min_m(k, j), min_m(i, k - 1)});
      if (lo <= M_ && !f(k, sf, lo)) return;
    }
  }
  size_t idx(size_t i, size_t j) const { return j * (j + 1) / 2 + i; }
  const double* row(size_t i, size_t j) const { return t_.get() + base_[idx(i, j)]; }
  double* row(size_t i, size_t j) { return t_.get() + base_[idx(i, j)]; }
  uint64_t row_lo(size_t i, size_t j) const { return lo_[idx(i, j)]; }
  uint64_t chain_lo(size_t i, size_t j) const {
    return std::max({s_.x[j + 1] + s_.xb[i + 1] + s_.ft[i], s_.xb[i + 1] + s_.x[i + 1] + s_.bt[i],
                     s_.xb[i + 1] + min_m(i + 1, j)});
  }

  void finish_row(size_t i, size_t j) {
    const double* r = row(i, j);
    uint64_t m = row_lo(i, j);
    while (m <= M_ && r[m] == kInf) ++m;
    mn_[idx(i, j)] = m;
  }

  // C(i, i, m): one layer, stored (or the empty chain at i = n).
  void base_rows() {
    for (size_t i = 0; i <= n_; ++i) {
      double* r = row(i, i);
      const uint64_t lo = row_lo(i, i);
      if (i == n_) {
        std::fill(r + lo, r + M_ + 1, 0.0);
      } else {
        const uint64_t need = s_.x[i + 1] + s_.xb[i + 1] + std::max(s_.ft[i], s_.bt[i]);
        for (uint64_t m = lo; m <= M_; ++m) r[m] = m < need ? kInf : s_.f[i] + s_.b[i];
      }
      finish_row(i, i);
    }
  }

  // The chain option of row (i, j): F_all(i), C(i+1, j, m - xbar[i+1]), B(i).
  void chain_entries(size_t i, size_t j, double* out) {
    const uint64_t lo = chain_lo(i, j);
    const uint64_t xb = s_.xb[i + 1];
    const double* sub = row(i + 1, j);
    uint64_t m = row_lo(i, j);
    for (; m < lo && m <= M_; ++m) out[m] = kInf;
    for (; m <= M_; ++m) out[m] = chain_value(i, sub[m - xb]);
  }

  // The leaves of row (i, j) that can lower it (see leaf_entries), with their floors.
  // lo_min: the smallest slot any of them reaches.
  void collect_leaves(size_t i, size_t j, uint64_t* lo_min) {
    cand_.clear();
    *lo_min = M_ + 1;
    leaves(i, j, [&](size_t k, double sf, uint64_t lo) {
      *lo_min = std::min(*lo_min, lo);
      cand_.push_back({leaf_value(sf, row(k, j)[M_ - s_.x[k]], row(i, k - 1)[M_]), sf, lo,
                       static_cast<uint32_t>(k)});
      return true;
    });
    std::sort(cand_.begin(), cand_.end(), [](const Leaf& p, const Leaf& q) {
      return p.floor != q.floor ? p.floor < q.floor : p.k < q.k;
    });
  }

  // Leaf at k: F_ck(i), F_n(i+1..k-1), C(k, j, m - x[k]), C(i, k-1, m).
  // Rows do not increase with m, so no leaf value at k is below its value at M (rounded
  // addition is monotone, so this holds in floating point too): that is the leaf's
  // `floor`. `out` does not increase with m either, so once out[m] <= floor, leaf k can
  // improve neither out[m] nor any later entry. Leaves are taken cheapest floor first,
  // which lowers `out` early and cuts the later (worse) leaves short.
  void leaf_entries(size_t i, size_t j, double* out) {
    uint64_t lo_min;
    collect_leaves(i, j, &lo_min);
    for (const Leaf& c : cand_) {
      if (out[lo_min] <= c.floor) break;  // every later leaf: out[lo] <= out[lo_min] <= floor
      const size_t k = c.k;
      const double* a = row(k, j) - s_.x[k];  // a[m] = C(k, j, m - x[k])
      const double* b = row(i, k - 1);
      // Blocks of m: leaf values in [m, m1) are at least the one at m1 - 1, and `out`
      // there is at most out[m]; when out[m] is not above it, nothing in the block improves.
      // Blocks grow while they are skipped (4, 8, ... 64 slots); a block that is not skipped
      // is retried at 4 slots, and computed if it still fails.
      uint64_t m = c.lo, step = kBlock;
      while (m <= M_ && out[m] > c.floor) {
        const uint64_t m1 = std::min<uint64_t>(m + step, M_ + 1);

        if (out[m] <= leaf_value(c.sf, a[m1 - 1], b[m1 - 1])) {
          m = m1;
          step = std::min<uint64_t>(2 * step, 16 * kBlock);
          continue;
        }
        if (step > kBlock) {  // retry with the smallest block before computing
          step = kBlock;
          continue;
        }
        for (; m < m1; ++m) {
          const double v = leaf_value(c.sf, a[m], b[m]);
          out[m] = v < out[m] ? v : out[m];
        }
      }
    }
  }

  void solve() {
    base_rows();
    for (size_t d = 1; d <= n_; ++d) {
      for (size_t i = 0; i + d <= n_; ++i) {
        const size_t j = i + d;
        double* out = row(i, j);
        chain_entries(i, j, out);
        leaf_entries(i, j, out);
        finish_row(i, j);
      }
    }
  }

  struct Leaf {
    double floor, sf;
    uint64_t lo;
    uint32_t k;
  };
  std::vector<Leaf> cand_;  // scratch: the leaves of the row being computed
  const Sizes& s_;
  size_t n_;
  uint64_t M_;
  std::unique_ptr<double[]> t_;
  std::vector<uint64_t> lo_, base_;  // per row: first stored m, and index of m = 0
  std::vector<uint64_t> mn_;
};

// Smallest budget (bytes) whose discretisation into `slots` admits a schedule, searched near
// the exact minimum (feasibility in slots only grows, up to rounding, with the budget). Each
// probe is an O(layers^3) pass: at most kRotorMinBudgetProbes of them; if the bisection has
// not closed by then, the smallest budget found feasible is returned (it admits a schedule).
uint64_t min_budget_discretised(const Chain& chain, uint32_t slots, uint64_t exact) {
  const size_t n = chain.layers.size();
  int probes = 0;
  auto feasible = [&](uint64_t budget) {
    ++probes;
    const Grid g = grid_for(chain, budget, slots);
    const Sizes s = sizes_of(chain, g);
    if (s.x[0] > g.total) return false;
    return min_memory(s, n).at(0, n) <= g.total - s.x[0];
  };
  uint64_t lo = exact, hi = std::max<uint64_t>(exact, 1);
  while (!feasible(hi)) {
    if (hi > (uint64_t{1} << 62)) return hi;
    hi += std::max<uint64_t>(hi / 8, 1);  // rounding costs at most a few slots: grow gently
  }
  if (lo >= hi) return hi;
  // invariant: feasible(hi); lo is the exact bound (a budget below it never fits)
  while (hi - lo > 1 && probes < kRotorMinBudgetProbes) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (feasible(mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi - lo == 1 && feasible(lo) ? lo : hi;
}

// The plan that stores everything, when the budget holds it: the cheapest of all (nothing is
// recomputed), found in O(layers) before any table is built.
bool stores_everything(const Chain& chain, uint64_t budget, PlanResult* out) {
  if (!metrics_apply(chain) || metrics(chain, {}).peak_bytes > budget) return false;
  *out = evaluate(chain, {});
  if (out->peak_bytes > budget) return false;
  return true;
}

// ---- Stages of several layers (the bounded form of long chains). ----
//
// A stage of layers [s..e] runs them together: F_all(stage) = F_all(s..e), F_ck(stage) = F_ck(s)
// then F_n(s+1..e), F_n(stage) = F_n(s..e), B(stage) = B(e..s). Its sizes in Rotor's model
// (output x, kept xbar, temporaries) are chosen so that every event of the layers inside is
// covered: xbar = their savedBytes; ftmp the largest excess of any of their forward events
// (with or without autograd) over what the model charges for the stage; btmp likewise for
// their backward events. A schedule of stages is thus a schedule of layers whose simulated
// peak is at most what the table promised (the simulator checks it: rotor_optimal).
Chain grouped(const Chain& c, size_t g) {
  Chain out;
  out.input_bytes = c.input_bytes;
  const size_t n = c.layers.size();
  for (size_t s = 0; s < n; s += g) {
    const size_t e = std::min(n, s + g) - 1;
    Layer st;
    st.forward_cost = st.backward_cost = 0;  // (a Layer's defaults are 1 and 2)
    const uint64_t x_in = s == 0 ? c.input_bytes : c.layers[s - 1].output_bytes;
    const uint64_t x_out = c.layers[e].output_bytes;
    uint64_t xb = 0, all = 0, ck = 0, nograd = 0, bwd = 0;
    for (size_t p = s; p <= e; ++p) {
      const Layer& L = c.layers[p];
      xb += L.saved_bytes;
      all = std::max(all, xb + L.forward_temp_bytes);  // F_all(p): the stage's saved so far
      const uint64_t in = p == s ? 0 : c.layers[p - 1].output_bytes;
      ck = std::max(ck, in + L.output_bytes + L.forward_temp_bytes);  // F_ck(s), F_n(p > s)
      nograd = std::max(nograd, (p == s ? x_in : in) + L.output_bytes + L.forward_temp_bytes);
      st.forward_cost += L.forward_cost;
      st.backward_cost += L.backward_cost;
    }
    uint64_t kept = xb;  // B(p), p from e down: the saved of s..p, the gradient of p's output
    for (size_t p = e + 1; p-- > s;) {
      const Layer& L = c.layers[p];
      bwd = std::max(bwd, kept + L.output_bytes + L.backward_temp_bytes);
      kept -= L.saved_bytes;
    }
    auto excess = [](uint64_t need, uint64_t charged) {
      return need > charged ? need - charged : 0;
    };
    st.output_bytes = x_out;
    st.saved_bytes = xb;
    st.forward_temp_bytes =
        std::max({excess(all, xb), excess(ck, x_out), excess(nograd, x_in + x_out)});
    st.backward_temp_bytes = excess(bwd, xb + x_out);
    out.layers.push_back(st);
  }
  return out;
}

// A schedule of stages of g layers as the schedule of the layers.
std::vector<Op> expand(const std::vector<Op>& ops, size_t g, size_t n) {
  if (g == 1) return ops;
  std::vector<Op> out;
  out.reserve(ops.size() * g);
  for (const Op& op : ops) {
    if (op.kind == OpKind::kLoss) {
      out.push_back({OpKind::kLoss, static_cast<uint32_t>(n)});
      continue;
    }
    const size_t s = op.layer * g, e = std::min(n, s + g) - 1;
    if (op.kind == OpKind::kBackward) {
      for (size_t p = e + 1; p-- > s;) out.push_back({OpKind::kBackward, static_cast<uint32_t>(p)});
      continue;
    }
    for (size_t p = s; p <= e; ++p) {
      OpKind k = op.kind;
      if (k == OpKind::kForwardCheck && p > s) k = OpKind::kForwardNoGrad;
      out.push_back({k, static_cast<uint32_t>(p)});
    }
  }
  return out;
}

}  // namespace

RotorGrid rotor_grid(const Chain& chain, uint32_t slots) {
  // Measured cost (bench/RESULTS.md, "Bounded work"): about stages^3 / 6 leaf candidates, each
  // with a fixed part (its floor, its sort) worth kRotorFixedSlots slots of its scan. The
  // slots asked are kept; layers are grouped into stages until the table fits both bounds.
  const uint64_t n = chain.layers.size();
  RotorGrid g;
  g.requested = slots;
  g.slots = slots;
  const auto fits = [&](uint64_t stages) {
    const uint64_t pairs = (stages + 1) * (stages + 2) / 2;
    const uint64_t leaves = std::max<uint64_t>(1, stages * stages * stages / 6);
    return pairs * (uint64_t{slots} + 1) <= kRotorMaxCells &&
           leaves * (kRotorFixedSlots + slots) <= kRotorMaxWork;
  };
  uint64_t stages = n;
  while (stages > 1 && !fits(stages)) stages = stages * 7 / 8;
  if (!fits(stages))
    fail(code::kTooLarge, "slots",
         Message{"error.optimal.slots", {{"slots", std::to_string(slots)}}});
  g.stage_layers = static_cast<uint32_t>((n + stages - 1) / stages);
  return g;
}

uint64_t rotor_min_budget_exact(const Chain& chain) {
  const Sizes s = sizes_of(chain, Grid{1, 1, 0});
  return s.x[0] + min_memory(s, chain.layers.size()).at(0, chain.layers.size());
}

PlanResult rotor_optimal(const Chain& fine, uint64_t budget, uint32_t requested_slots) {
  PlanResult all;
  if (stores_everything(fine, budget, &all)) {
    all.details = {count_fact("slots", 0), flag_fact("exactGrid", true),
                   flag_fact("storesEverything", true),
                   real_fact("predictedTotalCost", all.total_cost)};
    return all;
  }
  return rotor_optimal(fine, budget, rotor_grid(fine, requested_slots));  // (bounded first)
}

PlanResult rotor_optimal(const Chain& fine, uint64_t budget, const RotorGrid& rg) {
  const uint32_t slots = rg.slots;
  const Chain staged = rg.stage_layers > 1 ? grouped(fine, rg.stage_layers) : Chain();
  const Chain& chain = rg.stage_layers > 1 ? staged : fine;
  const size_t n = chain.layers.size();
  const Grid grid = grid_for(chain, budget, slots);
  const Sizes s = sizes_of(chain, grid);
  // Feasible on the slot grid implies feasible in bytes (sizes round up), so the exact minimum
  // (an O(n^3) pass) is only computed for the error message.
  auto infeasible = [&]() {
    const uint64_t exact = rotor_min_budget_exact(chain);
    if (rg.stage_layers <= 1)
      throw_infeasible_slots("optimal", budget, min_budget_discretised(chain, slots, exact), slots,
                             exact);
    throw_infeasible("optimal", budget, min_budget_discretised(chain, slots, exact),
                     "error.infeasible.stages",
                     {{"slots", std::to_string(slots)},
                      {"layers", std::to_string(rg.stage_layers)},
                      {"exact", std::to_string(exact)}});
  };
  if (s.x[0] > grid.total) infeasible();
  const MinMemory mm = min_memory(s, n);
  if (mm.at(0, n) > grid.total - s.x[0]) infeasible();
  const uint64_t M = grid.total - s.x[0];
  const Table t(s, n, M, mm);
  std::vector<Op> stage_ops;
  t.schedule(0, n, M, stage_ops);
  const std::vector<Op> ops = expand(stage_ops, rg.stage_layers, fine.layers.size());
  PlanResult r = simulate(fine, ops);
  r.schedule = ops;
  if (rg.stage_layers > 1) {
    r.stage_schedule = std::move(stage_ops);
    r.stage_layers = rg.stage_layers;
  }
  const double slot = static_cast<double>(grid.num) / static_cast<double>(grid.den);
  r.details = {count_fact("slots", grid.total), real_fact("slotBytes", slot),
               flag_fact("exactGrid", grid.den == 1 && rg.stage_layers == 1),
               real_fact("predictedTotalCost", t.at(0, n, M))};
  if (rg.stage_layers > 1) r.details.push_back(count_fact("stageLayers", rg.stage_layers));
  if (r.peak_bytes > budget) fail(code::kInternal, "", Message{"error.internal.optimalBudget", {}});
  return r;
}

std::vector<FrontierPoint> rotor_frontier(const Chain& fine, uint64_t budget, uint32_t slots) {
  const RotorGrid rg = rotor_grid(fine, slots);
  const Chain staged = rg.stage_layers > 1 ? grouped(fine, rg.stage_layers) : Chain();
  const Chain& chain = rg.stage_layers > 1 ? staged : fine;
  const size_t n = chain.layers.size();
  const Grid grid = grid_for(chain, budget, rg.slots);
  const Sizes s = sizes_of(chain, grid);
  std::vector<FrontierPoint> pts;
  if (s.x[0] > grid.total) return pts;
  const uint64_t M = grid.total - s.x[0];
  const Table t(s, n, M, min_memory(s, n));
  // The memory values where the cost falls, at most kRotorFrontierPoints of them (evenly
  // spread): each is a schedule to simulate.
  std::vector<uint64_t> ms;
  double last = kInf;
  for (uint64_t m = t.min_m(0, n); m <= M; ++m) {
    const double c = t.at(0, n, m);
    if (c < last) ms.push_back(m);
    if (c < last) last = c;
  }
  if (ms.size() > kRotorFrontierPoints) {
    std::vector<uint64_t> few;
    for (size_t k = 0; k < kRotorFrontierPoints; ++k)
      few.push_back(ms[k * (ms.size() - 1) / (kRotorFrontierPoints - 1)]);
    ms = few;
  }
  for (const uint64_t m : ms) {
    std::vector<Op> ops;
    t.schedule(0, n, m, ops);
    const PlanResult r = simulate(fine, expand(ops, rg.stage_layers, fine.layers.size()));
    FrontierPoint p;
    p.peak_bytes = r.peak_bytes;
    p.total_cost = r.total_cost;
    p.recompute_cost = r.recompute_cost;
    p.checkpointed = r.checkpointed;
    const u128 bytes = static_cast<u128>(m + s.x[0]) * grid.num / grid.den;  // floor
    p.parameter = {count_fact("slotBudgetBytes", static_cast<uint64_t>(bytes))};
    pts.push_back(std::move(p));
  }
  return pareto(std::move(pts));
}

}  // namespace placement
}  // namespace trainmem
