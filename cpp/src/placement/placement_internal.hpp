// Internal interfaces between the placement sources (not part of the public headers).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/placement.hpp"

namespace trainmem {
namespace placement {

// Throws code "infeasible" on field budgetBytes; the message states the minimum feasible
// budget as "minimum feasible budgetBytes is N" (machine-readable).
[[noreturn]] void throw_infeasible(const std::string& strategy, uint64_t budget, uint64_t minimum,
                                   const std::string& note = "");

// optimal-single-level (placement_single_level.cpp): exact Pareto dynamic programme.
PlanResult single_level_optimal(const Chain& chain, uint64_t budget);
std::vector<FrontierPoint> single_level_frontier(const Chain& chain, uint64_t budget);
uint64_t single_level_min_budget(const Chain& chain);  // smallest peak of any single-level plan

// optimal (placement_rotor.cpp): Rotor's multi-level dynamic programme on a slot grid.
PlanResult rotor_optimal(const Chain& chain, uint64_t budget, uint32_t slots);
std::vector<FrontierPoint> rotor_frontier(const Chain& chain, uint64_t budget, uint32_t slots);
uint64_t rotor_min_budget_exact(const Chain& chain);  // without discretisation
// Cells of Rotor's table (pairs x slots); above kRotorMaxCells the request is too large.
inline constexpr uint64_t kRotorMaxCells = uint64_t{1} << 24;

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

// Pareto filter: peak ascending, cost strictly descending.
std::vector<FrontierPoint> pareto(std::vector<FrontierPoint> points);

}  // namespace placement
}  // namespace trainmem
