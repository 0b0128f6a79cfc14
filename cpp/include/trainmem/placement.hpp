// Checkpoint placement on a chain of layers: strategies produce plans; ONE simulator
// (evaluate) measures every plan. The memory model is stated in placement.cpp and README.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainmem {
namespace placement {

struct Layer {
  std::string name;
  double forward_cost = 1;  // time units (e.g. FLOPs or ms); recompute costs the same
  double backward_cost = 2;
  uint64_t output_bytes = 0;        // the layer's output activation
  uint64_t saved_bytes = 0;         // everything kept for backward when run normally (output incl.)
  uint64_t forward_temp_bytes = 0;  // transient extra during the forward of this layer
  uint64_t backward_temp_bytes = 0;  // transient extra during its backward
};

struct Chain {
  uint64_t input_bytes = 0;
  std::vector<Layer> layers;
};

// A checkpointed segment: layers first..last (inclusive, 0-based) run without saving in the
// forward (only the segment input is kept) and are recomputed once in the backward.
struct Segment {
  uint32_t first = 0;
  uint32_t last = 0;
};

struct StepEvent {
  std::string phase;  // "forward" | "recompute" | "backward"
  int32_t layer = -1;
  uint64_t live_bytes = 0;  // activation bytes live at the highest point of this event
};

struct PlanResult {
  std::string strategy;
  std::vector<Segment> checkpointed;
  uint64_t stored_bytes = 0;  // held at the end of the forward pass
  uint64_t peak_bytes = 0;    // highest point of forward and backward
  double forward_cost = 0;
  double backward_cost = 0;
  double recompute_cost = 0;     // extra forward work
  double total_cost = 0;         // forward + backward + recompute
  double overhead_fraction = 0;  // recompute / (forward + backward)
  std::vector<StepEvent> timeline;
  nlohmann::json schedule;  // multi-level strategies: the op sequence; else null
};

// The single simulator of single-level plans (segments must be disjoint and sorted).
PlanResult evaluate(const Chain& chain, const std::vector<Segment>& checkpointed);

struct StrategyRequest {
  std::string strategy = "none";  // none manual every-k block sequential sqrt chen-greedy
                                  // revolve optimal-single-level optimal
  uint32_t k = 0;                 // every-k: layers per checkpointed chunk; block: N layers
  uint32_t segments = 0;          // sequential
  uint32_t snapshots = 0;         // revolve
  uint64_t budget_bytes = 0;      // chen-greedy, optimal-single-level, optimal
  uint32_t slots = 500;           // optimal: budget discretisation
  std::vector<Segment> manual;
};

// Runs a strategy (throws RequestError: infeasible budgets say the minimum feasible one).
PlanResult plan(const Chain& chain, const StrategyRequest& request);

nlohmann::json to_json(const PlanResult& r);

}  // namespace placement
}  // namespace trainmem
