// The strategies that name a plan directly (none, manual, every-k, block, sequential, sqrt,
// chen-greedy), the dispatcher plan(), and the frontier. Every plan is measured by the one
// simulator (placement_simulator.cpp); no strategy computes its own memory or cost.
#include <algorithm>
#include <cmath>
#include <limits>

#include "placement/placement_internal.hpp"
#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"
#include "trainmem/vocabulary.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace placement {

using vocab::Strategy;

void throw_infeasible(const std::string& strategy, uint64_t budget, uint64_t minimum,
                      const char* message, MessageParams more) {
  more.insert(more.begin(), {{"strategy", strategy},
                             {"budget", std::to_string(budget)},
                             {"minimum", std::to_string(minimum)}});
  const Text text(message, std::move(more));
  throw RequestError(code::kInfeasible, "budgetBytes", text).with_minimum_budget(minimum);
}

void throw_infeasible_slots(const std::string& strategy, uint64_t budget, uint64_t minimum,
                            uint64_t slots, uint64_t exact) {
  const Text text("error.infeasible", {{"strategy", strategy},
                                       {"budget", std::to_string(budget)},
                                       {"minimum", std::to_string(minimum)},
                                       {"slots", std::to_string(slots)},
                                       {"exact", std::to_string(exact)}});
  throw RequestError(code::kInfeasible, "budgetBytes", text).with_minimum_budget(minimum);
}

// PyTorch torch.utils.checkpoint.checkpoint_sequential (v1.13 torch/utils/checkpoint.py):
// segment_size = n // segments; for start in range(0, segment_size * (segments - 1),
// segment_size) checkpoint layers start..start+segment_size-1; the rest run plainly.
std::vector<Segment> sequential_segments(uint32_t n, uint32_t segments) {
  std::vector<Segment> out;
  const uint32_t size = n / segments;
  for (uint32_t s = 0; s + 1 < segments; ++s) out.push_back({s * size, s * size + size - 1});
  return out;
}

// Megatron-LM --recompute-method uniform --recompute-num-layers k: chunks of k layers from the
// first, each checkpointed as one unit (the last chunk may be shorter).
std::vector<Segment> every_k_segments(uint32_t n, uint32_t k) {
  std::vector<Segment> out;
  for (uint32_t s = 0; s < n; s += k) out.push_back({s, std::min(n, s + k) - 1});
  return out;
}

// Megatron-LM --recompute-method block --recompute-num-layers k: the first k layers are each
// checkpointed on their own; the rest run plainly.
std::vector<Segment> block_segments(uint32_t n, uint32_t k) {
  std::vector<Segment> out;
  for (uint32_t s = 0; s < std::min(n, k); ++s) out.push_back({s, s});
  return out;
}

// Chen et al. 2016 (arXiv 1604.06174) Sec. 4.1: k = floor(sqrt(n)) segments, all recomputed in
// the backward (one extra forward pass). Sizes differ by at most one: the first n mod k
// segments have one layer more.
std::vector<Segment> sqrt_segments(uint32_t n) {
  uint32_t k = static_cast<uint32_t>(std::floor(std::sqrt(static_cast<double>(n))));
  while (static_cast<uint64_t>(k + 1) * (k + 1) <= n) ++k;
  while (static_cast<uint64_t>(k) * k > n) --k;
  std::vector<Segment> out;
  uint32_t s = 0;
  for (uint32_t q = 0; q < k; ++q) {
    const uint32_t len = n / k + (q < n % k ? 1 : 0);
    out.push_back({s, s + len - 1});
    s += len;
  }
  return out;
}

