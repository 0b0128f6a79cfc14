// tm.advise(request): the peakMemory request with the answer's own keys; the run's whole
// peakMemory result, the verdict with the safety margin, the time per step, and the changes
// that make the run fit (trainmem/advise.hpp), in one call. A change is applied to the request
// JSON and parsed as any request: what the parser refuses is not offered.
#include <string>
#include <utility>
#include <vector>

#include "io/calculators.hpp"
#include "io/device_presets.hpp"
#include "io/field_list.hpp"
#include "io/json_fields.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "trainmem/advise.hpp"
#include "trainmem/error.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

// Keys of advise itself; every other key is a peakMemory input.
const char* const kAdviseKeys[] = {"marginBytes", "marginFraction", "fromScratch", "changes",
                                   "loraBaseDtype"};

struct Options {
  uint64_t margin_bytes = 0;
  double margin_fraction = 0;
  bool changes = true;
  advise::Options candidates;
};

bool advise_key(const std::string& key) {
  for (const char* k : kAdviseKeys)
    if (key == k) return true;
  return false;
}

Options read_options(const Obj& req) {
  Options o;
  o.margin_bytes = req.u64_or("marginBytes", 0, 0, limits::kMaxCount);
  o.margin_fraction = req.num_or("marginFraction", 0, 0, 0.9);
  if (req.has("marginBytes") && req.has("marginFraction"))
    fail(code::kInconsistent, "marginFraction", Message{"error.advise.margin", {}});
  o.changes = req.boolean_or("changes", true);
  o.candidates.from_scratch = req.boolean_or("fromScratch", false);
  o.candidates.lora_base_dtype = req.one_of_or("loraBaseDtype", {"", "fp32", "bf16", "fp16"}, "");
  return o;
}

json peak_part(const json& request) {
  json peak_json = json::object();
  for (auto it = request.begin(); it != request.end(); ++it)
    if (!advise_key(it.key())) peak_json[it.key()] = it.value();
  return peak_json;
}

// An object member, made an object when it is not one.
json& member_object(json& j, const char* key) {
  json& m = j[key];
  if (!m.is_object()) m = json::object();
  return m;
}

// The change in request terms (what the page applies to its inputs).
json patch_json(const advise::Patch& p) {
  json out = json::object();
  if (p.lora_rank || p.qlora || p.lora_base_dtype) {
    json& l = member_object(out, "lora");
    if (p.lora_rank) put(l, "rank", *p.lora_rank);
    if (p.qlora) put(l, "qlora", *p.qlora);
    if (p.lora_base_dtype) put(l, "baseDtype", *p.lora_base_dtype);
  }
  if (p.checkpointing) put(out, "checkpointing", *p.checkpointing);
  if (p.micro_batch) put(out, "microBatch", *p.micro_batch);
  if (p.accumulation_steps) put(out, "gradientAccumulationSteps", *p.accumulation_steps);
  if (p.data_parallel) put(out, "dataParallel", *p.data_parallel);
  if (p.tensor_parallel) put(out, "tensorParallel", *p.tensor_parallel);
  if (p.zero_stage) put(out, "zeroStage", *p.zero_stage);
  if (p.offload_optimizer) put(member_object(out, "offload"), "optimizer", *p.offload_optimizer);
  if (p.optimizer) put(out, "optimizer", *p.optimizer);
  if (p.optimizer_implementation) put(out, "optimizerImplementation", *p.optimizer_implementation);
  if (p.precision) put(out, "precision", *p.precision);
  return out;
}

// The request with the change: objects (lora, offload) merged key by key; an optimizer given
// with options keeps them under its new name.
json with_change(json request, const json& patch) {
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    json& slot = request[it.key()];
    if (it->is_object() && slot.is_object())
      for (auto f = it->begin(); f != it->end(); ++f) slot[f.key()] = *f;
    else if (it.key() == "optimizer" && slot.is_object())
      slot["name"] = *it;
    else
      slot = *it;
  }
  put(request, "timeline", false);
  put(request, "searchMaxMicroBatch", false);
  return request;
}

json verdict_json(const advise::Verdict& v) {
  json j = json::object();
  put(j, "status", advise::status_name(v.status));
  if (v.status == advise::Status::no_device)
    put(j, "fits", nullptr);
  else
    put(j, "fits", v.status != advise::Status::does_not_fit);
  put_fields(j, {{"usedBytes", v.used_bytes},
                 {"usedMemory", v.nvidia_smi ? "nvidia-smi" : "allocated"},
                 {"capacityBytes", v.capacity_bytes},
                 {"headroomBytes", v.headroom_bytes},
                 {"marginBytes", v.margin_bytes}});
  return j;
}

json timing_json(const advise::Timing& t) {
  json j = json::object();
  put(j, "globalBatch", t.global_batch);
  if (!t.timed) {
    put(j, "note", t.not_timed);
    return j;
  }
  put_fields(j, {{"stepSeconds", t.time.step_seconds},
                 {"microStepSeconds", t.time.micro_step_seconds},
                 {"optimizerSeconds", t.time.optimizer_seconds},
                 {"samplesPerSecond", t.time.samples_per_second},
                 {"tokensPerSecond", t.time.tokens_per_second},
                 {"throughputPrecision", t.throughput_precision},
                 {"optimizerOnCpu", t.optimizer_on_cpu},
                 {"recomputeUpperBound", t.recompute_upper_bound}});
  return j;
}

