// What a memory snapshot's trace shows: allocated / reserved bytes over time, the steps, the
// peak and what was live then, by category. Rules and their sources: docs/snapshot.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "trainmem/caching_allocator.hpp"
#include "trainmem/error.hpp"
#include "trainmem/snapshot.hpp"

namespace trainmem {
namespace snapshot {

const char* category_name(Category c) {
  static const char* const kNames[kCategories] = {"weights",     "gradients",   "optimizerState",
                                                  "activations", "temporaries", "unattributed"};
  const size_t i = static_cast<size_t>(c);
  return kNames[i < kCategories ? i : kCategories - 1];
}

std::string format_bytes(double b) {
  char buf[48];
  const double a = std::fabs(b);
  if (a >= 1073741824.0)
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / 1073741824.0);
  else if (a >= 1048576.0)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (a >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

namespace {

// (event indices fit 31 bits: at most kMaxTraceEvents entries, so a Life keeps them in 32)
constexpr int64_t kNever = std::numeric_limits<int32_t>::max();
constexpr int64_t kBefore = -1;

// The caching allocator's rounding of a request: kMinBlockSize = 512 B
// (c10/cuda/CUDACachingAllocator.cpp round_size, without roundup_power2_divisions).
uint64_t round_size(uint64_t size) {
  if (size == 0) return 0;
  return size < 512 ? 512 : 512 * ((size + 511) / 512);
}

enum Phase : uint8_t {
  kNoFrames,
  kForward,
  kBackward,
  kRecompute,
  kOptimizer,
  kZeroGrad,
  kToDevice
};

bool contains(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

// The phase a traceback shows, from the Python files in it (innermost first): torch/optim/
// (optimizer.step, zero_grad), torch/autograd/ or Tensor.backward (the backward pass),
// torch/utils/checkpoint.py inside a backward (recomputation), Module.to/_apply (weights).
Phase phase_of(const Snapshot& s, uint32_t stack) {
  if (stack == kNoStack) return kNoFrames;
  bool optim = false, zero = false, backward = false, ckpt = false, to = false;
  for (uint32_t f : s.stacks[stack]) {
    const Frame& fr = s.frames[f];
    if (contains(fr.filename, "torch/optim/")) {
      optim = true;
      if (fr.name == "zero_grad") zero = true;
    }
    if (contains(fr.filename, "torch/autograd/") ||
        (contains(fr.filename, "torch/_tensor.py") && fr.name == "backward"))
      backward = true;
    if (contains(fr.filename, "torch/utils/checkpoint.py")) ckpt = true;
    if (contains(fr.filename, "torch/nn/modules/module.py") &&
        (fr.name == "_apply" || fr.name == "to" || fr.name == "cuda" ||
         fr.name == "_load_from_state_dict"))
      to = true;
  }
  if (zero) return kZeroGrad;
  if (optim) return kOptimizer;
  if (backward) return ckpt ? kRecompute : kBackward;
  if (to) return kToDevice;
  return kForward;
}

const char* phase_name(Phase p) {
  static const char* const kNames[] = {"unknown",   "forward",   "backward", "recompute",
                                       "optimizer", "zero_grad", "weights"};
  return p <= kToDevice ? kNames[p] : kNames[kNoFrames];
}

struct Life {
  int32_t alloc = kBefore, free = kNever;  // event indices
  uint64_t bytes = 0;                      // rounded
  uint32_t stack = kNoStack;               // allocation's traceback (or the block's)
  uint32_t free_stack = kNoStack;
  Category cat = Category::kUnattributed;
};

// Address -> value for the blocks live during the replay of the trace: open addressing with
// linear probing and backward-shift deletion, so that an alloc or a free is a probe or two in
// one array (std::unordered_map allocated a node per alloc: a 200 MB trace has 1.7 million).
class AddrMap {
 public:
  struct Slot {
    uint64_t key = 0, value = 0;
    bool used = false;
  };
  AddrMap() : slots_(64) {}
  Slot* find(uint64_t key) {
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s;
    }
  }
  uint64_t& operator[](uint64_t key) {  // a new key's value is 0
    if (Slot* s = find(key)) return s->value;
    if (2 * (count_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    size_t i = home(key);
    while (slots_[i].used) i = (i + 1) & mask();
    slots_[i] = {key, 0, true};
    ++count_;
    return slots_[i].value;
  }
  void erase(Slot* s) {  // an entry find() returned
    size_t i = static_cast<size_t>(s - slots_.data());
    for (size_t j = (i + 1) & mask(); slots_[j].used; j = (j + 1) & mask()) {
      const size_t h = home(slots_[j].key);
      // The entry at j stays unless its home is cyclically outside (i, j]: then it moves to i.
      const bool stays = i < j ? (h > i && h <= j) : (h > i || h <= j);
      if (!stays) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = false;
    --count_;
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t home(uint64_t key) const {  // Fibonacci hashing: addresses are multiples of 512
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask();
  }
  void rehash(size_t n) {
    std::vector<Slot> old(n);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.used) {
        size_t i = home(s.key);
        while (slots_[i].used) i = (i + 1) & mask();
        slots_[i] = s;
      }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

// First element of sorted `v` greater than x, or kNever.
int64_t next_after(const std::vector<int64_t>& v, int64_t x) {
  auto it = std::upper_bound(v.begin(), v.end(), x);
  return it == v.end() ? kNever : *it;
}

// The smallest period (in allocations) of the allocation sizes, if one repeats: sizes[i] ==
// sizes[i + p] for >= 95 % of sampled i (the repeating forward/backward/optimizer pattern).
uint64_t find_period(const std::vector<uint64_t>& sizes) {
  const size_t n = std::min<size_t>(sizes.size(), 200000);
  const size_t max_p = std::min<size_t>(n / 2, 50000);
  for (size_t p = 2; p <= max_p; ++p) {
    const size_t span = n - p, samples = std::min<size_t>(span, 256);
    size_t same = 0;
    for (size_t k = 0; k < samples; ++k) {
      const size_t i = k * span / samples;
      same += sizes[i] == sizes[i + p];
    }
    if (same * 100 >= samples * 95 && samples >= 8) return p;
  }
  return 0;
}

// The device: the one asked for, else the one with the most trace entries.
uint64_t pick_device(const Snapshot& s, const SummaryOptions& o) {
  if (o.device >= 0) return static_cast<uint64_t>(o.device);
  uint64_t dev = 0;
  for (size_t d = 0; d < s.device_traces.size(); ++d)
    if (s.device_traces[d].size() > s.device_traces[dev].size()) dev = d;
  return dev;
}

const std::vector<Event>& trace_of(const Snapshot& s, uint64_t dev) {
  static const std::vector<Event> kEmpty;
  return dev < s.device_traces.size() ? s.device_traces[dev] : kEmpty;
}

// summarize(), one method per section, in the order run() calls them.
class Summarizer {
 public:
  Summarizer(const Snapshot& s, const SummaryOptions& o)
      : s_(s),
        o_(o),
        dev_(pick_device(s, o)),
        ev_(trace_of(s, dev_)),
        n_(static_cast<int64_t>(ev_.size())) {}

  Summary run() {
    check_memory();
    describe_file();
    read_final_state();
    find_stack_phases();
    find_lifetimes();
    find_baseline();
    find_optimizer_runs();
    find_steps();
    std::vector<uint64_t>().swap(alloc_sizes_);  // (only the steps' period search reads them)
    for (Life& l : lives_) l.cat = category_of(l);
    find_series_and_peak();
    place_peak_and_steps();
    find_kept_gradients();
    find_live_at_peak();
    if (n_ > 0 && r_.counts[static_cast<int>(Action::kAlloc)] > 0) replay();
    add_notes();
    return std::move(r_);
  }

 private:
  // The summary's working memory (lifetimes, the series' deltas, the allocation sizes) beside
  // the trace entries already read, within the reader's budget (kReaderWorkPerFileByte): checked
  // before any of it is built.
  void check_memory() const {
    if (s_.file_bytes == 0) return;  // (built in memory: tests)
    uint64_t entries = 0, allocs = 0;
    for (const auto& t : s_.device_traces) entries += t.size();
    for (const Event& e : ev_) allocs += e.action == Action::kAlloc;
    const uint64_t need = entries * sizeof(Event) + allocs * (sizeof(Life) + sizeof(uint64_t)) +
                          ev_.size() * sizeof(int64_t);
    const uint64_t budget = kReaderWorkPerFileByte * s_.file_bytes + kReaderWorkBaseBytes;
    if (need > budget)
      fail(code::kTooLarge, "snapshot",
           Message{"error.snapshot.summaryMemory",
                   {{"size", std::to_string(ev_.size())},
                    {"need", std::to_string(need >> 20)},
                    {"perByte", std::to_string(kReaderWorkPerFileByte)},
                    {"base", std::to_string(kReaderWorkBaseBytes >> 20)}}});
  }

  void describe_file() {
    r_.protocol = s_.protocol;
    r_.file_bytes = s_.file_bytes;
    r_.settings = s_.settings;
    r_.devices = s_.device_traces.size();
    r_.has_frames = !s_.stacks.empty();
    r_.device = dev_;
    r_.events = ev_.size();
    r_.has_time =
        n_ > 0 && std::all_of(ev_.begin(), ev_.end(), [](const Event& e) { return e.has_time; });
  }

  // Final state from the segments of this device.
  void read_final_state() {
    for (const Segment& seg : s_.segments) {
      if (seg.device != dev_) continue;
      ++r_.segments;
      final_reserved_ += seg.total_size;
      for (const Block& b : seg.blocks)
        if (b.state == BlockState::kActiveAllocated) {
          r_.segment_allocated_bytes += b.size;
          final_live_[b.address] = &b;
        }
    }
    r_.segment_reserved_bytes = final_reserved_;
  }

  // Phases of every traceback once; per event below.
  void find_stack_phases() {
    stack_phase_.resize(s_.stacks.size());
    for (size_t i = 0; i < s_.stacks.size(); ++i)
      stack_phase_[i] = phase_of(s_, static_cast<uint32_t>(i));
  }
  Phase phase(uint32_t st) const { return st == kNoStack ? kNoFrames : Phase(stack_phase_[st]); }

  // ---- pass 1: lifetimes. memory_allocated falls at free_requested (CUDACachingAllocator.cpp
  // free(): allocated_bytes.decrease before the trace's FREE_REQUESTED), so that event ends one.
  void find_lifetimes() {
    const std::vector<Event>& ev = ev_;
    std::vector<Life>& lives = lives_;
    AddrMap live;  // addr -> life
    {              // Sized first: growing copies (a byte at a time in the -Oz WebAssembly module).
      size_t allocs = 0;
      for (const Event& e : ev) allocs += e.action == Action::kAlloc;
      lives.reserve(allocs + final_live_.size() + 64);
      alloc_sizes_.reserve(allocs);
    }
    for (int64_t i = 0; i < n_; ++i) {
      const Event& e = ev[i];
      ++r_.counts[static_cast<int>(e.action)];
      switch (e.action) {
        case Action::kAlloc: {
          Life l;
          l.alloc = static_cast<int32_t>(i);
          l.bytes = round_size(e.size);
          l.stack = e.stack;
          if (const auto* s = live.find(e.addr))  // a missed free: end it
            lives[s->value].free = static_cast<int32_t>(i);
          live[e.addr] = lives.size();
          lives.push_back(l);
          alloc_sizes_.push_back(e.size);
          break;
        }
        case Action::kFreeRequested: {
          if (auto* s = live.find(e.addr)) {
            lives[s->value].free = static_cast<int32_t>(i);
            lives[s->value].free_stack = e.stack;
            live.erase(s);
          } else {  // allocated before recording began
            Life l;
            l.alloc = kBefore;
            l.free = static_cast<int32_t>(i);
            l.bytes = round_size(e.size);
            l.free_stack = e.stack;
            lives.push_back(l);
          }
          break;
        }
        default:
          seg_delta_ += segment_change(e);
      }
    }
    // Blocks live at the end that the trace never allocated: live since before recording.
    for (const auto& kv : final_live_) {
      if (live.find(kv.first)) continue;
      Life l;
      l.alloc = kBefore;
      l.bytes = round_size(kv.second->requested_size ? kv.second->requested_size : kv.second->size);
      l.stack = kv.second->stack;
      lives.push_back(l);
    }
  }

  // Reserved bytes an entry adds (segment_alloc, segment_map) or takes away (segment_free,
  // segment_unmap).
  static int64_t segment_change(const Event& e) {
    switch (e.action) {
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        return static_cast<int64_t>(e.size);
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        return -static_cast<int64_t>(e.size);
      default:
        return 0;
    }
  }

  void find_baseline() {
    for (const Life& l : lives_)
      if (l.alloc == kBefore) r_.baseline_allocated_bytes += l.bytes;
    const int64_t base_reserved = static_cast<int64_t>(final_reserved_) - seg_delta_;
    if (base_reserved < 0)
      r_.notes.push_back(
          "the trace frees more segments than the final state and the trace allocate: the "
          "reserved curve starts at 0");
    r_.baseline_reserved_bytes = base_reserved > 0 ? static_cast<uint64_t>(base_reserved) : 0;
  }

  // ---- steps. Optimizer runs: consecutive entries whose traceback is in torch/optim/ (entries
  // without frames neither start nor end a run); a step ends with its optimizer run.
  void find_optimizer_runs() {
    int64_t start = -1, last = -1;
    bool in_backward = false;
    for (int64_t i = 0; i < n_; ++i) {
      const Phase p = phase(ev_[i].stack);
      if (p == kNoFrames) continue;
      if (p == kOptimizer) {
        if (start < 0) start = i;
        last = i;
      } else if (start >= 0) {
        run_start_.push_back(start);
        run_end_.push_back(last);
        start = -1;
      }
      const bool bw = p == kBackward || p == kRecompute;
      if (bw && !in_backward) backward_start_.push_back(i);
      in_backward = bw;
    }
    if (start >= 0) {
      run_start_.push_back(start);
      run_end_.push_back(last);
    }
  }

  void add_step(int64_t start, int64_t end) {
    Step st;
    st.start_event = static_cast<uint64_t>(start);
    st.end_event = static_cast<uint64_t>(end);
    r_.steps.push_back(st);
  }

  void find_steps() {
    if (!run_end_.empty()) {
      r_.steps_method = "optimizer-frames";
      int64_t begin = 0;
      for (int64_t end : run_end_) {
        add_step(begin, end);
        begin = end + 1;
      }
    } else if (const uint64_t p = find_period(alloc_sizes_)) {
      r_.steps_method = "periodicity";
      r_.period_events = p;
      // Step boundaries at every p-th allocation.
      uint64_t allocs = 0;
      int64_t begin = 0;
      for (int64_t i = 0; i < n_; ++i) {
        if (ev_[i].action != Action::kAlloc) continue;
        if (allocs && allocs % p == 0) {
          add_step(begin, i - 1);
          begin = i;
        }
        ++allocs;
      }
    }
  }

  // ---- categories (docs/snapshot.md, "Categories")
  // A block live before recording began, by the phase that allocated it (still live at the
  // end) or freed it.
  Category category_before_recording(const Life& l) const {
    if (l.free == kNever) {
      const Phase p = phase(l.stack);
      return p == kOptimizer  ? Category::kOptimizerState
             : p == kBackward ? Category::kGradients
                              : Category::kWeights;
    }
    const Phase p = phase(l.free_stack);
    return p == kZeroGrad                        ? Category::kGradients
           : p == kOptimizer                     ? Category::kOptimizerState
           : (p == kBackward || p == kRecompute) ? Category::kActivations
           : p == kNoFrames                      ? Category::kUnattributed
                                                 : Category::kTemporaries;
  }

  Category category_of(const Life& l) const {
    if (l.alloc == kBefore) return category_before_recording(l);
    switch (phase(l.stack)) {
      case kOptimizer: {
        // State outlives the optimizer run that created it; temporaries do not.
        auto it = std::upper_bound(run_start_.begin(), run_start_.end(), l.alloc);
        const size_t k = it == run_start_.begin() ? 0 : (it - run_start_.begin()) - 1;
        const int64_t end = k < run_end_.size() ? run_end_[k] : kNever;
        return l.free > end ? Category::kOptimizerState : Category::kTemporaries;
      }
      case kRecompute:
        return Category::kActivations;
      case kBackward:
        // A parameter's gradient is still live when the next optimizer run starts.
        return l.free >= next_after(run_start_, l.alloc) ? Category::kGradients
                                                         : Category::kTemporaries;
      case kToDevice:
        return Category::kWeights;
      case kZeroGrad:
        return Category::kTemporaries;
      case kForward: {
        // Saved for the backward: lives into the next backward pass.
        const int64_t b = next_after(backward_start_, l.alloc);
        return l.free == kNever ? Category::kWeights
               : b <= l.free    ? Category::kActivations
                                : Category::kTemporaries;
      }
      default:
        return Category::kUnattributed;
    }
  }

  // ---- pass 2: the series and the peak. Sorted deltas at each event from the lives.
  double xof(int64_t i) const {
    return r_.has_time ? static_cast<double>(ev_[i].time_us) - x0_ : static_cast<double>(i);
  }

  // The series: one point per bucket of events, its highest allocated bytes.
  struct Series {
    uint32_t points = 0;
    SeriesPoint bucket;
    int64_t bucket_id = -1;
  };
  void add_to_series(Series* se, int64_t i, uint64_t ucur, uint64_t ures, uint64_t ureq) {
    const int64_t b = i * se->points / n_;
    SeriesPoint& p = se->bucket;
    if (b != se->bucket_id) {
      if (se->bucket_id >= 0) r_.series.push_back(p);
      se->bucket_id = b;
      p = SeriesPoint{static_cast<uint64_t>(i), xof(i), ucur, ureq, ures};
      return;
    }
    if (ucur > p.allocated_bytes) {
      p.allocated_bytes = ucur;
      p.event = static_cast<uint64_t>(i);
      p.x = xof(i);
      p.requested_bytes = ureq;
    }
    p.reserved_bytes = std::max(p.reserved_bytes, ures);
  }

  void find_series_and_peak() {
    const std::vector<Event>& ev = ev_;
    const int64_t n = n_;
    std::vector<int64_t> delta(static_cast<size_t>(n) + 1, 0);
    for (const Life& l : lives_) {
      if (l.alloc != kBefore) delta[l.alloc] += static_cast<int64_t>(l.bytes);
      if (l.free != kNever) delta[l.free] -= static_cast<int64_t>(l.bytes);
    }
    x0_ = n > 0 ? static_cast<double>(ev[0].time_us) : 0;
    Series se;
    se.points = std::max<uint32_t>(2, std::min<uint32_t>(o_.points, 10000));
    int64_t cur = static_cast<int64_t>(r_.baseline_allocated_bytes);
    int64_t req = 0;  // requested bytes, relative (the baseline's requests are unknown)
    int64_t res = static_cast<int64_t>(r_.baseline_reserved_bytes);
    AddrMap req_live;
    r_.peak_allocated_bytes = static_cast<uint64_t>(cur);
    r_.peak_reserved_bytes = static_cast<uint64_t>(res);
    bool have_peak = false;
    size_t step_k = 0;
    for (int64_t i = 0; i < n; ++i) {
      const Event& e = ev[i];
      cur += delta[i];
      if (e.action == Action::kAlloc) {
        req += static_cast<int64_t>(e.size);
        req_live[e.addr] = e.size;
      } else if (e.action == Action::kFreeRequested) {
        if (auto* s = req_live.find(e.addr)) {
          req -= static_cast<int64_t>(s->value);
          req_live.erase(s);
        }
      } else {
        res += segment_change(e);
      }
      const uint64_t ucur = cur > 0 ? static_cast<uint64_t>(cur) : 0;
      const uint64_t ures = res > 0 ? static_cast<uint64_t>(res) : 0;
      const uint64_t ureq = req > 0 ? static_cast<uint64_t>(req) : 0;
      if (ucur > r_.peak_allocated_bytes || !have_peak) {
        have_peak = true;
        r_.peak_allocated_bytes = ucur;
        r_.peak_event = static_cast<uint64_t>(i);
        r_.peak_requested_bytes = ureq;
        r_.peak_reserved_at_peak = ures;
      }
      if (ures > r_.peak_reserved_bytes) {
        r_.peak_reserved_bytes = ures;
        r_.peak_reserved_event = static_cast<uint64_t>(i);
      }
      add_to_series(&se, i, ucur, ures, ureq);
      while (step_k < r_.steps.size() && r_.steps[step_k].end_event < static_cast<uint64_t>(i))
        ++step_k;
      if (step_k < r_.steps.size() && r_.steps[step_k].start_event <= static_cast<uint64_t>(i))
        r_.steps[step_k].peak_allocated_bytes =
            std::max(r_.steps[step_k].peak_allocated_bytes, ucur);
    }
    if (se.bucket_id >= 0) r_.series.push_back(se.bucket);
    if (n == 0) {  // segments only: the state when the snapshot was taken
      r_.peak_allocated_bytes = r_.segment_allocated_bytes;
      r_.peak_reserved_bytes = r_.peak_reserved_at_peak = final_reserved_;
      r_.notes.push_back("no trace entries: the figures are the state when the snapshot was taken");
    }
  }

  // The peak's position and phase; each step's span and first forward-phase allocation.
  void place_peak_and_steps() {
    if (n_ > 0) {
      r_.peak_x = xof(static_cast<int64_t>(r_.peak_event));
      r_.peak_time_us = ev_[r_.peak_event].time_us;
      r_.peak_phase = phase_name(phase(ev_[r_.peak_event].stack));
    }
    for (size_t k = 0; k < r_.steps.size(); ++k) {
      Step& st = r_.steps[k];
      st.start_x = xof(static_cast<int64_t>(st.start_event));
      st.end_x = xof(static_cast<int64_t>(st.end_event));
      if (r_.peak_event >= st.start_event && r_.peak_event <= st.end_event)
        r_.peak_step = static_cast<int64_t>(k);
      for (uint64_t i = st.start_event; i <= st.end_event; ++i)
        if (ev_[i].action == Action::kAlloc && phase(ev_[i].stack) == kForward) {
          st.forward_event = static_cast<int64_t>(i);
          break;
        }
    }
  }

  // ---- gradients kept into the next step's forward. A gradient counts for the steps that
  // start after it was allocated and whose forward begins before it is freed: a contiguous
  // range of steps (a difference array over steps).
  void find_kept_gradients() {
    std::vector<Step>& steps = r_.steps;
    if (steps.empty()) return;
    std::vector<int64_t> kept(steps.size() + 1, 0);
    for (const Life& l : lives_) {
      if (l.cat != Category::kGradients) continue;
      // The first step that starts after the allocation (steps are in order).
      const size_t a =
          static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), l.alloc,
                                               [](int64_t x, const Step& st) {
                                                 return x < static_cast<int64_t>(st.start_event);
                                               }) -
                              steps.begin());
      size_t b = a;
      while (b < steps.size() && steps[b].forward_event >= 0 && steps[b].forward_event < l.free)
        ++b;
      if (b > a) {
        kept[a] += static_cast<int64_t>(l.bytes);
        kept[b] -= static_cast<int64_t>(l.bytes);
      }
    }
    int64_t run = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      run += kept[k];
      if (steps[k].forward_event >= 0)
        steps[k].gradient_bytes_at_forward = static_cast<uint64_t>(run);
    }
    for (size_t k = 1; k < steps.size(); ++k)
      if (steps[k].gradient_bytes_at_forward > r_.kept_gradient_bytes) {
        r_.kept_gradient_bytes = steps[k].gradient_bytes_at_forward;
        r_.kept_gradient_step = static_cast<int64_t>(k);
      }
  }

  // The frame a block is grouped by: the innermost one outside torch/ (the user's line), else
  // the innermost; -1 without frames.
  int64_t user_frame(uint32_t stack) const {
    if (stack == kNoStack) return -1;
    const auto& fr = s_.stacks[stack];
    for (uint32_t f : fr) {
      const Frame& x = s_.frames[f];
      if (!contains(x.filename, "torch/") && !x.filename.empty() && x.filename[0] != '<') return f;
    }
    return fr.front();
  }

  // ---- what was live at the peak: bytes by category, and the frames that allocated most.
  void find_live_at_peak() {
    const int64_t P = n_ > 0 ? static_cast<int64_t>(r_.peak_event) : kNever - 1;
    std::map<int64_t, TopFrame> groups;  // by frame index (-1: no frames)
    std::map<int64_t, std::array<uint64_t, kCategories>> group_cats;
    for (const Life& l : lives_) {
      const bool at_peak = n_ == 0 ? l.free == kNever : (l.alloc <= P && l.free > P);
      if (!at_peak) continue;
      r_.at_peak[static_cast<int>(l.cat)] += l.bytes;
      const int64_t key = user_frame(l.stack);
      TopFrame& g = groups[key];
      g.bytes += l.bytes;
      ++g.blocks;
      group_cats[key][static_cast<int>(l.cat)] += l.bytes;
    }
    for (auto& kv : groups) {
      TopFrame& g = kv.second;
      if (kv.first >= 0) {
        const Frame& f = s_.frames[static_cast<size_t>(kv.first)];
        g.filename = f.filename;
        g.name = f.name;
        g.line = f.line;
      } else {
        g.name = "(no frames: allocated before recording began or recorded without context)";
      }
      const auto& c = group_cats[kv.first];
      g.category = static_cast<Category>(std::max_element(c.begin(), c.end()) - c.begin());
      r_.top_frames.push_back(g);
    }
    std::vector<TopFrame>& top = r_.top_frames;
    std::sort(top.begin(), top.end(), [](const TopFrame& a, const TopFrame& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.filename + a.name < b.filename + b.name;
    });
    if (top.size() > o_.top_frames) top.resize(o_.top_frames);
  }

  // ---- replay: blocks live before recording first, then the trace's allocs and frees. A block
  // returns to the pool at free_completed (CUDACachingAllocator.cpp free_block, after its stream
  // events), so that is the simulator's free when the trace has them. Fed one entry at a time
  // (a whole trace as allocator::Event took another 32 bytes per entry).
  void replay() {
    allocator::Config cfg;
    const AllocatorSettings& a = s_.settings;
    cfg.expandable_segments = a.expandable_segments;
    if (a.max_split_size && a.max_split_size < (1ULL << 62)) cfg.max_split_size = a.max_split_size;
    if (a.garbage_collection_threshold > 0 && a.garbage_collection_threshold < 1)
      cfg.garbage_collection_threshold = a.garbage_collection_threshold;
    allocator::CachingAllocator sim(cfg);
    // A pre-existing block's address -> its id, for the trace's free of it.
    std::unordered_map<uint64_t, uint64_t> before_id;
    uint64_t ids = 0;
    for (const Life& l : lives_)
      if (l.alloc == kBefore) {
        const uint64_t id = ~ids++;  // ids of their own: addresses may recur
        sim.malloc(id, l.bytes, 0);
        if (l.free != kNever) before_id[ev_[l.free].addr] = id;
      }
    const bool completed = r_.counts[static_cast<int>(Action::kFreeCompleted)] > 0;
    const Action free_action = completed ? Action::kFreeCompleted : Action::kFreeRequested;
    for (const Event& e : ev_) {
      if (e.action == Action::kAlloc) {
        sim.malloc(e.addr, e.size, e.stream);
      } else if (e.action == free_action) {
        auto it = before_id.find(e.addr);
        sim.free(it != before_id.end() ? it->second : e.addr);
        if (it != before_id.end()) before_id.erase(it);
      }
    }
    const allocator::Stats& st = sim.stats();
    r_.replayed = true;
    r_.replay_reserved_peak = st.peak_reserved_bytes;
    r_.replay_allocated_peak = st.peak_allocated_bytes;
    r_.replay_segments = sim.segments().size();
  }

  void add_notes() {
    if (r_.counts[static_cast<int>(Action::kFreeRequested)] == 0 &&
        r_.counts[static_cast<int>(Action::kFreeCompleted)] > 0)
      r_.notes.push_back("the trace has free_completed entries but no free_requested ones");
    if (n_ > 0 && !r_.has_frames)
      r_.notes.push_back(
          "the trace has no frames (recorded with context=None): steps come from the allocation "
          "pattern and categories are unattributed");
  }

  const Snapshot& s_;
  const SummaryOptions& o_;
  const uint64_t dev_;
  const std::vector<Event>& ev_;
  const int64_t n_;
  Summary r_;
  uint64_t final_reserved_ = 0;
  std::unordered_map<uint64_t, const Block*> final_live_;
  std::vector<uint8_t> stack_phase_;
  std::vector<Life> lives_;
  std::vector<uint64_t> alloc_sizes_;
  int64_t seg_delta_ = 0;
  std::vector<int64_t> run_start_, run_end_, backward_start_;
  double x0_ = 0;
};

}  // namespace

// Every size the summary adds up (trace entries, segments, blocks), added once with a check:
// when all of them together stay within 2^62 bytes, no sum, difference or running total below
// can wrap (each is a part of this total), whatever the order of the entries. A file beyond
// it (an alloc of 2^64 - 1, segments of 2^62) is too_large naming the field that crosses it,
// never a wrapped figure (2^64 - 1 rounded up to 512 was 0: "Measured peak: 0 KiB").
void check_sizes(const Snapshot& s) {
  constexpr uint64_t kCap = uint64_t{1} << 62;
  uint64_t total = 0;
  const auto add = [&total](uint64_t v, const char* field) {
    if (v > kCap - total)
      fail(code::kTooLarge, field,
           Message{"error.snapshot.over62",
                   {{"field", field}, {"v", std::to_string(v)}, {"total", std::to_string(total)}}});
    total += v;
  };
  for (const Segment& seg : s.segments) {
    add(seg.total_size, "snapshot.segments.total_size");
    for (const Block& b : seg.blocks) {
      add(b.size, "snapshot.segments.blocks.size");
      add(b.requested_size, "snapshot.segments.blocks.requested_size");
    }
  }
  for (const auto& trace : s.device_traces)
    for (const Event& e : trace)
      if (e.action != Action::kOom) {
        add(e.size, "snapshot.device_traces.size");
        add(512, "snapshot.device_traces.size");  // rounded up to a multiple of 512
      }
}

Summary summarize(const Snapshot& s, const SummaryOptions& o) {
  check_sizes(s);
  return Summarizer(s, o).run();
}

}  // namespace snapshot
}  // namespace trainmem
