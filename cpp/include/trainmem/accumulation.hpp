// Gradient accumulation: the batch arithmetic (forward mode) and the planner that enumerates
// (microBatch, accumulationSteps) for a target global batch, with peak memory and step time.
// Peak memory is injected (PeakMemoryFn) so that the planner is testable on its own;
// accumulation/planner_run.hpp wires the real peak-memory calculator for a parsed run, the JSON
// entry (accumulation_json, io/accumulation_request.cpp) reads the request, and
// io/accumulation_json.hpp writes the results.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainmem/message.hpp"
#include "trainmem/time_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace accumulation {

// ---- Forward mode -------------------------------------------------------------------------
struct ForwardInputs {
  uint64_t micro_batch = 1;
  uint64_t accumulation_steps = 1;
  uint64_t data_parallel = 1;
  uint64_t seq_len = 0;       // 0 = not given
  uint64_t dataset_size = 0;  // 0 = not given
};

struct ForwardResult {
  uint64_t effective_batch = 0;   // micro x steps x DP (HF Trainer "Total train batch size")
  uint64_t per_device_batch = 0;  // micro x steps
  uint64_t tokens_per_step = 0;   // effective x seqLen (0 without seqLen)
  // With datasetSize (DistributedSampler pads to a multiple of DP; DataLoader drop_last=False):
  uint64_t samples_per_rank = 0;                // ceil(N / DP)
  uint64_t micro_batches_per_epoch = 0;         // per rank: ceil(samples_per_rank / micro)
  uint64_t optimizer_steps_per_epoch = 0;       // ceil(micro-batches / steps)
  uint64_t full_optimizer_steps_per_epoch = 0;  // floor(micro-batches / steps)
  uint64_t remainder_micro_batches = 0;         // micro-batches of the last, short step
  uint64_t padded_samples = 0;                  // samples repeated by the sampler to fill the ranks
};

ForwardResult forward(const ForwardInputs& in);  // throws RequestError(too_large) on overflow

// ---- Planner ------------------------------------------------------------------------------
// The peak-memory breakdown of one configuration: the bytes of each line of peak::Result.
struct Breakdown {
  uint64_t weights = 0, master_weights = 0, gradients = 0, optimizer_state = 0;
  uint64_t activations = 0, temporaries = 0, runtime = 0;
};

struct MemoryEstimate {
  uint64_t peak_bytes = 0;
  bool fits = false;
  // Forward FLOPs per token recomputed in the backward, when the memory model knows its plan
  // (placement engine); < 0: the planner derives it from the strategy name.
  double recompute_flops_per_token = -1;
  std::optional<Breakdown> breakdown;  // optional: shown in the comparison
  // How `fits` was decided: "allocator" (the caching allocator replayed), "allocated-bytes"
  // (the tensors alone exceed the device, so the replay could only run out of memory too), or
  // "neighbours" (peak memory grows with the micro-batch: between a micro-batch that fits and
  // one that does not, found by bisection; the bytes are the allocated-bytes model's), or
  // "over-limits" (its bytes exceed 2^63 or its checkpointing budget: it does not fit, and
  // peak_bytes is 0: a plan so is not listed, only a comparison row can be).
  const char* fits_from = "allocator";
};

// Peak memory of one micro-step configuration. Must be cheap: called once per candidate.
using PeakMemoryFn = std::function<MemoryEstimate(uint64_t micro_batch, uint64_t accumulation_steps,
                                                  vocab::Strategy checkpointing)>;

struct PlannerInputs {
  uint64_t target_global_batch = 1;
  uint64_t data_parallel = 1;
  uint64_t seq_len = 1;
  // Strategies considered; none is always evaluated first.
  std::vector<vocab::Strategy> checkpointing = {vocab::Strategy::none, vocab::Strategy::full};
  uint64_t compare_micro_batch = 1;  // the accumulation row of the comparison (seed 000: 1)
  time_model::ForwardFlops flops;
  time_model::Device device;
  time_model::Knobs knobs;
  double optimizer_bytes = 0;  // per optimizer step
  double gradient_bytes = 0;   // all-reduced per optimizer step
  bool model_may_have_batchnorm = false;
  bool model_has_batchnorm = false;
};