advise::Timing timing_of(const peak::Request& r, const peak::Result& res) {
  try {
    if (r.runtime.gpu_id.empty()) return advise::step_time(r, res, nullptr);
    const peak::Gpu gpu = peak::gpu_preset(r.runtime.gpu_id, "gpu");
    return advise::step_time(r, res, &gpu);
  } catch (const RequestError& e) {
    advise::Timing t;
    t.global_batch = r.training.micro_batch * r.training.accumulation_steps * r.parallelism.data;
    t.not_timed = e.text();
    return t;
  }
}

// What the run is, as the core resolved it from the request and the runtime's defaults.
json settings_json(const peak::Request& r, const Options& o) {
  json j = json::object();
  const char* method = r.model.lora.enabled        ? (r.model.lora.qlora ? "qlora" : "lora")
                       : o.candidates.from_scratch ? "from-scratch"
                                                   : "full";
  put_fields(j, {{"method", method},
                 {"precision", vocab::name_for(vocab::kPrecisions, r.training.precision)},
                 {"attention", vocab::name_for(vocab::kAttention, r.training.attention)},
                 {"runtime", r.runtime.profile.id},
                 {"optimizerImplementation",
                  vocab::name_for(vocab::kOptimizerImpls, r.training.optimizer_implementation)},
                 {"checkpointing", vocab::name_of(r.training.checkpointing.strategy)},
                 {"microBatch", r.training.micro_batch},
                 {"gradientAccumulationSteps", r.training.accumulation_steps},
                 {"dataParallel", r.parallelism.data},
                 {"seqLen", r.training.seq_len}});
  if (r.model.lora.enabled) put(j, "loraRank", r.model.lora.rank);
  return j;
}

std::vector<advise::Change> changes_of(const json& request, const peak::Request& run,
                                       const Options& o, uint64_t margin) {
  std::vector<advise::Change> out;
  for (advise::Candidate& c : advise::candidates(run, o.candidates)) {
    try {
      peak::Request r = peak::parse_request(with_change(request, patch_json(c.patch)));
      r.answer.verdict_only = true;  // the verdict and the bytes are what is shown
      // A change far over the GPU is told without the allocator's replay (milliseconds, where
      // a replay of a large model takes seconds): its allocated bytes and context (peakBytes,
      // usedMemory "allocated"). They came within 0.67x..1.30x of the replay's nvidia-smi
      // figure over 1,296 runs of six presets (micro-batch 1-16, checkpointing, optimizers,
      // precisions, LoRA, ZeRO-3): twice the GPU is beyond that spread.
      if (r.allocator.simulate && r.runtime.gpu_memory_bytes > 0) {
        peak::Request quick = r;
        quick.allocator.simulate = false;
        const peak::Result coarse = peak::judged_result(quick);
        if (coarse.peak_bytes / 2 > r.runtime.gpu_memory_bytes) {
          out.push_back({std::move(c), advise::judge(quick, coarse, margin), {}});
          continue;
        }
      }
      // (with pipeline stages: the stage that needs the most memory, as the run's verdict)
      const peak::Result res = peak::judged_result(r);
      advise::Change change{std::move(c), advise::judge(r, res, margin), {}};
      if (change.verdict.status != advise::Status::does_not_fit) change.timing = timing_of(r, res);
      out.push_back(std::move(change));
    } catch (const RequestError&) {
      // not modelled with this run (e.g. tensor parallelism that does not divide the heads)
    }
  }
  advise::rank(&out);
  return out;
}

json change_json(const advise::Change& c) {
  json j = json::object();
  put_fields(j, {{"id", c.candidate.id},
                 {"set", patch_json(c.candidate.patch)},
                 {"gpus", c.candidate.gpus},
                 {"changesMethod", c.candidate.changes_method}});
  json v = verdict_json(c.verdict);
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "capacityBytes" && it.key() != "marginBytes") j[it.key()] = *it;
  if (c.verdict.status != advise::Status::does_not_fit) put(j, "time", timing_json(c.timing));
  return j;
}

}  // namespace

json advise_json(const json& request) {
  if (!request.is_object()) fail(code::kInvalidType, "", Message{"error.request.object", {}});
  Obj req(request, "");
  const Options o = read_options(req);
  const json peak_json = peak_part(request);
  const peak::Request run = peak::parse_request(peak_json);
  for (auto it = request.begin(); it != request.end(); ++it) req.mark_used(it.key());
  req.finish();
  // the run as peakMemory answers it: with pipeline stages, every stage, and the verdict on the
  // stage that needs the most memory
  const bool timeline = peak::wants_timeline(peak_json);
  peak::Result res;
  json peak_out =
      run.parallelism.pipeline.stages > 1 ? peak::pipeline_answer(run, timeline, &res) : json();
  if (run.parallelism.pipeline.stages <= 1) {
    res = peak::compute(run);
    peak_out = peak::result_json(run, res, timeline);
  }
  const uint64_t margin =
      advise::margin_bytes(run.runtime.gpu_memory_bytes, o.margin_fraction, o.margin_bytes);
  const advise::Verdict verdict = advise::judge(run, res, margin);
  json out = json::object();
  put(out, "peak", std::move(peak_out));
  put(out, "verdict", verdict_json(verdict));
  put(out, "settings", settings_json(run, o));
  put(out, "stepTime", timing_json(timing_of(run, res)));
  json changes = json::array();
  if (o.changes &&
      (verdict.status == advise::Status::does_not_fit || verdict.status == advise::Status::tight))
    for (const advise::Change& c : changes_of(peak_json, run, o, margin))
      changes.push_back(change_json(c));
  put(out, "changes", std::move(changes));
  return out;
}

}  // namespace trainmem
