// peakMemory request: strict parsing (every field named in errors), presets (runtime profiles,
// GPUs as data under cpp/data/), and the result JSON.
#include <algorithm>

#include "trainmem/calculators.hpp"
#include "trainmem/embedded_data.hpp"
#include "trainmem/error.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/request.hpp"

namespace trainmem {
namespace peak {
namespace {

constexpr uint64_t kMaxBatch = 1ULL << 24;
constexpr uint64_t kMaxSeq = 1ULL << 24;
constexpr uint64_t kMaxRanks = 1ULL << 20;

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> n = {
      "none",       "full",  "selective",   "every-k", "block",
      "sequential", "sqrt",  "chen-greedy", "revolve", "optimal-single-level",
      "optimal",    "manual"};
  return n;
}

Checkpointing parse_checkpointing(const Obj& req) {
  Checkpointing c;
  if (!req.has("checkpointing")) return c;
  const json& raw = req.raw("checkpointing");
  if (raw.is_string()) {
    c.strategy = req.one_of("checkpointing", strategy_names());
  } else {
    const Obj o = req.obj("checkpointing");
    c.strategy = o.one_of("strategy", strategy_names());
    c.placement.k = static_cast<uint32_t>(o.u64_or("k", 0, 1, 1u << 20));
    c.placement.segments = static_cast<uint32_t>(o.u64_or("segments", 0, 1, 1u << 20));
    c.placement.snapshots = static_cast<uint32_t>(o.u64_or("snapshots", 0, 1, 1u << 20));
    c.placement.budget_bytes = o.u64_or("budgetBytes", 0, 1);
    c.placement.slots = static_cast<uint32_t>(o.u64_or("slots", 500, 2, 100000));
    if (o.has("checkpointed")) {
      const json& arr = o.array("checkpointed", 100000);
      for (size_t i = 0; i < arr.size(); ++i) {
        const std::string p = index_path(o.field("checkpointed"), i);
        if (!arr[i].is_array() || arr[i].size() != 2)
          throw RequestError(code::kInvalidType, p, p + " must be [first, last]");
        placement::Segment s;
        s.first = static_cast<uint32_t>(read_u64(arr[i][0], p + "[0]", 0, 1u << 30));
        s.last = static_cast<uint32_t>(read_u64(arr[i][1], p + "[1]", s.first, 1u << 30));
        c.placement.manual.push_back(s);
      }
    }
    o.finish();
  }
  if (c.strategy == "every-k" && c.placement.k == 0) c.placement.k = 1;
  c.placement.strategy = c.strategy;
  return c;
}

}  // namespace

Runtime runtime_profile(const std::string& id, const std::string& field) {
  const auto ids = runtime_ids();
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
    const std::string near = closest_match(id, ids);
    throw RequestError(
        code::kUnknownValue, field,
        "unknown runtime '" + id + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
  }
  const json& j = embedded_json("runtime-" + id + ".json");
  Runtime r;
  r.id = id;
  r.name = j.at("name").get<std::string>();
  r.context_bytes = j.at("contextBytes").get<uint64_t>();
  r.context_source = j.at("contextSource").get<std::string>();
  r.workspace_bytes = j.at("workspaceBytes").get<uint64_t>();
  r.foreach_optimizers = j.at("foreachOptimizers").get<bool>();
  r.source = j.at("source").get<std::string>();
  r.traits.id = id;
  r.traits.dropout_mask_bytes = j.at("dropoutMaskBytes").get<uint32_t>();
  r.traits.mean_saves_input = j.at("meanSavesInput").get<bool>();
  r.traits.norm_stats_fp32 = j.at("normStatsFp32").get<bool>();
  return r;
}

std::vector<std::string> runtime_ids() { return {"pytorch-cuda", "pytorch-cpu"}; }

std::vector<std::string> gpu_ids() {
  std::vector<std::string> ids;
  for (const auto& f : embedded_under("gpus/"))
    if (f.second->is_object() && f.second->contains("id"))
      ids.push_back((*f.second)["id"].get<std::string>());
  return ids;
}

Gpu gpu_preset(const std::string& id, const std::string& field) {
  for (const auto& f : embedded_under("gpus/")) {
    const json& j = *f.second;
    if (!j.is_object() || j.value("id", "") != id) continue;
    Gpu g;
    g.id = id;
    g.name = j.value("name", id);
    g.memory_bytes = j.at("memoryBytes").get<uint64_t>();
    g.tflops = j.value("peakTflops", json::object());
    g.source = j.value("source", "");
    return g;
  }
  const std::string near = closest_match(id, gpu_ids());
  throw RequestError(
      code::kUnknownPreset, field,
      "unknown GPU preset '" + id + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

Request parse_request(const json& request) {
  if (!request.is_object())
    throw RequestError(code::kInvalidType, "", "the request must be a JSON object");
  Obj req(request, "");
  Request r;
  // runtime first: it sets defaults (attention)
  const std::string runtime_id = req.one_of_or("runtime", runtime_ids(), "pytorch-cuda");
  r.runtime = runtime_profile(runtime_id, "runtime");
  if (req.has("mlp")) {
    if (req.has("model"))
      throw RequestError(code::kInconsistent, "mlp", "give either model or mlp, not both");
    const Obj m = req.obj("mlp");
    const json& sizes = m.array("sizes", 10000);
    if (sizes.size() < 2)
      throw RequestError(code::kOutOfRange, m.field("sizes"), "mlp.sizes needs at least 2 sizes");
    for (size_t i = 0; i < sizes.size(); ++i)
      r.mlp.sizes.push_back(read_u64(sizes[i], index_path(m.field("sizes"), i), 1, 1ULL << 32));
    r.mlp.activation = m.one_of_or("activation", {"relu", "gelu", "none"}, "relu");
    r.mlp.bias = m.boolean_or("bias", true);
    m.finish();
    r.is_mlp = true;
  } else {
    r.model_ptr = parse_model_shared(req.obj("model"));
  }
  r.micro_batch = req.u64("microBatch", 1, kMaxBatch);
  if (!r.is_mlp) {
    r.seq_len = req.u64("seqLen", 1, kMaxSeq);
    const uint64_t maxpos = r.model().arch.max_positions;
    if (maxpos > 0 && r.seq_len > maxpos)
      throw RequestError(code::kOutOfRange, "seqLen",
                         "seqLen " + std::to_string(r.seq_len) +
                             " exceeds the model's maximum positions (" + std::to_string(maxpos) +
                             ")");
  } else {
    r.seq_len = 1;
  }
  const std::string prec = req.one_of_or("precision", activations::precision_names(), "fp32");
  activations::parse_precision(prec, &r.precision);
  if (req.has("optimizer")) r.optimizer = parse_optimizer(req, "optimizer");
  r.checkpointing = parse_checkpointing(req);
  if (r.is_mlp && r.checkpointing.strategy == "selective")
    throw RequestError(code::kInconsistent, "checkpointing",
                       "selective recompute needs a transformer model");
  r.accumulation_steps = req.u64_or("gradientAccumulationSteps", 1, 1, kMaxBatch);
  r.zero_stage = static_cast<uint32_t>(req.u64_or("zeroStage", 0, 0, 3));
  r.data_parallel = req.u64_or("dataParallel", 1, 1, kMaxRanks);
  if (req.has("offload")) {
    const Obj o = req.obj("offload");
    r.offload_optimizer = o.boolean_or("optimizer", false);
    r.offload_params = o.boolean_or("params", false);
    o.finish();
    if (r.offload_optimizer && r.zero_stage == 0)
      throw RequestError(code::kInconsistent, "offload.optimizer",
                         "optimizer offload needs zeroStage >= 1");
    if (r.offload_params && r.zero_stage != 3)
      throw RequestError(code::kInconsistent, "offload.params",
                         "parameter offload needs zeroStage 3");
  }
  r.tensor_parallel = req.u64_or("tensorParallel", 1, 1, 4096);
  r.sequence_parallel = req.boolean_or("sequenceParallel", false);
  if (r.sequence_parallel && r.tensor_parallel == 1)
    throw RequestError(code::kInconsistent, "sequenceParallel",
                       "sequenceParallel needs tensorParallel > 1");
  if (!r.is_mlp && r.tensor_parallel > 1 && r.model().arch.heads > 0 &&
      r.model().arch.heads % r.tensor_parallel != 0)
    throw RequestError(code::kInconsistent, "tensorParallel",
                       "tensorParallel (" + std::to_string(r.tensor_parallel) +
                           ") must divide the number of attention heads (" +
                           std::to_string(r.model().arch.heads) + ")");
  if (req.has("lora")) {
    const Obj l = req.obj("lora");
    r.lora.enabled = true;
    r.lora.rank = l.u64_or("rank", 8, 1, 65536);
    r.lora.qlora = l.boolean_or("qlora", false);
    r.lora.dropout = l.num_or("dropout", 0.05, 0.0, 1.0);
    if (l.has("targetModules")) {
      const json& t = l.array("targetModules", 64);
      for (size_t i = 0; i < t.size(); ++i)
        r.lora.target_modules.push_back(
            read_str(t[i], index_path(l.field("targetModules"), i), 64));
    }
    l.finish();
    if (r.is_mlp || !r.model().has_architecture())
      throw RequestError(code::kUnsupported, "lora",
                         "LoRA needs a model with an architecture (preset or config)");
  }
  const std::string def_attn = r.runtime.id == "pytorch-cpu" ? "eager" : "sdpa";
  const std::string attn = req.one_of_or("attention", {"eager", "sdpa", "flash"}, def_attn);
  r.attention = attn == "eager" ? activations::Attention::eager : activations::Attention::sdpa;
  if (req.has("runtimeOverheadBytes")) {
    r.runtime_overhead_set = true;
    r.runtime_overhead_bytes = req.u64("runtimeOverheadBytes", 0, kMaxExactJson);
  }
  if (req.has("gpu") && req.has("gpuMemoryBytes"))
    throw RequestError(code::kInconsistent, "gpuMemoryBytes",
                       "give either gpu or gpuMemoryBytes, not both");
  if (req.has("gpu")) {
    const Gpu g = gpu_preset(req.str("gpu", 64), "gpu");
    r.gpu_id = g.id;
    r.gpu_memory_bytes = g.memory_bytes;
  } else if (req.has("gpuMemoryBytes")) {
    r.gpu_memory_bytes = req.u64("gpuMemoryBytes", 1, kMaxExactJson);
  }
  if (req.has("optimizerImplementation"))
    r.runtime.foreach_optimizers =
        req.one_of("optimizerImplementation", {"foreach", "for-loop"}) == "foreach";
  r.search_max_micro_batch = req.boolean_or("searchMaxMicroBatch", true);
  const bool want_timeline = req.boolean_or("timeline", true);
  (void)want_timeline;
  req.finish();
  return r;
}

nlohmann::json to_json(const Result& r, bool include_timeline) {
  auto line = [](const Line& l) { return json{{"bytes", l.bytes}, {"source", l.source}}; };
  json out = {
      {"peakBytes", r.peak_bytes},
      {"allocatedPeakBytes", r.allocated_peak_bytes},
      {"peakPhase", r.peak_phase},
      {"peakLayer", r.peak_layer},
      {"breakdown",
       {{"weights", line(r.weights)},
        {"masterWeights", line(r.master_weights)},
        {"gradients", line(r.gradients)},
        {"optimizerState", line(r.optimizer_state)},
        {"activations", line(r.activations)},
        {"temporaries", line(r.temporaries)},
        {"runtime", line(r.runtime)}}},
      {"params", r.params},
      {"trainableParams", r.trainable_params},
      {"storedActivationBytes", r.stored_activation_bytes},
      {"recomputeFraction", r.recompute_fraction},
      {"activationsPerLayer",
       {{"derivedBytes", r.derived_layer_bytes},
        {"korthikantiBytes", r.korthikanti_layer_bytes},
        {"korthikantiSource",
         "Korthikanti et al. 2022 (arXiv 2205.05198): sbh(34 + 5as/h), 16-bit, 1-byte masks"}}},
      {"assumptions", r.assumptions}};
  if (r.has_device) {
    out["fits"] = r.fits;
    out["headroomBytes"] = r.headroom_bytes;
    out["maxMicroBatch"] = r.max_micro_batch;
  } else {
    out["fits"] = nullptr;
    out["headroomBytes"] = nullptr;
    out["maxMicroBatch"] = nullptr;
  }
  if (include_timeline) {
    json tl = json::array();
    for (const auto& p : r.timeline)
      tl.push_back({{"phase", p.phase},
                    {"layer", p.layer},
                    {"name", p.name},
                    {"totalBytes", p.total_bytes},
                    {"activationBytes", p.activation_bytes},
                    {"gradientBytes", p.gradient_bytes}});
    out["timeline"] = std::move(tl);
  }
  return out;
}

}  // namespace peak

nlohmann::json peak_memory_json(const nlohmann::json& request) {
  const peak::Request r = peak::parse_request(request);
  // "timeline": null means absent, as in parse_request (json::value() would throw on null).
  const auto t = request.is_object() ? request.find("timeline") : request.end();
  const bool timeline =
      !(request.is_object() && t != request.end() && t->is_boolean()) || t->get<bool>();
  return peak::to_json(peak::compute(r), timeline);
}

}  // namespace trainmem