// Chen et al. 2016 Alg. 3 ("memory planning with budget") on a chain: walking the layers,
// temp accumulates what each layer would keep (savedBytes); when temp exceeds B the layer
// becomes a stage split: its output is kept (x += outputBytes), y = max(y, temp), temp = 0.
// Every other layer is dropped and recomputed: the layers up to each split (and after the
// last one) form checkpointed segments.
ChenResult chen_greedy(const Chain& chain, uint64_t threshold) {
  ChenResult r;
  uint64_t temp = 0;
  uint32_t start = 0;
  const uint32_t n = static_cast<uint32_t>(chain.layers.size());
  for (uint32_t i = 0; i < n; ++i) {
    temp += chain.layers[i].saved_bytes;
    if (temp > threshold) {
      r.x += chain.layers[i].output_bytes;
      r.y = std::max(r.y, temp);
      r.segments.push_back({start, i});
      start = i + 1;
      temp = 0;
    }
  }
  r.y = std::max(r.y, temp);
  if (start < n) r.segments.push_back({start, n - 1});
  return r;
}

std::vector<FrontierPoint> pareto(std::vector<FrontierPoint> pts) {
  std::sort(pts.begin(), pts.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes : a.total_cost < b.total_cost;
  });
  std::vector<FrontierPoint> out;
  for (auto& p : pts)
    if (out.empty() || p.total_cost < out.back().total_cost) out.push_back(std::move(p));
  return out;
}

void validate_chain(const Chain& chain, const std::string& path) {
  const std::string layers = path + ".layers";
  if (chain.layers.empty())
    fail(code::kOutOfRange, layers, Message{"error.field.oneLayer", {{"field", layers}}});
  if (chain.layers.size() > 100000)
    fail(code::kTooLarge, layers, Message{"error.chain.tooMany", {{"field", layers}}});
  // Sums of sizes stay far below 2^64 so that no peak overflows.
  const uint64_t cap = uint64_t{1} << 62;
  uint64_t total = chain.input_bytes;
  if (chain.input_bytes > kMaxExactJson)
    fail(code::kOutOfRange, path + ".inputBytes",
         Message{"error.chain.inputBytes", {{"path", path}}});
  for (size_t i = 0; i < chain.layers.size(); ++i) {
    const Layer& L = chain.layers[i];
    // (the layer's path is built only for an error: 100,000 layers are checked per request)
    const auto lp = [&] { return index_path(layers, i); };
    const std::pair<const char*, uint64_t> sizes[] = {{"outputBytes", L.output_bytes},
                                                      {"savedBytes", L.saved_bytes},
                                                      {"forwardTempBytes", L.forward_temp_bytes},
                                                      {"backwardTempBytes", L.backward_temp_bytes}};
    for (const auto& s : sizes) {
      if (s.second > kMaxExactJson)
        fail(code::kOutOfRange, lp() + "." + s.first,
             Message{"error.chain.layerBytes", {{"layer", lp()}, {"key", s.first}}});
      total += s.second;
    }
    if (total > cap) fail(code::kTooLarge, lp(), Message{"error.chain.over62", {{"path", path}}});
    if (L.saved_bytes < L.output_bytes)
      fail(code::kInconsistent, lp() + ".savedBytes",
           Message{"error.chain.savedOutput",
                   {{"value", lp()},
                    {"savedBytes", std::to_string(L.saved_bytes)},
                    {"outputBytes", std::to_string(L.output_bytes)}}});
    for (size_t k = 0; k < L.skips.size(); ++k)
      if (L.skips[k].from + 1 >= i || L.skips[k].grad_bytes > kMaxExactJson)
        fail(code::kInconsistent, index_path(lp() + ".skips", k),
             Message{"error.chain.skip", {{"field", index_path(lp() + ".skips", k)}}});
    if (!(L.forward_cost >= 0) || !(L.backward_cost >= 0) || !std::isfinite(L.forward_cost) ||
        !std::isfinite(L.backward_cost))
      fail(code::kOutOfRange, lp() + ".forwardCost",
           Message{"error.chain.costs", {{"layer", lp()}}});
  }
}

