// tm.planLayout(request): reads the planner's own keys, passes the rest to peakMemory's strict
// parser, reads the GPU's figures (cpp/data/gpus/, cpp/data/interconnects.json) and writes the
// ranked layouts (layout_planner.hpp; docs/parallelism.md "Layout planner").
#include <string>
#include <utility>

#include "io/calculators.hpp"
#include "io/device_presets.hpp"
#include "io/embedded_data.hpp"
#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/layout_json.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "peak/peak_parallel.hpp"
#include "peak/peak_params.hpp"
#include "trainmem/layout_planner.hpp"
#include "trainmem/step_work.hpp"

namespace trainmem {
namespace {

// Keys of the planner; every other key is a peakMemory input.
const char* const kPlannerKeys[] = {"gpus",
                                    "gpusPerNode",
                                    "globalBatch",
                                    "intraNodeGBps",
                                    "interNodeGBps",
                                    "utilization",
                                    "overheadPerLayerSeconds",
                                    "top",
                                    "maxEvaluations",
                                    "compare",
                                    "explore"};
// peakMemory keys the planner chooses itself.
const char* const kChosenKeys[] = {"microBatch",        "gradientAccumulationSteps",
                                   "accumulationSteps", "dataParallel",
                                   "tensorParallel",    "sequenceParallel",
                                   "pipelineParallel",  "schedule",
                                   "virtualStages",     "stageBlocks",
                                   "zeroStage",         "fsdp",
                                   "checkpointing",     "ddp",
                                   "contextParallel",   "expertParallel"};

json peak_part(const Obj& req) {
  json out = json::object();
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it) {
    bool mine = false;
    for (const char* k : kPlannerKeys) mine = mine || it.key() == k;
    for (const char* k : kChosenKeys)
      if (it.key() == k)
        fail(code::kInconsistent, k, Message{"error.layout.chosen", {{"field", k}}});
    if (!mine) out[it.key()] = it.value();
  }
  if (!json_has(out, "seqLen"))
    fail(code::kMissingField, "seqLen", Message{"error.field.required", {{"field", "seqLen"}}});
  if (!json_has(out, "gpu")) fail(code::kMissingField, "gpu", Message{"error.layout.gpu", {}});
  put_fields(out, {{"microBatch", 1}, {"searchMaxMicroBatch", false}, {"timeline", false}});
  return out;
}

// The model must have the shapes a layout splits: heads, blocks, hidden size.
void check_model(const peak::Request& base) {
  const ModelDescription& m = base.model.description();
  if (base.model.is_mlp || count_only(base) || m.trace || m.diffusion || m.pipeline || m.arch.net ||
      m.arch.heads == 0 || m.arch.layers == 0 || m.arch.hidden == 0)
    fail(code::kUnsupported, "model", Message{"error.layout.model", {}});
  if (base.model.lora.enabled) fail(code::kUnsupported, "lora", Message{"error.layout.lora", {}});
}

// explore: each dimension asked for must suit the model (errors name explore.<field>).
void check_explore(const layout::Inputs& in) {
  for (size_t i = 0; i < layout::extra_dimensions().size(); ++i) {
    if (in.extra_sizes_max[i] <= 1) continue;
    const std::string field = std::string("explore.") + layout::extra_dimensions()[i].field;
    if (layout::extra_dimensions()[i].splits_tokens) {
      try {
        peak::check_context_model(in.base);
      } catch (const RequestError& e) {
        throw RequestError(e.code(), field, e.text());
      }
    } else if (in.base.model.description().arch.num_experts == 0 ||
               !in.base.model.description().has_tensors()) {
      fail(code::kInconsistent, field, Message{"error.ep.model", {}});
    }
  }
}

// The GPU's links from cpp/data/interconnects.json, or the request's.
layout::Network network_of(const Obj& req, const std::string& gpu) {
  layout::Network n;
  const json* data = embedded_find("interconnects.json");
  if (data && (*data)["gpus"].contains(gpu)) {
    const json& g = (*data)["gpus"][gpu];
    n.intra_node = g["intraNodeGBps"].get<double>() * 1e9;
    n.inter_node = g["interNodeGBps"].get<double>() * 1e9;
    // the data names the catalog's sentence (cpp/data/messages.json) by its code
    n.intra_source = n.inter_source = Text(g["sourceMessage"].get<std::string>(), {});
  }
  if (req.has("intraNodeGBps")) {
    n.intra_node = req.num("intraNodeGBps", 0.001, 1e6) * 1e9;
    n.intra_source = Text("intraNodeGBps");  // a field's name, no sentence
  }
  if (req.has("interNodeGBps")) {
    n.inter_node = req.num("interNodeGBps", 0.001, 1e6) * 1e9;
    n.inter_source = Text("interNodeGBps");
  }
  if (n.intra_node <= 0)
    fail(code::kMissingField, "intraNodeGBps", Message{"error.layout.links", {{"gpu", gpu}}});
  return n;
}

void read_sizes(const Obj& req, layout::Inputs* in) {
  in->gpus = req.u64("gpus", 1, limits::kMaxRanks);
  in->gpus_per_node = req.u64_or("gpusPerNode", in->gpus < 8 ? in->gpus : 8, 1, 1024);
  if (in->gpus % in->gpus_per_node && in->gpus > in->gpus_per_node)
    fail(code::kInconsistent, "gpusPerNode",
         Message{
             "error.layout.nodes",
             {{"gpus", std::to_string(in->gpus)}, {"perNode", std::to_string(in->gpus_per_node)}}});
  if (in->gpus < in->gpus_per_node) in->gpus_per_node = in->gpus;
  in->global_batch = req.u64("globalBatch", 1, limits::kMaxGlobalBatch);
  in->top = req.u64_or("top", 10, 1, 100);
  in->max_evaluations = req.u64_or("maxEvaluations", 400, 1, 10000);
  // explore: {<an extra dimension's field>: the largest size to try} (layout_dimensions.cpp)
  in->extra_sizes_max.assign(layout::extra_dimensions().size(), 1);
  if (req.has("explore")) {
    const Obj e = req.obj("explore");
    for (size_t i = 0; i < layout::extra_dimensions().size(); ++i)
      in->extra_sizes_max[i] =
          e.u64_or(layout::extra_dimensions()[i].field, 1, 1, limits::kMaxRanks);
    e.finish();
  }
  in->knobs.utilization = req.num_or("utilization", time_model::kDefaultUtilization, 0.01, 1.0);
  in->knobs.overhead_per_layer_s =
      req.num_or("overheadPerLayerSeconds", time_model::kDefaultOverheadPerLayerSeconds, 0, 1);
}

// FLOPs, gradient, gather and optimizer bytes, and the GPU's peak (trainmem/step_work.hpp).
void read_work(layout::Inputs* in) {
  const peak::Request& b = in->base;
  peak::Request counts = b;
  counts.allocator.simulate = false;
  const peak::Result first = peak::evaluate(counts);
  const step_work::Work w = step_work::of(b, first);
  in->flops = w.flops;
  in->gradient_bytes = w.gradient_bytes;
  in->optimizer_bytes = w.optimizer_bytes;
  const bool amp = b.training.precision == vocab::Precision::amp_bf16 ||
                   b.training.precision == vocab::Precision::amp_fp16;
  // FSDP gathers 16-bit parameters under autocast (request_for), else the gradients' width
  in->gather_bytes = amp ? 2.0 * static_cast<double>(first.trainable_params) : w.gradient_bytes;
  // MoE: the routed experts' share of the parameters and the blocks holding them
  uint64_t routed = 0, total = 0;
  int64_t last_block = -1;
  for (const TensorSpec& t : b.model.description().tensors) {
    total += t.numel();
    if (!peak::routed_expert(t.name)) continue;
    routed += t.numel();
    if (t.block != last_block) ++in->moe_layers;
    last_block = t.block;
  }
  in->expert_fraction = total ? static_cast<double>(routed) / static_cast<double>(total) : 0.0;
  const peak::Gpu g = peak::gpu_preset(b.runtime.gpu_id, "gpu");
  const auto [key, tflops] = step_work::matmul_peak(b.training.precision, g.tflops);
  in->peak_flops = tflops * 1e12;
  in->memory_bandwidth = g.memory_bandwidth;
  if (in->peak_flops <= 0)
    fail(code::kUnsupported, "gpu",
         Message{"error.layout.noPeak", {{"gpu", g.id}, {"dtype", key}}});
}

// compare: {tensorParallel, pipelineParallel, contextParallel, expertParallel, schedule, sharding,
// checkpointing, microBatch}:
// a layout the user runs, judged beside the plan.
layout::Layout read_compare(const Obj& c, const layout::Inputs& in) {
  layout::Layout l;
  l.tp = c.u64_or("tensorParallel", 1, 1, in.gpus);
  l.pp = c.u64_or("pipelineParallel", 1, 1, in.gpus);
  if (in.gpus % (l.tp * l.pp))
    fail(code::kInconsistent, c.field("pipelineParallel"), Message{"error.layout.compareGpus", {}});
  l.extra.assign(layout::extra_dimensions().size(), 1);
  for (size_t i = 0; i < l.extra.size(); ++i)
    l.extra[i] = c.u64_or(layout::extra_dimensions()[i].field, 1, 1, in.gpus);
  const uint64_t cp = layout::token_split(l);
  if (in.gpus % (l.tp * l.pp * cp))
    fail(code::kInconsistent, c.field("contextParallel"),
         Message{"error.layout.compareGpusCp", {}});
  l.dp = in.gpus / (l.tp * l.pp * cp);
  l.pipelined = l.pp > 1;
  if (l.pipelined) {
    const std::string s =
        c.one_of_or("schedule", {"1f1b", "interleaved-1f1b", "zb-h1", "zb-v"}, "1f1b");
    for (const auto& t : vocab::kPipelineSchedules)
      if (s == t.name) l.schedule = t.value;
    l.virtual_stages = parallel::chunks_per_rank(l.schedule, 2);
  }
  l.sharding = c.one_of_or("sharding", {"zero1", "fsdp"}, "zero1") == "fsdp"
                   ? layout::Sharding::fsdp
                   : layout::Sharding::zero1;
  const std::string ck =
      c.one_of_or("checkpointing", {"none", "attention-recompute", "full"}, "none");
  l.checkpointing = vocab::find(vocab::kStrategies, ck)->value;
  l.micro_batch = c.u64_or("microBatch", 1, 1, limits::kMaxMicroBatch);
  if (in.global_batch % (l.dp * l.micro_batch))
    fail(code::kInconsistent, c.field("microBatch"), Message{"error.layout.compareBatch", {}});
  l.micro_batches = in.global_batch / (l.dp * l.micro_batch);
  c.finish();
  return l;
}

}  // namespace

json plan_layout_json(const json& request) {
  Obj req(request, "");
  layout::Inputs in;
  read_sizes(req, &in);
  in.base = peak::parse_request(peak_part(req));
  for (auto it = req.json_value().begin(); it != req.json_value().end(); ++it)
    req.mark_used(it.key());
  in.network = network_of(req, in.base.runtime.gpu_id);
  req.finish();
  check_model(in.base);
  check_explore(in);
  in.schedules = {vocab::PipelineSchedule::one_f_one_b, vocab::PipelineSchedule::interleaved,
                  vocab::PipelineSchedule::zb_h1, vocab::PipelineSchedule::zb_v};
  read_work(&in);
  const layout::Result res = layout::plan(in);
  json out = layout_json(in, res);
  if (req.has("compare")) {
    uint64_t faster = 0;
    const layout::Verdict v = layout::judge(in, read_compare(req.obj("compare"), in), &faster);
    json c = verdict_to_json(v, in.base.training.precision);
    put(c, "fasterCandidates", faster);
    put(out, "compared", std::move(c));
  }
  return out;
}

}  // namespace trainmem
