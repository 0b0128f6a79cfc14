// peakMemory's result JSON (peak::Result to the documented fields) and the calculator's entry.
#include "io/peak_json.hpp"
#include "io/trace_json.hpp"
#include "trainmem/parallel.hpp"

#include "io/calculators.hpp"
#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/pipeline_request.hpp"
#include "pipeline/pipeline_peak.hpp"

namespace trainmem {
namespace peak {

using nlohmann::json;

namespace {

json line_json(const Line& l) {
  json j = json::object();
  put_fields(j, {{"bytes", l.bytes}, {"source", l.source}});
  if (!l.parts.empty()) {
    json parts = json::object();
    for (const auto& p : l.parts) parts[p.name] = p.bytes;
    j["parts"] = std::move(parts);
  }
  return j;
}

json breakdown_json(const Result& r) {
  json b = json::object();
  put_fields(b, {{"weights", line_json(r.weights)},
                 {"masterWeights", line_json(r.master_weights)},
                 {"gradients", line_json(r.gradients)},
                 {"optimizerState", line_json(r.optimizer_state)},
                 {"activations", line_json(r.activations)},
                 {"temporaries", line_json(r.temporaries)},
                 {"workspace", line_json(r.workspace)},
                 {"allocatorRounding", line_json(r.allocator_rounding)},
                 {"runtime", line_json(r.runtime)}});
  if (r.paged_optimizer_state.bytes) b["pagedOptimizerState"] = line_json(r.paged_optimizer_state);
  return b;
}

json activations_per_layer_json(const Result& r) {
  json a = json::object();
  put_fields(a, {{"derivedBytes", r.derived_layer_bytes},
                 {"korthikantiBytes", r.korthikanti_layer_bytes},
                 {"korthikantiSource", Text("peak.korthikanti", {})}});
  return a;
}

// The caching-allocator simulation's figures (Result::simulated).
json allocator_json(const Result& r) {
  json a = json::object();
  put_fields(a, {{"fragmentationBytes", r.fragmentation_bytes},
                 {"largestRequestBytes", r.largest_request_bytes},
                 {"reservedPeakStep", r.reserved_peak_step},
                 {"reservedPeakPhase", r.reserved_peak_phase},
                 {"reservedPeakLayer", r.reserved_peak_layer},
                 {"firstStepAllocatedBytes", r.first_step_allocated_bytes},
                 {"firstStepReservedBytes", r.first_step_reserved_bytes},
                 {"steadyAllocatedBytes", r.steady_allocated_bytes},
                 {"stepsSimulated", r.steps_simulated},
                 {"segments", r.segments},
                 {"allocRetries", r.alloc_retries},
                 {"outOfMemory", r.ooms > 0},
                 {"ncclBytes", r.nccl_bytes},
                 {"managedBytes", r.managed_bytes},
                 {"source", Text("peak.allocator.source", {})}});
  return a;
}

json timeline_point_json(const TimelinePoint& p) {
  json e = json::object();
  put_fields(e, {{"phase", p.phase},
                 {"layer", p.layer},
                 {"name", p.name},
                 {"totalBytes", p.total_bytes},
                 {"activationBytes", p.activation_bytes},
                 {"gradientBytes", p.gradient_bytes},
                 {"temporaryBytes", p.temporary_bytes},
                 {"gatheredBytes", p.gathered_bytes}});
  return e;
}

// What samples did to the lengths (the request's samples field).
json samples_json(const Request& r) {
  json sm = json::object();
  put_fields(sm, {{"packed", r.training.samples.packed}, {"memorySeqLen", r.training.seq_len}});
  if (r.training.samples.packed) return sm;
  const double padding =
      r.training.samples.expected_padded > 0
          ? 1.0 - r.training.samples.mean_length / r.training.samples.expected_padded
          : 0.0;
  put_fields(sm, {{"count", r.training.samples.count},
                  {"truncated", r.training.samples.truncated},
                  {"meanLength", r.training.samples.mean_length},
                  {"expectedPaddedLength", r.training.samples.expected_padded},
                  {"paddingFraction", padding}});
  return sm;
}

}  // namespace

// Points of a timeline in a response (README "Numeric limits"), as placement's 10,000 events.
constexpr size_t kMaxTimelinePoints = 10000;

json to_json(const Result& r, bool include_timeline) {
  json out = json::object();
  put_fields(out, {{"peakBytes", r.peak_bytes},
                   {"allocatedPeakBytes", r.allocated_peak_bytes},
                   {"peakPhase", r.peak_phase},
                   {"peakLayer", r.peak_layer},
                   {"breakdown", breakdown_json(r)},
                   {"params", r.params},
                   {"trainableParams", r.trainable_params},
                   {"storedActivationBytes", r.stored_activation_bytes},
                   {"recomputeFraction", r.recompute_fraction},
                   {"activationsPerLayer", activations_per_layer_json(r)}});
  put(out, "assumptions", r.assumptions);
  if (r.simulated)
    put_fields(out, {{"reservedPeakBytes", r.reserved_peak_bytes},
                     {"deviceUsedBytes", r.device_used_bytes},
                     {"allocator", allocator_json(r)}});
  else
    put_fields(out, {{"reservedPeakBytes", nullptr}, {"deviceUsedBytes", nullptr}});
  if (r.has_device)
    put_fields(out, {{"fits", r.fits},
                     {"headroomBytes", r.headroom_bytes},
                     {"maxMicroBatch", r.max_micro_batch}});
  else
    put_fields(out, {{"fits", nullptr}, {"headroomBytes", nullptr}, {"maxMicroBatch", nullptr}});
  if (include_timeline) {
    if (r.timeline.size() <= kMaxTimelinePoints) {
      put(out, "timeline", array_of(r.timeline, timeline_point_json));
    } else {
      // A 10,000-layer MLP's step has 60,000 points (a 10 MB answer): every k-th point and
      // the highest, at most kMaxTimelinePoints + 1, with the count before thinning.
      std::vector<TimelinePoint> kept;
      const size_t k = (r.timeline.size() + kMaxTimelinePoints - 1) / kMaxTimelinePoints;
      size_t top = 0;
      for (size_t i = 1; i < r.timeline.size(); ++i)
        if (r.timeline[i].total_bytes > r.timeline[top].total_bytes) top = i;
      for (size_t i = 0; i < r.timeline.size(); ++i)
        if (i % k == 0 || i == top) kept.push_back(r.timeline[i]);
      put(out, "timeline", array_of(kept, timeline_point_json));
      put(out, "timelinePoints", static_cast<uint64_t>(r.timeline.size()));
    }
  }
  return out;
}

// contextParallel > 1: the sharded sequence and the group the gradients are reduced over.
json context_parallel_json(const Request& r) {
  const ContextParallel& c = r.parallelism.context;
  json o = json::object();
  put_fields(o, {{"ranks", c.size},
                 {"seqLen", c.full_seq_len},
                 {"rankSeqLen", r.training.seq_len},
                 {"loadBalance", c.zigzag ? "zigzag" : "none"},
                 {"rotate", c.all_gather ? "allgather" : "alltoall"},
                 {"dataParallel", c.data_parallel},
                 {"gradientGroupRanks", r.parallelism.data}});
  return o;
}

// expertParallel / expertTensorParallel: the rank's experts and the routing assumed.
json expert_parallel_json(const Request& r) {
  const ExpertParallel& e = r.parallelism.expert;
  const Architecture& a = r.model.description().arch;
  json o = json::object();
  put_fields(o, {{"ranks", e.size},
                 {"expertTensorParallel", e.tensor},
                 {"experts", a.num_experts},
                 {"expertsPerRank", a.num_experts / e.size},
                 {"topK", a.experts_per_token},
                 {"dropless", e.capacity_factor == 0},
                 {"routedTokensFactor", e.capacity_factor > 0 ? e.capacity_factor : e.imbalance}});
  put(o, "capacityFactor", e.capacity_factor > 0 ? json(e.capacity_factor) : json(nullptr));
  return o;
}

bool count_only(const Request& r) {
  return !r.model.is_mlp && r.model.description().source == "params" &&
         !r.model.description().has_architecture();
}

json result_json(const Request& r, const Result& res, bool include_timeline) {
  json out = to_json(res, include_timeline);
  // Not asked for (searchMaxMicroBatch: false): null, as without a GPU, never 0 beside a fit.
  if (!r.answer.search_max_micro_batch) put(out, "maxMicroBatch", nullptr);
  // the search stopped at its work bound: the smallest micro-batch known not to fit
  if (res.max_micro_batch_below > 0) put(out, "maxMicroBatchBelow", res.max_micro_batch_below);
  if (r.training.samples.given) put(out, "samples", samples_json(r));
  // a parameter count: the persistent state alone (a lower bound: `fits` false is certain,
  // true says only that the state fits); with layers / hidden / heads, a stand-in decoder
  if (!r.model.is_mlp && r.model.description().source == "params") {
    put(out, "lowerBound", count_only(r));
    put(out, "approximate", !count_only(r));
    if (count_only(r)) put(out, "maxMicroBatch", nullptr);
  }
  if (r.parallelism.context.size > 1) put(out, "contextParallel", context_parallel_json(r));
  if (r.parallelism.expert.size > 1 || r.parallelism.expert.tensor > 1)
    put(out, "expertParallel", expert_parallel_json(r));
  if (!r.model.is_mlp && r.model.description().trace) {
    activations::Settings s;  // the sizes and dtype the step runs at
    s.micro_batch = r.training.micro_batch;
    s.seq_len = r.training.seq_len;
    s.precision = r.training.precision;
    s.runtime = r.runtime.profile.traits;
    put(out, "trace", trace_summary_json(*r.model.description().trace, s));
  }
  return out;
}

bool wants_timeline(const json& request) {
  // "timeline": null means absent, as in parse_request (json::value() would throw on null).
  const auto t = request.is_object() ? request.find("timeline") : request.end();
  return !(request.is_object() && t != request.end() && t->is_boolean()) || t->get<bool>();
}

}  // namespace peak

namespace peak {

// pipelineParallel > 1: the binding rank's figures at the top, every rank in `pipelineParallel`.
nlohmann::json pipeline_answer(const Request& r, bool timeline, Result* judged) {
  if (count_only(r) || (!r.model.is_mlp && r.model.description().pipeline))
    fail(code::kUnsupported, "pipelineParallel", Message{"error.pipeline.layers", {}});
  const parallel::PipelineResult pr = parallel::pipeline(r);
  const auto& top = pr.stages_figures[pr.peak_stage];
  if (judged) *judged = top.result;
  nlohmann::json out = result_json(r, top.result, timeline);
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& f : pr.stages_figures) {
    nlohmann::json st = nlohmann::json::object();
    const peak::Result& x = f.result;
    put_fields(st, {{"stage", static_cast<uint64_t>(f.rank)},
                    {"chunks", nlohmann::json(f.chunks)},
                    {"blocks", f.blocks},
                    {"inFlightChunks", f.in_flight_chunks},
                    {"inFlightMicroBatches", f.in_flight_micro_batches},
                    {"peakBytes", x.peak_bytes},
                    {"allocatedPeakBytes", x.allocated_peak_bytes},
                    {"params", x.params},
                    {"weightsBytes", x.weights.bytes},
                    {"gradientsBytes", x.gradients.bytes},
                    {"optimizerStateBytes", x.optimizer_state.bytes + x.master_weights.bytes},
                    {"activationsBytes", x.activations.bytes},
                    {"peakPhase", x.peak_phase}});
    if (x.simulated) put(st, "deviceUsedBytes", x.device_used_bytes);
    if (x.has_device) put_fields(st, {{"fits", x.fits}, {"headroomBytes", x.headroom_bytes}});
    stages.push_back(std::move(st));
  }
  nlohmann::json pp = nlohmann::json::object();
  put_fields(pp, {{"schedule", pr.schedule},
                  {"stages", pr.stages},
                  {"chunksPerStage", pr.virtual_stages},
                  {"microBatches", pr.micro_batches},
                  {"bubbleFraction", pr.bubble_fraction},
                  {"peakStage", static_cast<uint64_t>(pr.peak_stage)},
                  {"perStage", stages}});
  put(out, "pipelineParallel", pp);
  return out;
}

Result judged_result(const Request& r) {
  if (r.parallelism.pipeline.stages <= 1) return evaluate(r);
  const parallel::PipelineResult pr = parallel::pipeline(r);
  return pr.stages_figures[pr.peak_stage].result;
}

}  // namespace peak

nlohmann::json peak_memory_json(const nlohmann::json& request) {
  peak::Request r = peak::parse_request(request);
  // a bare parameter count has no activations, so no largest micro-batch to search for
  if (peak::count_only(r)) r.answer.search_max_micro_batch = false;
  if (r.parallelism.pipeline.stages > 1)
    return peak::pipeline_answer(r, peak::wants_timeline(request), nullptr);
  const peak::Result res = pipeline::adjusted(r) ? pipeline::compute(r) : peak::compute(r);
  nlohmann::json out = peak::result_json(r, res, peak::wants_timeline(request));
  if (!r.model.is_mlp && r.model.description().pipeline) put(out, "pipeline", pipeline_json(r));
  return out;
}

}  // namespace trainmem