struct Plan {
  uint64_t micro_batch = 0;
  uint64_t accumulation_steps = 0;
  uint64_t global_batch = 0;
  bool exact = true;  // global_batch == target
  vocab::Strategy checkpointing = vocab::Strategy::none;
  MemoryEstimate memory;
  double recompute_flops_per_token = 0;
  time_model::StepTime time;
};

// What checkpointing does for the target: the largest micro-batch that fits with and without it
// and, where both fit, whether the larger micro-batch beats more accumulation.
struct Verdict {
  uint64_t largest_micro_batch_without = 0, largest_micro_batch_with = 0;
  bool enables_larger_micro_batch = false;
  std::optional<bool> checkpointing_required;         // unset: no plan fits, or not considered
  std::optional<bool> faster_than_more_accumulation;  // set when both kinds of plan fit
  std::optional<double> speedup_over_best_without;    // (with them)
  Text message;
};

// One row of the comparison: a plan and its time relative to the baseline and to accumulation.
struct ComparisonRow {
  std::string id;  // baseline | accumulation | checkpointing | accumulationAndCheckpointing
  Plan plan;
  double relative_time = 0, relative_to_accumulation = 0;
};

// Where a technique acts, what memory it saves and what it costs.
struct Technique {
  std::string technique;                    // gradientAccumulation | gradientCheckpointing
  std::optional<vocab::Strategy> strategy;  // the checkpointing strategy (unset: accumulation)
  Text acts_on, memory_acts_on, cost;
  double memory_saved_bytes = 0, extra_seconds = 0, extra_time_fraction = 0, extra_flops = 0;
};

// Accumulation and checkpointing side by side for the user's configuration.
struct Comparison {
  uint64_t micro_batch = 0;               // the per-device batch in one pass (baseline)
  uint64_t accumulation_micro_batch = 0;  // the accumulation rows' micro-batch
  uint64_t accumulation_steps = 0;
  vocab::Strategy checkpointing = vocab::Strategy::none;
  std::vector<ComparisonRow> rows;
  std::vector<Technique> techniques;
};

struct Warning {
  std::string code;
  Text message;
};

// Plans listed per strategy and per-device batch: every split when there are at most this many;
// else this many ending with the first one or two that do not fit (the others are counted in
// omitted_plans).
inline constexpr size_t kListedPlans = 64;

struct PlannerResult {
  std::vector<Plan> plans;
  int recommended = -1;  // index into plans; -1 when nothing fits
  Verdict checkpointing_verdict;
  Comparison comparison;
  std::vector<Warning> warnings;
  uint64_t omitted_plans = 0;  // candidates not listed (at most kListedPlans per strategy)
};

// Forward FLOPs per token that a strategy repeats in the backward: "none" 0, "full" every
// block's forward (HF gradient_checkpointing), "attention-recompute" the attention core
// (Korthikanti et al. 2022); other strategies need the placement engine's plan (MemoryEstimate).
double recompute_flops_per_token(const time_model::ForwardFlops& flops, vocab::Strategy strategy,
                                 bool* known);

// peak_memory: the full model (the allocator's replay); bound: a cheap one whose `fits` false is
// final (allocated bytes, never more than the device memory the replay uses); null: the full
// model alone. The search asks the full model about O(log candidates) configurations per
// strategy (bench/RESULTS.md, "Bounded work").
PlannerResult plan(const PlannerInputs& in, const PeakMemoryFn& peak_memory,
                   const PeakMemoryFn& bound = nullptr);

}  // namespace accumulation
}  // namespace trainmem
