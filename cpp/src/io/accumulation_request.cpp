// tm.accumulation(request): parses the forward and planner requests, reads GPU presets, and
// wires the peak-memory calculator into the planner (see accumulation.hpp).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "io/accumulation_json.hpp"
#include "io/calculators.hpp"
#include "io/device_presets.hpp"
#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "pipeline/pipeline_peak.hpp"
#include "trainmem/accumulation.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/step_work.hpp"
#include "trainmem/time_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

// Largest batch / step count accepted (README "Numeric limits"): 2^31 keeps every product of
// micro x steps x DP x seqLen below 2^53 for seqLen <= 2^22.
using limits::kMaxRanks;

struct GpuInfo {
  std::string id;
  uint64_t memory_bytes = 0;
  double peak_flops = 0;
  double bandwidth = 0;
  const char* throughput_precision = "fp32";  // the dtype whose dense peak the matmuls run at
};

json forward_mode(const Obj& req) {
  accumulation::ForwardInputs in;
  in.micro_batch = req.u64("microBatch", 1, limits::kMaxMicroBatch);
  in.accumulation_steps = req.u64("accumulationSteps", 1, limits::kMaxAccumulationSteps);
  in.data_parallel = req.u64_or("dataParallel", 1, 1, kMaxRanks);
  in.seq_len = req.u64_or("seqLen", 0, 1, limits::kMaxSeqLen);
  in.dataset_size = req.u64_or("datasetSize", 0, 1, 1ULL << 50);
  req.finish({"targetGlobalBatch"});
  return accumulation::to_json(accumulation::forward(in), in);
}

// Keys of the planner itself; every other key is a peakMemory input, passed through to its
// strict parser (so the planner accepts exactly what peakMemory accepts, with its errors).
const char* const kPlannerKeys[] = {
    "targetGlobalBatch",      "utilization",      "overheadPerLayerSeconds", "gpuPeakTflops",
    "gpuMemoryBandwidthGBps", "interconnectGBps", "compareMicroBatch"};

// The planner's own inputs: the target, the comparison's micro-batch and the time model's knobs.
// Returns the overrides of the GPU's peak FLOP/s and memory bandwidth (0: not given).
GpuInfo read_planner_keys(const Obj& req, accumulation::PlannerInputs* out) {
  accumulation::PlannerInputs& in = *out;
  if (req.has("microBatch") || req.has("accumulationSteps") ||
      req.has("gradientAccumulationSteps")) {
    const char* f = req.has("microBatch")          ? "microBatch"
                    : req.has("accumulationSteps") ? "accumulationSteps"
                                                   : "gradientAccumulationSteps";
    fail(code::kInconsistent, f, Message{"error.acc.both", {}});
  }
  in.target_global_batch = req.u64("targetGlobalBatch", 1, limits::kMaxGlobalBatch);
  in.compare_micro_batch = req.u64_or("compareMicroBatch", 1, 1, limits::kMaxMicroBatch);
  in.knobs.utilization = req.num_or("utilization", time_model::kDefaultUtilization, 0.01, 1.0);
  in.knobs.overhead_per_layer_s =
      req.num_or("overheadPerLayerSeconds", time_model::kDefaultOverheadPerLayerSeconds, 0.0, 1.0);
  GpuInfo overrides;
  overrides.peak_flops = req.num_or("gpuPeakTflops", 0, 0.001, 1e6) * 1e12;
  overrides.bandwidth = req.num_or("gpuMemoryBandwidthGBps", 0, 1, 1e6) * 1e9;
  in.device.interconnect_bandwidth = req.num_or("interconnectGBps", 0, 0, 1e6) * 1e9;
  return overrides;
}

// Whether the request's model is a diffusion network (or a pipeline around one).
bool diffusion_model(const Obj& req) {
  if (!req.has("model") || !req.raw("model").is_object()) return false;
  const json& m = req.raw("model");
  if (m.contains("pipeline")) return true;
  if (m.contains("config") && m["config"].is_object()) return m["config"].contains("_class_name");
  if (m.contains("preset") && m["preset"].is_string())
    return parse_model_shared(Obj(m, "model"))->diffusion != nullptr;
  return false;
}

