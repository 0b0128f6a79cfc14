// Checkpoint placement on a chain of layers: strategies produce plans; ONE simulator
// (simulate; evaluate for single-level plans) measures every plan. The memory model is stated
// in placement_simulator.cpp and docs/placement.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace placement {

// Layer i reads activation a[i] (bytes: the chain input for i = 0, else outputBytes of layer
// i-1) and writes a[i+1]. saved_bytes counts what the layer keeps for its backward when run
// normally, its output included and its input excluded (the input is counted once, as the
// previous layer's output or the chain input), so saved_bytes >= output_bytes.
struct Layer {
  std::string name;
  double forward_cost = 1;  // time units (e.g. FLOPs or ms); recompute costs the same
  double backward_cost = 2;
  uint64_t output_bytes = 0;        // the layer's output activation
  uint64_t saved_bytes = 0;         // everything kept for backward when run normally (output incl.)
  uint64_t forward_temp_bytes = 0;  // transient extra during the forward of this layer
  uint64_t backward_temp_bytes = 0;  // transient extra during its backward
  // Op-level selective checkpointing of this layer (activations::selective_keep): run without
  // autograd, it keeps selective_kept_bytes (the outputs of the ops its policy saves) until it
  // is recomputed, and the recomputation costs selective_recompute_cost instead of
  // forward_cost (the kept ops do not run again).
  bool selective = false;
  uint64_t selective_kept_bytes = 0;
  double selective_recompute_cost = 0;
  // Skip connections (diffusers' UNet: an up resnet concatenates a down block's output; a
  // Transformer2DModel adds its input back after its blocks): outputs of earlier layers that this
  // layer also reads in its forward, keeping none of them itself. Each is kept from its creation
  // until this layer has run, or until its recomputation when it runs inside a checkpointed
  // segment that does not recompute the producer too. The gradient this layer's backward sends
  // to it (grad_bytes) lives until the backward of the layer after the producer, where the two
  // gradients are summed.
  struct Skip {
    uint32_t from = 0;        // the producing layer (its output a[from + 1]); from + 1 < this layer
    uint64_t grad_bytes = 0;  // the gradient storage held for it
  };
  std::vector<Skip> skips;
  // false: no op of this layer keeps its input a[i] for the backward (the chain counts a[i] in
  // the previous layer's savedBytes: it is freed once this layer has run)
  bool input_saved = true;
  // true: the first op concatenates a[i] with the skips into the first of the layer's saved
  // tensors (torch.cat's backward returns views of one gradient: the input's gradient is part of
  // the skip's until the skip's gradient is summed)
  bool concat_input = false;
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

// Operations of a schedule (Beaumont et al. 2019 notation): F_all runs a layer with autograd
// (keeps its saved tensors), F_ck without autograd keeping its input, F_n without autograd
// dropping its input, the loss, and B the backward of one layer.
enum class OpKind { kForwardAll, kForwardCheck, kForwardNoGrad, kLoss, kBackward };
struct Op {
  OpKind kind;
  uint32_t layer;  // chain.layers.size() for the loss
};
// "forward-all", "forward-check", "forward-nograd", "loss", "backward".
const char* op_name(OpKind kind);

// One named fact of a plan (a strategy's details, a frontier point's parameter): a count, a
// real number or a flag.
struct Fact {
  enum class Kind { kCount, kReal, kFlag };
  std::string key;
  Kind kind = Kind::kCount;
  uint64_t count = 0;
  double real = 0;
  bool flag = false;
};
Fact count_fact(const char* key, uint64_t v);
Fact real_fact(const char* key, double v);
Fact flag_fact(const char* key, bool v);
// The value of facts[key] as a number (a flag is 0 or 1); NaN when absent.
double fact_value(const std::vector<Fact>& facts, const std::string& key);

struct StepEvent {
  std::string phase;   // "forward" | "loss" | "recompute" | "backward"
  int32_t layer = -1;  // -1 for the loss
  std::string op;      // "forward-all" | "forward-check" | "forward-nograd" | "loss" | "backward"
  uint64_t live_bytes = 0;  // activation bytes live at the highest point of this event
};

struct PlanResult {
  vocab::Strategy strategy = vocab::Strategy::none;
  // Per layer, what the first forward pass does: "store" (runs with autograd, keeps its saved
  // tensors), "checkpoint" (first layer of a checkpointed segment: runs without autograd,
  // its input kept), "drop" (runs without autograd inside a segment).
  std::vector<std::string> plan;
  std::vector<Segment> checkpointed;
  uint64_t stored_bytes = 0;  // held at the end of the forward pass
  uint64_t peak_bytes = 0;    // highest point of forward and backward
  std::string peak_phase;     // phase of the first event reaching peak_bytes
  int32_t peak_layer = -1;
  double forward_cost = 0;
  double backward_cost = 0;
  double recompute_cost = 0;     // extra forward work
  double total_cost = 0;         // forward + backward + recompute
  double overhead_fraction = 0;  // recompute / (forward + backward)
  std::vector<StepEvent> timeline;
  std::vector<Op> schedule;  // multi-level strategies: the op sequence; else empty
  // optimal on stages of several layers (details.stageLayers): the schedule of the stages, each
  // op over layers [layer, layer + stage_layers - 1] (the JSON lists this shorter form)
  std::vector<Op> stage_schedule;
  uint32_t stage_layers = 1;
  std::vector<Fact> details;  // strategy facts (segment size, repetitions, slot size...)
  // false: a plan whose schedule is too long to build (revolve over kRevolveScheduleLayers
  // layers); only its costs and details are known (no plan, peak, timeline or schedule).
  bool scheduled = true;
};

// The single simulator of single-level plans (segments must be disjoint and sorted).
PlanResult evaluate(const Chain& chain, const std::vector<Segment>& checkpointed);

struct StrategyRequest {
  vocab::Strategy strategy = vocab::Strategy::none;  // a placement strategy (vocab::kStrategies)
  uint32_t k = 0;             // every-k: layers per checkpointed chunk; block: N layers
  uint32_t segments = 0;      // sequential
  uint32_t snapshots = 0;     // revolve
  uint64_t budget_bytes = 0;  // chen-greedy, optimal-single-level, optimal (0 = none)
  uint32_t slots = 500;       // optimal: budget discretisation
  std::vector<Segment> manual;
  uint64_t greedy_bytes = 0;  // chen-greedy: Alg. 3's threshold B given directly (0 = search)
};

// Runs a strategy (throws RequestError: infeasible budgets say the minimum feasible one).
PlanResult plan(const Chain& chain, const StrategyRequest& request);

// revolve builds (and simulates) its schedule for chains up to kRevolveScheduleLayers layers
// whose schedule has at most kRevolveScheduleOps operations (2 l + 1 + t(l, c)); for other
// chains the placement call gives the closed-form costs only.
inline constexpr uint32_t kRevolveScheduleLayers = 4096;
inline constexpr uint64_t kRevolveScheduleOps = uint64_t{1} << 18;

// ---- The op-level simulator, frontier, and helpers. ----

// Runs any schedule through the memory model; throws code "internal" when the sequence is
// not executable (a bug in a strategy). Single-level plans go through here too.
PlanResult simulate(const Chain& chain, const std::vector<Op>& ops);

// The op sequence of a single-level plan (what torch.utils.checkpoint executes).
std::vector<Op> single_level_ops(const Chain& chain, const std::vector<Segment>& checkpointed);

// Throws RequestError on an invalid chain (field paths under `path`, e.g. "chain").
void validate_chain(const Chain& chain, const std::string& path);

struct FrontierPoint {
  uint64_t peak_bytes = 0;  // simulated peak of the plan (the budget it needs)
  double total_cost = 0;
  double recompute_cost = 0;
  std::vector<Segment> checkpointed;  // single-level plans
  std::vector<Fact> parameter;        // the strategy parameter that produced it, or empty
};

// Pareto points (peak ascending, cost strictly descending) of a strategy: the exact
// single-level frontier, Rotor's over budgets, or a sweep of the strategy's parameter.
std::vector<FrontierPoint> frontier(const Chain& chain, const StrategyRequest& request);

}  // namespace placement
}  // namespace trainmem
