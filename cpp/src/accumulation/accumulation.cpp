// Gradient accumulation: batch arithmetic and the planner core (see accumulation.hpp).
#include "trainmem/accumulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace accumulation {

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b ? 1 : 0); }
}  // namespace

ForwardResult forward(const ForwardInputs& in) {
  ForwardResult r;
  // HF TrainingArguments: total batch = per_device_train_batch_size x
  // gradient_accumulation_steps x world_size; PyTorch DDP averages gradients over ranks.
  r.per_device_batch = checked_mul(in.micro_batch, in.accumulation_steps, "accumulationSteps");
  r.effective_batch = checked_mul(r.per_device_batch, in.data_parallel, "dataParallel");
  if (in.seq_len) r.tokens_per_step = checked_mul(r.effective_batch, in.seq_len, "seqLen");
  if (in.dataset_size) {
    // torch.utils.data.DistributedSampler (drop_last=False): num_samples = ceil(N / replicas),
    // padding by repeating samples; DataLoader(drop_last=False): ceil(num_samples / batch).
    r.samples_per_rank = ceil_div(in.dataset_size, in.data_parallel);
    r.padded_samples = r.samples_per_rank * in.data_parallel - in.dataset_size;
    r.micro_batches_per_epoch = ceil_div(r.samples_per_rank, in.micro_batch);
    // transformers >= 4.46 Trainer: the last, shorter accumulation also steps (ceil);
    // older Trainers stepped on total_batched_samples % steps == 0 (floor, remainder carried
    // into the next epoch). Both are reported.
    r.optimizer_steps_per_epoch = ceil_div(r.micro_batches_per_epoch, in.accumulation_steps);
    r.full_optimizer_steps_per_epoch = r.micro_batches_per_epoch / in.accumulation_steps;
    r.remainder_micro_batches = r.micro_batches_per_epoch % in.accumulation_steps;
  }
  return r;
}

double recompute_flops_per_token(const time_model::ForwardFlops& flops, vocab::Strategy strategy,
                                 bool* known) {
  *known = true;
  switch (strategy) {
    case vocab::Strategy::none:
      return 0.0;
    // HF gradient_checkpointing / full recompute: every block's forward runs again once in the
    // backward (Chen et al. 2016; Korthikanti et al. 2022 "full").
    case vocab::Strategy::full:
      return flops.blocks;
    // Megatron-LM recompute_granularity="selective" repeats the attention core only
    // (Korthikanti et al. 2022).
    case vocab::Strategy::attention_recompute:
      return flops.attention_core;
    default:
      *known = false;
      return flops.blocks;  // upper bound: every block once
  }
}

