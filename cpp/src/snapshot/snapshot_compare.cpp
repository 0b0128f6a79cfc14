// The measured run beside the predicted one, and the causes of the difference, named. Each
// cause is a code with numeric parameters plus an English message; thresholds: docs/snapshot.md.
#include <algorithm>
#include <cstdio>

#include "trainmem/error.hpp"
#include "trainmem/snapshot_compare.hpp"

namespace trainmem {
namespace snapshot {
namespace {

constexpr double kMiB = 1048576.0;

double ratio(uint64_t a, uint64_t b) {
  return b ? static_cast<double>(a) / static_cast<double>(b) : 0;
}

std::string fixed1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

Cause reserved_cause(uint64_t reserved, uint64_t allocated, bool expandable) {
  const uint64_t gap = reserved - allocated;
  Cause c;
  c.code = "reserved_over_allocated";
  c.params = {{"gapBytes", static_cast<double>(gap)},
              {"reservedBytes", static_cast<double>(reserved)},
              {"allocatedBytes", static_cast<double>(allocated)}};
  c.message = "reserved exceeds allocated by " + format_bytes(static_cast<double>(gap)) +
              (expandable ? ": the cache keeps freed blocks even with expandable_segments; free "
                            "large temporaries earlier or call torch.cuda.empty_cache() between "
                            "phases"
                          : ": try expandable_segments (PYTORCH_CUDA_ALLOC_CONF="
                            "expandable_segments:True)");
  return c;
}

// Reserved far above allocated: >= 25 % of reserved and >= 128 MiB (docs/snapshot.md).
bool fragmented(uint64_t reserved, uint64_t allocated) {
  return reserved > allocated && (reserved - allocated) * 4 >= reserved &&
         static_cast<double>(reserved - allocated) >= 128 * kMiB;
}

}  // namespace

std::vector<Cause> measured_causes(const Summary& s) {
  std::vector<Cause> out;
  // Gradients of one step still live when the next step's forward begins: zero_grad kept them
  // (set_to_none=False, the default before torch 2.0; torch/optim/optimizer.py zero_grad).
  const uint64_t grads = s.at_peak[static_cast<int>(Category::kGradients)];
  if (s.kept_gradient_bytes > 0 && s.kept_gradient_bytes * 2 >= std::max<uint64_t>(grads, 1)) {
    Cause c;
    c.code = "gradients_kept_between_steps";
    c.params = {{"bytes", static_cast<double>(s.kept_gradient_bytes)},
                {"step", static_cast<double>(s.kept_gradient_step + 1)}};
    c.message = "gradients kept between steps (set_to_none=False): " +
                format_bytes(static_cast<double>(s.kept_gradient_bytes)) +
                " of gradients are live when step " + std::to_string(s.kept_gradient_step + 1) +
                "'s forward begins; optimizer.zero_grad(set_to_none=True) frees them";
    out.push_back(c);
  }
  if (fragmented(s.peak_reserved_bytes, s.peak_allocated_bytes))
    out.push_back(reserved_cause(s.peak_reserved_bytes, s.peak_allocated_bytes,
                                 s.settings.expandable_segments));
  const uint64_t ooms = s.counts[static_cast<int>(Action::kOom)] + s.stats_num_ooms;
  if (ooms > 0) {
    Cause c;
    c.code = "out_of_memory_recorded";
    c.params = {{"count", static_cast<double>(ooms)}};
    c.message = "the run ran out of memory " + std::to_string(ooms) + " time(s)";
    out.push_back(c);
  }
  if (s.source == "snapshot" && s.events > 0 && s.steps.size() < 2) {
    Cause c;
    c.code = "few_steps_recorded";
    c.params = {{"steps", static_cast<double>(s.steps.size())}};
    c.message = "the trace holds " + std::to_string(s.steps.size()) +
                " complete step(s): record at least two (max_entries large enough) to see what "
                "stays between steps";
    out.push_back(c);
  }
  return out;
}

namespace {

// A measured total: the snapshot's figure when it has one, else the figure the user gave.
void add_total(Comparison* c, Totals t, const Summary* s, uint64_t Summary::*recorded,
               uint64_t given, const char* given_name) {
  if (s && s->*recorded) {
    t.measured_bytes = s->*recorded;
    t.measured_source = s->source;
  } else if (given) {
    t.measured_bytes = given;
    t.measured_source = given_name;
  }
  if (t.measured_bytes) c->totals.push_back(t);
}

void add_totals(Comparison* c, const Summary* s, const Figures& f) {
  const peak::Result& p = c->predicted;
  add_total(c, {"allocatedPeak", 0, p.allocated_peak_bytes, true, ""}, s,
            &Summary::peak_allocated_bytes, f.max_allocated_bytes, "maxAllocatedBytes");
  // Reserved: peak memory's allocator simulation (peak::Result::simulated), when it ran.
  add_total(c, {"reservedPeak", 0, p.reserved_peak_bytes, p.simulated, ""}, s,
            &Summary::peak_reserved_bytes, f.max_reserved_bytes, "maxReservedBytes");
  if (f.nvidia_smi_used_bytes) {
    // nvidia-smi counts the CUDA context and the reserve: compare with peakBytes (with runtime).
    c->totals.push_back(
        {"nvidiaSmiUsed", f.nvidia_smi_used_bytes, p.peak_bytes, true, "nvidiaSmiUsedBytes"});
  }
}

// Bytes of category k live at the measured peak (0 without categories).
uint64_t at_peak(const Summary* s, bool cats, Category k) {
  return cats ? s->at_peak[static_cast<int>(k)] : 0;
}

// The categories at the measured peak against the predicted breakdown.
void add_category_rows(Comparison* c, const Summary* s, bool cats) {
  const peak::Result& p = c->predicted;
  auto row = [&](const char* name, Category k, uint64_t predicted) {
    c->rows.push_back({name, at_peak(s, cats, k), predicted, cats, true});
  };
  row("weights", Category::kWeights, p.weights.bytes + p.master_weights.bytes);
  row("gradients", Category::kGradients, p.gradients.bytes);
  row("optimizerState", Category::kOptimizerState, p.optimizer_state.bytes);
  row("activations", Category::kActivations, p.activations.bytes);
  row("temporaries", Category::kTemporaries, p.temporaries.bytes);
  {
    const uint64_t frag = s && s->peak_reserved_at_peak > s->peak_allocated_bytes
                              ? s->peak_reserved_at_peak - s->peak_allocated_bytes
                              : 0;
    // Predicted: reserved - allocated when reserved peaked (the simulation).
    c->rows.push_back({"cacheFragmentation", frag, p.fragmentation_bytes,
                       cats && s->peak_reserved_at_peak > 0, p.simulated});
  }
  if (const uint64_t u = at_peak(s, cats, Category::kUnattributed))
    c->rows.push_back({"unattributed", u, 0, cats, false});
}

// The predicted step on the measured axes: its timeline spread over the measured step that
// holds the peak (or the whole trace when no step was found).
void add_predicted_series(Comparison* c, const Summary* s) {
  const peak::Result& p = c->predicted;
  if (!s || s->series.empty() || p.timeline.empty()) return;
  double x0 = s->series.front().x, x1 = s->series.back().x;
  if (s->peak_step >= 0) {
    x0 = s->steps[static_cast<size_t>(s->peak_step)].start_x;
    x1 = s->steps[static_cast<size_t>(s->peak_step)].end_x;
  }
  const size_t k = p.timeline.size();
  for (size_t i = 0; i < k; ++i) {
    PredictedPoint pt;
    pt.x = k > 1 ? x0 + (x1 - x0) * static_cast<double>(i) / static_cast<double>(k - 1) : x0;
    pt.allocated_bytes = p.timeline[i].total_bytes > p.runtime.bytes
                             ? p.timeline[i].total_bytes - p.runtime.bytes
                             : 0;
    pt.phase = p.timeline[i].phase;
    c->predicted_series.push_back(pt);
  }
}

// A cause that sets a measured figure against its prediction: `name` = `value`, then both.
Cause versus_cause(const char* code, const char* name, double value, uint64_t measured,
                   uint64_t predicted, std::string message) {
  Cause x;
  x.code = code;
  x.params = {{name, value},
              {"measuredBytes", static_cast<double>(measured)},
              {"predictedBytes", static_cast<double>(predicted)}};
  x.message = std::move(message);
  return x;
}

// What the difference between the measured and the predicted categories shows.
void add_difference_causes(Comparison* c, const Summary& s, const peak::Request& rq) {
  const peak::Result& p = c->predicted;
  const uint64_t mw = at_peak(&s, true, Category::kWeights),
                 pw = p.weights.bytes + p.master_weights.bytes;
  // Persistent blocks of weights' kind well above the prediction: another copy.
  if (pw && mw * 2 >= pw * 3 && (mw - pw) * 100 >= p.allocated_peak_bytes)
    c->causes.push_back(versus_cause(
        "extra_weight_copy", "extraBytes", static_cast<double>(mw - pw), mw, pw,
        "weights take " + format_bytes(static_cast<double>(mw - pw)) +
            " more than predicted: an extra fp32 copy of the weights (EMA? a master copy?)"));
  const uint64_t ma = at_peak(&s, true, Category::kActivations), pa = p.activations.bytes;
  if (pa && ma * 2 >= pa * 3) {
    const bool ck = rq.training.checkpointing.strategy != vocab::Strategy::none;
    c->causes.push_back(versus_cause(
        "activations_over_prediction", "ratio", ratio(ma, pa), ma, pa,
        "activations " + fixed1(ratio(ma, pa)) + "x the prediction" +
            (ck ? ": is checkpointing really on?"
                : ": a larger batch or sequence than the request, or eager attention?")));
  }
  const uint64_t mo = at_peak(&s, true, Category::kOptimizerState), po = p.optimizer_state.bytes;
  if (po && (mo * 4 < po * 3 || mo * 3 > po * 4))
    c->causes.push_back(versus_cause("optimizer_state_differs", "ratio", ratio(mo, po), mo, po,
                                     "optimizer state " + fixed1(ratio(mo, po)) +
                                         "x the prediction: another optimizer or state dtype "
                                         "than the request, or state created outside the trace"));
}

}  // namespace

Comparison compare(const Summary* s, const Figures& f, const peak::Request& rq) {
  Comparison c;
  if (!s && !f.max_allocated_bytes && !f.max_reserved_bytes && !f.nvidia_smi_used_bytes)
    fail(code::kMissingField, "snapshot", Message{"error.snapshot.none", {}});
  c.predicted = peak::compute(rq);
  if (s) {
    c.has_summary = true;
    c.summary = *s;
  }
  add_totals(&c, s, f);
  const bool cats = s && s->source == "snapshot" && s->events > 0;
  add_category_rows(&c, s, cats);
  add_predicted_series(&c, s);
  // Causes: what the measurement shows, then what the difference shows.
  if (s)
    c.causes = measured_causes(*s);
  else if (fragmented(f.max_reserved_bytes, f.max_allocated_bytes))
    c.causes.push_back(reserved_cause(f.max_reserved_bytes, f.max_allocated_bytes, false));
  if (cats) add_difference_causes(&c, *s, rq);
  c.notes.push_back(
      "predicted categories are trainmem's breakdown at its peak; measured ones are the blocks "
      "live at the measured peak, classified by the frames that allocated them");
  return c;
}

}  // namespace snapshot
}  // namespace trainmem
