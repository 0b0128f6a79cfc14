// Optimality by exhaustion: every single-level plan of small random chains is simulated, and
// optimal-single-level must match the cheapest plan that fits each budget (and the Pareto
// frontier point for point); Rotor's multi-level optimum may only be cheaper. Revolve's closed
// form is checked against its recursion, and its schedule against the closed form.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "placement/placement_internal.hpp"
#include "trainmem/error.hpp"
#include "trainmem/placement.hpp"

using namespace trainmem::placement;

namespace {

void all_plans(size_t n, size_t i, std::vector<Segment>& cur,
               std::vector<std::vector<Segment>>& out) {
  if (i == n) {
    out.push_back(cur);
    return;
  }
  all_plans(n, i + 1, cur, out);    // layer i plain
  for (size_t e = i; e < n; ++e) {  // checkpointed segment [i..e]
    cur.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(e)});
    all_plans(n, e + 1, cur, out);
    cur.pop_back();
  }
}

Chain random_chain(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> sz(0, 6), cost(1, 5);
  Chain c;
  c.input_bytes = sz(rng);
  for (size_t i = 0; i < n; ++i) {
    Layer L;
    L.output_bytes = sz(rng);
    L.saved_bytes = L.output_bytes + sz(rng);
    L.forward_temp_bytes = sz(rng) / 2;
    L.backward_temp_bytes = sz(rng) / 2;
    L.forward_cost = cost(rng);
    L.backward_cost = cost(rng);
    c.layers.push_back(L);
  }
  return c;
}

}  // namespace

