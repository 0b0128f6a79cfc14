// "Will my training run fit, and how fast?" answered at once: the run's verdict against the GPU
// with a safety margin, its time per optimizer step (the accumulation planner's time model for
// this one plan), and the changes that make it fit, each with its verdict and time, ranked.
// Typed here; the request and result JSON are io/advise_json.cpp's (docs/advise.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"
#include "trainmem/time_model.hpp"

namespace trainmem {
namespace advise {

// The verdict: fits with the margin left free, fits only without it, or does not fit.
enum class Status { fits, tight, does_not_fit, no_device };
const char* status_name(Status s);  // "fits" | "tight" | "doesNotFit" | "noDevice"

struct Verdict {
  Status status = Status::no_device;
  uint64_t used_bytes = 0;  // what nvidia-smi shows (simulated), else the peak of allocated bytes
  bool nvidia_smi = false;  // used_bytes is nvidia-smi's figure
  uint64_t capacity_bytes = 0;
  int64_t headroom_bytes = 0;  // capacity - used
  uint64_t margin_bytes = 0;   // kept free: "fits" only with this much left
};

// The margin in bytes: `bytes` when given (> 0), else `fraction` of the capacity.
uint64_t margin_bytes(uint64_t capacity, double fraction, uint64_t bytes);
Verdict judge(const peak::Request& run, const peak::Result& result, uint64_t margin);

// The time of one optimizer step of `run` (its micro-batch, accumulation steps, data-parallel
// ranks and checkpointing), as the accumulation planner times each of its plans.
struct Timing {
  bool timed = false;
  Text not_timed;  // why not, when !timed (a sentence of the catalog)
  time_model::StepTime time;
  uint64_t global_batch = 0;           // micro-batch x steps x data-parallel ranks
  std::string throughput_precision;    // the dtype whose dense peak the matmuls run at
  bool optimizer_on_cpu = false;       // offloaded optimizer states: the CPU's step is not in it
  bool recompute_upper_bound = false;  // a strategy without a plan: one forward of every block
};
// `gpu`: the run's GPU preset (io/device_presets.hpp reads it), null when the run gives a
// custom memory size, which has no dense TFLOP/s.
Timing step_time(const peak::Request& run, const peak::Result& result, const peak::Gpu* gpu);

// A change of the run, in request terms: the fields it sets (unset: unchanged). The JSON edge
// applies it to the request and parses the result, so that a change is checked as any request.
struct Patch {
  std::optional<uint64_t> lora_rank;
  std::optional<bool> qlora;
  std::optional<std::string> lora_base_dtype;
  std::optional<std::string> checkpointing;
  std::optional<uint64_t> micro_batch, accumulation_steps, data_parallel, tensor_parallel;
  std::optional<uint32_t> zero_stage;
  std::optional<bool> offload_optimizer;
  std::optional<std::string> optimizer;
  std::optional<std::string> optimizer_implementation;
  std::optional<std::string> precision;
};

struct Candidate {
  std::string id;  // lora | qlora | zero2-offload | checkpointing | micro-batch-1 | adam-8bit |
                   // for-loop | mixed-precision | bf16 | bf16-checkpointing | tensor-parallel
                   // | zero3
  Patch patch;
  uint64_t gpus = 1;            // GPUs the run needs with the change
  bool changes_method = false;  // full fine-tuning -> LoRA / QLoRA
};

struct Options {
  bool from_scratch = false;  // pre-training: no adapters to train instead
  std::string
      lora_base_dtype;  // the dtype a LoRA / QLoRA change loads the base in ("": the core's)
};

// The changes worth trying for `run`, in the order of the smaller change first: those that
// keep it on one GPU, then those that need more. A change the run already has is left out;
// 8-bit optimizer states and offload are not offered to adapters (their state is small).
std::vector<Candidate> candidates(const peak::Request& run, const Options& options);

struct Change {
  Candidate candidate;
  Verdict verdict;
  Timing timing;
};

// Those that fit first; among them one GPU before several, the run's method before adapters,
// then the faster first (a step whose optimizer runs on the CPU, not timed whole, after those
// that are); those that do not fit by the memory they would need.
void rank(std::vector<Change>* changes);

}  // namespace advise
}  // namespace trainmem
