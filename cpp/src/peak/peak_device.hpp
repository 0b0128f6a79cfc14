// Internal to peak memory: the caching-allocator simulation of whole training steps (the
// allocation trace of step_trace.hpp replayed through caching_allocator.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {
namespace peak {
namespace device {

// What peak::evaluate has worked out, per byte, for the trace.
struct Facts {
  double weight_bytes_per_param = 4;  // on the device (QLoRA: the 4-bit base's average)
  uint64_t grad_bytes_per_param = 4;
  uint64_t state_width = 4;  // bytes per element of the optimizer's temporaries
  DType state_dtype = DType::fp32;
  uint64_t weight_divisor = 1;          // tensor parallel x ZeRO-3 ranks
  uint64_t grad_divisor = 1;            // tensor parallel x ZeRO-2/3 ranks
  uint64_t state_divisor = 1;           // tensor parallel x ZeRO ranks
  uint64_t master_bytes_per_param = 0;  // ZeRO mixed precision's fp32 copy (per rank share)
  uint64_t zero_gather_bytes = 0;       // ZeRO-3: the gathered layer, a per-layer transient
  bool offload_params = false, offload_optimizer = false;
  bool offload_grads = false;           // FSDP CPU offload: sharded gradients go to the CPU
  bool weights_gathered_16bit = false;  // FSDP param_dtype 16-bit: autocast has nothing to cast
  // LoRA: (in, out) of each adapted linear, per chain layer
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> lora_io;
};

// Runs the simulation and fills the result's allocator fields (Result::simulated and after).
void simulate(const Request& rq, const activations::ModelActivations& acts,
              const placement::Chain& chain, const placement::PlanResult& plan, const Facts& f,
              Result* r);

}  // namespace device
}  // namespace peak
}  // namespace trainmem
