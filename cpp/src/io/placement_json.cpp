// The JSON of placement results: plans, frontier points, schedules and their facts.
#include "io/placement_json.hpp"

#include <algorithm>

#include "io/json_fields.hpp"
#include "io/json_rows.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {
namespace placement {

nlohmann::json facts_json(const std::vector<Fact>& facts) {
  nlohmann::json out = nlohmann::json::object();
  for (const Fact& f : facts) {
    if (f.kind == Fact::Kind::kCount)
      put(out, f.key.c_str(), f.count);
    else if (f.kind == Fact::Kind::kReal)
      put(out, f.key.c_str(), f.real);
    else
      put(out, f.key.c_str(), f.flag);
  }
  return out;
}

// A schedule of stages of `stage` layers (optimal on a long chain): each op with the range of
// layers it runs, [first, last] (forward ops run them in order, forward-check keeps the first's
// input and runs the rest without it, backward runs them from the last).
nlohmann::json stage_schedule_json(const std::vector<Op>& ops, uint32_t stage, size_t n) {
  nlohmann::json out = nlohmann::json::array();
  for (const Op& op : ops) {
    nlohmann::json o = nlohmann::json::object();
    put(o, "op", op_name(op.kind));
    if (op.kind != OpKind::kLoss) {
      const uint64_t first = uint64_t{op.layer} * stage;
      nlohmann::json range = nlohmann::json::array();
      range.push_back(first);
      range.push_back(std::min<uint64_t>(n, first + stage) - 1);
      put(o, "layers", std::move(range));
    }
    out.push_back(std::move(o));
  }
  return out;
}

nlohmann::json schedule_json(const std::vector<Op>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const Op& op : ops) {
    nlohmann::json o = nlohmann::json::object();
    put(o, "op", op_name(op.kind));
    if (op.kind != OpKind::kLoss) put(o, "layer", op.layer);
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

// The costs every plan states, scheduled or not.
void put_costs(const PlanResult& r, nlohmann::json& j) {
  put(j, "forwardCost", r.forward_cost);
  put(j, "backwardCost", r.backward_cost);
  put(j, "recomputeCost", r.recompute_cost);
  put(j, "totalCost", r.total_cost);
  put(j, "overheadFraction", r.overhead_fraction);
}

nlohmann::json segments_json(const std::vector<Segment>& segs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Segment& s : segs) {
    nlohmann::json pair = nlohmann::json::array();
    pair.push_back(s.first);
    pair.push_back(s.last);
    out.push_back(std::move(pair));
  }
  return out;
}

void event_row(const StepEvent& e, nlohmann::json& step) {
  put(step, "phase", e.phase);
  put(step, "op", e.op);
  put(step, "layer", e.layer);
  put(step, "liveBytes", e.live_bytes);
}

// The timeline, at most kMaxTimelineEvents events: beyond, the highest event (the first of
// equals) of each of that many equal runs of events, so that the peak is always listed.
nlohmann::json timeline_json(const std::vector<StepEvent>& events) {
  const uint64_t n = events.size(), k = limits::kMaxTimelineEvents;
  if (n <= k) return object_rows(events, event_row);
  std::vector<StepEvent> kept;
  kept.reserve(k);
  for (uint64_t b = 0, i = 0; b < k; ++b) {
    const uint64_t end = (b + 1) * n / k;  // run b: events [i, end)
    uint64_t best = i;
    for (; i < end; ++i)
      if (events[i].live_bytes > events[best].live_bytes) best = i;
    kept.push_back(events[best]);
  }
  return object_rows(kept, event_row);
}

}  // namespace

nlohmann::json to_json(const PlanResult& r, bool include_timeline) {
  nlohmann::json j;
  put(j, "strategy", vocab::name_of(r.strategy));
  put_costs(r, j);
  if (!r.scheduled) {
    // Costs and facts only: the schedule was not built (revolve on a long chain).
    put(j, "scheduled", false);
    put(j, "details", facts_json(r.details));
    return j;
  }
  put(j, "plan", r.plan);
  put(j, "checkpointed", segments_json(r.checkpointed));
  put(j, "storedBytes", r.stored_bytes);
  put(j, "peakActivationBytes", r.peak_bytes);
  put(j, "peakPhase", r.peak_phase);
  put(j, "peakLayer", r.peak_layer);
  if (include_timeline) {
    put(j, "timeline", timeline_json(r.timeline));
    if (r.timeline.size() > limits::kMaxTimelineEvents)
      put(j, "timelineEvents", static_cast<uint64_t>(r.timeline.size()));
  }
  if (!r.stage_schedule.empty())
    put(j, "schedule", stage_schedule_json(r.stage_schedule, r.stage_layers, r.plan.size()));
  else if (!r.schedule.empty())
    put(j, "schedule", schedule_json(r.schedule));
  if (!r.details.empty()) put(j, "details", facts_json(r.details));
  return j;
}

nlohmann::json to_json(const FrontierPoint& p) {
  nlohmann::json j = nlohmann::json::object();
  put(j, "peakActivationBytes", p.peak_bytes);
  put(j, "totalCost", p.total_cost);
  put(j, "recomputeCost", p.recompute_cost);
  put(j, "checkpointed", segments_json(p.checkpointed));
  if (!p.parameter.empty()) put(j, "parameter", facts_json(p.parameter));
  return j;
}

}  // namespace placement
}  // namespace trainmem
