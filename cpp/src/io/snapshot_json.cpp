// The JSON edge of the snapshot reader: readSnapshot and compareSnapshot (request object +
// the file's bytes in, result object out). Field names: README "readSnapshot".
#include <cctype>

#include "io/calculators.hpp"
#include "io/json_fields.hpp"
#include "io/json_objects.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "trainmem/snapshot_compare.hpp"

namespace trainmem {
namespace {

using snapshot::Action;
using snapshot::Category;

snapshot::SummaryOptions read_options(const Obj& o) {
  snapshot::SummaryOptions opt;
  if (o.has("device"))
    opt.device = static_cast<int64_t>(o.u64("device", 0, snapshot::kMaxDevices - 1));
  opt.points = static_cast<uint32_t>(o.u64_or("points", 400, 2, 10000));
  opt.top_frames = static_cast<uint32_t>(o.u64_or("topFrames", 10, 1, 100));
  return opt;
}

// torch.cuda.memory_stats() as JSON text (throws RequestError naming the field).
snapshot::Summary summarize_memory_stats(const std::string& text) {
  const json j = parse_request(text);
  if (!j.is_object())
    fail(code::kInvalidType, "snapshot", Message{"error.snapshot.statsObject", {}});
  snapshot::Summary r;
  r.source = "memoryStats";
  r.has_stats = true;
  r.file_bytes = text.size();
  // Keys of torch.cuda.memory_stats() (torch/cuda/memory.py, memory_stats docstring); the dump
  // holds many more, which are ignored as a pasted config.json's are.
  auto get = [&](const char* key, uint64_t* out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    *out = read_u64(*it, std::string("snapshot.") + key, 0, kMaxCount);
    return true;
  };
  const bool a = get("allocated_bytes.all.peak", &r.stats_allocated_peak);
  const bool b = get("reserved_bytes.all.peak", &r.stats_reserved_peak);
  if (!a && !b)
    fail(code::kMissingField, "snapshot.allocated_bytes.all.peak",
         Message{"error.snapshot.stats", {}});
  get("num_alloc_retries", &r.stats_num_alloc_retries);
  get("num_ooms", &r.stats_num_ooms);
  r.peak_allocated_bytes = r.stats_allocated_peak;
  r.peak_reserved_bytes = r.stats_reserved_peak;
  r.peak_reserved_at_peak = r.stats_reserved_peak;
  r.notes.push_back("memory_stats() holds peaks only: no series, steps or categories");
  return r;
}

// memory_stats() JSON when the bytes start with '{' (after white space), else a pickle.
snapshot::Summary summarize_bytes(const std::string& bytes, const snapshot::SummaryOptions& opt) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && bytes[i] == '{') return summarize_memory_stats(bytes);
  const snapshot::Snapshot s = snapshot::read_pickle(bytes);
  if (opt.device >= 0 && static_cast<uint64_t>(opt.device) >= s.device_traces.size() &&
      !s.device_traces.empty())
    fail(code::kOutOfRange, "device",
         Message{"error.snapshot.device",
                 {{"device", std::to_string(opt.device)},
                  {"size", std::to_string(s.device_traces.size())}}});
  return snapshot::summarize(s, opt);
}

json cause_json(const snapshot::Cause& c) {
  json o = json::object();
  put(o, "code", c.code);
  json p = json::object();
  for (const auto& kv : c.params) put(p, kv.first.c_str(), kv.second);
  put(o, "params", std::move(p));
  put(o, "message", c.message);
  return o;
}