namespace {

[[noreturn]] void missing(const std::string& field, const std::string& strategy) {
  fail(code::kMissingField, field,
       Message{"error.strategy.required", {{"field", field}, {"strategy", strategy}}});
}

uint32_t layer_count(const Chain& chain) { return static_cast<uint32_t>(chain.layers.size()); }

struct ChenSearch {
  uint64_t threshold = 0;
  bool found = false;
  uint64_t min_peak = std::numeric_limits<uint64_t>::max();
};

// Thresholds tried by the budget search: Chen et al. 2016 Sec. 4.3 search B around
// sqrt(x * y), x and y from a first run with B = 0; we try B = sqrt(x*y) * 2^(q/8),
// q = -64..64, plus 0 and every layer's cumulative savedBytes bound, keeping distinct plans.
}  // namespace

bool same_plan(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || a[i].last != b[i].last) return false;
  return true;
}

std::vector<uint64_t> chen_thresholds(const Chain& chain) {
  const ChenResult first = chen_greedy(chain, 0);
  const double g = std::sqrt(static_cast<double>(first.x) * static_cast<double>(first.y));
  std::vector<uint64_t> ts = {0};
  for (int q = -64; q <= 64; ++q) {
    const double v = g * std::pow(2.0, q / 8.0);
    if (v >= 0 && v < 1.8e19) ts.push_back(static_cast<uint64_t>(v));
  }
  uint64_t total = 0;
  for (const Layer& L : chain.layers) total += L.saved_bytes;
  ts.push_back(total);  // one segment: everything recomputed
  std::sort(ts.begin(), ts.end());
  ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
  return ts;
}