namespace {

std::vector<uint64_t> divisors(uint64_t n) {
  std::vector<uint64_t> small, large;
  for (uint64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

Plan evaluate(const PlannerInputs& in, const MemoryEstimate& memory, uint64_t micro, uint64_t steps,
              vocab::Strategy ckpt, std::vector<Warning>* warnings) {
  Plan p;
  p.micro_batch = micro;
  p.accumulation_steps = steps;
  p.global_batch = micro * steps * in.data_parallel;
  p.exact = p.global_batch == in.target_global_batch;
  p.checkpointing = ckpt;
  p.memory = memory;
  bool known = true;
  p.recompute_flops_per_token = p.memory.recompute_flops_per_token >= 0
                                    ? p.memory.recompute_flops_per_token
                                    : recompute_flops_per_token(in.flops, ckpt, &known);
  if (!known && warnings) {
    const Text msg("acc.warn.recompute", {{"strategy", vocab::name_of(ckpt)}});
    bool seen = false;
    for (const auto& w : *warnings) seen = seen || w.message == msg;
    if (!seen) warnings->push_back({"recompute-upper-bound", msg});
  }
  time_model::StepInputs si;
  si.micro_batch = micro;
  si.accumulation_steps = steps;
  si.data_parallel = in.data_parallel;
  si.seq_len = in.seq_len;
  si.recompute_flops_per_token = p.recompute_flops_per_token;
  si.optimizer_bytes = in.optimizer_bytes;
  si.allreduce_bytes = in.gradient_bytes;
  p.time = time_model::estimate_step(in.flops, si, in.device, in.knobs);
  return p;
}

bool faster(const Plan& a, const Plan& b) {
  if (a.time.samples_per_second != b.time.samples_per_second)
    return a.time.samples_per_second > b.time.samples_per_second;
  return a.accumulation_steps < b.accumulation_steps;
}

int best_fitting(const std::vector<Plan>& plans, bool want_ckpt, bool any_ckpt) {
  int best = -1;
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = plans[i];
    if (!p.memory.fits) continue;
    if (!any_ckpt && ((p.checkpointing != vocab::Strategy::none) != want_ckpt)) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const Plan& b = plans[static_cast<size_t>(best)];
    // Exact plans (global batch == target) win over the nearest inexact ones.
    if (p.exact != b.exact) {
      if (p.exact) best = static_cast<int>(i);
      continue;
    }
    if (faster(p, b)) best = static_cast<int>(i);
  }
  return best;
}

uint64_t largest_fitting_micro(const std::vector<Plan>& plans, bool ckpt) {
  uint64_t m = 0;
  for (const auto& p : plans)
    if (p.memory.fits && (p.checkpointing != vocab::Strategy::none) == ckpt)
      m = std::max(m, p.micro_batch);
  return m;
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", fraction * 100.0);
  return buf;
}

Verdict make_verdict(const std::vector<Plan>& plans) {
  const int best_none = best_fitting(plans, false, false);
  const int best_ckpt = best_fitting(plans, true, false);
  const uint64_t m_none = largest_fitting_micro(plans, false);
  const uint64_t m_ckpt = largest_fitting_micro(plans, true);
  Verdict v;
  v.largest_micro_batch_without = m_none;
  v.largest_micro_batch_with = m_ckpt;
  const bool enables = m_ckpt > m_none;
  v.enables_larger_micro_batch = enables;
  bool any_ckpt_plan = false;
  for (const auto& p : plans)
    any_ckpt_plan = any_ckpt_plan || p.checkpointing != vocab::Strategy::none;
  if (!any_ckpt_plan) {
    v.message = Text("acc.ck.notConsidered", {});
    return v;
  }
  if (best_ckpt < 0 && best_none < 0) {
    v.message = Text("acc.ck.nothingFits", {});
    return v;
  }
  if (best_ckpt >= 0 && best_none < 0) {
    const Plan& c = plans[static_cast<size_t>(best_ckpt)];
    v.checkpointing_required = true;
    v.message = Text("acc.ck.only", {{"micro", std::to_string(c.micro_batch)},
                                     {"steps", std::to_string(c.accumulation_steps)},
                                     {"strategy", vocab::name_of(c.checkpointing)}});
    return v;
  }
  v.checkpointing_required = false;
  if (best_ckpt < 0) {
    v.message = Text("acc.ck.noHelp", {});
    return v;
  }
  const Plan& n = plans[static_cast<size_t>(best_none)];
  const Plan& c = plans[static_cast<size_t>(best_ckpt)];
  const double ratio =
      n.time.step_seconds > 0 ? (c.time.samples_per_second / n.time.samples_per_second) - 1.0 : 0.0;
  v.faster_than_more_accumulation = enables && ratio > 0;
  v.speedup_over_best_without = ratio;
  const std::string without = std::to_string(m_none);
  const std::string micro = std::to_string(n.micro_batch);
  const std::string steps = std::to_string(n.accumulation_steps);
  if (!enables)
    v.message = Text("acc.ck.noGain", {{"without", without}});
  else if (ratio > 0)
    v.message = Text("acc.ck.faster", {{"with", std::to_string(c.micro_batch)},
                                       {"without", without},
                                       {"faster", pct(ratio)},
                                       {"micro", micro},
                                       {"steps", steps}});
  else
    v.message = Text("acc.ck.fits", {{"with", std::to_string(m_ckpt)},
                                     {"without", without},
                                     {"slower", pct(-ratio)},
                                     {"micro", micro},
                                     {"steps", steps}});
  return v;
}

// The usual comparison table of the two techniques, computed: where each acts, what memory it
// saves, what it costs, for the user's configuration.
Comparison make_comparison(const PlannerInputs& in, const PeakMemoryFn& peak_memory,
                           uint64_t per_device, vocab::Strategy ckpt,
                           std::vector<Warning>* warnings) {
  // (peak_memory: the planner's judged model, which knows the table's verdicts)
  uint64_t c = std::min<uint64_t>(std::max<uint64_t>(in.compare_micro_batch, 1), per_device);
  while (per_device % c) --c;  // largest divisor <= the requested micro-batch
  const uint64_t steps = per_device / c;
  struct Row {
    const char* id;
    uint64_t micro, steps;
    vocab::Strategy ckpt;
  };
  const Row rows[] = {{"baseline", per_device, 1, vocab::Strategy::none},
                      {"accumulation", c, steps, vocab::Strategy::none},
                      {"checkpointing", per_device, 1, ckpt},
                      {"accumulationAndCheckpointing", c, steps, ckpt}};
  Comparison out;
  out.micro_batch = per_device;
  out.accumulation_micro_batch = c;
  out.accumulation_steps = steps;
  out.checkpointing = ckpt;
  for (const auto& r : rows)
    out.rows.push_back({r.id, evaluate(in, peak_memory(r.micro, r.steps, r.ckpt), r.micro, r.steps,
                                       r.ckpt, warnings)});
  const auto seconds = [&out](size_t i) { return out.rows[i].plan.time.step_seconds; };
  const double base_t = seconds(0);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    out.rows[i].relative_time = seconds(i) / base_t;
    out.rows[i].relative_to_accumulation = seconds(i) / seconds(1);
  }
  auto saved = [&out](size_t i, size_t j) -> double {
    return static_cast<double>(out.rows[i].plan.memory.peak_bytes) -
           static_cast<double>(out.rows[j].plan.memory.peak_bytes);
  };
  const double fwd_tokens = static_cast<double>(per_device) * static_cast<double>(in.seq_len);
  Technique acc;
  acc.technique = "gradientAccumulation";
  acc.acts_on = Text("acc.tech.acc.actsOn", {{"micro", std::to_string(c)},
                                             {"batch", std::to_string(per_device)},
                                             {"steps", std::to_string(steps)}});
  acc.memory_acts_on = Text("acc.tech.acc.memory", {});
  acc.memory_saved_bytes = saved(0, 1);
  acc.extra_seconds = seconds(1) - seconds(0);
  acc.extra_time_fraction = seconds(1) / base_t - 1.0;
  acc.extra_flops = 0.0;
  acc.cost = Text("acc.tech.acc.cost", {});
  Technique ck;
  ck.technique = "gradientCheckpointing";
  ck.strategy = ckpt;
  ck.acts_on = Text("acc.tech.ck.actsOn", {});
  ck.memory_acts_on = Text("acc.tech.ck.memory", {});
  ck.memory_saved_bytes = saved(0, 2);
  ck.extra_seconds = seconds(2) - seconds(0);
  ck.extra_time_fraction = seconds(2) / base_t - 1.0;
  ck.extra_flops = out.rows[2].plan.recompute_flops_per_token * fwd_tokens;
  ck.cost = Text("acc.tech.ck.cost", {});
  out.techniques = {acc, ck};
  return out;
}

// The memory model's answers, each computed once, in two fidelities: the cheap bound (the
// allocated bytes: a configuration whose tensors alone exceed the device does not fit) and the
// full model (a replay of the caching allocator over a training step, the costly part). The
// search records its verdicts here too, so that the comparison's rows (which repeat plans of
// the table) reuse them. The model is deterministic, so a repeat is the same answer.
class Judge {
 public:
  Judge(const PeakMemoryFn& full, const PeakMemoryFn& bound) : full_(full), bound_(bound) {}
  const MemoryEstimate& cheap(uint64_t micro, uint64_t steps, vocab::Strategy ckpt) {
    if (!bound_) return full(micro, steps, ckpt);
    return get(cheap_, bound_, micro, steps, ckpt);
  }
  const MemoryEstimate& full(uint64_t micro, uint64_t steps, vocab::Strategy ckpt) {
    return get(full_seen_, full_, micro, steps, ckpt);
  }
  bool has_full(uint64_t micro, uint64_t steps, vocab::Strategy ckpt) const {
    return find(full_seen_, micro, steps, ckpt) != nullptr;
  }
  void decide(uint64_t micro, uint64_t steps, vocab::Strategy ckpt, const MemoryEstimate& e) {
    decided_.push_back({micro, steps, ckpt, e});
  }
  // A configuration's verdict: the search's, else the cheap bound's when it does not fit,
  // else the full model's.
  MemoryEstimate judged(uint64_t micro, uint64_t steps, vocab::Strategy ckpt) {
    if (const Entry* e = find(decided_, micro, steps, ckpt)) return e->estimate;
    MemoryEstimate c = cheap(micro, steps, ckpt);
    if (!c.fits) {
      if (std::string(c.fits_from) != "over-limits") c.fits_from = "allocated-bytes";
      return c;
    }
    return full(micro, steps, ckpt);
  }

