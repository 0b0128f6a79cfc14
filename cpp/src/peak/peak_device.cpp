// One training step as an allocation trace, replayed (peak_device.hpp). The trace is the model:
// on CUDA runtimes each allocation counts the bytes the caching allocator's block holds
// (torch.cuda.memory_allocated counts rounded, sometimes unsplit, blocks); without the
// simulation, the allocator's rounding; on the CPU, the bytes requested. What nvidia-smi shows
// is the allocator's reserve plus the CUDA context (docs/allocator.md).
#include "peak/peak_device.hpp"

#include <algorithm>
#include <utility>

#include "peak/peak_trace_spec.hpp"
#include "peak/step_counter.hpp"
#include "trainmem/caching_allocator.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {
namespace device {
namespace {

using trace::Part;

// The live bytes as the trace runs: the peak, and per mark the most bytes within it (for the
// timeline). Each allocation counts the bytes its block holds (`counted`: what
// torch.cuda.memory_allocated adds). The run itself keeps only totals; what the peak and the
// timeline's points hold, per part, comes from a second pass to those moments (figures()):
// each tensor's requested bytes in its part, the rest of its block as the allocator's rounding.
class Ledger {
 public:
  // `timeline`: also keep each mark's highest point
  Ledger(const trace::Trace& t, bool timeline) : t_(t), timeline_(timeline) {
    counted_.assign(t.parts.size(), 0);
    if (timeline) marks_.assign(t.marks.size(), {});
  }
  void alloc(uint64_t id, uint64_t counted) {
    counted_[id] = counted;
    total_ += counted;
  }
  void free(uint64_t id) { total_ -= counted_[id]; }
  // After event `e` of mark `m`.
  void after(size_t e, size_t m) {
    if (timeline_ && (!marks_[m].seen || total_ > marks_[m].total)) marks_[m] = {true, total_, e};
    if (total_ > peak_) {
      peak_ = total_;
      peak_event_ = e;
      peak_mark_ = m;
    }
  }
  Figures figures(const activations::ModelActivations& acts) const;

 private:
  struct MarkPeak {
    bool seen = false;
    uint64_t total = 0;
    size_t event = 0;
  };
  using Parts = std::array<uint64_t, trace::kParts>;
  // The parts (and the rounding) live after each of `events` (ascending).
  std::vector<std::pair<Parts, uint64_t>> parts_at(const std::vector<size_t>& events) const;
  TimelinePoint point(size_t mark, const Parts& at,
                      const activations::ModelActivations& acts) const;