namespace {

// Chains metrics() models: every plan of Alg. 3 checkpoints every layer (the splits end
// segments, the rest is the last one), so all cost the same: the cheapest plan is the one of
// lowest peak (the first threshold reaching it), with or without a budget.
ChenSearch chen_search_fast(const Chain& chain, const StrategyRequest& req) {
  ChenSearch s;
  const std::vector<ChenLayer> layers = chen_layers(chain);
  for (uint64_t t : chen_thresholds(chain)) {
    const uint64_t peak = chen_peak(chain.input_bytes, layers, t, s.min_peak);
    if (peak < s.min_peak) {
      s.min_peak = peak;
      s.threshold = t;
    }
  }
  s.found = req.budget_bytes == 0 || s.min_peak <= req.budget_bytes;
  return s;
}

// Other chains (skips, early-freed inputs, selective layers): each distinct plan simulated.
ChenSearch chen_search_simulated(const Chain& chain, const StrategyRequest& req) {
  ChenSearch s;
  PlanResult best;
  std::vector<Segment> last_plan;
  bool any = false;
  for (uint64_t t : chen_thresholds(chain)) {
    ChenResult c = chen_greedy(chain, t);
    // neighbouring thresholds often give the same plan: its figures are the same
    if (any && same_plan(c.segments, last_plan)) continue;
    any = true;
    last_plan = std::move(c.segments);
    PlanResult r = evaluate(chain, last_plan);
    s.min_peak = std::min(s.min_peak, r.peak_bytes);
    if (req.budget_bytes > 0 && r.peak_bytes > req.budget_bytes) continue;
    // With a budget: the cheapest plan that fits (then the lower peak); without: the lowest
    // peak (then the cheaper).
    bool better = !s.found;
    if (s.found) {
      if (req.budget_bytes > 0)
        better = r.total_cost < best.total_cost ||
                 (r.total_cost == best.total_cost && r.peak_bytes < best.peak_bytes);
      else
        better = r.peak_bytes < best.peak_bytes ||
                 (r.peak_bytes == best.peak_bytes && r.total_cost < best.total_cost);
    }
    if (better) {
      best = std::move(r);
      s.threshold = t;
      s.found = true;
    }
  }
  return s;
}

PlanResult chen_plan(const Chain& chain, const StrategyRequest& req) {
  const bool given = req.greedy_bytes > 0;
  ChenSearch s;
  if (given) {
    s.threshold = req.greedy_bytes;
  } else {
    // Each threshold's plan is ranked by its figures (131 simulations of a 100,000-layer
    // chain took 16 s); the chosen one is simulated below.
    s = metrics_apply(chain) ? chen_search_fast(chain, req) : chen_search_simulated(chain, req);
    if (!s.found)
      throw_infeasible("chen-greedy", req.budget_bytes, s.min_peak, "error.infeasible.searched");
  }
  const ChenResult c = chen_greedy(chain, s.threshold);
  PlanResult r = evaluate(chain, c.segments);
  r.details.clear();
  r.details.push_back(count_fact("greedyBytes", s.threshold));
  r.details.push_back(count_fact("x", c.x));
  r.details.push_back(count_fact("y", c.y));
  return r;
}

void check_manual(const Chain& chain, const std::vector<Segment>& segs) {
  const uint32_t n = layer_count(chain);
  for (size_t s = 0; s < segs.size(); ++s) {
    const std::string f = index_path("checkpointed", s);
    if (segs[s].first > segs[s].last)
      fail(code::kInconsistent, f, Message{"error.segment.order", {{"field", f}}});
    if (segs[s].last >= n)
      fail(code::kOutOfRange, f,
           Message{"error.segment.layers", {{"field", f}, {"n", std::to_string(n - 1)}}});
    if (s > 0 && segs[s].first <= segs[s - 1].last)
      fail(code::kInconsistent, f,
           Message{"error.segment.overlap", {{"field", f}, {"s", std::to_string(s - 1)}}});
  }
}

// The strategy a request names, if the placement engine runs it (vocab::kStrategies: full and
// the selective modes are not placements of a chain).
Strategy placement_kind(Strategy s) {
  if (!vocab::term(s).placement)
    fail(code::kUnknownValue, "strategy",
         Message{"error.strategy.unknown", {{"strategy", vocab::name_of(s)}}});
  return s;
}

// evaluate(), with the strategy's parameters as the plan's details.
PlanResult evaluate_with(const Chain& chain, const std::vector<Segment>& checkpointed,
                         std::vector<Fact> details) {
  PlanResult r = evaluate(chain, checkpointed);
  r.details = std::move(details);
  return r;
}

// k (every-k, block) must lie in [lowest, n].
void check_k(uint32_t k, uint32_t lowest, uint32_t n) {
  if (k > n)
    fail(code::kOutOfRange, "k",
         Message{"error.k.range", {{"lowest", std::to_string(lowest)}, {"n", std::to_string(n)}}});
}

}  // namespace

// Revolve and Rotor schedule recomputations from any checkpoint through the rest of the chain,
// which a skip connection breaks (the skipped tensor would have to be part of every snapshot),
// and the single-level optimum's recurrence prices a segment without the skipped tensors that
// outlive it: they are refused for chains with skips; the other single-level strategies are
// evaluated exactly for them.
void refuse_multi_level_skips(const Chain& chain, const std::string& strategy) {
  for (const Layer& L : chain.layers)
    if (!L.skips.empty())
      fail(code::kUnsupported, "strategy",
           Message{"error.strategy.skips", {{"strategy", strategy}}});
}

