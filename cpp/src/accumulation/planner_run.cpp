#include "accumulation/planner_run.hpp"

#include <string>

#include "pipeline/pipeline_peak.hpp"
#include "trainmem/error.hpp"
#include "trainmem/step_work.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace accumulation {
namespace {

// The peak-memory calculator as the planner's memory model (the run's settings, the
// candidate's micro-batch, steps and strategy). base, user_ckpt and flops must outlive it.
// replay: false gives the cheap bound (allocated bytes, no allocator replay; the device memory
// the replay would use is never below it), whose "does not fit" is final.
PeakMemoryFn memory_model(const peak::Request& base, const peak::Checkpointing& user_ckpt,
                          const time_model::ForwardFlops& flops, bool replay) {
  return [&base, &user_ckpt, &flops, replay](uint64_t micro, uint64_t steps, vocab::Strategy kind) {
    peak::Request r = base;
    r.training.micro_batch = micro;
    r.training.accumulation_steps = steps;
    r.answer.search_max_micro_batch = false;
    r.answer.verdict_only = true;  // the planner reads the verdict, the bytes and the breakdown
    if (!replay) r.allocator.simulate = false;
    if (kind == vocab::Strategy::none) {
      r.training.checkpointing = peak::Checkpointing{};
    } else if (kind == user_ckpt.strategy) {
      r.training.checkpointing = user_ckpt;  // the user's strategy, with its parameters
    } else {
      // The comparison's checkpointed rows when the user asked for none: HF's
      // gradient_checkpointing ("full"). (They were evaluated with the user's "none" while
      // labelled and timed as "full".)
      r.training.checkpointing = peak::Checkpointing{};
      r.training.checkpointing.strategy = kind;
    }
    const peak::Result res = pipeline::evaluate_any(r);
    MemoryEstimate e;
    e.peak_bytes = res.peak_bytes;
    e.fits = res.has_device ? res.fits : false;
    // Placement-engine strategies: the fraction of the forward it recomputes.
    if (kind != vocab::Strategy::none && kind != vocab::Strategy::full &&
        kind != vocab::Strategy::attention_recompute && res.forward_flops > 0)
      e.recompute_flops_per_token = flops.total * res.recompute_flops / res.forward_flops;
    e.breakdown =
        Breakdown{res.weights.bytes,         res.master_weights.bytes, res.gradients.bytes,
                  res.optimizer_state.bytes, res.activations.bytes,    res.temporaries.bytes,
                  res.runtime.bytes};
    return e;
  };
}

}  // namespace

peak::Checkpointing planner_checkpointing(const peak::Request& base, bool auto_ckpt,
                                          PlannerInputs* in) {
  peak::Checkpointing user_ckpt;
  user_ckpt.strategy = vocab::Strategy::full;
  if (!auto_ckpt) user_ckpt = base.training.checkpointing;
  in->checkpointing = {vocab::Strategy::none, user_ckpt.strategy};
  return user_ckpt;
}

void inputs_from_run(const peak::Request& base, PlannerInputs* in) {
  in->data_parallel = base.parallelism.data;
  if (in->target_global_batch < in->data_parallel)
    fail(code::kInconsistent, "targetGlobalBatch",
         Message{"error.planner.ranks",
                 {{"target", std::to_string(in->target_global_batch)},
                  {"ranks", std::to_string(in->data_parallel)}}});
  if (base.training.samples.given && !base.training.samples.packed)
    fail(code::kUnsupported, "samples", Message{"error.acc.lengths", {}});
  in->seq_len = base.model.is_mlp || base.model.description().diffusion ? 1 : base.training.seq_len;
}

void work_per_step(const peak::Request& base, PlannerInputs* out) {
  // FLOPs and parameter counts do not depend on the allocator: no replay, no search.
  peak::Request counts = base;
  counts.allocator.simulate = false;
  counts.answer.search_max_micro_batch = false;
  const step_work::Work w = step_work::of(base, pipeline::evaluate_any(counts));
  out->flops = w.flops;
  out->optimizer_bytes = w.optimizer_bytes;
  out->gradient_bytes = w.gradient_bytes;
  out->model_has_batchnorm = w.model_has_batchnorm;
  out->model_may_have_batchnorm = w.model_may_have_batchnorm;
}

PlannerResult plan_run(const PlannerInputs& in, const peak::Request& base,
                       const peak::Checkpointing& ckpt) {
  return plan(in, memory_model(base, ckpt, in.flops, true),
              base.allocator.simulate ? memory_model(base, ckpt, in.flops, false) : PeakMemoryFn());
}

}  // namespace accumulation
}  // namespace trainmem