// Whether the request's model reads token sequences (seqLen): not a vision or speech network
// (imageSize, its audio) nor a bare parameter count (no shapes). A model that does not parse:
// yes (the peakMemory parser then names its field).
bool reads_tokens(const Obj& req) {
  if (!req.has("model") || !req.raw("model").is_object()) return true;
  try {
    const auto m = parse_model_shared(Obj(req.raw("model"), "model"));
    return !m->arch.net && m->has_architecture();
  } catch (const RequestError&) {
    return true;
  }
}

// The peakMemory request: every key that is not the planner's, with "auto" checkpointing
// (or none) resolved; sets *auto_ckpt.
json peak_request(const Obj& req, bool* auto_ckpt) {
  json peak_json = json::object();
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it) {
    bool mine = false;
    for (const char* k : kPlannerKeys) mine = mine || it.key() == k;
    if (!mine) peak_json[it.key()] = it.value();
  }
  *auto_ckpt = !json_has(peak_json, "checkpointing") ||
               (json_at(peak_json, "checkpointing").is_string() &&
                json_at(peak_json, "checkpointing") == vocab::kAccumulationAutoCheckpointing);
  if (*auto_ckpt) peak_json.erase("checkpointing");
  put_fields(peak_json, {{"microBatch", 1}, {"searchMaxMicroBatch", false}, {"timeline", false}});
  // (a diffusion network's seqLen is its text tokens, with a default: io/diffusion_request.cpp;
  // a traced model has its own length, or none: the peakMemory parser checks seqLen for it)
  const bool traced =
      req.has("model") && req.raw("model").is_object() && json_has(req.raw("model"), "trace");
  if (!json_has(peak_json, "seqLen") && reads_tokens(req) && !diffusion_model(req) && !traced)
    fail(code::kMissingField, "seqLen", Message{"error.acc.seqLen", {}});
  if (json_has(peak_json, "seqLen"))
    put(peak_json, "seqLen", req.raw("seqLen"));  // (validated by the peakMemory parser)
  if (!json_has(peak_json, "gpu") && !json_has(peak_json, "gpuMemoryBytes"))
    fail(code::kMissingField, "gpu", Message{"error.acc.gpu", {}});
  return peak_json;
}

// The preset's dense peak for the precision's matmuls, or the overrides.
GpuInfo planner_gpu(const peak::Request& base, const GpuInfo& overrides) {
  GpuInfo gpu;
  gpu.memory_bytes = base.runtime.gpu_memory_bytes;
  peak::DenseTflops tflops;  // none without a preset
  if (!base.runtime.gpu_id.empty()) {
    const peak::Gpu g = peak::gpu_preset(base.runtime.gpu_id, "gpu");
    gpu.id = g.id;
    tflops = g.tflops;
    gpu.bandwidth = g.memory_bandwidth;
  }
  const auto [tkey, peak_tflops] = step_work::matmul_peak(base.training.precision, tflops);
  gpu.throughput_precision = tkey;
  gpu.peak_flops = peak_tflops * 1e12;
  if (overrides.peak_flops > 0) gpu.peak_flops = overrides.peak_flops;
  if (overrides.bandwidth > 0) gpu.bandwidth = overrides.bandwidth;
  if (gpu.peak_flops <= 0)
    fail(code::kMissingField, "gpuPeakTflops", Message{"error.planner.tflops", {{"dtype", tkey}}});
  return gpu;
}