PlanResult plan(const Chain& chain, const StrategyRequest& req) {
  validate_chain(chain, "chain");
  if (placement_kind(req.strategy) == Strategy::revolve ||
      placement_kind(req.strategy) == Strategy::optimal ||
      placement_kind(req.strategy) == Strategy::optimal_single_level)
    refuse_multi_level_skips(chain, vocab::name_of(req.strategy));
  const uint32_t n = layer_count(chain);
  const std::string st = vocab::name_of(req.strategy);
  const Strategy kind = placement_kind(req.strategy);
  PlanResult r;
  if (kind == Strategy::none) {
    r = evaluate(chain, {});
  } else if (kind == Strategy::manual) {
    check_manual(chain, req.manual);
    r = evaluate(chain, req.manual);
  } else if (kind == Strategy::every_k) {
    if (req.k == 0) missing("k", st);
    check_k(req.k, 1, n);
    r = evaluate_with(chain, every_k_segments(n, req.k), {count_fact("k", req.k)});
  } else if (kind == Strategy::block) {
    check_k(req.k, 0, n);
    r = evaluate_with(chain, block_segments(n, req.k), {count_fact("k", req.k)});
  } else if (kind == Strategy::sequential) {
    if (req.segments == 0) missing("segments", st);
    if (req.segments > n)
      fail(code::kOutOfRange, "segments",
           Message{"error.sequential.segments",
                   {{"segments", std::to_string(req.segments)}, {"n", std::to_string(n)}}});
    r = evaluate_with(
        chain, sequential_segments(n, req.segments),
        {count_fact("segments", req.segments), count_fact("segmentSize", n / req.segments)});
  } else if (kind == Strategy::sqrt) {
    r = evaluate(chain, sqrt_segments(n));
    r.details.clear();
    r.details.push_back(count_fact("segments", r.checkpointed.size()));
  } else if (kind == Strategy::chen_greedy) {
    r = chen_plan(chain, req);
  } else if (kind == Strategy::revolve) {
    if (req.snapshots == 0) missing("snapshots", st);
    // (placement_json gives longer chains revolve's closed-form costs: revolve_plan.)
    if (n > kRevolveScheduleLayers)
      fail(code::kTooLarge, "chain.layers", Message{"error.revolve.layers", {}});
    static_assert(kRevolveScheduleLayers == 4096, "the message above states the limit");
    if (!revolve_schedulable(n, req.snapshots))
      fail(code::kTooLarge, "snapshots",
           Message{"error.revolve.ops",
                   {{"n", std::to_string(std::min(req.snapshots, n))},
                    {"n2", std::to_string(n)},
                    {"ops", std::to_string(kRevolveScheduleOps)}}});
    r = revolve_plan(chain, req.snapshots);
  } else if (kind == Strategy::optimal_single_level) {
    if (req.budget_bytes == 0) missing("budgetBytes", st);
    r = single_level_optimal(chain, req.budget_bytes);
  } else if (kind == Strategy::optimal) {
    if (req.budget_bytes == 0) missing("budgetBytes", st);
    if (req.slots == 0) fail(code::kOutOfRange, "slots", Message{"error.slots.min", {}});
    r = rotor_optimal(chain, req.budget_bytes, req.slots);
  }
  r.strategy = kind;
  return r;
}

namespace {

// The parameter values a frontier sweep tries (every-k's k, block's k, sequential's segments):
// every value in [lo, hi] up to kMaxSweepPlans of them; beyond, kMaxSweepPlans values spread
// geometrically over the range (every small value, then ever wider steps), hi included.
std::vector<uint32_t> sweep_values(uint32_t lo, uint32_t hi) {
  std::vector<uint32_t> out;
  const uint32_t dense = hi - lo + 1 <= kMaxSweepPlans ? hi - lo + 1 : kMaxSweepPlans / 2;
  for (uint32_t v = lo; v < lo + dense; ++v) out.push_back(v);
  if (out.back() == hi) return out;
  // the other half: geometric from the last dense value to hi
  const double from = out.back(), steps = kMaxSweepPlans - dense;
  const double ratio = std::pow(static_cast<double>(hi) / from, 1.0 / steps);
  double x = from;
  for (uint32_t i = 0; i < steps; ++i) {
    x *= ratio;
    const uint32_t v = std::min<uint32_t>(hi, static_cast<uint32_t>(x));
    if (v > out.back()) out.push_back(v);
  }
  if (out.back() != hi) out.push_back(hi);
  return out;
}

}  // namespace

