// tm.accumulation(request): parses the forward and planner requests, reads GPU presets, and
// wires the peak-memory calculator into the planner (see accumulation.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "io/calculators.hpp"
#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"
#include "io/request.hpp"
#include "trainmem/accumulation.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/time_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

// Largest batch / step count accepted (README "Numeric limits"): 2^31 keeps every product of
// micro x steps x DP x seqLen below 2^53 for seqLen <= 2^22.
using limits::kMaxRanks;

const char* throughput_key(vocab::Precision precision) {
  // Autocast runs matmuls in 16 bits; fp32 runs them in fp32 (PyTorch >= 1.12 disables TF32
  // for matmuls by default: torch.backends.cuda.matmul.allow_tf32 = False).
  switch (precision) {
    case vocab::Precision::amp_fp16:
    case vocab::Precision::fp16:
      return "fp16";
    case vocab::Precision::amp_bf16:
    case vocab::Precision::bf16:
      return "bf16";
    case vocab::Precision::fp32:
      break;
  }
  return "fp32";
}

struct GpuInfo {
  std::string id;
  uint64_t memory_bytes = 0;
  double peak_flops = 0;
  double bandwidth = 0;
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

json plan_mode(const Obj& req) {
  if (req.has("microBatch") || req.has("accumulationSteps") ||
      req.has("gradientAccumulationSteps")) {
    const char* f = req.has("microBatch")          ? "microBatch"
                    : req.has("accumulationSteps") ? "accumulationSteps"
                                                   : "gradientAccumulationSteps";
    fail(code::kInconsistent, f,
         "give either targetGlobalBatch (the planner chooses micro-batch and "
         "steps) or microBatch + accumulationSteps, not both");
  }
  accumulation::PlannerInputs in;
  in.target_global_batch = req.u64("targetGlobalBatch", 1, limits::kMaxGlobalBatch);
  in.compare_micro_batch = req.u64_or("compareMicroBatch", 1, 1, limits::kMaxMicroBatch);
  in.knobs.utilization = req.num_or("utilization", time_model::kDefaultUtilization, 0.01, 1.0);
  in.knobs.overhead_per_layer_s =
      req.num_or("overheadPerLayerSeconds", time_model::kDefaultOverheadPerLayerSeconds, 0.0, 1.0);
  const double peak_override = req.num_or("gpuPeakTflops", 0, 0.001, 1e6) * 1e12;
  const double bw_override = req.num_or("gpuMemoryBandwidthGBps", 0, 1, 1e6) * 1e9;
  in.device.interconnect_bandwidth = req.num_or("interconnectGBps", 0, 0, 1e6) * 1e9;

  // The peakMemory request: everything else, with "auto" checkpointing resolved.
  json peak_json = json::object();
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it) {
    bool mine = false;
    for (const char* k : kPlannerKeys) mine = mine || it.key() == k;
    if (!mine) peak_json[it.key()] = it.value();
  }
  bool auto_ckpt = !json_has(peak_json, "checkpointing") ||
                   (json_at(peak_json, "checkpointing").is_string() &&
                    json_at(peak_json, "checkpointing") == vocab::kAccumulationAutoCheckpointing);
  if (auto_ckpt) peak_json.erase("checkpointing");
  put(peak_json, "microBatch", 1);
  put(peak_json, "searchMaxMicroBatch", false);
  put(peak_json, "timeline", false);
  if (!json_has(peak_json, "seqLen"))
    fail(code::kMissingField, "seqLen", "seqLen is required by the planner");
  put(peak_json, "seqLen", req.raw("seqLen"));  // (validated by the peakMemory parser)
  if (!json_has(peak_json, "gpu") && !json_has(peak_json, "gpuMemoryBytes"))
    fail(code::kMissingField, "gpu",
         "gpu (a preset id) or gpuMemoryBytes is required by the planner");
  const peak::Request base = peak::parse_request(peak_json);
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it)
    req.mark_used(it.key());
  req.finish();

  in.data_parallel = base.data_parallel;
  if (in.target_global_batch < in.data_parallel)
    fail(code::kInconsistent, "targetGlobalBatch",
         {"targetGlobalBatch (", std::to_string(in.target_global_batch),
          ") is smaller than dataParallel (", std::to_string(in.data_parallel),
          "): every rank needs at least one sample per step"});
  if (base.samples.given && !base.samples.packed)
    fail(code::kUnsupported, "samples",
         "samples.lengths is modelled in peakMemory only: the planner's time model takes one "
         "padded length (give seqLen, or samples.packed)");
  in.seq_len = base.is_mlp ? 1 : base.seq_len;
  peak::Checkpointing user_ckpt;
  user_ckpt.strategy = "full";
  if (!auto_ckpt) user_ckpt = base.checkpointing;
  in.checkpointing = {"none", user_ckpt.strategy};

  // GPU throughput: the preset's dense peak for the precision, or gpuPeakTflops.
  const char* tkey = throughput_key(base.precision);
  GpuInfo gpu;
  gpu.memory_bytes = base.gpu_memory_bytes;
  if (!base.gpu_id.empty()) {
    const peak::Gpu g = peak::gpu_preset(base.gpu_id, "gpu");
    gpu.id = g.id;
    if (json_has(g.tflops, tkey) && json_at(g.tflops, tkey).is_number())
      gpu.peak_flops = json_at(g.tflops, tkey).get<double>() * 1e12;
    for (const auto& f : embedded_under("gpus/"))
      if (json_value_or(*f.second, "id", "") == g.id)
        gpu.bandwidth = json_value_or(*f.second, "memoryBandwidthBytesPerSecond", 0.0);
  }
  if (peak_override > 0) gpu.peak_flops = peak_override;
  if (bw_override > 0) gpu.bandwidth = bw_override;
  if (gpu.peak_flops <= 0)
    fail(code::kMissingField, "gpuPeakTflops",
         {"the time model needs the GPU's dense peak for ", tkey,
          ": give a gpu preset that lists it, or gpuPeakTflops"});
  in.device.peak_flops = gpu.peak_flops;
  in.device.memory_bandwidth = gpu.bandwidth;

  // FLOPs: the architecture (or parameter count); an MLP chain from its layer sizes.
  peak::Request one = base;
  const peak::Result first = peak::evaluate(one);
  if (base.is_mlp) {
    in.flops.method = "mlp";
    in.flops.total = in.flops.blocks = first.forward_flops;  // per sample at micro-batch 1
    in.flops.layers = base.mlp.sizes.size() - 1;
  } else {
    in.flops = time_model::forward_flops_per_token(base.model(), in.seq_len, base.target_len);
  }
  // Optimizer traffic per step (weights in fp32 unless pure 16-bit: autocast keeps fp32
  // parameters and gradients).
  const bool pure16 =
      base.precision == vocab::Precision::bf16 || base.precision == vocab::Precision::fp16;
  const double wbytes = pure16 ? 2.0 : 4.0;
  const double sbytes = has_byte_states(base.optimizer) ? 1.0 : wbytes;
  const double trainable = static_cast<double>(first.trainable_params);
  in.optimizer_bytes = trainable * time_model::optimizer_bytes_per_param(
                                       simple_state_copies(base.optimizer), wbytes, sbytes);
  in.gradient_bytes = trainable * wbytes;
  bool has_bn = false;
  for (const auto& b : base.model().buffers)
    has_bn = has_bn || b.name.find("running_mean") != std::string::npos;
  in.model_has_batchnorm = has_bn;
  // Transformers normalise with LayerNorm/RMSNorm; an MLP chain has no norm; a bare parameter
  // count or a tensor list without buffers says nothing either way.
  in.model_may_have_batchnorm =
      !has_bn && !base.is_mlp && !base.model().has_architecture() && base.model().buffers.empty();

  const time_model::ForwardFlops flops = in.flops;
  accumulation::PeakMemoryFn fn = [&base, &user_ckpt, &flops](uint64_t micro, uint64_t steps,
                                                              const std::string& strategy) {
    peak::Request r = base;
    r.micro_batch = micro;
    r.accumulation_steps = steps;
    r.search_max_micro_batch = false;
    if (strategy == "none") {
      r.checkpointing = peak::Checkpointing{};
    } else if (strategy == user_ckpt.strategy) {
      r.checkpointing = user_ckpt;  // the user's strategy, with its parameters
    } else {
      // The comparison's checkpointed rows when the user asked for none: HF's
      // gradient_checkpointing ("full"), as seed 000's table compares. (They were evaluated
      // with the user's "none" while labelled and timed as "full".)
      r.checkpointing = peak::Checkpointing{};
      r.checkpointing.strategy = strategy;
    }
    const peak::Result res = peak::evaluate(r);
    accumulation::MemoryEstimate e;
    e.peak_bytes = res.peak_bytes;
    e.fits = res.has_device ? res.fits : false;
    // Placement-engine strategies: the fraction of the forward it recomputes.
    if (strategy != "none" && strategy != "full" && strategy != "attention-recompute" &&
        res.forward_flops > 0)
      e.recompute_flops_per_token = flops.total * res.recompute_flops / res.forward_flops;
    e.breakdown = json::object();
    put(e.breakdown, "weights", res.weights.bytes);
    put(e.breakdown, "masterWeights", res.master_weights.bytes);
    put(e.breakdown, "gradients", res.gradients.bytes);
    put(e.breakdown, "optimizerState", res.optimizer_state.bytes);
    put(e.breakdown, "activations", res.activations.bytes);
    put(e.breakdown, "temporaries", res.temporaries.bytes);
    put(e.breakdown, "runtime", res.runtime.bytes);
    return e;
  };
  const accumulation::PlannerResult result = accumulation::plan(in, fn);
  json out = accumulation::to_json(result, in);
  json gpu_json = json::object();
  put(gpu_json, "id", gpu.id);
  put(gpu_json, "memoryBytes", gpu.memory_bytes);
  put(gpu_json, "peakFlops", gpu.peak_flops);
  put(gpu_json, "throughputPrecision", tkey);
  put(gpu_json, "memoryBandwidthBytesPerSecond", gpu.bandwidth);
  put(out, "gpu", std::move(gpu_json));
  json time_json = json::object();
  put(time_json, "utilization", in.knobs.utilization);
  put(time_json, "overheadPerLayerSeconds", in.knobs.overhead_per_layer_s);
  put(time_json, "optimizerBytesPerStep", in.optimizer_bytes);
  put(time_json, "formula",
      "microStep = (3 x forwardFLOPs + recomputeFLOPs) / (peak x utilization) + "
      "overheadPerLayer x layers; step = steps x microStep + optimizer traffic / bandwidth "
      "(+ ring all-reduce when interconnectGBps is given)");
  put(out, "timeModel", std::move(time_json));
  return out;
}

}  // namespace

json accumulation_json(const json& request) {
  Obj req(request, "");
  if (req.has("targetGlobalBatch")) return plan_mode(req);
  return forward_mode(req);
}

}  // namespace trainmem
