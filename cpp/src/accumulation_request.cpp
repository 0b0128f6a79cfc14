// tm.accumulation(request): parses the forward and planner requests, reads GPU presets, and
// wires the peak-memory calculator into the planner (see accumulation.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "trainmem/accumulation.hpp"
#include "trainmem/calculators.hpp"
#include "trainmem/embedded_data.hpp"
#include "trainmem/model.hpp"
#include "trainmem/request.hpp"
#include "trainmem/time_model.hpp"

namespace trainmem {
namespace {

// Largest batch / step count accepted (README "Numeric limits"): 2^31 keeps every product of
// micro x steps x DP x seqLen below 2^53 for seqLen <= 2^22.
constexpr uint64_t kMaxBatch = 1ULL << 31;
constexpr uint64_t kMaxSeq = 1ULL << 22;
constexpr uint64_t kMaxRanks = 1ULL << 20;

const std::vector<std::string> kPrecisions = {"fp32", "amp-fp16", "amp-bf16", "bf16"};
const std::vector<std::string> kCheckpointing = {"auto",    "none", "full",       "selective",
                                                 "every-k", "sqrt", "sequential", "optimal"};

struct OptimizerTraffic {
  const char* name;
  uint32_t copies;     // state tensors per parameter (torch/optim/*.py)
  double state_bytes;  // bytes per state element (0 = same as the fp32 master / weights)
};
// torch/optim: SGD momentum_buffer, Adam/AdamW exp_avg + exp_avg_sq, Adagrad sum, RMSprop
// square_avg; Lion one moment (Chen et al. 2023); Adafactor's factored second moment is
// O(rows + cols) (Shazeer & Stern 2018) and its traffic is taken as 0 states here;
// bitsandbytes 8-bit Adam keeps two uint8 states (Dettmers et al. 2022).
const OptimizerTraffic kOptimizers[] = {
    {"sgd", 0, 0},     {"sgd-momentum", 1, 0}, {"adam", 2, 0},
    {"adamw", 2, 0},   {"lion", 1, 0},         {"adagrad", 1, 0},
    {"rmsprop", 1, 0}, {"adafactor", 0, 0},    {"adamw-8bit", 2, 1}};

const char* throughput_key(const std::string& precision) {
  // Autocast runs matmuls in 16 bits; fp32 runs them in fp32 (PyTorch >= 1.12 disables TF32
  // for matmuls by default: torch.backends.cuda.matmul.allow_tf32 = False).
  if (precision == "amp-fp16") return "fp16";
  if (precision == "amp-bf16" || precision == "bf16") return "bf16";
  return "fp32";
}

struct GpuInfo {
  std::string id;
  uint64_t memory_bytes = 0;
  double peak_flops = 0;
  double bandwidth = 0;
};

// GPU presets are cpp/data/gpus/*.json: {id, name, memoryBytes, peakTflops: {fp32, tf32,
// fp16, bf16}, memoryBandwidthBytesPerSecond}.
GpuInfo read_gpu_preset(const Obj& req, const std::string& id, const std::string& precision) {
  std::vector<std::string> ids;
  for (const auto& f : embedded_under("gpus/")) {
    const auto& j = *f.second;
    if (!j.is_object() || !j.contains("id")) continue;
    ids.push_back(j["id"].get<std::string>());
    if (ids.back() != id) continue;
    GpuInfo g;
    g.id = id;
    g.memory_bytes = j.value("memoryBytes", uint64_t{0});
    const char* key = throughput_key(precision);
    if (j.contains("peakTflops") && j["peakTflops"].contains(key) &&
        j["peakTflops"][key].is_number())
      g.peak_flops = j["peakTflops"][key].get<double>() * 1e12;
    g.bandwidth = j.value("memoryBandwidthBytesPerSecond", 0.0);
    return g;
  }
  req.one_of("gpu", ids);  // throws unknown_value with the closest preset
  throw RequestError(code::kUnknownPreset, "gpu", "unknown GPU preset");
}

json forward_mode(const Obj& req) {
  accumulation::ForwardInputs in;
  in.micro_batch = req.u64("microBatch", 1, kMaxBatch);
  in.accumulation_steps = req.u64("accumulationSteps", 1, kMaxBatch);
  in.data_parallel = req.u64_or("dataParallel", 1, 1, kMaxRanks);
  in.seq_len = req.u64_or("seqLen", 0, 1, kMaxSeq);
  in.dataset_size = req.u64_or("datasetSize", 0, 1, 1ULL << 50);
  req.finish({"targetGlobalBatch"});
  return accumulation::to_json(accumulation::forward(in), in);
}

json plan_mode(const Obj& req) {
  if (req.has("microBatch") || req.has("accumulationSteps"))
    throw RequestError(code::kInconsistent,
                       req.has("microBatch") ? "microBatch" : "accumulationSteps",
                       "give either targetGlobalBatch (the planner chooses micro-batch and "
                       "steps) or microBatch + accumulationSteps, not both");
  accumulation::PlannerInputs in;
  in.target_global_batch = req.u64("targetGlobalBatch", 1, kMaxBatch);
  in.data_parallel = req.u64_or("dataParallel", 1, 1, kMaxRanks);
  in.seq_len = req.u64("seqLen", 1, kMaxSeq);
  const json& model_json = req.raw("model");
  const ModelDescription model = parse_model(req.obj("model"));
  const std::string precision = req.one_of_or("precision", kPrecisions, "fp32");
  std::vector<std::string> opt_names;
  for (const auto& o : kOptimizers) opt_names.emplace_back(o.name);
  const std::string optimizer = req.one_of_or("optimizer", opt_names, "adamw");
  const std::string ckpt = req.one_of_or("checkpointing", kCheckpointing, "auto");
  in.checkpointing =
      ckpt == "auto" ? std::vector<std::string>{"none", "full"} : std::vector<std::string>{ckpt};
  in.compare_micro_batch = req.u64_or("compareMicroBatch", 1, 1, kMaxBatch);
  in.knobs.utilization = req.num_or("utilization", time_model::kDefaultUtilization, 0.01, 1.0);
  in.knobs.overhead_per_layer_s =
      req.num_or("overheadPerLayerSeconds", time_model::kDefaultOverheadPerLayerSeconds, 0.0, 1.0);

  // GPU: a preset, or explicit numbers (explicit numbers override the preset's).
  GpuInfo gpu;
  const bool has_preset = req.has("gpu");
  if (has_preset) gpu = read_gpu_preset(req, req.str("gpu", 64), precision);
  req.mark_used("gpu");
  if (req.has("gpuMemoryBytes")) gpu.memory_bytes = req.u64("gpuMemoryBytes", 1, 1ULL << 50);
  req.mark_used("gpuMemoryBytes");
  if (req.has("gpuPeakTflops")) gpu.peak_flops = req.num("gpuPeakTflops", 0.001, 1e6) * 1e12;
  req.mark_used("gpuPeakTflops");
  if (req.has("gpuMemoryBandwidthGBps"))
    gpu.bandwidth = req.num("gpuMemoryBandwidthGBps", 1, 1e6) * 1e9;
  req.mark_used("gpuMemoryBandwidthGBps");
  in.device.interconnect_bandwidth = req.num_or("interconnectGBps", 0, 0, 1e6) * 1e9;
  if (!has_preset && gpu.memory_bytes == 0)
    throw RequestError(code::kMissingField, "gpu",
                       "gpu (a preset id) or gpuMemoryBytes is required");
  if (gpu.peak_flops <= 0)
    throw RequestError(code::kMissingField, "gpuPeakTflops",
                       "the time model needs the GPU's peak throughput for " + precision +
                           ": give a gpu preset that has it, or gpuPeakTflops");
  in.device.peak_flops = gpu.peak_flops;
  in.device.memory_bandwidth = gpu.bandwidth;

  // Extra peak-memory inputs (attention, runtime, zeroStage, ...) passed through unchanged.
  json extra = json::object();
  if (req.has("peakMemory")) {
    extra = req.raw("peakMemory");
    if (!extra.is_object())
      throw RequestError(code::kInvalidType, "peakMemory", "peakMemory must be an object");
  }
  req.mark_used("peakMemory");
  req.finish();

  in.flops = time_model::forward_flops_per_token(model, in.seq_len);
  // Optimizer traffic per step: weights in fp32 unless pure bf16 (autocast keeps fp32 params).
  const double wbytes = precision == "bf16" ? 2.0 : 4.0;
  const OptimizerTraffic* ot = &kOptimizers[0];
  for (const auto& o : kOptimizers)
    if (optimizer == o.name) ot = &o;
  const double sbytes = ot->state_bytes > 0 ? ot->state_bytes : wbytes;
  const double trainable = static_cast<double>(model.trainable_params);
  in.optimizer_bytes =
      trainable * time_model::optimizer_bytes_per_param(ot->copies, wbytes, sbytes);
  in.gradient_bytes = trainable * wbytes;
  bool has_bn = false;
  for (const auto& b : model.buffers)
    has_bn = has_bn || b.name.find("running_mean") != std::string::npos;
  in.model_has_batchnorm = has_bn;
  // A transformer architecture normalises with LayerNorm/RMSNorm; a bare parameter count or
  // tensor list without buffers says nothing either way.
  in.model_may_have_batchnorm = !has_bn && !model.has_architecture() && model.buffers.empty();

  // Peak memory: the peakMemory calculator with the same model and settings.
  json base = extra;
  base["model"] = model_json;
  base["seqLen"] = in.seq_len;
  base["precision"] = precision;
  base["optimizer"] = optimizer;
  base["dataParallel"] = in.data_parallel;
  if (has_preset) base["gpu"] = gpu.id;
  if (req.has("gpuMemoryBytes") || !has_preset) base["gpuMemoryBytes"] = gpu.memory_bytes;
  const uint64_t capacity = gpu.memory_bytes;
  accumulation::PeakMemoryFn fn = [&](uint64_t micro, uint64_t steps, const std::string& strategy) {
    json r = base;
    r["microBatch"] = micro;
    r["gradientAccumulationSteps"] = steps;
    r["checkpointing"] = strategy;
    const json res = peak_memory_json(r);
    accumulation::MemoryEstimate e;
    e.peak_bytes = res.at("peakBytes").get<uint64_t>();
    e.fits = res.contains("fits") ? res["fits"].get<bool>() : e.peak_bytes <= capacity;
    if (res.contains("breakdown")) e.breakdown = res["breakdown"];
    return e;
  };
  const accumulation::PlannerResult result = accumulation::plan(in, fn);
  json out = accumulation::to_json(result, in);
  out["gpu"] = {{"id", gpu.id},
                {"memoryBytes", gpu.memory_bytes},
                {"peakFlops", gpu.peak_flops},
                {"throughputPrecision", throughput_key(precision)},
                {"memoryBandwidthBytesPerSecond", gpu.bandwidth}};
  out["timeModel"] = {
      {"utilization", in.knobs.utilization},
      {"overheadPerLayerSeconds", in.knobs.overhead_per_layer_s},
      {"formula",
       "microStep = (3 x forwardFLOPs + recomputeFLOPs) / (peak x utilization) + "
       "overheadPerLayer x layers; step = steps x microStep + optimizer traffic / bandwidth "
       "(+ all-reduce)"}};
  return out;
}

}  // namespace

json accumulation_json(const json& request) {
  Obj req(request, "");
  if (req.has("targetGlobalBatch")) return plan_mode(req);
  return forward_mode(req);
}

}  // namespace trainmem
