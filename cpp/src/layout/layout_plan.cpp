// The layout planner's walk (layout_planner.hpp): every candidate timed, then memory evaluated
// fastest first until `top` layouts fit, skipping those a failure already rules out.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "layout/layout_memory.hpp"
#include "trainmem/error.hpp"
#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {
namespace {

constexpr size_t kMaxFasterListed = 100;

// Memory order of the checkpointing strategies: full keeps least, none most.
int keeps(vocab::Strategy ck) {
  if (ck == vocab::Strategy::full) return 0;
  if (ck == vocab::Strategy::attention_recompute) return 1;
  return 2;
}

// ZB-H1 holds 1F1B's in-flight micro-batches (Qi et al. 2023 §3.1): one memory class.
vocab::PipelineSchedule memory_schedule(const Layout& l) {
  if (!l.pipelined) return vocab::PipelineSchedule::one_f_one_b;
  return l.schedule == vocab::PipelineSchedule::zb_h1 ? vocab::PipelineSchedule::one_f_one_b
                                                      : l.schedule;
}

bool same_class(const Layout& a, const Layout& b) {
  return a.sharding == b.sharding && a.pipelined == b.pipelined &&
         memory_schedule(a) == memory_schedule(b) && a.virtual_stages == b.virtual_stages &&
         a.extra.size() == b.extra.size();
}

// Every extra dimension no larger than the failed layout's: context parallelism keeps 1/cp of
// each micro-batch's tokens with the ZeRO / FSDP group dp x cp unchanged at a fixed GPU count;
// expert parallelism keeps 1/ep of the routed experts and the same routed tokens
// (docs/parallelism.md "Layout planner").
bool extras_within(const Layout& l, const Layout& failed) {
  for (size_t i = 0; i < l.extra.size(); ++i)
    if (l.extra[i] > failed.extra[i]) return false;
  return true;
}

// Memory per GPU does not fall with the micro-batch nor with keeping more, and does not grow
// with TP or PP at a fixed GPU count (weights and gradients / (tp pp); optimizer state / all
// the GPUs; 1F1B-style stages hold min(p, m) micro-batches of 1/p of the blocks:
// docs/parallelism.md "Layout planner"): `failed` not fitting rules `l` out.
bool ruled_out_by(const Layout& l, const Layout& failed) {
  return same_class(l, failed) && l.tp <= failed.tp && l.pp <= failed.pp &&
         extras_within(l, failed) && l.micro_batch >= failed.micro_batch &&
         keeps(l.checkpointing) >= keeps(failed.checkpointing);
}

// (catalog layout.reason.ruledOut, and .split with the extra dimensions when one is above 1)
Text ruled_out_by(const Layout& l) {
  std::vector<std::pair<std::string, std::string>> p = {{"tp", std::to_string(l.tp)},
                                                        {"pp", std::to_string(l.pp)},
                                                        {"mb", std::to_string(l.micro_batch)},
                                                        {"ck", vocab::name_of(l.checkpointing)}};
  bool split = false;
  for (uint64_t x : l.extra) split = split || x > 1;
  if (!split) return Text("layout.reason.ruledOut", p);
  for (size_t i = 0; i < l.extra.size() && i < extra_dimensions().size(); ++i)
    p.emplace_back(extra_dimensions()[i].splits_tokens ? "cp" : "ep", std::to_string(l.extra[i]));
  return Text("layout.reason.ruledOut.split", p);
}

struct Walk {
  const Inputs& in;
  Result out;
  std::vector<Layout> failures;  // layouts that do not fit (the dominance frontier)

  const Layout* dominating(const Layout& l) const {
    for (const Layout& f : failures)
      if (ruled_out_by(l, f)) return &f;
    return nullptr;
  }
  void keep_faster(const Verdict& v) {
    if (out.faster.size() < kMaxFasterListed) out.faster.push_back(v);
  }
  void visit(const Layout& l, const StepEstimate& t);
};

void Walk::visit(const Layout& l, const StepEstimate& t) {
  Verdict v;
  v.layout = l;
  v.time = t;
  if (const Layout* f = dominating(l)) {
    ++out.pruned;
    v.status = "pruned";
    v.reason = ruled_out_by(*f);
    keep_faster(v);
    return;
  }
  try {
    const peak::Request rq = request_for(in, l);
    Memory m = memory_of(rq, false);
    ++out.evaluations;
    out.peak_evaluations += m.evaluations;
    if (m.fits && in.base.allocator.simulate) {
      m = memory_of(rq, true);
      out.peak_evaluations += m.evaluations;
    }
    v.peak_bytes = m.bytes;
    v.peak_stage = m.stage;
    v.status = m.fits ? "fits" : "does_not_fit";
  } catch (const RequestError& e) {
    v.status = "error";
    v.reason = e.text();
    ++out.not_fitting;
    keep_faster(v);
    return;
  }
  if (v.status == "fits") {
    out.fitting.push_back(v);
    return;
  }
  ++out.not_fitting;
  failures.push_back(l);
  v.reason = Text("layout.reason.needs", {{"bytes", std::to_string(v.peak_bytes)},
                                          {"rank", std::to_string(v.peak_stage)}});
  keep_faster(v);
}

}  // namespace

Result plan(const Inputs& in) {
  const std::vector<Layout> all = candidates(in);
  std::vector<StepEstimate> times;
  times.reserve(all.size());
  for (const Layout& l : all) times.push_back(estimate(in, l));
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return times[a].step_s < times[b].step_s; });
  Walk w{in, Result{}, {}};
  w.out.candidates = all.size();
  size_t i = 0;
  for (; i < order.size() && w.out.fitting.size() < in.top; ++i) {
    if (w.out.evaluations >= in.max_evaluations) {
      w.out.evaluation_bound_reached = true;
      break;
    }
    w.visit(all[order[i]], times[order[i]]);
  }
  w.out.not_evaluated = order.size() - i;
  w.out.assumptions = {Text("layout.assume.noOverlap", {}), Text("layout.assume.ranks", {}),
                       Text("layout.assume.sequenceParallel", {})};
  for (size_t k = 0; k < in.extra_sizes_max.size(); ++k)
    if (in.extra_sizes_max[k] > 1)
      w.out.assumptions.push_back(
          Text(extra_dimensions()[k].splits_tokens ? "layout.assume.cp" : "layout.assume.ep", {}));
  return std::move(w.out);
}

Verdict judge(const Inputs& in, const Layout& l, uint64_t* faster) {
  Verdict v;
  v.layout = l;
  v.time = estimate(in, l);
  const Memory m = memory_of(request_for(in, l), in.base.allocator.simulate);
  v.peak_bytes = m.bytes;
  v.peak_stage = m.stage;
  v.status = m.fits ? "fits" : "does_not_fit";
  *faster = 0;
  for (const Layout& c : candidates(in)) *faster += estimate(in, c).step_s < v.time.step_s;
  return v;
}

}  // namespace layout
}  // namespace trainmem
