// Internal to peak memory: what one evaluation derives before the step is traced — the
// activations per chain layer, the parameters per layer, LoRA's plan, the checkpointing plan,
// and how each kind of state is held on the device (dtypes, shards, offload) with the sources
// the result names. peak_memory.cpp builds it; peak_trace_spec.cpp turns it into the
// allocation trace of step_trace.hpp; peak_device.cpp replays that trace.
#pragma once
#include <cstdint>
#include <string>

#include "peak/peak_lora.hpp"
#include "peak/peak_params.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {
namespace peak {

// How the step holds parameters, gradients and optimizer state on one device.
struct Holding {
  uint64_t weight_bytes = 4;  // per element of a full fine-tune's parameters on the device
  uint64_t grad_bytes = 4;    // per element of a trainable full fine-tune parameter's .grad
  DType state_dtype = DType::fp32;
  uint64_t state_width = 4;   // bytes per element of the optimizer's temporaries
  bool deepspeed_mp = false;  // ZeRO with DeepSpeed's bf16/fp16 section: 16-bit model, fp32 master
  uint64_t ranks = 1;         // ranks ZeRO / FSDP shard the optimizer state over
  uint64_t weight_divisor = 1, grad_divisor = 1, state_divisor = 1;
  // expert parallelism: the routed experts' shares shard over their own group (expert_ranks,
  // peak_parallel.hpp expert_shard_ranks) instead of `ranks`
  uint64_t expert_ranks = 1;
  uint64_t expert_weight_divisor = 1, expert_grad_divisor = 1, expert_state_divisor = 1;
  // LoRA: bytes per element of the frozen base and of the adapters
  DType base_dtype = DType::fp32;
  uint64_t base_bytes = 4, adapter_bytes = 4;
  DType adapter_dtype = DType::fp32;
  bool offload_params = false, offload_optimizer = false, offload_grads = false;
  bool weights_gathered_16bit = false;  // FSDP param_dtype 16-bit: autocast has nothing to cast
  uint64_t trainable = 0, params = 0;
  Text weights_src, master_src, grads_src, state_src, temp_src;
};

struct Step {
  activations::Settings st;
  activations::ModelActivations acts;
  size_t nl = 0;
  ParamsByLayer params;
  uint64_t P = 0;  // parameters (before LoRA's adapters)
  LoraPlan lora;
  placement::Chain chain;
  placement::PlanResult plan;
  double selective_recompute = 0;
  Holding hold;
  uint64_t context_bytes = 0;  // the device memory the runtime holds outside the allocator
  Text runtime_src;
};

}  // namespace peak
}  // namespace trainmem