 private:
  struct Entry {
    uint64_t micro, steps;
    vocab::Strategy ckpt;
    MemoryEstimate estimate;
  };
  static const Entry* find(const std::deque<Entry>& v, uint64_t micro, uint64_t steps,
                           vocab::Strategy ckpt) {
    for (const Entry& e : v)
      if (e.micro == micro && e.steps == steps && e.ckpt == ckpt) return &e;
    return nullptr;
  }
  static const MemoryEstimate& get(std::deque<Entry>& v, const PeakMemoryFn& f, uint64_t micro,
                                   uint64_t steps, vocab::Strategy ckpt) {
    if (const Entry* e = find(v, micro, steps, ckpt)) return e->estimate;
    v.push_back({micro, steps, ckpt, estimate(f, micro, steps, ckpt)});
    return v.back().estimate;
  }
  // A candidate whose bytes exceed 2^63 (too_large, e.g. a 2^31-sample split of a 405B model at
  // 128K tokens) or whose checkpointing budget cannot hold it (infeasible) does not fit: it is
  // a split the planner tried, not an input of the request (which never names a microBatch).
  static MemoryEstimate estimate(const PeakMemoryFn& f, uint64_t micro, uint64_t steps,
                                 vocab::Strategy ckpt) {
    try {
      return f(micro, steps, ckpt);
    } catch (const RequestError& e) {
      if (e.code() != code::kTooLarge && e.code() != code::kInfeasible) throw;
      MemoryEstimate none;
      none.fits = false;
      none.fits_from = "over-limits";
      return none;
    }
  }
  const PeakMemoryFn& full_;
  const PeakMemoryFn& bound_;
  std::deque<Entry> cheap_, full_seen_, decided_;  // (references to entries stay valid)
};

// The largest index k < n with pred(k) true, -1 if none, for pred true up to some index and
// false after it (bisection: O(log n) calls).
template <class Pred>
long last_true(size_t n, Pred&& pred) {
  long lo = -1, hi = static_cast<long>(n);  // pred(lo) true (or lo = -1), pred(hi) false
  while (hi - lo > 1) {
    const long mid = lo + (hi - lo) / 2;
    (pred(static_cast<size_t>(mid)) ? lo : hi) = mid;
  }
  return lo;
}

// The plans of one per-device batch b and one strategy. Peak memory grows with the micro-batch
// (activations scale with it; everything else is the same for every micro-batch of b), so
// the largest micro-batch that fits is found by bisection: first on the cheap bound, then on
// the full model below the bound's answer. Listed: every split, or (more than kListedPlans of
// them) the kListedPlans ending just above the largest that fits; each with its own bytes (the
// cheap model's, the full model's where it ran) and its verdict.
void plans_of(const PlannerInputs& in, Judge& judge, uint64_t b, vocab::Strategy ckpt,
              PlannerResult* r) {
  const std::vector<uint64_t> ds = divisors(b);
  const long kb =
      last_true(ds.size(), [&](size_t k) { return judge.cheap(ds[k], b / ds[k], ckpt).fits; });
  const long kf = last_true(static_cast<size_t>(kb + 1),
                            [&](size_t k) { return judge.full(ds[k], b / ds[k], ckpt).fits; });
  // Every split when there are at most kListedPlans of them; else the kListedPlans ending two
  // above the largest that fits.
  const long count = static_cast<long>(ds.size());
  const long last =
      count <= static_cast<long>(kListedPlans) ? count - 1 : std::min(count - 1, kf + 2);
  const long first = std::max<long>(0, last - static_cast<long>(kListedPlans) + 1);
  r->omitted_plans += ds.size() - static_cast<size_t>(last - first + 1);
  for (long k = first; k <= last; ++k) {
    const uint64_t m = ds[static_cast<size_t>(k)], steps = b / m;
    MemoryEstimate e;
    if (judge.has_full(m, steps, ckpt)) {
      e = judge.full(m, steps, ckpt);
    } else {
      e = judge.cheap(m, steps, ckpt);
      if (std::string(e.fits_from) != "over-limits")
        e.fits_from = e.fits ? "neighbours" : "allocated-bytes";
      e.fits = e.fits && k <= kf;
    }
    if (std::string(e.fits_from) == "over-limits") {  // no bytes to show: counted, not listed
      ++r->omitted_plans;
      continue;
    }
    judge.decide(m, steps, ckpt, e);
    r->plans.push_back(evaluate(in, e, m, steps, ckpt, &r->warnings));
  }
}

}  // namespace