std::vector<FrontierPoint> frontier(const Chain& chain, const StrategyRequest& req) {
  validate_chain(chain, "chain");
  const uint32_t n = layer_count(chain);
  const Strategy kind = placement_kind(req.strategy);
  if (kind == Strategy::revolve || kind == Strategy::optimal ||
      kind == Strategy::optimal_single_level)
    refuse_multi_level_skips(chain, vocab::name_of(req.strategy));
  if (kind == Strategy::optimal_single_level) return single_level_frontier(chain, req.budget_bytes);
  if (kind == Strategy::optimal) {
    // Without a budget, the slot grid spans up to the peak of storing everything.
    const uint64_t top = req.budget_bytes > 0 ? req.budget_bytes : evaluate(chain, {}).peak_bytes;
    return rotor_frontier(chain, top, req.slots == 0 ? 500 : req.slots);
  }
  std::vector<FrontierPoint> pts;
  const bool fast = metrics_apply(chain);
  const ChainCosts costs = chain_costs(chain);
  // Each plan by its figures (metrics: O(layers), no timeline), unless layers are selective.
  auto add_plan = [&](const std::vector<Segment>& segs, std::vector<Fact> param) {
    FrontierPoint p;
    if (fast) {
      const PlanMetrics m = metrics(chain, segs, costs);
      p.peak_bytes = m.peak_bytes;
      p.total_cost = m.total_cost;
      p.recompute_cost = m.recompute_cost;
    } else {
      const PlanResult r = evaluate(chain, segs);
      p.peak_bytes = r.peak_bytes;
      p.total_cost = r.total_cost;
      p.recompute_cost = r.recompute_cost;
    }
    p.checkpointed = segs;
    p.parameter = std::move(param);
    pts.push_back(std::move(p));
  };
  auto add = [&](const PlanResult& r, std::vector<Fact> param) {
    FrontierPoint p;
    p.peak_bytes = r.peak_bytes;
    p.total_cost = r.total_cost;
    p.recompute_cost = r.recompute_cost;
    p.checkpointed = r.checkpointed;
    p.parameter = std::move(param);
    pts.push_back(std::move(p));
  };
  const bool sweep =
      kind == Strategy::every_k || kind == Strategy::block || kind == Strategy::sequential;
  if (sweep && n > kMaxSweepLayers)
    fail(code::kTooLarge, "frontier",
         Message{"error.frontier.layers",
                 {{"strategy", vocab::name_of(req.strategy)},
                  {"max", std::to_string(kMaxSweepLayers)}}});
  if (kind == Strategy::every_k) {
    for (uint32_t k : sweep_values(1, n)) add_plan(every_k_segments(n, k), {count_fact("k", k)});
  } else if (kind == Strategy::block) {
    for (uint32_t k : sweep_values(0, n)) add_plan(block_segments(n, k), {count_fact("k", k)});
  } else if (kind == Strategy::sequential) {
    for (uint32_t s : sweep_values(1, n))
      add_plan(sequential_segments(n, s), {count_fact("segments", s)});
  } else if (kind == Strategy::revolve) {
    if (n > 1024) fail(code::kTooLarge, "chain.layers", Message{"error.frontier.revolve", {}});
    for (uint32_t c = 1; c <= std::min<uint32_t>(n, 16); ++c)
      add(revolve_plan(chain, c), {count_fact("snapshots", c)});
  } else if (kind == Strategy::chen_greedy) {
    for (uint64_t t : chen_thresholds(chain))
      add_plan(chen_greedy(chain, t).segments, {count_fact("greedyBytes", t)});
  } else {
    StrategyRequest one = req;
    one.budget_bytes = kind == Strategy::none || kind == Strategy::manual || kind == Strategy::sqrt
                           ? 0
                           : req.budget_bytes;
    add(plan(chain, one), {});
  }
  if (req.budget_bytes > 0)
    pts.erase(
        std::remove_if(pts.begin(), pts.end(),
                       [&](const FrontierPoint& p) { return p.peak_bytes > req.budget_bytes; }),
        pts.end());
  return pareto(std::move(pts));
}

}  // namespace placement
}  // namespace trainmem
