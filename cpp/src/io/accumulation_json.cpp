// The accumulation results written as the documented JSON fields (accumulation_json.hpp).
#include "io/accumulation_json.hpp"

#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/time_model_json.hpp"

namespace trainmem {
namespace accumulation {

using nlohmann::json;

json to_json(const ForwardResult& r, const ForwardInputs& in) {
  json out = json::object();
  put_fields(out, {{"mode", "forward"},
                   {"microBatch", in.micro_batch},
                   {"accumulationSteps", in.accumulation_steps},
                   {"dataParallel", in.data_parallel},
                   {"effectiveBatch", r.effective_batch},
                   {"perDeviceBatch", r.per_device_batch},
                   {"microStepsPerOptimizerStep", in.accumulation_steps},
                   {"formula", Text("acc.formula", {})}});
  if (in.seq_len) put(out, "tokensPerStep", r.tokens_per_step);
  if (in.dataset_size)
    put_fields(out, {{"samplesPerRank", r.samples_per_rank},
                     {"paddedSamples", r.padded_samples},
                     {"microBatchesPerEpoch", r.micro_batches_per_epoch},
                     {"optimizerStepsPerEpoch", r.optimizer_steps_per_epoch},
                     {"fullOptimizerStepsPerEpoch", r.full_optimizer_steps_per_epoch},
                     {"remainderMicroBatches", r.remainder_micro_batches}});
  return out;
}

namespace {

json plan_json(const Plan& p) {
  json j = json::object();
  put_fields(j, {{"microBatch", p.micro_batch},
                 {"accumulationSteps", p.accumulation_steps},
                 {"globalBatch", p.global_batch},
                 {"exact", p.exact},
                 {"checkpointing", vocab::name_of(p.checkpointing)},
                 {"peakBytes", p.memory.peak_bytes},
                 {"fits", p.memory.fits},
                 {"fitsFrom", p.memory.fits_from},
                 {"stepSeconds", p.time.step_seconds},
                 {"samplesPerSecond", p.time.samples_per_second},
                 {"time", time_model::to_json(p.time)}});
  return j;
}

json breakdown_json(const Breakdown& b) {
  json j = json::object();
  put_fields(j, {{"weights", b.weights},
                 {"masterWeights", b.master_weights},
                 {"gradients", b.gradients},
                 {"optimizerState", b.optimizer_state},
                 {"activations", b.activations},
                 {"temporaries", b.temporaries},
                 {"runtime", b.runtime}});
  return j;
}

json verdict_json(const Verdict& v) {
  json j = json::object();
  put_fields(j, {{"largestMicroBatchWithout", v.largest_micro_batch_without},
                 {"largestMicroBatchWith", v.largest_micro_batch_with},
                 {"enablesLargerMicroBatch", v.enables_larger_micro_batch},
                 {"message", v.message}});
  if (v.checkpointing_required) put(j, "checkpointingRequired", *v.checkpointing_required);
  if (v.faster_than_more_accumulation)
    put(j, "fasterThanMoreAccumulation", *v.faster_than_more_accumulation);
  if (v.speedup_over_best_without) put(j, "speedupOverBestWithout", *v.speedup_over_best_without);
  return j;
}

json row_json(const ComparisonRow& r) {
  json j = plan_json(r.plan);
  put_fields(j, {{"id", r.id},
                 {"relativeTime", r.relative_time},
                 {"relativeToAccumulation", r.relative_to_accumulation}});
  if (r.plan.memory.breakdown) put(j, "breakdown", breakdown_json(*r.plan.memory.breakdown));
  return j;
}

json technique_json(const Technique& t) {
  json j = json::object();
  put_fields(j, {{"technique", t.technique},
                 {"actsOn", t.acts_on},
                 {"memoryActsOn", t.memory_acts_on},
                 {"memorySavedBytes", t.memory_saved_bytes},
                 {"extraSeconds", t.extra_seconds},
                 {"extraTimeFraction", t.extra_time_fraction},
                 {"extraFlops", t.extra_flops},
                 {"cost", t.cost}});
  if (t.strategy) put(j, "strategy", vocab::name_of(*t.strategy));
  return j;
}

json comparison_json(const Comparison& c) {
  json j = json::object();
  put_fields(j, {{"microBatch", c.micro_batch},
                 {"accumulationMicroBatch", c.accumulation_micro_batch},
                 {"accumulationSteps", c.accumulation_steps},
                 {"checkpointing", vocab::name_of(c.checkpointing)},
                 {"rows", array_of(c.rows, row_json)},
                 {"techniques", array_of(c.techniques, technique_json)},
                 {"tableNote", Text("acc.tableNote", {})}});
  return j;
}

json warning_json(const Warning& w) {
  json j = json::object();
  put_fields(j, {{"code", w.code}, {"message", w.message}});
  return j;
}

}  // namespace

json to_json(const PlannerResult& r, const PlannerInputs& in) {
  json out = json::object();
  put_fields(out, {{"mode", "plan"},
                   {"targetGlobalBatch", in.target_global_batch},
                   {"dataParallel", in.data_parallel},
                   {"seqLen", in.seq_len},
                   {"plans", array_of(r.plans, plan_json)},
                   {"omittedPlans", r.omitted_plans},
                   {"checkpointing", verdict_json(r.checkpointing_verdict)},
                   {"comparison", comparison_json(r.comparison)},
                   {"flops", time_model::to_json(in.flops)},
                   {"warnings", array_of(r.warnings, warning_json)}});
  if (r.recommended >= 0)
    put_fields(out, {{"recommended", plan_json(r.plans[static_cast<size_t>(r.recommended)])},
                     {"recommendedIndex", r.recommended}});
  else
    put(out, "recommended", nullptr);
  return out;
}

}  // namespace accumulation
}  // namespace trainmem
