// The accumulation planner on one training run (a peak::Request): the planner's inputs that
// come from the run (its ranks, sequence, strategies and work per step) and the peak-memory
// calculator as the planner's memory model. io/accumulation_request.cpp reads the request and
// the GPU; this is the domain side of the wiring.
#pragma once
#include "trainmem/accumulation.hpp"
#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace accumulation {

// The strategies the planner weighs for `base`: none, and the run's own (auto_ckpt: the
// request left checkpointing to the planner, which then weighs HF's gradient_checkpointing,
// "full"). Returns the checkpointing the checkpointed plans run with.
peak::Checkpointing planner_checkpointing(const peak::Request& base, bool auto_ckpt,
                                          PlannerInputs* in);

// The planner's inputs that come from the run: data parallelism (checked against the target)
// and the sequence length. Throws RequestError for a target below the ranks or padded samples.
void inputs_from_run(const peak::Request& base, PlannerInputs* in);

// FLOPs (the architecture or parameter count; an MLP chain from its layer sizes), optimizer and
// gradient traffic per step, and whether the model may hold BatchNorm (trainmem/step_work.hpp).
// Throws RequestError(unsupported, "model") when the FLOPs cannot be known.
void work_per_step(const peak::Request& base, PlannerInputs* out);

// The plans for `base` (its micro-batch and steps replaced by each candidate's) with the
// checkpointing `ckpt` from planner_checkpointing; the allocator's replay judges each plan,
// and, when the run simulates the allocator, the allocated bytes bound it first.
PlannerResult plan_run(const PlannerInputs& in, const peak::Request& base,
                       const peak::Checkpointing& ckpt);

}  // namespace accumulation
}  // namespace trainmem