  const trace::Trace& t_;
  bool timeline_;
  std::vector<uint64_t> counted_;  // per id: the bytes its block holds
  uint64_t total_ = 0, peak_ = 0;
  size_t peak_event_ = 0, peak_mark_ = 0;
  std::vector<MarkPeak> marks_;
};

std::vector<std::pair<Ledger::Parts, uint64_t>> Ledger::parts_at(
    const std::vector<size_t>& events) const {
  std::vector<std::pair<Parts, uint64_t>> out;
  Parts now{};
  uint64_t rounding = 0;
  std::vector<uint64_t> requested(counted_.size(), 0);
  size_t next = 0;
  for (size_t e = 0; e < t_.events.size() && next < events.size(); ++e) {
    const allocator::Event& ev = t_.events[e];
    if (ev.kind == allocator::Event::kAlloc && ev.id < requested.size()) {
      requested[ev.id] = ev.size;
      now[static_cast<size_t>(t_.parts[ev.id])] += ev.size;
      rounding += counted_[ev.id] - std::min(counted_[ev.id], ev.size);
    } else if (ev.kind == allocator::Event::kFree && ev.id < requested.size()) {
      now[static_cast<size_t>(t_.parts[ev.id])] -= requested[ev.id];
      rounding -= counted_[ev.id] - std::min(counted_[ev.id], requested[ev.id]);
    }
    for (; next < events.size() && events[next] == e; ++next) out.push_back({now, rounding});
  }
  return out;
}

std::string point_name(const trace::Mark& m, const activations::ModelActivations& acts) {
  if (m.layer >= 0 && static_cast<size_t>(m.layer) < acts.layers.size())
    return acts.layers[static_cast<size_t>(m.layer)].name;
  if (m.phase == "optimizer") return "optimizer step";
  return m.phase;
}

TimelinePoint Ledger::point(size_t k, const Parts& at,
                            const activations::ModelActivations& acts) const {
  const trace::Mark& m = t_.marks[k];
  auto of = [&](Part p) { return at[static_cast<size_t>(p)]; };
  TimelinePoint pt;
  pt.phase = m.phase;
  pt.layer = m.layer;
  pt.name = point_name(m, acts);
  pt.total_bytes = marks_[k].total;
  pt.activation_bytes = of(Part::batch) + of(Part::saved) + of(Part::boundaries);
  pt.gradient_bytes = of(Part::gradients) + of(Part::ddp_buckets) + of(Part::reduce_buckets);
  pt.gathered_bytes = of(Part::gathered);
  pt.temporary_bytes = of(Part::activation_grads) + of(Part::op_transients) +
                       of(Part::autocast_copies) + of(Part::gathered) + of(Part::optimizer_temps) +
                       of(Part::grad_partition);
  return pt;
}

Figures Ledger::figures(const activations::ModelActivations& acts) const {
  Figures f;
  f.allocated_peak = peak_;
  if (t_.marks.empty() || peak_ == 0) return f;
  const trace::Mark& pm = t_.marks[peak_mark_];
  f.peak_phase = pm.phase;
  f.peak_layer = pm.layer;
  // the timeline: every mark of the optimizer step that holds the peak (its micro-steps, the
  // optimizer step and zero_grad), each at its highest point
  const uint32_t step = std::max<uint32_t>(pm.step, 1);
  std::vector<size_t> marks, events{peak_event_};
  if (timeline_)
    for (size_t k = 0; k < t_.marks.size(); ++k)
      if (t_.marks[k].step == step && marks_[k].seen) {
        marks.push_back(k);
        events.push_back(marks_[k].event);
      }
  std::vector<size_t> order = events;
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  const auto at = parts_at(order);
  auto snapshot = [&](size_t e) -> const std::pair<Parts, uint64_t>& {
    return at[static_cast<size_t>(std::lower_bound(order.begin(), order.end(), e) - order.begin())];
  };
  f.at_peak = snapshot(peak_event_).first;
  f.rounding_at_peak = snapshot(peak_event_).second;
  for (size_t k : marks) f.timeline.push_back(point(k, snapshot(marks_[k].event).first, acts));
  return f;
}

// NCCL's buffers (ProcessGroupNCCL, runtime profile) when the run is distributed.
uint64_t nccl_bytes(const Request& rq) {
  const bool distributed = rq.parallelism.data > 1 || rq.parallelism.tensor > 1;
  return distributed && !rq.runtime.overhead_set && rq.runtime.profile.is_cuda()
             ? rq.runtime.profile.nccl_bytes
             : 0;
}

uint64_t context_of(const Request& rq) {
  if (rq.runtime.overhead_set) return rq.runtime.overhead_bytes;
  return rq.runtime.profile.is_cuda() ? rq.runtime.profile.context_bytes : 0;
}

// What the allocator may reserve on the device: its memory less the CUDA context, NCCL and
// managed memory (paged optimizer states take device memory outside the allocator); 0 (no
// limit) when those leave nothing.
uint64_t allocator_capacity(const Request& rq, uint64_t managed) {
  const uint64_t outside = context_of(rq) + nccl_bytes(rq) + managed;
  return rq.runtime.gpu_memory_bytes > outside ? rq.runtime.gpu_memory_bytes - outside : 0;
}

// The trace counted without an allocator: each allocation at the runtime allocator's size.
Figures count(const Request& rq, const Step& s, const trace::Trace& t) {
  Ledger led(t, rq.answer.timeline && !rq.answer.verdict_only);
  const bool cuda = rq.runtime.profile.is_cuda();
  const uint32_t div = rq.allocator.config.roundup_power2_divisions;
  size_t mark = 0;
  for (size_t e = 0; e < t.events.size(); ++e) {
    while (mark + 1 < t.marks.size() && t.marks[mark + 1].event <= e) ++mark;
    const auto& ev = t.events[e];
    if (ev.kind == allocator::Event::kAlloc)
      led.alloc(ev.id, cuda ? allocator::CachingAllocator::round_size(ev.size, div) : ev.size);
    else if (ev.kind == allocator::Event::kFree)
      led.free(ev.id);
    led.after(e, mark);
  }
  return led.figures(s.acts);
}

struct Replay {
  bool complete = false;  // ran every event (no OOM)
  Figures figures;
};

// One run of the trace through the simulated allocator; `limited`: the device's capacity bounds
// the reserve (OOM retry, OOM).
Replay replay(const Request& rq, const Step& s, const trace::Trace& t, bool limited,
              uint64_t managed, Result* r) {
  allocator::Config cfg = rq.allocator.config;
  const uint64_t nccl = nccl_bytes(rq);
  if (limited) {
    const uint64_t cap = allocator_capacity(rq, managed);
    if (cap != 0) cfg.capacity_bytes = cap;
  }
  allocator::CachingAllocator alloc(cfg);
  Ledger led(t, rq.answer.timeline && !rq.answer.verdict_only);
  uint64_t best_reserved = 0, step1_alloc = 0, steady_alloc = 0, step1_reserved = 0;
  size_t best_mark = 0, mark = 0;
  bool oom = false;
  for (size_t e = 0; e < t.events.size() && !oom; ++e) {
    while (mark + 1 < t.marks.size() && t.marks[mark + 1].event <= e) ++mark;
    const auto& ev = t.events[e];
    if (ev.kind == allocator::Event::kAlloc) {
      const uint64_t before = alloc.stats().allocated_bytes;
      if (!alloc.malloc(ev.id, ev.size, ev.stream)) {
        const trace::Mark& m = t.marks[mark];
        if (r->ooms == 0)
          r->assumptions.push_back(
              Text("peak.assume.oom", {{"step", std::to_string(m.step)}, {"phase", m.phase}}));
        ++r->ooms;
        oom = true;
        break;
      }
      led.alloc(ev.id, alloc.stats().allocated_bytes - before);
    } else if (ev.kind == allocator::Event::kFree) {
      alloc.free(ev.id);
      led.free(ev.id);
    } else {
      alloc.empty_cache();
    }
    led.after(e, mark);
    const allocator::Stats& st = alloc.stats();
    if (t.marks[mark].step <= 1) {
      step1_alloc = std::max(step1_alloc, st.allocated_bytes);
      step1_reserved = std::max(step1_reserved, st.reserved_bytes);
    } else {
      steady_alloc = std::max(steady_alloc, st.allocated_bytes);
    }
    if (st.reserved_bytes > best_reserved) {
      best_reserved = st.reserved_bytes;
      best_mark = mark;
    }
  }
  const allocator::Stats& st = alloc.stats();
  r->simulated = true;
  r->steps_simulated = t.marks.empty() ? 0 : t.marks.back().step;
  r->reserved_peak_bytes = st.peak_reserved_bytes;
  // the cache's overhead at the peak: reserved beyond what tensors ever needed at once
  r->fragmentation_bytes =
      st.peak_reserved_bytes - std::min(st.peak_reserved_bytes, st.peak_allocated_bytes);
  r->largest_request_bytes = st.largest_request_bytes;
  r->first_step_allocated_bytes = step1_alloc;
  r->first_step_reserved_bytes = step1_reserved;
  r->steady_allocated_bytes = steady_alloc;
  r->alloc_retries = st.num_alloc_retries;
  r->segments = alloc.segment_count();
  r->nccl_bytes = nccl;
  if (!t.marks.empty()) {
    const trace::Mark& m = t.marks[best_mark];
    r->reserved_peak_step = m.step;
    r->reserved_peak_phase = m.phase;
    r->reserved_peak_layer = m.layer;
  }
  // nvidia-smi: the allocator's segments plus what the driver holds outside it
  r->device_used_bytes = r->reserved_peak_bytes + context_of(rq) + nccl + managed;
  r->managed_bytes = managed;
  Replay out;
  out.complete = !oom;
  out.figures = led.figures(s.acts);
  return out;
}

// With the allocator: the run under the device's limit, and when it runs out of memory, what
// it would need (the same trace on an unlimited device); the OOM stays in the result.
Figures simulate(const Request& rq, const Step& s, const trace::Trace& t, uint64_t managed,
                 Result* r) {
  // The unlimited run first. When its reserve never passes what the allocator may reserve (and no
  // garbage-collection threshold reads the capacity), the run under the device's limit makes
  // the same calls to the same effect: it is that run.
  Result unlimited = *r;
  Replay u = replay(rq, s, t, false, managed, &unlimited);
  const uint64_t cap = allocator_capacity(rq, managed);
  if (cap == 0 || (unlimited.reserved_peak_bytes <= cap &&
                   rq.allocator.config.garbage_collection_threshold == 0)) {
    *r = std::move(unlimited);
    return u.figures;
  }
  if (rq.answer.verdict_only && u.figures.allocated_peak > cap) {
    // its allocated bytes alone exceed the capacity: the limited run must run out of memory
    // (reserved >= allocated), and only the unlimited run's figures are needed
    *r = std::move(unlimited);
    r->ooms = 1;  // the limited run stops at its first OOM
    return u.figures;
  }
  Replay l = replay(rq, s, t, true, managed, r);
  if (l.complete) return l.figures;
  // Out of memory on the device: what the run would need is the unlimited run's
  // (deviceUsedBytes); the OOM count, its assumption and the retries stay the limited run's
  unlimited.ooms = r->ooms;
  unlimited.assumptions = r->assumptions;
  unlimited.alloc_retries = r->alloc_retries;
  *r = std::move(unlimited);
  return u.figures;
}

}  // namespace

void step_too_large() { fail(code::kTooLarge, "microBatch", Message{"error.peak.over62", {}}); }

// The step's allocations, all added up, stay below 2^62 B: then no sum of live bytes in the
// ledger or the allocator wraps, and the result's figures stay below the edge's 2^63 check.
static void check_step_bytes(const trace::Trace& t) {
  uint64_t total = 0;
  for (const allocator::Event& e : t.events) {
    if (e.kind != allocator::Event::kAlloc) continue;
    total += std::min(e.size, kStepBytesLimit);
    if (total > kStepBytesLimit) step_too_large();
  }
}

Figures run_step(const Request& rq, const Step& s, Result* r) {
  uint64_t managed = 0;
  const trace::StepSpec spec = build_spec(rq, s, &managed);
  const bool replayed = rq.allocator.simulate && rq.runtime.profile.is_cuda();
  if (!replayed && !(rq.answer.timeline && !rq.answer.verdict_only)) {
    Figures f = count_as_built(rq, spec, &r->trace_events);
    f.managed = managed;
    return f;
  }
  const trace::Trace t = trace::build(spec);
  check_step_bytes(t);
  r->trace_events = t.events.size();
  Figures f = replayed ? simulate(rq, s, t, managed, r) : count(rq, s, t);
  f.managed = managed;
  return f;
}

}  // namespace device
}  // namespace peak
}  // namespace trainmem
