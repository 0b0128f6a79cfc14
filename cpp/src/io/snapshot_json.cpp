// The JSON edge of the snapshot reader: readSnapshot and compareSnapshot (request object +
// the file's bytes in, result object out). Field names: README "readSnapshot".
#include <cctype>

#include "io/calculators.hpp"
#include "io/json_fields.hpp"
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

// memory_stats() JSON when the bytes start with '{' (after white space), else a pickle.
snapshot::Summary summarize_bytes(const std::string& bytes, const snapshot::SummaryOptions& opt) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && bytes[i] == '{') return snapshot::summarize_memory_stats(bytes);
  const snapshot::Snapshot s = snapshot::read_pickle(bytes);
  if (opt.device >= 0 && static_cast<uint64_t>(opt.device) >= s.device_traces.size() &&
      !s.device_traces.empty())
    fail(code::kOutOfRange, "device",
         {"device ", std::to_string(opt.device), " has no trace: the snapshot holds ",
          std::to_string(s.device_traces.size()), " device trace(s)"});
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
  json r = json::object();
  put(r, "recordedReservedBytes", s.peak_reserved_bytes);
  put(r, "simulatedReservedBytes", s.replay_reserved_peak);
  put(r, "recordedAllocatedBytes", s.peak_allocated_bytes);
  put(r, "simulatedAllocatedBytes", s.replay_allocated_peak);
  put(r, "recordedSegments", s.segments);
  put(r, "simulatedSegments", s.replay_segments);
  return r;
}

json summary_json(const snapshot::Summary& s) {
  json o = json::object();
  put(o, "source", s.source);
  {
    json f = json::object();
    put(f, "protocol", static_cast<uint64_t>(s.protocol));
    put(f, "fileBytes", s.file_bytes);
    put(o, "format", std::move(f));
  }
  put(o, "device", s.device);
  put(o, "devices", s.devices);
  put(o, "hasFrames", s.has_frames);
  put(o, "hasTime", s.has_time);
  {
    static const char* kNames[] = {"alloc",       "freeRequested", "freeCompleted", "segmentAlloc",
                                   "segmentFree", "segmentMap",    "segmentUnmap",  "snapshot",
                                   "oom",         "other"};
    json e = json::object();
    put(e, "total", s.events);
    for (int i = 0; i < 10; ++i) put(e, kNames[i], s.counts[i]);
    put(o, "events", std::move(e));
  }
  {
    json a = json::object();
    put(a, "present", s.settings.present);
    put(a, "conf", s.settings.conf);
    put(a, "expandableSegments", s.settings.expandable_segments);
    // max_split_size: SIZE_MAX (written as -1) means unlimited.
    if (s.settings.max_split_size && s.settings.max_split_size < kMaxExactJson)
      put(a, "maxSplitSizeBytes", s.settings.max_split_size);
    else
      put(a, "maxSplitSizeBytes", nullptr);
    put(a, "garbageCollectionThreshold", s.settings.garbage_collection_threshold);
    put(o, "allocatorSettings", std::move(a));
  }
  {
    json g = json::object();
    put(g, "count", s.segments);
    put(g, "reservedBytes", s.segment_reserved_bytes);
    put(g, "allocatedBytes", s.segment_allocated_bytes);
    put(o, "segments", std::move(g));
  }
  {
    json b = json::object();
    put(b, "allocatedBytes", s.baseline_allocated_bytes);
    put(b, "reservedBytes", s.baseline_reserved_bytes);
    put(o, "baseline", std::move(b));
  }
  {
    json se = json::object();
    put(se, "x", s.has_time ? "timeUs" : "event");
    json pts = json::array();
    for (const auto& p : s.series) {
      json q = json::object();
      put(q, "x", p.x);
      put(q, "event", p.event);
      put(q, "allocatedBytes", p.allocated_bytes);
      put(q, "requestedBytes", p.requested_bytes);
      put(q, "reservedBytes", p.reserved_bytes);
      pts.push_back(std::move(q));
    }
    put(se, "points", std::move(pts));
    put(o, "series", std::move(se));
  }
  {
    json p = json::object();
    put(p, "allocatedBytes", s.peak_allocated_bytes);
    put(p, "requestedBytes", s.peak_requested_bytes);
    put(p, "reservedBytes", s.peak_reserved_at_peak);
    put(p, "event", s.peak_event);
    put(p, "x", s.peak_x);
    put(p, "timeUs", s.peak_time_us);
    put(p, "step", s.peak_step);
    put(p, "phase", s.peak_phase);
    json cats = json::object();
    for (int i = 0; i < snapshot::kCategories; ++i)
      put(cats, snapshot::category_name(static_cast<Category>(i)), s.at_peak[i]);
    put(p, "categories", std::move(cats));
    json top = json::array();
    for (const auto& t : s.top_frames) {
      json q = json::object();
      put(q, "filename", t.filename);
      put(q, "line", t.line);
      put(q, "name", t.name);
      put(q, "bytes", t.bytes);
      put(q, "blocks", t.blocks);
      put(q, "category", snapshot::category_name(t.category));
      top.push_back(std::move(q));
    }
    put(p, "topFrames", std::move(top));
    put(o, "peak", std::move(p));
  }
  {
    json p = json::object();
    put(p, "bytes", s.peak_reserved_bytes);
    put(p, "event", s.peak_reserved_event);
    put(o, "reservedPeak", std::move(p));
  }
  {
    json st = json::object();
    put(st, "method", s.steps_method);
    put(st, "periodEvents", s.period_events);
    put(st, "count", static_cast<uint64_t>(s.steps.size()));
    json list = json::array();
    for (const auto& x : s.steps) {
      json q = json::object();
      put(q, "startEvent", x.start_event);
      put(q, "endEvent", x.end_event);
      put(q, "startX", x.start_x);
      put(q, "endX", x.end_x);
      put(q, "peakAllocatedBytes", x.peak_allocated_bytes);
      put(q, "forwardEvent", x.forward_event);
      put(q, "gradientBytesAtForward", x.gradient_bytes_at_forward);
      list.push_back(std::move(q));
    }
    put(st, "list", std::move(list));
    put(o, "steps", std::move(st));
  }
  {
    json k = json::object();
    put(k, "bytes", s.kept_gradient_bytes);
    put(k, "step", s.kept_gradient_step);
    put(o, "keptGradients", std::move(k));
  }
  if (s.has_stats) {
    json m = json::object();
    put(m, "allocatedPeakBytes", s.stats_allocated_peak);
    put(m, "reservedPeakBytes", s.stats_reserved_peak);
    put(m, "numAllocRetries", s.stats_num_alloc_retries);
    put(m, "numOoms", s.stats_num_ooms);
    put(o, "memoryStats", std::move(m));
  }
  put(o, "simulatorReplay", replay_json(s));
  json causes = json::array();
  for (const auto& c : snapshot::measured_causes(s)) causes.push_back(cause_json(c));
  put(o, "causes", std::move(causes));
  put(o, "notes", strings_json(s.notes));
  return o;
}

