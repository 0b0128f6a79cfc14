// Internal to peak memory: the step's trace counted as it is built (no allocator replay, no
// timeline, no list of events). Its own file so that it can be compiled for speed: it runs once
// per trace event on the path of bench/peak.mjs's first case (CMakeLists.txt).
#pragma once
#include <cstdint>

#include "peak/peak_device.hpp"
#include "trainmem/step_trace.hpp"

namespace trainmem {
namespace peak {
namespace device {

// The figures count() gives for build(spec), from build_into(spec): the allocated peak, the parts
// at it, the allocator's rounding then (CUDA runtimes), and where it falls. `events`: how many
// allocation events the trace has.
Figures count_as_built(const Request& rq, const trace::StepSpec& spec, uint64_t* events);

}  // namespace device
}  // namespace peak
}  // namespace trainmem
