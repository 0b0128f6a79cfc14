// Internal to peak memory: one training step as an allocation trace (peak_trace_spec.hpp,
// step_trace.hpp), replayed through the simulated caching allocator on CUDA runtimes (or
// counted as it comes, without it). Every byte figure of the result comes from that replay:
// the allocated peak and what is live at it, the timeline, the reserve and nvidia-smi.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "peak/peak_step.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/step_trace.hpp"

namespace trainmem {
namespace peak {
namespace device {

struct Figures {
  uint64_t allocated_peak = 0;                    // max over the trace of the live bytes
  std::array<uint64_t, trace::kParts> at_peak{};  // the tensors' bytes then, per part
  uint64_t rounding_at_peak = 0;  // what the allocator's blocks hold beyond those bytes
  std::string peak_phase;
  int32_t peak_layer = -1;
  std::vector<TimelinePoint> timeline;  // the optimizer step that holds the peak, per mark
  uint64_t managed = 0;                 // paged optimizer states (CUDA managed memory)
};

// Runs the step; fills the result's allocator fields when the allocator is simulated.
Figures run_step(const Request& rq, const Step& s, Result* r);

// The step's allocations, all added up, stay below this (check_step_bytes, the counter); a
// step that reaches it is refused as too_large by step_too_large().
constexpr uint64_t kStepBytesLimit = uint64_t{1} << 62;
[[noreturn]] void step_too_large();

}  // namespace device
}  // namespace peak
}  // namespace trainmem
