// Internal interfaces between the placement sources (not part of the public headers).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/placement.hpp"

namespace trainmem {
namespace placement {

// Throws code "infeasible" on field budgetBytes; the message states the minimum feasible
// budget as "minimum feasible budgetBytes is N" (machine-readable). `message`: the catalog code
// (error.infeasible.plain, or one that says more with the `more` parameters).
[[noreturn]] void throw_infeasible(const std::string& strategy, uint64_t budget, uint64_t minimum,
                                   const char* message = "error.infeasible.plain",
                                   MessageParams more = {});
// The same for the optimal strategy's discretised plan: its minimum with `slots` slots, and the
// exact minimum without discretisation (message error.infeasible).
[[noreturn]] void throw_infeasible_slots(const std::string& strategy, uint64_t budget,
                                         uint64_t minimum, uint64_t slots, uint64_t exact);

// optimal-single-level (placement_single_level.cpp): exact Pareto dynamic programme.
PlanResult single_level_optimal(const Chain& chain, uint64_t budget);
std::vector<FrontierPoint> single_level_frontier(const Chain& chain, uint64_t budget);
uint64_t single_level_min_budget(const Chain& chain);  // smallest peak of any single-level plan

// optimal (placement_rotor.cpp): Rotor's multi-level dynamic programme on a slot grid.
PlanResult rotor_optimal(const Chain& chain, uint64_t budget, uint32_t slots);
std::vector<FrontierPoint> rotor_frontier(const Chain& chain, uint64_t budget, uint32_t slots);
uint64_t rotor_min_budget_exact(const Chain& chain);  // without discretisation
// The work bound of Rotor's table, checked before any O(layers^3) pass: its cells (pairs x
// (slots + 1), 8 bytes each) and its steps (stages^3 / 6 leaf candidates, each costing about
// kRotorFixedSlots + slots). A longer chain is solved on stages of several layers (stated in
// the plan's details as stageLayers; placement_rotor.cpp, grouped()).
inline constexpr uint64_t kRotorMaxCells = uint64_t{1} << 24;
inline constexpr uint64_t kRotorMaxWork = uint64_t{200} << 20;
inline constexpr uint64_t kRotorFixedSlots = 155;
inline constexpr int kRotorMinBudgetProbes = 16;    // O(layers^3) probes of an infeasible budget
inline constexpr size_t kRotorFrontierPoints = 64;  // schedules simulated for a frontier
struct RotorGrid {
  uint32_t slots = 0, requested = 0;
  uint32_t stage_layers = 1;  // layers per stage of the table
};
// The table the request gets: its slots and its stages; throws too_large (slots) if even one
// stage exceeds the bounds.
RotorGrid rotor_grid(const Chain& chain, uint32_t slots);
// The table of `rg` itself (no shortcut when the budget holds everything): for tests.
PlanResult rotor_optimal(const Chain& chain, uint64_t budget, const RotorGrid& rg);

// revolve (placement_revolve.cpp).
double revolve_extra_steps(uint64_t l, uint64_t c);    // closed form t(l, c); inf if impossible
uint64_t revolve_repetitions(uint64_t l, uint64_t c);  // r: minimal with C(c + r, c) >= l
// Whether revolve builds the schedule of l layers with c snapshots (the limits in placement.hpp).
bool revolve_schedulable(uint64_t l, uint64_t c);
PlanResult revolve_plan(const Chain& chain, uint32_t snapshots);

// Simple strategies (placement_strategies.cpp).
std::vector<Segment> sequential_segments(uint32_t n, uint32_t segments);
std::vector<Segment> every_k_segments(uint32_t n, uint32_t k);
std::vector<Segment> block_segments(uint32_t n, uint32_t k);
std::vector<Segment> sqrt_segments(uint32_t n);
// Chen et al. 2016 Alg. 3 with threshold B; x = bytes of the kept split outputs,
// y = the largest local (between-split) size.
struct ChenResult {
  std::vector<Segment> segments;
  uint64_t x = 0, y = 0;
};
ChenResult chen_greedy(const Chain& chain, uint64_t threshold);
// The thresholds chen-greedy's budget search tries (Chen et al. 2016 Sec. 4.3).
std::vector<uint64_t> chen_thresholds(const Chain& chain);
// The peak of chen_greedy(chain, threshold)'s plan as metrics() gives it, in one pass without
// the plan (a chain metrics_apply() models); any value >= stop once the peak reaches stop.
uint64_t chen_peak(const Chain& chain, uint64_t threshold, uint64_t stop);
// What chen_peak reads of a layer, packed (40 bytes, not a whole Layer with its name: the search
// runs it over the chain once per threshold, up to 131 times); x is the layer's input.
struct ChenLayer {
  uint64_t x, output, saved, forward_temp, backward_temp;
};
std::vector<ChenLayer> chen_layers(const Chain& chain);
uint64_t chen_peak(uint64_t input_bytes, const std::vector<ChenLayer>& layers, uint64_t threshold,
                   uint64_t stop);

// The figures of a single-level plan computed in O(layers) without the simulator
// (placement_metrics.cpp): for searches over many plans; the plan returned is simulated.
struct PlanMetrics {
  uint64_t peak_bytes = 0, stored_bytes = 0;
  double forward_cost = 0, backward_cost = 0, recompute_cost = 0, total_cost = 0;
};
// The plan-independent sums of a chain (its forward and backward costs, summed in the
// simulator's order): searches that rank many plans of one chain compute them once.
struct ChainCosts {
  double forward = 0, backward = 0;
};
ChainCosts chain_costs(const Chain& chain);
PlanMetrics metrics(const Chain& chain, const std::vector<Segment>& checkpointed);
PlanMetrics metrics(const Chain& chain, const std::vector<Segment>& checkpointed,
                    const ChainCosts& costs);
// Whether metrics() models the chain (no op-level selective layers: those are simulated).
bool metrics_apply(const Chain& chain);

// Frontier sweeps (every-k, block, sequential): chains of at most kMaxSweepLayers layers, and at
// most kMaxSweepPlans parameter values (beyond, spread geometrically over the range).
inline constexpr uint32_t kMaxSweepLayers = 10000;
inline constexpr uint32_t kMaxSweepPlans = 2048;

// Pareto filter: peak ascending, cost strictly descending.
std::vector<FrontierPoint> pareto(std::vector<FrontierPoint> points);

}  // namespace placement
}  // namespace trainmem
