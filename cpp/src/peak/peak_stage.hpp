// Internal to peak memory: one pipeline rank's share of the step (Request::stage), applied to
// the step's activations and parameters before the checkpointing plan and the trace.
#pragma once
#include <cstdint>
#include <vector>

#include "peak/peak_step.hpp"

namespace trainmem {
namespace peak {

// Empties the layers of other ranks (activations and parameters); keeps the received
// activation; gives the last stage its copy of a tied embedding.
void restrict_to_stage(const Request& rq, Step* s);
// Trainable parameters of the (restricted) step.
uint64_t stage_trainable(const Step& s);
// The saved tensors the other in-flight micro-batches keep on this rank (step_trace.hpp
// StepSpec::in_flight), after the checkpointing plan.
std::vector<uint64_t> resident_tensors(const Request& rq, const Step& s);

}  // namespace peak
}  // namespace trainmem
