// The step's trace counted as it is built (step_counter.hpp).
#include "peak/step_counter.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "trainmem/caching_allocator.hpp"

namespace trainmem {
namespace peak {
namespace device {
namespace {

using trace::Part;

// The trace counted as it is built, without an allocator and without the timeline: the figures
// count() gives, with no list of events. Each id's bytes and part are kept (to take them off
// when it is freed; an allocation run's, its sums); the parts at the peak are copied when the
// live bytes fall from a new peak.
class Counter final : public trace::Sink {
 public:
  struct Held {
    uint64_t bytes = 0;    // requested
    uint64_t counted = 0;  // what the ledger counts (the allocator's rounding, on CUDA)
    uint64_t events = 1;   // allocations it stands for (an allocation run's n)
    Part part = Part::weights;
  };
  Counter(const Request& rq, std::vector<Held>* ids)
      : ids_(*ids),
        cuda_(rq.runtime.profile.is_cuda()),
        div_(rq.allocator.config.roundup_power2_divisions) {
    ids_.assign(1, Held{});  // ids count from 1
  }
  void mark() override { ++marks_; }
  void alloc(uint64_t id, uint64_t bytes, Part part) override {
    check(bytes);
    add(id, {bytes, counted(bytes), 1, part});
  }
  void alloc_run(uint64_t id, const uint64_t* bytes, size_t n, Part part) override {
    Held h{0, 0, n, part};
    for (size_t k = 0; k < n; ++k) {
      check(bytes[k]);
      h.bytes += bytes[k];
      h.counted += counted(bytes[k]);
    }
    // each allocation's rounding is counted - bytes (round_size never rounds down), so the
    // run's is the difference of its sums
    add(id, h);
  }
  void transient(uint64_t bytes, Part part) override {
    check(bytes);
    const Held h{bytes, counted(bytes), 1, part};
    raise(h);
    take_peak();
    lower(h);
    events_ += 2;
  }
  uint64_t free(uint64_t id) override {
    take_peak();
    if (id >= ids_.size()) {
      ++events_;
      return 1;
    }
    const Held& h = ids_[id];
    lower(h);
    events_ += h.events;
    return h.events;
  }
  uint64_t events() const { return events_; }
  Figures figures(const std::vector<trace::Mark>& marks) {
    take_peak();
    Figures f;
    f.allocated_peak = peak_;
    if (marks.empty() || peak_ == 0) return f;
    f.peak_phase = marks[peak_mark_].phase;
    f.peak_layer = marks[peak_mark_].layer;
    f.at_peak = at_peak_;
    f.rounding_at_peak = rounding_at_peak_;
    return f;
  }

 private:
  void add(uint64_t id, const Held& h) {
    if (id == ids_.size())  // (ids come in order: one more each time)
      ids_.push_back(h);
    else if (id < ids_.size())
      ids_[id] = h;
    else
      ids_.resize(id + 1, h);
    events_ += h.events;
    raise(h);
  }
  void raise(const Held& h) {
    total_ += h.counted;
    now_[static_cast<size_t>(h.part)] += h.bytes;
    rounding_ += h.counted - std::min(h.counted, h.bytes);
    if (total_ > peak_) {
      peak_ = total_;
      peak_mark_ = marks_ - 1;
      fresh_ = true;
    }
  }
  void lower(const Held& h) {
    total_ -= h.counted;
    now_[static_cast<size_t>(h.part)] -= h.bytes;
    rounding_ -= h.counted - std::min(h.counted, h.bytes);
  }
  // The parts at the peak, taken when the live bytes first fall from it (every allocation
  // adds bytes: until a free, the newest peak is the state now).
  void take_peak() {
    if (!fresh_) return;
    at_peak_ = now_;
    rounding_at_peak_ = rounding_;
    fresh_ = false;
  }
  uint64_t counted(uint64_t bytes) const {
    return cuda_ ? allocator::CachingAllocator::round_size(bytes, div_) : bytes;
  }
  // The step's allocations, all added up, stay below 2^62 B (check_step_bytes).
  void check(uint64_t bytes) {
    all_ += std::min(bytes, kStepBytesLimit);
    if (all_ > kStepBytesLimit) step_too_large();
  }

  std::vector<Held>& ids_;  // per id
  bool cuda_;
  uint32_t div_;
  uint64_t events_ = 0, marks_ = 0, all_ = 0, total_ = 0, peak_ = 0, rounding_ = 0;
  uint64_t rounding_at_peak_ = 0;
  size_t peak_mark_ = 0;
  bool fresh_ = false;  // the peak rose since the parts at it were taken
  std::array<uint64_t, trace::kParts> now_{}, at_peak_{};
};

}  // namespace

Figures count_as_built(const Request& rq, const trace::StepSpec& spec, uint64_t* events) {
  // the ids' table is kept for the next evaluation (the planner's candidates, the
  // maxMicroBatch search's probes)
  static thread_local std::vector<Counter::Held> ids;
  Counter c(rq, &ids);
  const trace::Trace t = trace::build_into(spec, &c);
  *events = c.events();
  return c.figures(t.marks);
}

}  // namespace device
}  // namespace peak
}  // namespace trainmem
