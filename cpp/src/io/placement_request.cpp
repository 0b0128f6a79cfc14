// tm.placement(request): parses the request (strict reader), runs the strategy, and returns
// the plan measured by the one simulator, and on request the memory-time frontier.
//
// Request: { chain: { inputBytes, layers: [{ name?, forwardCost, backwardCost, outputBytes,
//   savedBytes, forwardTempBytes?, backwardTempBytes? }] or the same as columns, { forwardCost:
//   [...], ... } (io/placement_columns.hpp) }, strategy?, k?, segments?,
//   snapshots?, budgetBytes?, slots?, checkpointed?, greedyBytes?, frontier?, timeline? }
// (docs/placement.md lists defaults and meaning).
#include "io/calculators.hpp"
#include "io/compact_layers.hpp"
#include "io/diffusion_request.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/placement_columns.hpp"
#include "io/placement_json.hpp"
#include "io/request.hpp"
#include "placement/placement_internal.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/error.hpp"
#include "trainmem/placement.hpp"
#include "trainmem/traced_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

using placement::Chain;
using placement::Layer;
using placement::Segment;
using placement::StrategyRequest;

// The strategies the placement calculator runs (vocab::kStrategies, those marked placement).
const std::vector<std::string>& placement_strategy_names() {
  static const std::vector<std::string> n =
      vocab::names_if(vocab::kStrategies, [](const vocab::StrategyTerm& t) { return t.placement; });
  return n;
}

// A number of packed layer i (io/compact_layers.hpp): read directly when it is what the field
// needs; otherwise through read_u64 / read_num, whose errors name the field as for JSON. A
// missing required number is missing_field, as Obj::raw says it.
struct PackedLayer {
  const compact::Record& r;
  const std::string& path;  // chain.layers
  size_t i;
  std::string field(int s) const { return index_path(path, i) + "." + compact::kKeys[s]; }
  bool has(int s) const { return r.present >> s & 1; }
  void require(int s) const {
    if (!has(s))
      fail(code::kMissingField, field(s), Message{"error.field.required", {{"field", field(s)}}});
  }
  uint64_t u64(int s) const {
    require(s);
    if (r.kind[s] == compact::kUnsigned && r.bits[s] <= kMaxExactJson) return r.bits[s];
    return read_u64(compact::View::value(r, s), field(s), 0, kMaxExactJson);
  }
  double num(int s) const {
    require(s);
    if (r.kind[s] == compact::kUnsigned && r.bits[s] <= (uint64_t{1} << 53))
      return static_cast<double>(r.bits[s]);
    return read_num(compact::View::value(r, s), field(s), 0, 1e300);
  }
};

// chain.layers in packed form: the checks of the JSON form below, in its order.
void packed_layers(const json& packed, const std::string& path, Chain* chain) {
  const compact::View view(packed);
  if (view.size() > 100000)
    fail(code::kTooLarge, path, Message{"error.field.tooManyItems", {{"field", path}}});
  chain->layers.resize(view.size());
  for (size_t i = 0; i < view.size(); ++i) {
    const compact::Record r = view.at(i);
    const PackedLayer p{r, path, i};
    Layer& L = chain->layers[i];
    if (p.has(compact::kName)) {
      L.name = view.name(r);
      if (L.name.size() > 256) read_str(json(L.name), p.field(compact::kName), 256);
    }
    L.forward_cost = p.num(1);
    L.backward_cost = p.num(2);
    L.output_bytes = p.u64(3);
    L.saved_bytes = p.u64(4);
    if (p.has(5)) L.forward_temp_bytes = p.u64(5);
    if (p.has(6)) L.backward_temp_bytes = p.u64(6);
  }
}

Chain parse_chain(const Obj& c) {
  Chain chain;
  chain.input_bytes = c.u64("inputBytes", 0, kMaxExactJson);
  if (c.has("layers") && c.json_value().at("layers").is_binary()) {
    c.mark_used("layers");
    packed_layers(c.json_value().at("layers"), c.field("layers"), &chain);
    c.finish();
    placement::validate_chain(chain, c.path());
    return chain;
  }
  if (c.has("layers") && c.json_value().at("layers").is_object()) {  // columnar form
    columnar_layers(c.obj("layers"), &chain);
    c.finish();
    placement::validate_chain(chain, c.path());
    return chain;
  }
  const json& layers = c.array("layers", 100000);
  const std::string lp = c.field("layers");
  for (size_t i = 0; i < layers.size(); ++i) {
    const Obj o(layers[i], index_path(lp, i));
    Layer L;
    L.name = o.str_or("name", "", 256);
    L.forward_cost = o.num("forwardCost", 0, 1e300);
    L.backward_cost = o.num("backwardCost", 0, 1e300);
    L.output_bytes = o.u64("outputBytes", 0, kMaxExactJson);
    L.saved_bytes = o.u64("savedBytes", 0, kMaxExactJson);
    L.forward_temp_bytes = o.u64_or("forwardTempBytes", 0, 0, kMaxExactJson);
    L.backward_temp_bytes = o.u64_or("backwardTempBytes", 0, 0, kMaxExactJson);
    o.finish();
    chain.layers.push_back(std::move(L));
  }
  c.finish();
  placement::validate_chain(chain, c.path());
  return chain;
}

