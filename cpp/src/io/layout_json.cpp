// planLayout's result as JSON (field meanings: web/lib/index.d.ts PlanLayoutResult).
#include "io/layout_json.hpp"

#include <string>
#include <utility>

#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/request.hpp"

namespace trainmem {
namespace {

// The peakMemory request fields that reproduce the layout's memory (added to the request).
json settings_json(const layout::Layout& l, vocab::Precision precision) {
  json s = json::object();
  put_fields(s, {{"microBatch", l.micro_batch},
                 {"gradientAccumulationSteps", l.micro_batches},
                 {"dataParallel", l.dp},
                 {"tensorParallel", l.tp},
                 {"sequenceParallel", l.tp > 1},
                 {"pipelineParallel", l.pp},
                 {"checkpointing", vocab::name_of(l.checkpointing)}});
  if (l.pipelined) {
    put(s, "schedule", vocab::name_for(vocab::kPipelineSchedules, l.schedule));
    if (l.schedule == vocab::PipelineSchedule::interleaved)
      put(s, "virtualStages", l.virtual_stages);
  }
  for (size_t i = 0; i < l.extra.size() && i < layout::extra_dimensions().size(); ++i)
    put(s, layout::extra_dimensions()[i].field, l.extra[i]);
  const bool shards = layout::shard_ranks(l) > 1;
  if (shards && l.sharding == layout::Sharding::zero1) put(s, "zeroStage", 1);
  if (shards && l.sharding == layout::Sharding::fsdp) {
    json f = json::object();
    put(f, "version", 2);
    // (the mixed precision layout_memory.cpp request_for sets under autocast)
    const bool bf16 = precision == vocab::Precision::amp_bf16;
    if (bf16 || precision == vocab::Precision::amp_fp16) {
      json mp = json::object();
      put_fields(mp, {{"paramDtype", bf16 ? "bf16" : "fp16"}, {"reduceDtype", "fp32"}});
      put(f, "mixedPrecision", std::move(mp));
    }
    s["fsdp"] = std::move(f);
  }
  return s;
}

json time_json(const layout::StepEstimate& t) {
  json o = json::object();
  put_fields(o, {{"stepSeconds", t.step_s},
                 {"computeSeconds", t.compute_s},
                 {"overheadSeconds", t.overhead_s},
                 {"tensorParallelSeconds", t.tp_comm_s},
                 {"pipelineSendSeconds", t.pp_comm_s},
                 {"bubbleFraction", t.bubble_fraction},
                 {"bubbleSeconds", t.bubble_s},
                 {"contextParallelSeconds", t.cp_comm_s},
                 {"expertParallelSeconds", t.ep_comm_s},
                 {"dataParallelSeconds", t.dp_comm_s},
                 {"optimizerSeconds", t.optimizer_s},
                 {"tokensPerSecondPerGpu", t.tokens_per_second_per_gpu},
                 {"modelFlopsUtilization", t.model_flops_utilization}});
  return o;
}

json verdict_json(const layout::Verdict& v, vocab::Precision precision) {
  json o = json::object();
  const layout::Layout& l = v.layout;
  put_fields(o, {{"tensorParallel", l.tp},
                 {"pipelineParallel", l.pp},
                 {"dataParallel", l.dp},
                 {"schedule",
                  l.pipelined ? vocab::name_for(vocab::kPipelineSchedules, l.schedule) : "none"},
                 {"sharding", layout::sharding_name(l.sharding)},
                 {"checkpointing", vocab::name_of(l.checkpointing)},
                 {"microBatch", l.micro_batch},
                 {"microBatches", l.micro_batches},
                 {"status", v.status}});
  for (size_t i = 0; i < l.extra.size() && i < layout::extra_dimensions().size(); ++i)
    put(o, layout::extra_dimensions()[i].field, l.extra[i]);
  if (v.peak_bytes) put_fields(o, {{"peakBytes", v.peak_bytes}, {"peakStage", v.peak_stage}});
  if (!v.reason.empty()) put(o, "reason", v.reason);
  put(o, "time", time_json(v.time));
  put(o, "settings", settings_json(l, precision));
  return o;
}

json list_json(const std::vector<layout::Verdict>& list, vocab::Precision precision) {
  json a = json::array();
  for (const layout::Verdict& v : list) a.push_back(verdict_json(v, precision));
  return a;
}

}  // namespace

json verdict_to_json(const layout::Verdict& v, vocab::Precision precision) {
  return verdict_json(v, precision);
}

json layout_json(const layout::Inputs& in, const layout::Result& r) {
  json out = json::object();
  put(out, "layouts", list_json(r.fitting, in.base.training.precision));
  put(out, "fasterButRuledOut", list_json(r.faster, in.base.training.precision));
  json counts = json::object();
  put_fields(counts, {{"candidates", r.candidates},
                      {"evaluated", r.evaluations},
                      {"peakEvaluations", r.peak_evaluations},
                      {"pruned", r.pruned},
                      {"notFitting", r.not_fitting},
                      {"notEvaluated", r.not_evaluated},
                      {"evaluationBoundReached", r.evaluation_bound_reached}});
  put(out, "counts", std::move(counts));
  json net = json::object();
  put_fields(net, {{"intraNodeBytesPerSecond", in.network.intra_node},
                   {"interNodeBytesPerSecond", in.network.inter_node},
                   {"intraNodeSource", in.network.intra_source},
                   {"interNodeSource", in.network.inter_source},
                   {"peakFlops", in.peak_flops},
                   {"utilization", in.knobs.utilization},
                   {"overheadPerLayerSeconds", in.knobs.overhead_per_layer_s}});
  put(out, "timeModel", std::move(net));
  put_fields(out, {{"gpus", in.gpus},
                   {"gpusPerNode", in.gpus_per_node},
                   {"globalBatch", in.global_batch},
                   {"seqLen", in.base.training.seq_len},
                   {"gpuMemoryBytes", in.base.runtime.gpu_memory_bytes}});
  json a = json::array();
  for (const Text& s : r.assumptions) a.push_back(s);
  put(out, "assumptions", std::move(a));
  return out;
}

}  // namespace trainmem
