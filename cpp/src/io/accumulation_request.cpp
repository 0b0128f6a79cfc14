// tm.accumulation(request): parses the forward and planner requests and reads GPU presets; the
// planner runs on the parsed peak request (accumulation/planner_run.hpp).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "accumulation/planner_run.hpp"
#include "io/accumulation_json.hpp"
#include "io/calculators.hpp"
#include "io/device_presets.hpp"
#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
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

json plan_mode(const Obj& req) {
  accumulation::PlannerInputs in;
  const GpuInfo overrides = read_planner_keys(req, &in);
  bool auto_ckpt = false;
  const peak::Request base = peak::parse_request(peak_request(req, &auto_ckpt));
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it)
    req.mark_used(it.key());
  req.finish();

  accumulation::inputs_from_run(base, &in);
  const peak::Checkpointing ckpt = accumulation::planner_checkpointing(base, auto_ckpt, &in);
  const GpuInfo gpu = planner_gpu(base, overrides);
  in.device.peak_flops = gpu.peak_flops;
  in.device.memory_bandwidth = gpu.bandwidth;
  accumulation::work_per_step(base, &in);
  const accumulation::PlannerResult result = accumulation::plan_run(in, base, ckpt);
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