std::vector<Segment> parse_segments(const Obj& root) {
  std::vector<Segment> segs;
  const json& arr = root.array("checkpointed", 100000);
  for (size_t s = 0; s < arr.size(); ++s) {
    const std::string f = index_path("checkpointed", s);
    if (!arr[s].is_array() || arr[s].size() != 2)
      fail(code::kInvalidType, f, Message{"error.segment.range", {{"field", f}}});
    Segment g;
    g.first = static_cast<uint32_t>(read_u64(arr[s][0], index_path(f, 0), 0, 100000));
    g.last = static_cast<uint32_t>(read_u64(arr[s][1], index_path(f, 1), 0, 100000));
    segs.push_back(g);
  }
  return segs;
}

}  // namespace

json placement_json(const json& request) {
  const Obj root(request, "");
  Chain chain;
  if (root.has("model")) {
    // Model form: one layer per block from the peak-memory activation model (activations.hpp),
    // costs in FLOPs (backward = 2 x forward).
    if (root.has("chain")) fail(code::kInconsistent, "chain", Message{"error.chain.orModel", {}});
    activations::Settings set;
    set.micro_batch = root.u64("microBatch", 1, limits::kMaxMicroBatch);
    std::shared_ptr<const ModelDescription> model = parse_model_shared(root.obj("model"));
    if (model->trace)
      set.seq_len = model->trace->has_seq
                        ? root.u64_or("seqLen", model->trace->seq, 1, limits::kMaxSeqLen)
                        : 1;
    // a diffusion network: imageSize, and seqLen as its text tokens (io/diffusion_request.cpp)
    else if (!read_diffusion_fields(root, &model, &set.seq_len))
      set.seq_len = root.u64("seqLen", 1, limits::kMaxSeqLen);
    set.target_len = root.u64_or("targetLen", 0, 1, limits::kMaxSeqLen);
    const std::string prec = root.one_of_or("precision", activations::precision_names(), "fp32");
    activations::parse_precision(prec, &set.precision);
    static const std::vector<std::string> attention = vocab::names_if(
        vocab::kAttention, [](const vocab::AttentionTerm& t) { return t.placement; });
    set.attention =
        vocab::find(vocab::kAttention, root.one_of_or("attention", attention, "sdpa"))->value;
    set.detail = false;
    chain = activations::build_chain(*model, set);
    placement::validate_chain(chain, "chain");
  } else {
    chain = parse_chain(root.obj("chain"));
  }
  StrategyRequest sr;
  const std::string st = root.one_of_or("strategy", placement_strategy_names(), "none");
  sr.strategy = vocab::find(vocab::kStrategies, st)->value;
  // (budgetBytes goes with every strategy here: the plan is checked against it)
  for (const char* key : {"k", "segments", "snapshots", "slots", "checkpointed", "greedyBytes"})
    only_for(root, key, sr.strategy, true);
  sr.k = static_cast<uint32_t>(root.u64_or("k", 0, 0, 100000));
  sr.segments = static_cast<uint32_t>(root.u64_or("segments", 0, 1, 100000));
  sr.snapshots = static_cast<uint32_t>(root.u64_or("snapshots", 0, 1, 100000));
  sr.slots = static_cast<uint32_t>(root.u64_or("slots", 500, 1, 100000));
  sr.budget_bytes = root.u64_or("budgetBytes", 0, 1, kMaxExactJson);
  sr.greedy_bytes = root.u64_or("greedyBytes", 0, 1, kMaxExactJson);
  if (sr.strategy == vocab::Strategy::manual) sr.manual = parse_segments(root);
  if (sr.strategy == vocab::Strategy::block && !root.has("k"))
    fail(code::kMissingField, "k", Message{"error.block.k", {}});
  const bool want_frontier = root.boolean_or("frontier", false);
  const bool want_timeline = root.boolean_or("timeline", true);
  root.finish();

  json out;
  const bool budgeted = vocab::term(sr.strategy).budget == vocab::Budget::required;
  if (!want_frontier || !budgeted || sr.budget_bytes > 0) {
    // revolve on a chain too long for its schedule: the closed-form costs (plan() refuses it,
    // as peak memory needs the schedule).
    const bool cost_only = sr.strategy == vocab::Strategy::revolve && sr.snapshots > 0 &&
                           !placement::revolve_schedulable(chain.layers.size(), sr.snapshots);
    placement::PlanResult r;
    if (cost_only) {
      r = placement::revolve_plan(chain, sr.snapshots);
      r.strategy = sr.strategy;
    } else {
      r = placement::plan(chain, sr);
    }
    out = placement::to_json(r, want_timeline);
    if (sr.budget_bytes > 0 && !r.scheduled)
      fail(code::kInconsistent, "budgetBytes",
           Message{"error.revolve.budget",
                   {{"layers", std::to_string(placement::kRevolveScheduleLayers)},
                    {"ops", std::to_string(placement::kRevolveScheduleOps)}}});
    if (sr.budget_bytes > 0) {
      put(out, "budgetBytes", sr.budget_bytes);
      put(out, "fits", r.peak_bytes <= sr.budget_bytes);
    }
  } else {
    put(out, "strategy", st);
  }
  if (want_frontier) {
    json pts = json::array();
    for (const auto& p : placement::frontier(chain, sr)) pts.push_back(placement::to_json(p));
    put(out, "frontier", std::move(pts));
  }
  return out;
}

}  // namespace trainmem
