// Gradient accumulation: the batch arithmetic (forward mode) and the planner that enumerates
// (microBatch, accumulationSteps) for a target global batch, with peak memory and step time.
// Peak memory is injected (PeakMemoryFn) so that the planner is testable on its own; the JSON
// entry (accumulation_json) wires the real peak-memory calculator.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/time_model.hpp"

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
nlohmann::json to_json(const ForwardResult& r, const ForwardInputs& in);

// ---- Planner ------------------------------------------------------------------------------
struct MemoryEstimate {
  uint64_t peak_bytes = 0;
  bool fits = false;
  // Forward FLOPs per token recomputed in the backward, when the memory model knows its plan
  // (placement engine); < 0: the planner derives it from the strategy name.
  double recompute_flops_per_token = -1;
  nlohmann::json breakdown;  // optional: the peak-memory breakdown, shown in the comparison
};

// Peak memory of one micro-step configuration. Must be cheap: called once per candidate.
using PeakMemoryFn = std::function<MemoryEstimate(uint64_t micro_batch, uint64_t accumulation_steps,
                                                  const std::string& checkpointing)>;

struct PlannerInputs {
  uint64_t target_global_batch = 1;
  uint64_t data_parallel = 1;
  uint64_t seq_len = 1;
  // Strategies considered; "none" is always evaluated first. Default {"none", "full"}.
  std::vector<std::string> checkpointing = {"none", "full"};
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
  std::string checkpointing;
  MemoryEstimate memory;
  double recompute_flops_per_token = 0;
  time_model::StepTime time;
};

struct PlannerResult {
  std::vector<Plan> plans;
  int recommended = -1;  // index into plans; -1 when nothing fits
  nlohmann::json checkpointing_verdict;
  nlohmann::json comparison;
  nlohmann::json warnings = nlohmann::json::array();
  uint64_t omitted_plans = 0;  // candidates not evaluated (larger than one that did not fit)
};

// Forward FLOPs per token that a strategy repeats in the backward: "none" 0, "full" every
// block's forward (HF gradient_checkpointing), "attention-recompute" the attention core
// (Korthikanti et al. 2022); other strategies need the placement engine's plan (MemoryEstimate).
double recompute_flops_per_token(const time_model::ForwardFlops& flops, const std::string& strategy,
                                 bool* known);

PlannerResult plan(const PlannerInputs& in, const PeakMemoryFn& peak_memory);
nlohmann::json to_json(const PlannerResult& r, const PlannerInputs& in);

}  // namespace accumulation
}  // namespace trainmem