json strings_json(const std::vector<std::string>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

json replay_json(const snapshot::Summary& s) {
  if (!s.replayed) return json(nullptr);
  return object_of("recordedReservedBytes", s.peak_reserved_bytes, "simulatedReservedBytes",
                   s.replay_reserved_peak, "recordedAllocatedBytes", s.peak_allocated_bytes,
                   "simulatedAllocatedBytes", s.replay_allocated_peak, "recordedSegments",
                   s.segments, "simulatedSegments", s.replay_segments);
}

json events_json(const snapshot::Summary& s) {
  // Keys in the order of snapshot::Action.
  static const char* kNames[] = {"alloc",       "freeRequested", "freeCompleted", "segmentAlloc",
                                 "segmentFree", "segmentMap",    "segmentUnmap",  "snapshot",
                                 "oom",         "other"};
  json e = object_of("total", s.events);
  for (int i = 0; i < 10; ++i) put(e, kNames[i], s.counts[i]);
  return e;
}

json settings_json(const snapshot::AllocatorSettings& a) {
  // max_split_size: SIZE_MAX (written as -1) means unlimited.
  const bool split = a.max_split_size && a.max_split_size < kMaxExactJson;
  return object_of("present", a.present, "conf", a.conf, "expandableSegments",
                   a.expandable_segments, "maxSplitSizeBytes",
                   split ? json(a.max_split_size) : json(nullptr), "garbageCollectionThreshold",
                   a.garbage_collection_threshold);
}

json series_json(const snapshot::Summary& s) {
  json points = array_of(s.series, [](const snapshot::SeriesPoint& p) {
    return object_of("x", p.x, "event", p.event, "allocatedBytes", p.allocated_bytes,
                     "requestedBytes", p.requested_bytes, "reservedBytes", p.reserved_bytes);
  });
  return object_of("x", s.has_time ? "timeUs" : "event", "points", std::move(points));
}

json top_frame_json(const snapshot::TopFrame& t) {
  return object_of("filename", t.filename, "line", t.line, "name", t.name, "bytes", t.bytes,
                   "blocks", t.blocks, "category", snapshot::category_name(t.category));
}

json peak_json(const snapshot::Summary& s) {
  json cats = json::object();
  for (int i = 0; i < snapshot::kCategories; ++i)
    put(cats, snapshot::category_name(static_cast<Category>(i)), s.at_peak[i]);
  return object_of("allocatedBytes", s.peak_allocated_bytes, "requestedBytes",
                   s.peak_requested_bytes, "reservedBytes", s.peak_reserved_at_peak, "event",
                   s.peak_event, "x", s.peak_x, "timeUs", s.peak_time_us, "step", s.peak_step,
                   "phase", s.peak_phase, "categories", std::move(cats), "topFrames",
                   array_of(s.top_frames, top_frame_json));
}

json step_json(const snapshot::Step& x) {
  return object_of("startEvent", x.start_event, "endEvent", x.end_event, "startX", x.start_x,
                   "endX", x.end_x, "peakAllocatedBytes", x.peak_allocated_bytes, "forwardEvent",
                   x.forward_event, "gradientBytesAtForward", x.gradient_bytes_at_forward);
}

json steps_json(const snapshot::Summary& s) {
  return object_of("method", s.steps_method, "periodEvents", s.period_events, "count",
                   static_cast<uint64_t>(s.steps.size()), "list", array_of(s.steps, step_json));
}

json summary_json(const snapshot::Summary& s) {
  json o = object_of(
      "source", s.source, "format",
      object_of("protocol", static_cast<uint64_t>(s.protocol), "fileBytes", s.file_bytes), "device",
      s.device, "devices", s.devices, "hasFrames", s.has_frames, "hasTime", s.has_time, "events",
      events_json(s), "allocatorSettings", settings_json(s.settings));
  put_fields(o, "segments",
             object_of("count", s.segments, "reservedBytes", s.segment_reserved_bytes,
                       "allocatedBytes", s.segment_allocated_bytes),
             "baseline",
             object_of("allocatedBytes", s.baseline_allocated_bytes, "reservedBytes",
                       s.baseline_reserved_bytes),
             "series", series_json(s), "peak", peak_json(s), "reservedPeak",
             object_of("bytes", s.peak_reserved_bytes, "event", s.peak_reserved_event), "steps",
             steps_json(s), "keptGradients",
             object_of("bytes", s.kept_gradient_bytes, "step", s.kept_gradient_step));
  if (s.has_stats)
    put(o, "memoryStats",
        object_of("allocatedPeakBytes", s.stats_allocated_peak, "reservedPeakBytes",
                  s.stats_reserved_peak, "numAllocRetries", s.stats_num_alloc_retries, "numOoms",
                  s.stats_num_ooms));
  put_fields(o, "simulatorReplay", replay_json(s), "causes",
             array_of(snapshot::measured_causes(s), cause_json), "notes", strings_json(s.notes));
  return o;
}

// measured − predicted as a signed number, or null when either side is missing.
json difference_json(bool both, uint64_t measured, uint64_t predicted) {
  if (!both) return json(nullptr);
  if (measured >= predicted) return json(static_cast<int64_t>(measured - predicted));
  return json(-static_cast<int64_t>(predicted - measured));
}

json bytes_or_null(bool has, uint64_t bytes) { return has ? json(bytes) : json(nullptr); }

json total_json(const snapshot::Totals& t) {
  return object_of("what", t.what, "measuredBytes", t.measured_bytes, "measuredSource",
                   t.measured_source, "predictedBytes",
                   bytes_or_null(t.predicted, t.predicted_bytes), "differenceBytes",
                   difference_json(t.predicted, t.measured_bytes, t.predicted_bytes));
}

json category_row_json(const snapshot::CategoryRow& r) {
  return object_of("category", r.category, "measuredBytes",
                   bytes_or_null(r.measured, r.measured_bytes), "predictedBytes",
                   bytes_or_null(r.predicted, r.predicted_bytes), "differenceBytes",
                   difference_json(r.measured && r.predicted, r.measured_bytes, r.predicted_bytes));
}

json predicted_point_json(const snapshot::PredictedPoint& p) {
  return object_of("x", p.x, "allocatedBytes", p.allocated_bytes, "phase", p.phase);
}

// A request error inside compareSnapshot's `request` names its field below "request".
[[noreturn]] void rethrow_in_request(const RequestError& e) {
  throw RequestError(e.code(), e.field().empty() ? "request" : "request." + e.field(), e.text());
}

snapshot::Figures read_figures(const Obj& o) {
  snapshot::Figures f;
  if (o.has("measured")) {
    const Obj m = o.obj("measured");
    f.max_allocated_bytes = m.u64_or("maxAllocatedBytes", 0, 0, kMaxCount);
    f.max_reserved_bytes = m.u64_or("maxReservedBytes", 0, 0, kMaxCount);
    f.nvidia_smi_used_bytes = m.u64_or("nvidiaSmiUsedBytes", 0, 0, kMaxCount);
    m.finish();
  }
  return f;
}

json comparison_json(const snapshot::Comparison& c, bool has) {
  return object_of("measured", has ? summary_json(c.summary) : json(nullptr), "predicted",
                   peak::to_json(c.predicted, true), "totals", array_of(c.totals, total_json),
                   "categories", array_of(c.rows, category_row_json), "predictedSeries",
                   array_of(c.predicted_series, predicted_point_json), "causes",
                   array_of(c.causes, cause_json), "simulatorReplay",
                   has ? replay_json(c.summary) : json(nullptr), "notes", strings_json(c.notes));
}

}  // namespace

json read_snapshot_json(const json& request, const std::string& bytes) {
  Obj o(request, "");
  const snapshot::SummaryOptions opt = read_options(o);
  o.finish();
  if (bytes.empty()) fail(code::kMissingField, "snapshot", Message{"error.snapshot.bytes", {}});
  return summary_json(summarize_bytes(bytes, opt));
}

json compare_snapshot_json(const json& request, const std::string& bytes) {
  Obj o(request, "");
  const snapshot::SummaryOptions opt = read_options(o);
  peak::Request rq;
  try {
    rq = peak::parse_request(o.raw("request"));
  } catch (const RequestError& e) {
    rethrow_in_request(e);
  }
  const snapshot::Figures f = read_figures(o);
  o.finish();
  snapshot::Summary summary;
  const bool has = !bytes.empty();
  if (has) summary = summarize_bytes(bytes, opt);
  snapshot::Comparison c;
  try {
    c = snapshot::compare(has ? &summary : nullptr, f, rq);
  } catch (const RequestError& e) {
    if (e.field() == "snapshot") throw;
    rethrow_in_request(e);
  }
  return comparison_json(c, has);
}

}  // namespace trainmem
