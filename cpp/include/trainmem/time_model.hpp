// Step-time model for the accumulation planner: FLOPs from the architecture (Kaplan et al. 2020,
// Narayanan et al. 2021), over the GPU's peak throughput x a utilisation the user can set, plus a
// fixed cost per micro-step (Hockney's r-infinity / n-half model), plus the optimizer step.
// The model and its calibration are stated in docs/accumulation.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/message.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace time_model {

// Forward FLOPs per token (one sequence position of one sample); a FLOP is one multiply or add,
// so a multiply-accumulate counts 2 (Kaplan et al. 2020, Table 1).
struct ForwardFlops {
  double block_matmul = 0;  // 2 x matmul weights of the transformer blocks (q, k, v, o, MLP)
  double attention = 0;     // scores QK^T and context AV: 4 x seqLen x (heads x headDim) per layer
  double head = 0;          // LM head (2 h V) or pooler + classifier, spread over the tokens
  double total = 0;         // block_matmul + attention + head
  double blocks = 0;        // block_matmul + attention: what recomputing every block repeats
  double attention_core = 0;  // what Megatron's selective recompute repeats (= attention)
  uint64_t layers = 0;        // blocks (encoder + decoder), 0 when unknown
  std::string method;         // "architecture" | "parameters"
  std::vector<Text> assumptions;
};

// Throws RequestError(unsupported, "model") when neither an architecture nor a parameter count
// is known. Encoder-decoder models (T5): seq_len is the encoder's length, target_len the
// decoder's (0 = seq_len); the FLOPs of one sample are spread over its seq_len input tokens.
ForwardFlops forward_flops_per_token(const ModelDescription& model, uint64_t seq_len,
                                     uint64_t target_len = 0);

struct Device {
  double peak_flops = 0;              // dense peak of the precision used, FLOP/s
  double memory_bandwidth = 0;        // bytes/s; 0 = unknown (optimizer step not timed)
  double interconnect_bandwidth = 0;  // bytes/s per GPU for the all-reduce; 0 = not modelled
};

// Defaults and their sources: docs/accumulation.md "Time model".
inline constexpr double kDefaultUtilization = 0.5;
inline constexpr double kDefaultOverheadPerLayerSeconds = 0.00089;

struct Knobs {
  double utilization = kDefaultUtilization;  // fraction of peak at large micro-batches
  double overhead_per_layer_s = kDefaultOverheadPerLayerSeconds;  // fixed cost per block/micro-step
};

struct StepInputs {
  uint64_t micro_batch = 1;
  uint64_t accumulation_steps = 1;
  uint64_t data_parallel = 1;
  uint64_t seq_len = 1;
  double recompute_flops_per_token = 0;  // forward FLOPs repeated in the backward (checkpointing)
  double optimizer_bytes = 0;            // bytes the optimizer step reads and writes
  double allreduce_bytes = 0;            // gradient bytes all-reduced once per optimizer step
};

struct StepTime {
  double useful_flops_per_micro_step = 0;     // 3 x forward (forward 1 + backward 2)
  double recompute_flops_per_micro_step = 0;  // extra forward of recomputed layers
  double compute_seconds_per_micro_step = 0;  // FLOPs / (peak x utilisation)
  double overhead_seconds_per_micro_step = 0;
  double micro_step_seconds = 0;
  double optimizer_seconds = 0;
  double allreduce_seconds = 0;
  double step_seconds = 0;        // one optimizer step: steps x micro-step + optimizer + all-reduce
  double samples_per_second = 0;  // global samples (all ranks) per second
  double tokens_per_second = 0;
  double model_flops_utilization = 0;     // useful FLOPs / (peak x time) (PaLM's MFU)
  double hardware_flops_utilization = 0;  // including recompute
};

StepTime estimate_step(const ForwardFlops& flops, const StepInputs& in, const Device& device,
                       const Knobs& knobs);

// Bytes one optimizer step reads and writes per parameter at minimum: weights read + written,
// gradient read, each state read + written.
double optimizer_bytes_per_param(uint32_t state_copies, double weight_bytes, double state_bytes);

}  // namespace time_model
}  // namespace trainmem