PlannerResult plan(const PlannerInputs& in, const PeakMemoryFn& model, const PeakMemoryFn& bound) {
  Judge judge(model, bound);
  PlannerResult r;
  if (in.target_global_batch < in.data_parallel)
    fail(code::kInconsistent, "targetGlobalBatch",
         Message{"error.planner.ranks",
                 {{"target", std::to_string(in.target_global_batch)},
                  {"ranks", std::to_string(in.data_parallel)}}});
  std::vector<uint64_t> per_device;
  if (in.target_global_batch % in.data_parallel == 0) {
    per_device.push_back(in.target_global_batch / in.data_parallel);
  } else {
    const uint64_t lo = in.target_global_batch / in.data_parallel;
    per_device = {lo, lo + 1};
    r.warnings.push_back(
        {"target-not-divisible",
         Text("acc.warn.notDivisible", {{"target", std::to_string(in.target_global_batch)},
                                        {"dataParallel", std::to_string(in.data_parallel)},
                                        {"lower", std::to_string(lo * in.data_parallel)},
                                        {"upper", std::to_string((lo + 1) * in.data_parallel)}})});
  }
  std::vector<vocab::Strategy> strategies = {vocab::Strategy::none};
  for (const vocab::Strategy s : in.checkpointing)
    if (std::find(strategies.begin(), strategies.end(), s) == strategies.end())
      strategies.push_back(s);

  for (uint64_t b : per_device)
    for (const auto& ckpt : strategies) plans_of(in, judge, b, ckpt, &r);
  const PeakMemoryFn judged = [&judge](uint64_t m, uint64_t s, vocab::Strategy c) {
    return judge.judged(m, s, c);
  };
  r.recommended = best_fitting(r.plans, false, true);
  r.checkpointing_verdict = make_verdict(r.plans);
  const vocab::Strategy cmp_ckpt = strategies.size() > 1 ? strategies[1] : vocab::Strategy::full;
  r.comparison = make_comparison(in, judged, per_device.front(), cmp_ckpt, &r.warnings);

  // Equivalence warnings (what accumulation does not reproduce exactly).
  uint64_t max_steps = 0;
  for (const auto& p : r.plans) max_steps = std::max(max_steps, p.accumulation_steps);
  if (max_steps > 1 || in.data_parallel > 1) {
    if (in.model_has_batchnorm || in.model_may_have_batchnorm)
      r.warnings.push_back(
          {"batchnorm-per-micro-batch",
           Text(in.model_has_batchnorm ? "acc.warn.batchnorm" : "acc.warn.batchnormMaybe", {})});
    r.warnings.push_back({"loss-averaging", Text("acc.warn.meanLoss", {})});
  }
  return r;
}

}  // namespace accumulation
}  // namespace trainmem
