// Internal to peak memory: the allocation trace's specification (step_trace.hpp) for one
// request — every parameter, .grad, optimizer state, autocast copy, gathered unit and saved
// tensor of the step, in the dtypes and shards the request implies.
#pragma once
#include <cstdint>

#include "peak/peak_step.hpp"
#include "trainmem/step_trace.hpp"

namespace trainmem {
namespace peak {

// `managed` receives the bytes held outside the caching allocator (paged optimizer states).
trace::StepSpec build_spec(const Request& rq, const Step& s, uint64_t* managed);

}  // namespace peak
}  // namespace trainmem