TEST_CASE("optimal-single-level equals exhaustive search over all single-level plans",
          "[placement][optimal]") {
  std::mt19937 rng(12345);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const size_t n = 1 + trial % 7;
    const Chain chain = random_chain(rng, n);
    std::vector<std::vector<Segment>> plans;
    std::vector<Segment> cur;
    all_plans(n, 0, cur, plans);
    // Brute force: cheapest cost for each peak, then the Pareto staircase.
    std::map<uint64_t, double> best_at;
    for (const auto& p : plans) {
      const PlanResult r = evaluate(chain, p);
      auto it = best_at.find(r.peak_bytes);
      if (it == best_at.end() || r.total_cost < it->second) best_at[r.peak_bytes] = r.total_cost;
    }
    std::vector<std::pair<uint64_t, double>> stair;
    for (const auto& kv : best_at)
      if (stair.empty() || kv.second < stair.back().second) stair.push_back(kv);
    INFO("trial " << trial << " n " << n);
    // Frontier: the same staircase.
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::optimal_single_level;
    const auto front = frontier(chain, q);
    REQUIRE(front.size() == stair.size());
    for (size_t k = 0; k < stair.size(); ++k) {
      CHECK(front[k].peak_bytes == stair[k].first);
      CHECK(front[k].total_cost == Approx(stair[k].second));
    }
    // Every budget from below the minimum to above the maximum.
    for (uint64_t b = 1; b <= stair.back().first + 1; ++b) {
      q.budget_bytes = b;
      double want = std::numeric_limits<double>::infinity();
      for (const auto& s : stair)
        if (s.first <= b) want = s.second;
      if (std::isinf(want)) {
        try {
          plan(chain, q);
          FAIL("expected infeasible at budget " << b);
        } catch (const trainmem::RequestError& e) {
          CHECK(e.code() == "infeasible");
          CHECK(std::string(e.what()).find("minimum feasible budgetBytes is " +
                                           std::to_string(stair[0].first)) != std::string::npos);
        }
        continue;
      }
      const PlanResult r = plan(chain, q);
      CHECK(r.total_cost == Approx(want));
      CHECK(r.peak_bytes <= b);
      // Rotor's schedules include every single-level plan: with an exact grid (sizes are
      // whole bytes, budget <= slots) it can only be cheaper or equal.
      StrategyRequest m = q;
      m.strategy = trainmem::vocab::Strategy::optimal;
      const PlanResult o = plan(chain, m);
      CHECK(o.total_cost <= r.total_cost + 1e-9);
      CHECK(o.peak_bytes <= b);
      CHECK(fact_value(o.details, "predictedTotalCost") == Approx(o.total_cost));
      ++checked;
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("optimal-single-level: budgeted search equals the unpruned frontier on longer chains",
          "[placement][optimal]") {
  // The budgeted search prunes its fronts (storage a feasible prefix must keep); the frontier
  // search (no budget) prunes nothing. The cheapest frontier point within each budget must be
  // exactly what the budgeted search returns.
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 12; ++trial) {
    const Chain chain = random_chain(rng, 20 + 5 * (trial % 5));
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::optimal_single_level;
    const auto front = frontier(chain, q);
    REQUIRE(!front.empty());
    for (size_t k = 0; k < front.size(); ++k) {
      for (uint64_t extra : {uint64_t{0}, uint64_t{1}}) {
        q.budget_bytes = front[k].peak_bytes + extra;
        double want = front[0].total_cost;
        for (const auto& p : front)
          if (p.peak_bytes <= q.budget_bytes) want = p.total_cost;
        const PlanResult r = plan(chain, q);
        INFO("trial " << trial << " budget " << q.budget_bytes);
        CHECK(r.total_cost == Approx(want));
        CHECK(r.peak_bytes <= q.budget_bytes);
      }
    }
    if (front[0].peak_bytes > 1) {  // (a budget of 0 means none)
      q.budget_bytes = front[0].peak_bytes - 1;
      CHECK_THROWS_AS(plan(chain, q), trainmem::RequestError);
    }
  }
}

namespace {
// The single-level Pareto DP written straightforwardly (every candidate point of every unit,
// sorted, then filtered), as in bench/placement.bench.mjs: front 0 as (peak, recompute cost).
std::vector<std::pair<uint64_t, double>> single_level_reference(const Chain& ch) {
  const size_t n = ch.layers.size();
  auto x = [&](size_t k) { return k == 0 ? ch.input_bytes : ch.layers[k - 1].output_bytes; };
  std::vector<std::vector<std::pair<uint64_t, double>>> fronts(n + 1);
  fronts[n] = {{0, 0.0}};
  for (size_t i = n; i-- > 0;) {
    std::vector<std::pair<uint64_t, double>> cand;
    auto push = [&](uint64_t g, uint64_t S, double cost, size_t next) {
      for (const auto& p : fronts[next])
        cand.push_back({std::max(g, S + p.first), cost + p.second});
    };
    const Layer& Li = ch.layers[i];
    push(Li.saved_bytes + std::max(Li.forward_temp_bytes, Li.output_bytes + Li.backward_temp_bytes),
         Li.saved_bytes, 0.0, i + 1);
    uint64_t fwd = Li.output_bytes + Li.forward_temp_bytes, xs = 0, rec = 0, bwd = 0;
    double cost = 0;
    for (size_t e = i; e < n; ++e) {
      const Layer& Le = ch.layers[e];
      if (e > i) fwd = std::max(fwd, x(e) + Le.output_bytes + Le.forward_temp_bytes);
      xs += Le.saved_bytes;
      rec = std::max(rec, xs + Le.forward_temp_bytes);
      bwd = std::max(bwd, xs + Le.output_bytes + Le.backward_temp_bytes);
      cost += Le.forward_cost;
      push(std::max({fwd, Le.output_bytes + rec, bwd}), Le.output_bytes, cost, e + 1);
    }
    std::sort(cand.begin(), cand.end());
    for (const auto& p : cand)
      if (fronts[i].empty() || p.second < fronts[i].back().second) fronts[i].push_back(p);
  }
  for (auto& p : fronts[0]) p.first += ch.input_bytes;
  return fronts[0];
}
}  // namespace

TEST_CASE("optimal-single-level equals a straightforward Pareto DP on long chains with ties",
          "[placement][optimal]") {
  // Small integer sizes and costs make many plans tie exactly (the pruning against points
  // carried over from the next front must keep ties right); real-valued costs do not.
  std::mt19937 rng(2027);
  for (int trial = 0; trial < 24; ++trial) {
    const size_t n = 40 + 10 * (trial % 8);
    Chain chain = random_chain(rng, n);
    if (trial % 3 == 1) {  // homogeneous: the worst case for ties
      for (auto& L : chain.layers) L = chain.layers[0];
    } else if (trial % 3 == 2) {
      std::uniform_real_distribution<double> f(0.5, 4.5);
      for (auto& L : chain.layers) L.forward_cost = f(rng);
    }
    double base = 0;
    for (const auto& L : chain.layers) base += L.forward_cost + L.backward_cost;
    const auto ref = single_level_reference(chain);
    INFO("trial " << trial << " n " << n);
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::optimal_single_level;
    // The frontier point for point where costs are whole numbers (with real costs, frontier()
    // re-evaluates each plan and may sum a near-tie differently from the DP).
    if (trial % 3 != 2) {
      const auto front = frontier(chain, q);
      REQUIRE(front.size() == ref.size());
      for (size_t k = 0; k < ref.size(); ++k) {
        CHECK(front[k].peak_bytes == ref[k].first);
        CHECK(front[k].recompute_cost == ref[k].second);
      }
    }
    // Budgets at and just above the frontier's peaks, and between them.
    for (size_t k = 0; k < ref.size(); k += 1 + ref.size() / 8) {
      for (uint64_t b : {ref[k].first, ref[k].first + 1, (ref[k].first + ref.back().first) / 2}) {
        double want = ref[0].second;
        for (const auto& p : ref)
          if (p.first <= b) want = p.second;
        q.budget_bytes = b;
        const PlanResult r = plan(chain, q);
        CHECK(r.peak_bytes <= b);
        CHECK(r.total_cost == Approx(base + want).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("optimal: discretised budgets stay within the budget in bytes", "[placement][optimal]") {
  std::mt19937 rng(777);
  for (int trial = 0; trial < 20; ++trial) {
    Chain c = random_chain(rng, 12);
    for (auto& L : c.layers) {  // large, coprime-ish sizes force the rounded grid
      L.output_bytes = L.output_bytes * 1000003 + 17;
      L.saved_bytes = L.output_bytes + L.saved_bytes * 999983;
      L.forward_temp_bytes *= 700001;
    }
    c.input_bytes = c.input_bytes * 1000003 + 5;
    const uint64_t all = evaluate(c, {}).peak_bytes;
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::optimal;
    q.slots = 100;
    q.budget_bytes = all / 2 + 1;
    try {
      const PlanResult r = plan(c, q);
      CHECK(r.peak_bytes <= q.budget_bytes);
      CHECK(fact_value(r.details, "predictedTotalCost") == Approx(r.total_cost));
      CHECK(fact_value(r.details, "exactGrid") == 0);
    } catch (const trainmem::RequestError& e) {
      CHECK(e.code() == "infeasible");
    }
  }
}

namespace {
// Griewank & Walther's recursion, memoised: t(1, c) = 0; t(l, 0) = inf for l > 1;
// t(l, c) = min_{0<l'<l} l' + t(l - l', c - 1) + t(l', c).
double t_rec(uint64_t l, uint64_t c, std::map<std::pair<uint64_t, uint64_t>, double>& memo) {
  if (l <= 1) return 0;
  if (c == 0) return std::numeric_limits<double>::infinity();
  auto key = std::make_pair(l, c);
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t lp = 1; lp < l; ++lp)
    best = std::min(best, lp + t_rec(l - lp, c - 1, memo) + t_rec(lp, c, memo));
  memo[key] = best;
  return best;
}
}  // namespace

TEST_CASE("revolve: closed form = recursion = the simulated schedule", "[placement][revolve]") {
  std::map<std::pair<uint64_t, uint64_t>, double> memo;
  CHECK(t_rec(10, 3, memo) == 15);  // REFERENCES.md checks
  CHECK(t_rec(16, 4, memo) == 27);
  for (uint64_t l = 1; l <= 14; ++l) {
    CHECK(t_rec(l, 1, memo) == l * (l - 1) / 2);
    for (uint32_t c = 1; c <= 5; ++c) {
      Chain chain;
      chain.input_bytes = 8;
      for (uint64_t i = 0; i < l; ++i) {
        Layer L;
        L.forward_cost = 1.5;
        L.backward_cost = 3;
        L.output_bytes = 8;
        L.saved_bytes = 24;
        chain.layers.push_back(L);
      }
      StrategyRequest q;
      q.strategy = trainmem::vocab::Strategy::revolve;
      q.snapshots = c;
      const PlanResult r = plan(chain, q);
      INFO("l " << l << " c " << c);
      const double t = t_rec(l, c, memo);
      CHECK(fact_value(r.details, "extraForwardSteps") == t);  // closed form vs recursion
      CHECK(r.recompute_cost == Approx(1.5 * t));              // schedule vs closed form
    }
  }
}

TEST_CASE("revolve on chains too long for a schedule: the closed-form costs",
          "[placement][revolve]") {
  // Hand calculation with Griewank & Walther 2000 (REFERENCES.md): r is minimal with
  // C(c + r, c) >= l and t(l, c) = r*l - C(c + r, c + 1).
  // l = 100,000, c = 10: C(19, 10) = 92,378 < l <= C(20, 10) = 184,756, so r = 10;
  //   t = 10 x 100,000 - C(20, 11) = 1,000,000 - 167,960 = 832,040.
  // l = 100,000, c = 1: t = l(l - 1)/2 = 4,999,950,000 (r = l - 1 = 99,999).
  // l = 4,097, c = 2: C(91, 2) = 4,095 < l <= C(92, 2) = 4,186, so r = 90;
  //   t = 90 x 4,097 - C(92, 3) = 368,730 - 125,580 = 243,150.
  struct Case {
    uint32_t layers, snapshots;
    uint64_t repetitions;
    double extra;
  };
  for (const Case& k : {Case{100000, 10, 10, 832040}, Case{100000, 1, 99999, 4999950000.0},
                        Case{4097, 2, 90, 243150}}) {
    Chain chain;
    chain.input_bytes = 8;
    Layer L;
    L.forward_cost = 1.5;
    L.backward_cost = 3;
    L.output_bytes = 8;
    L.saved_bytes = 24;
    chain.layers.assign(k.layers, L);
    INFO("l " << k.layers << " c " << k.snapshots);
    CHECK(revolve_extra_steps(k.layers, k.snapshots) == k.extra);
    CHECK(revolve_repetitions(k.layers, k.snapshots) == k.repetitions);
    const PlanResult r = revolve_plan(chain, k.snapshots);
    CHECK_FALSE(r.scheduled);
    CHECK(r.schedule.empty());
    CHECK(r.recompute_cost == 1.5 * k.extra);
    CHECK(r.total_cost == 4.5 * k.layers + 1.5 * k.extra);
    CHECK(fact_value(r.details, "extraForwardSteps") == k.extra);
    CHECK(fact_value(r.details, "scheduleLayerLimit") == 4096);
    // plan() (which peak memory uses) still needs the schedule: a clear error, not a number.
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::revolve;
    q.snapshots = k.snapshots;
    CHECK_THROWS_AS(plan(chain, q), trainmem::RequestError);
  }
  // The operation limit (2^18 = 262,144): one snapshot, t = l(l - 1)/2, ops = 2l + 1 + t.
  // l = 722: 1,445 + 260,281 = 261,726 (built); l = 723: 1,447 + 261,003 = 262,450.
  CHECK(revolve_schedulable(722, 1));
  CHECK_FALSE(revolve_schedulable(723, 1));
  CHECK(revolve_schedulable(723, 2));
  {
    Chain one;
    one.input_bytes = 8;
    Layer L;
    L.output_bytes = 8;
    L.saved_bytes = 24;
    one.layers.assign(723, L);
    const PlanResult r = revolve_plan(one, 1);
    CHECK_FALSE(r.scheduled);
    CHECK(r.recompute_cost == 723.0 * 722 / 2);
  }
  // At the limit the schedule is built, and its simulated recompute is the closed form:
  // l = 4,096, c = 2: C(91, 2) = 4,095 < l <= C(92, 2), so r = 90 as well;
  //   t = 90 x 4,096 - C(92, 3) = 368,640 - 125,580 = 243,060; ops = 8,193 + 243,060 <= 2^18.
  Chain chain;
  chain.input_bytes = 8;
  Layer L;
  L.output_bytes = 8;
  L.saved_bytes = 24;
  chain.layers.assign(4096, L);
  const PlanResult r = revolve_plan(chain, 2);
  CHECK(r.scheduled);
  CHECK(fact_value(r.details, "extraForwardSteps") == 243060);
  CHECK(r.recompute_cost == 243060);
}

namespace {
// Rotor's recurrence (Beaumont et al. 2019) written straightforwardly: the full table, every
// memory value and every split, no pruning; memory accounting as in placement_rotor.cpp's
// header (a chain step F_all(i) needs x[j+1] + xbar[i+1] + ftmp[i] and B(i) needs
// xbar[i+1] + x[i+1] + btmp[i]; a leaf's no-grad forwards need x[k-1] + x[k] + ftmp[k-1]).
double rotor_reference(const Chain& c, uint64_t M) {
  const size_t n = c.layers.size();
  std::vector<uint64_t> x(n + 2, 0), xb(n + 2, 0), ft(n + 1, 0), bt(n + 1, 0);
  std::vector<double> f(n + 1, 0), b(n + 1, 0);
  x[0] = c.input_bytes;
  for (size_t i = 0; i < n; ++i) {
    const Layer& L = c.layers[i];
    x[i + 1] = L.output_bytes;
    xb[i + 1] = L.saved_bytes;
    ft[i] = L.forward_temp_bytes;
    bt[i] = L.backward_temp_bytes;
    f[i] = L.forward_cost;
    b[i] = L.backward_cost;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> C((n + 1) * (n + 1) * (M + 1), inf);
  auto at = [&](size_t i, size_t j, uint64_t m) -> double& {
    return C[(i * (n + 1) + j) * (M + 1) + m];
  };
  for (size_t i = 0; i <= n; ++i)
    for (uint64_t m = 0; m <= M; ++m)
      if (i == n)
        at(i, i, m) = 0;
      else if (m >= x[i + 1] + xb[i + 1] + std::max(ft[i], bt[i]))
        at(i, i, m) = f[i] + b[i];
  for (size_t d = 1; d <= n; ++d)
    for (size_t i = 0; i + d <= n; ++i) {
      const size_t j = i + d;
      for (uint64_t m = 0; m <= M; ++m) {
        double best = inf;
        if (m >= x[j + 1] + xb[i + 1] + ft[i] && m >= xb[i + 1] + x[i + 1] + bt[i])
          best = f[i] + b[i] + at(i + 1, j, m - xb[i + 1]);
        uint64_t fp = x[i + 1] + ft[i];
        double sf = f[i];
        for (size_t k = i + 1; k <= j; ++k) {
          if (k > i + 1) {
            fp = std::max(fp, x[k - 1] + x[k] + ft[k - 1]);
            sf += f[k - 1];
          }
          if (m < x[j + 1] + fp || m < x[k]) continue;
          best = std::min(best, sf + at(k, j, m - x[k]) + at(i, k - 1, m));
        }
        at(i, j, m) = best;
      }
    }
  return at(0, n, M);
}
}  // namespace

TEST_CASE("optimal: the pruned Rotor table equals the straightforward recurrence",
          "[placement][optimal]") {
  std::mt19937 rng(2024);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Chain chain = random_chain(rng, 4 + trial % 11);
    const uint64_t all = evaluate(chain, {}).peak_bytes;
    for (uint64_t budget = chain.input_bytes + 1; budget <= all + 2; budget += 3) {
      const double want = rotor_reference(chain, budget - chain.input_bytes);
      StrategyRequest q;
      q.strategy = trainmem::vocab::Strategy::optimal;
      q.budget_bytes = budget;
      q.slots = 1000;  // budget <= slots: one byte per slot, the grid is exact
      INFO("trial " << trial << " budget " << budget);
      if (std::isinf(want)) {
        CHECK_THROWS_AS(plan(chain, q), trainmem::RequestError);
        continue;
      }
      const PlanResult r = plan(chain, q);
      CHECK(fact_value(r.details, "predictedTotalCost") == want);
      CHECK(r.total_cost == Approx(want));
      ++compared;
    }
  }
  CHECK(compared > 200);
}