// FLOPs (the architecture or parameter count; an MLP chain from its layer sizes), optimizer and
// gradient traffic per step, and whether the model may hold BatchNorm (trainmem/step_work.hpp).
void work_per_step(const peak::Request& base, accumulation::PlannerInputs* out) {
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

// The peak-memory calculator as the planner's memory model (the request's settings, the
// candidate's micro-batch, steps and strategy). base, user_ckpt and flops must outlive it.
// replay: false gives the cheap bound (allocated bytes, no allocator replay; the device memory
// the replay would use is never below it), whose "does not fit" is final.
accumulation::PeakMemoryFn memory_model(const peak::Request& base,
                                        const peak::Checkpointing& user_ckpt,
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
    accumulation::MemoryEstimate e;
    e.peak_bytes = res.peak_bytes;
    e.fits = res.has_device ? res.fits : false;
    // Placement-engine strategies: the fraction of the forward it recomputes.
    if (kind != vocab::Strategy::none && kind != vocab::Strategy::full &&
        kind != vocab::Strategy::attention_recompute && res.forward_flops > 0)
      e.recompute_flops_per_token = flops.total * res.recompute_flops / res.forward_flops;
    e.breakdown = accumulation::Breakdown{res.weights.bytes,     res.master_weights.bytes,
                                          res.gradients.bytes,   res.optimizer_state.bytes,
                                          res.activations.bytes, res.temporaries.bytes,
                                          res.runtime.bytes};
    return e;
  };
}

json plan_mode(const Obj& req) {
  accumulation::PlannerInputs in;
  const GpuInfo overrides = read_planner_keys(req, &in);
  bool auto_ckpt = false;
  const peak::Request base = peak::parse_request(peak_request(req, &auto_ckpt));
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it)
    req.mark_used(it.key());
  req.finish();

  in.data_parallel = base.parallelism.data;
  if (in.target_global_batch < in.data_parallel)
    fail(code::kInconsistent, "targetGlobalBatch",
         Message{"error.planner.ranks",
                 {{"target", std::to_string(in.target_global_batch)},
                  {"ranks", std::to_string(in.data_parallel)}}});
  if (base.training.samples.given && !base.training.samples.packed)
    fail(code::kUnsupported, "samples", Message{"error.acc.lengths", {}});
  in.seq_len = base.model.is_mlp || base.model.description().diffusion ? 1 : base.training.seq_len;
  peak::Checkpointing user_ckpt;
  user_ckpt.strategy = vocab::Strategy::full;
  if (!auto_ckpt) user_ckpt = base.training.checkpointing;
  in.checkpointing = {vocab::Strategy::none, user_ckpt.strategy};

  const GpuInfo gpu = planner_gpu(base, overrides);
  in.device.peak_flops = gpu.peak_flops;
  in.device.memory_bandwidth = gpu.bandwidth;
  work_per_step(base, &in);

  const time_model::ForwardFlops flops = in.flops;
  const accumulation::PlannerResult result =
      accumulation::plan(in, memory_model(base, user_ckpt, flops, true),
                         base.allocator.simulate ? memory_model(base, user_ckpt, flops, false)
                                                 : accumulation::PeakMemoryFn());
  json out = accumulation::to_json(result, in);
  json gpu_json = json::object();
  put_fields(gpu_json, {{"id", gpu.id},
                        {"memoryBytes", gpu.memory_bytes},
                        {"peakFlops", gpu.peak_flops},
                        {"throughputPrecision", gpu.throughput_precision},
                        {"memoryBandwidthBytesPerSecond", gpu.bandwidth}});
  put(out, "gpu", std::move(gpu_json));
  json time_json = json::object();
  put_fields(time_json, {{"utilization", in.knobs.utilization},
                         {"overheadPerLayerSeconds", in.knobs.overhead_per_layer_s},
                         {"optimizerBytesPerStep", in.optimizer_bytes},
                         {"formula", Text("acc.timeFormula", {})}});
  put(out, "timeModel", std::move(time_json));
  // a bare parameter count: every plan's memory is the model states alone (activations
  // unknown), so a plan that fits may not; one that does not fit cannot
  if (peak::count_only(base)) put(out, "lowerBound", true);
  return out;
}

}  // namespace

json accumulation_json(const json& request) {
  Obj req(request, "");
  if (req.has("targetGlobalBatch")) return plan_mode(req);
  return forward_mode(req);
}

}  // namespace trainmem