// A difference (measured − predicted) as a signed number.
void put_difference(json& o, uint64_t measured, uint64_t predicted) {
  if (measured >= predicted)
    put(o, "differenceBytes", static_cast<int64_t>(measured - predicted));
  else
    put(o, "differenceBytes", -static_cast<int64_t>(predicted - measured));
}

}  // namespace

json read_snapshot_json(const json& request, const std::string& bytes) {
  Obj o(request, "");
  const snapshot::SummaryOptions opt = read_options(o);
  o.finish();
  if (bytes.empty())
    fail(code::kMissingField, "snapshot",
         "readSnapshot needs the file's bytes (a Uint8Array or ArrayBuffer)");
  return summary_json(summarize_bytes(bytes, opt));
}

json compare_snapshot_json(const json& request, const std::string& bytes) {
  Obj o(request, "");
  const snapshot::SummaryOptions opt = read_options(o);
  peak::Request rq;
  try {
    rq = peak::parse_request(o.raw("request"));
  } catch (const RequestError& e) {  // name the field inside this request
    throw RequestError(e.code(), e.field().empty() ? "request" : "request." + e.field(), e.what());
  }
  snapshot::Figures f;
  if (o.has("measured")) {
    const Obj m = o.obj("measured");
    f.max_allocated_bytes = m.u64_or("maxAllocatedBytes", 0, 0, kMaxCount);
    f.max_reserved_bytes = m.u64_or("maxReservedBytes", 0, 0, kMaxCount);
    f.nvidia_smi_used_bytes = m.u64_or("nvidiaSmiUsedBytes", 0, 0, kMaxCount);
    m.finish();
  }
  o.finish();
  snapshot::Summary summary;
  const bool has = !bytes.empty();
  if (has) summary = summarize_bytes(bytes, opt);
  snapshot::Comparison c;
  try {
    c = snapshot::compare(has ? &summary : nullptr, f, rq);
  } catch (const RequestError& e) {
    if (e.field() == "snapshot") throw;
    throw RequestError(e.code(), e.field().empty() ? "request" : "request." + e.field(), e.what());
  }

  json out = json::object();
  put(out, "measured", has ? summary_json(c.summary) : json(nullptr));
  put(out, "predicted", peak::to_json(c.predicted, true));
  json totals = json::array();
  for (const auto& t : c.totals) {
    json q = json::object();
    put(q, "what", t.what);
    put(q, "measuredBytes", t.measured_bytes);
    put(q, "measuredSource", t.measured_source);
    if (t.predicted) {
      put(q, "predictedBytes", t.predicted_bytes);
      put_difference(q, t.measured_bytes, t.predicted_bytes);
    } else {
      put(q, "predictedBytes", nullptr);
      put(q, "differenceBytes", nullptr);
    }
    totals.push_back(std::move(q));
  }
  put(out, "totals", std::move(totals));
  json rows = json::array();
  for (const auto& r : c.rows) {
    json q = json::object();
    put(q, "category", r.category);
    if (r.measured)
      put(q, "measuredBytes", r.measured_bytes);
    else
      put(q, "measuredBytes", nullptr);
    if (r.predicted)
      put(q, "predictedBytes", r.predicted_bytes);
    else
      put(q, "predictedBytes", nullptr);
    if (r.measured && r.predicted)
      put_difference(q, r.measured_bytes, r.predicted_bytes);
    else
      put(q, "differenceBytes", nullptr);
    rows.push_back(std::move(q));
  }
  put(out, "categories", std::move(rows));
  json ps = json::array();
  for (const auto& p : c.predicted_series) {
    json q = json::object();
    put(q, "x", p.x);
    put(q, "allocatedBytes", p.allocated_bytes);
    put(q, "phase", p.phase);
    ps.push_back(std::move(q));
  }
  put(out, "predictedSeries", std::move(ps));
  json causes = json::array();
  for (const auto& x : c.causes) causes.push_back(cause_json(x));
  put(out, "causes", std::move(causes));
  put(out, "simulatorReplay", has ? replay_json(c.summary) : json(nullptr));
  put(out, "notes", strings_json(c.notes));
  return out;
}

}  // namespace trainmem
