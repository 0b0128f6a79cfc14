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
#include "trainmem/snapshot.hpp"

namespace trainmem {
namespace snapshot {

const char* category_name(Category c) {
  switch (c) {
    case Category::kWeights:
      return "weights";
    case Category::kGradients:
      return "gradients";
    case Category::kOptimizerState:
      return "optimizerState";
    case Category::kActivations:
      return "activations";
    case Category::kTemporaries:
      return "temporaries";
    default:
      return "unattributed";
  }
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

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
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
  switch (p) {
    case kForward:
      return "forward";
    case kBackward:
      return "backward";
    case kRecompute:
      return "recompute";
    case kOptimizer:
      return "optimizer";
    case kZeroGrad:
      return "zero_grad";
    case kToDevice:
      return "weights";
    default:
      return "unknown";
  }
}

struct Life {
  int64_t alloc = kBefore, free = kNever;  // event indices
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

}  // namespace

Summary summarize(const Snapshot& s, const SummaryOptions& o) {
  Summary r;
  r.protocol = s.protocol;
  r.file_bytes = s.file_bytes;
  r.settings = s.settings;
  r.devices = s.device_traces.size();
  r.has_frames = !s.stacks.empty();
  // The device: the one asked for, else the one with the most trace entries.
  uint64_t dev = 0;
  if (o.device >= 0) {
    dev = static_cast<uint64_t>(o.device);
  } else {
    for (size_t d = 0; d < s.device_traces.size(); ++d)
      if (s.device_traces[d].size() > s.device_traces[dev].size()) dev = d;
  }
  r.device = dev;
  static const std::vector<Event> kEmpty;
  const std::vector<Event>& ev = dev < s.device_traces.size() ? s.device_traces[dev] : kEmpty;
  const int64_t n = static_cast<int64_t>(ev.size());
  r.events = ev.size();
  r.has_time =
      n > 0 && std::all_of(ev.begin(), ev.end(), [](const Event& e) { return e.has_time; });

  // Final state from the segments of this device.
  uint64_t final_reserved = 0;
  std::unordered_map<uint64_t, const Block*> final_live;
  for (const Segment& seg : s.segments) {
    if (seg.device != dev) continue;
    ++r.segments;
    final_reserved += seg.total_size;
    for (const Block& b : seg.blocks)
      if (b.state == BlockState::kActiveAllocated) {
        r.segment_allocated_bytes += b.size;
        final_live[b.address] = &b;
      }
  }
  r.segment_reserved_bytes = final_reserved;

  // Phases of every traceback once; per event below.
  std::vector<uint8_t> stack_phase(s.stacks.size());
  for (size_t i = 0; i < s.stacks.size(); ++i)
    stack_phase[i] = phase_of(s, static_cast<uint32_t>(i));
  auto phase = [&](uint32_t st) { return st == kNoStack ? kNoFrames : Phase(stack_phase[st]); };

  // ---- pass 1: lifetimes. memory_allocated falls at free_requested (CUDACachingAllocator.cpp
  // free(): allocated_bytes.decrease before the trace's FREE_REQUESTED), so that event ends one.
  std::vector<Life> lives;
  AddrMap live;  // addr -> life
  int64_t seg_delta = 0;
  std::vector<uint64_t> alloc_sizes;
  {  // Sized first: growing copies (a byte at a time in the -Oz WebAssembly module).
    size_t allocs = 0;
    for (const Event& e : ev) allocs += e.action == Action::kAlloc;
    lives.reserve(allocs + final_live.size() + 64);
    alloc_sizes.reserve(allocs);
  }
  for (int64_t i = 0; i < n; ++i) {
    const Event& e = ev[i];
    ++r.counts[static_cast<int>(e.action)];
    switch (e.action) {
      case Action::kAlloc: {
        Life l;
        l.alloc = i;
        l.bytes = round_size(e.size);
        l.stack = e.stack;
        if (const auto* s = live.find(e.addr)) lives[s->value].free = i;  // a missed free: end it
        live[e.addr] = lives.size();
        lives.push_back(l);
        alloc_sizes.push_back(e.size);
        break;
      }
      case Action::kFreeRequested: {
        if (auto* s = live.find(e.addr)) {
          lives[s->value].free = i;
          lives[s->value].free_stack = e.stack;
          live.erase(s);
        } else {  // allocated before recording began
          Life l;
          l.alloc = kBefore;
          l.free = i;
          l.bytes = round_size(e.size);
          l.free_stack = e.stack;
          lives.push_back(l);
        }
        break;
      }
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        seg_delta += static_cast<int64_t>(e.size);
        break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        seg_delta -= static_cast<int64_t>(e.size);
        break;
      default:
        break;
    }
  }
  // Blocks live at the end that the trace never allocated: live since before recording.
  for (const auto& kv : final_live) {
    if (live.find(kv.first)) continue;
    Life l;
    l.alloc = kBefore;
    l.bytes = round_size(kv.second->requested_size ? kv.second->requested_size : kv.second->size);
    l.stack = kv.second->stack;
    lives.push_back(l);
  }
  for (const Life& l : lives)
    if (l.alloc == kBefore) r.baseline_allocated_bytes += l.bytes;
  const int64_t base_reserved = static_cast<int64_t>(final_reserved) - seg_delta;
  if (base_reserved < 0)
    r.notes.push_back(
        "the trace frees more segments than the final state and the trace allocate: the "
        "reserved curve starts at 0");
  r.baseline_reserved_bytes = base_reserved > 0 ? static_cast<uint64_t>(base_reserved) : 0;

  // ---- steps. Optimizer runs: consecutive entries whose traceback is in torch/optim/ (entries
  // without frames neither start nor end a run); a step ends with its optimizer run.
  std::vector<int64_t> run_start, run_end, backward_start;
  {
    int64_t start = -1, last = -1;
    bool in_backward = false;
    for (int64_t i = 0; i < n; ++i) {
      const Phase p = phase(ev[i].stack);
      if (p == kNoFrames) continue;
      if (p == kOptimizer) {
        if (start < 0) start = i;
        last = i;
      } else if (start >= 0) {
        run_start.push_back(start);
        run_end.push_back(last);
        start = -1;
      }
      const bool bw = p == kBackward || p == kRecompute;
      if (bw && !in_backward) backward_start.push_back(i);
      if (p != kNoFrames) in_backward = bw;
    }
    if (start >= 0) {
      run_start.push_back(start);
      run_end.push_back(last);
    }
  }
  if (!run_end.empty()) {
    r.steps_method = "optimizer-frames";
    int64_t begin = 0;
    for (int64_t end : run_end) {
      Step st;
      st.start_event = static_cast<uint64_t>(begin);
      st.end_event = static_cast<uint64_t>(end);
      r.steps.push_back(st);
      begin = end + 1;
    }
  } else if (const uint64_t p = find_period(alloc_sizes)) {
    r.steps_method = "periodicity";
    r.period_events = p;
    // Step boundaries at every p-th allocation.
    uint64_t allocs = 0;
    int64_t begin = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (ev[i].action != Action::kAlloc) continue;
      if (allocs && allocs % p == 0) {
        Step st;
        st.start_event = static_cast<uint64_t>(begin);
        st.end_event = static_cast<uint64_t>(i - 1);
        r.steps.push_back(st);
        begin = i;
      }
      ++allocs;
    }
  }

  // ---- categories (docs/snapshot.md, "Categories")
  for (Life& l : lives) {
    if (l.alloc == kBefore) {
      if (l.free == kNever) {
        const Phase p = phase(l.stack);
        l.cat = p == kOptimizer  ? Category::kOptimizerState
                : p == kBackward ? Category::kGradients
                                 : Category::kWeights;
      } else {
        const Phase p = phase(l.free_stack);
        l.cat = p == kZeroGrad                        ? Category::kGradients
                : p == kOptimizer                     ? Category::kOptimizerState
                : (p == kBackward || p == kRecompute) ? Category::kActivations
                : p == kNoFrames                      ? Category::kUnattributed
                                                      : Category::kTemporaries;
      }
      continue;
    }
    switch (phase(l.stack)) {
      case kOptimizer: {
        // State outlives the optimizer run that created it; temporaries do not.
        auto it = std::upper_bound(run_start.begin(), run_start.end(), l.alloc);
        const size_t k = it == run_start.begin() ? 0 : (it - run_start.begin()) - 1;
        const int64_t end = k < run_end.size() ? run_end[k] : kNever;
        l.cat = l.free > end ? Category::kOptimizerState : Category::kTemporaries;
        break;
      }
      case kRecompute:
        l.cat = Category::kActivations;
        break;
      case kBackward:
        // A parameter's gradient is still live when the next optimizer run starts.
        l.cat = l.free >= next_after(run_start, l.alloc) ? Category::kGradients
                                                         : Category::kTemporaries;
        break;
      case kToDevice:
        l.cat = Category::kWeights;
        break;
      case kZeroGrad:
        l.cat = Category::kTemporaries;
        break;
      case kForward: {
        // Saved for the backward: lives into the next backward pass.
        const int64_t b = next_after(backward_start, l.alloc);
        l.cat = l.free == kNever ? Category::kWeights
                : b <= l.free    ? Category::kActivations
                                 : Category::kTemporaries;
        break;
      }
      default:
        l.cat = Category::kUnattributed;
    }
  }

  // ---- pass 2: the series and the peak. Sorted deltas at each event from the lives.
  std::vector<int64_t> delta(static_cast<size_t>(n) + 1, 0);
  for (const Life& l : lives) {
    if (l.alloc != kBefore) delta[l.alloc] += static_cast<int64_t>(l.bytes);
    if (l.free != kNever) delta[l.free] -= static_cast<int64_t>(l.bytes);
  }
  const double x0 = n > 0 ? static_cast<double>(ev[0].time_us) : 0;
  auto xof = [&](int64_t i) {
    return r.has_time ? static_cast<double>(ev[i].time_us) - x0 : static_cast<double>(i);
  };
  const uint32_t points = std::max<uint32_t>(2, std::min<uint32_t>(o.points, 10000));
  int64_t cur = static_cast<int64_t>(r.baseline_allocated_bytes);
  int64_t req = 0;  // requested bytes, relative (the baseline's requests are unknown)
  int64_t res = static_cast<int64_t>(r.baseline_reserved_bytes);
  AddrMap req_live;
  r.peak_allocated_bytes = static_cast<uint64_t>(cur);
  r.peak_reserved_bytes = static_cast<uint64_t>(res);
  SeriesPoint bucket;
  int64_t bucket_id = -1;
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
    } else if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap) {
      res += static_cast<int64_t>(e.size);
    } else if (e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap) {
      res -= static_cast<int64_t>(e.size);
    }
    const uint64_t ucur = cur > 0 ? static_cast<uint64_t>(cur) : 0;
    const uint64_t ures = res > 0 ? static_cast<uint64_t>(res) : 0;
    if (ucur > r.peak_allocated_bytes || !have_peak) {
      have_peak = true;
      r.peak_allocated_bytes = ucur;
      r.peak_event = static_cast<uint64_t>(i);
      r.peak_requested_bytes = req > 0 ? static_cast<uint64_t>(req) : 0;
      r.peak_reserved_at_peak = ures;
    }
    if (ures > r.peak_reserved_bytes) {
      r.peak_reserved_bytes = ures;
      r.peak_reserved_event = static_cast<uint64_t>(i);
    }
    const int64_t b = i * points / n;
    if (b != bucket_id) {
      if (bucket_id >= 0) r.series.push_back(bucket);
      bucket_id = b;
      bucket = SeriesPoint{static_cast<uint64_t>(i), xof(i), ucur, 0, ures};
      bucket.requested_bytes = req > 0 ? static_cast<uint64_t>(req) : 0;
    } else {
      if (ucur > bucket.allocated_bytes) {
        bucket.allocated_bytes = ucur;
        bucket.event = static_cast<uint64_t>(i);
        bucket.x = xof(i);
        bucket.requested_bytes = req > 0 ? static_cast<uint64_t>(req) : 0;
      }
      bucket.reserved_bytes = std::max(bucket.reserved_bytes, ures);
    }
    while (step_k < r.steps.size() && r.steps[step_k].end_event < static_cast<uint64_t>(i))
      ++step_k;
    if (step_k < r.steps.size() && r.steps[step_k].start_event <= static_cast<uint64_t>(i))
      r.steps[step_k].peak_allocated_bytes = std::max(r.steps[step_k].peak_allocated_bytes, ucur);
  }
  if (bucket_id >= 0) r.series.push_back(bucket);
  if (n == 0) {  // segments only: the state when the snapshot was taken
    r.peak_allocated_bytes = r.segment_allocated_bytes;
    r.peak_reserved_bytes = r.peak_reserved_at_peak = final_reserved;
    r.notes.push_back("no trace entries: the figures are the state when the snapshot was taken");
  }
  if (n > 0) {
    r.peak_x = xof(static_cast<int64_t>(r.peak_event));
    r.peak_time_us = ev[r.peak_event].time_us;
    r.peak_phase = phase_name(phase(ev[r.peak_event].stack));
  }
  for (size_t k = 0; k < r.steps.size(); ++k) {
    Step& st = r.steps[k];
    st.start_x = xof(static_cast<int64_t>(st.start_event));
    st.end_x = xof(static_cast<int64_t>(st.end_event));
    if (r.peak_event >= st.start_event && r.peak_event <= st.end_event)
      r.peak_step = static_cast<int64_t>(k);
    for (uint64_t i = st.start_event; i <= st.end_event; ++i)
      if (ev[i].action == Action::kAlloc && phase(ev[i].stack) == kForward) {
        st.forward_event = static_cast<int64_t>(i);
        break;
      }
  }

  // ---- what was live at the peak, and gradients kept into the next step's forward
  const int64_t P = n > 0 ? static_cast<int64_t>(r.peak_event) : kNever - 1;
  std::map<int64_t, TopFrame> groups;  // by frame index (-1: no frames)
  std::map<int64_t, std::array<uint64_t, kCategories>> group_cats;
  // A gradient counts for the steps that start after it was allocated and whose forward
  // begins before it is freed: a contiguous range of steps (a difference array over steps).
  std::vector<int64_t> kept(r.steps.size() + 1, 0);
  for (const Life& l : lives) {
    if (l.cat == Category::kGradients && !r.steps.empty()) {
      // The first step that starts after the allocation (steps are in order).
      const size_t a =
          static_cast<size_t>(std::upper_bound(r.steps.begin(), r.steps.end(), l.alloc,
                                               [](int64_t x, const Step& st) {
                                                 return x < static_cast<int64_t>(st.start_event);
                                               }) -
                              r.steps.begin());
      size_t b = a;
      while (b < r.steps.size() && r.steps[b].forward_event >= 0 &&
             r.steps[b].forward_event < l.free)
        ++b;
      if (b > a) {
        kept[a] += static_cast<int64_t>(l.bytes);
        kept[b] -= static_cast<int64_t>(l.bytes);
      }
    }
    const bool at_peak = n == 0 ? l.free == kNever : (l.alloc <= P && l.free > P);
    if (!at_peak) continue;
    r.at_peak[static_cast<int>(l.cat)] += l.bytes;
    int64_t key = -1;
    if (l.stack != kNoStack) {
      const auto& fr = s.stacks[l.stack];
      key = fr.front();
      for (uint32_t f : fr) {  // the innermost frame outside torch/: the user's line
        const Frame& x = s.frames[f];
        if (!contains(x.filename, "torch/") && !x.filename.empty() && x.filename[0] != '<') {
          key = f;
          break;
        }
      }
    }
    TopFrame& g = groups[key];
    g.bytes += l.bytes;
    ++g.blocks;
    group_cats[key][static_cast<int>(l.cat)] += l.bytes;
  }
  int64_t run = 0;
  for (size_t k = 0; k < r.steps.size(); ++k) {
    run += kept[k];
    if (r.steps[k].forward_event >= 0)
      r.steps[k].gradient_bytes_at_forward = static_cast<uint64_t>(run);
  }
  for (size_t k = 1; k < r.steps.size(); ++k)
    if (r.steps[k].gradient_bytes_at_forward > r.kept_gradient_bytes) {
      r.kept_gradient_bytes = r.steps[k].gradient_bytes_at_forward;
      r.kept_gradient_step = static_cast<int64_t>(k);
    }
  for (auto& kv : groups) {
    TopFrame& g = kv.second;
    if (kv.first >= 0) {
      const Frame& f = s.frames[static_cast<size_t>(kv.first)];
      g.filename = f.filename;
      g.name = f.name;
      g.line = f.line;
    } else {
      g.name = "(no frames: allocated before recording began or recorded without context)";
    }
    const auto& c = group_cats[kv.first];
    g.category = static_cast<Category>(std::max_element(c.begin(), c.end()) - c.begin());
    r.top_frames.push_back(g);
  }
  std::sort(r.top_frames.begin(), r.top_frames.end(), [](const TopFrame& a, const TopFrame& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.filename + a.name < b.filename + b.name;
  });
  if (r.top_frames.size() > o.top_frames) r.top_frames.resize(o.top_frames);

  // ---- replay: blocks live before recording first, then the trace's allocs and frees. A block
  // returns to the pool at free_completed (CUDACachingAllocator.cpp free_block, after its stream
  // events), so that is the simulator's free when the trace has them.
  if (n > 0 && r.counts[static_cast<int>(Action::kAlloc)] > 0) {
    const bool completed = r.counts[static_cast<int>(Action::kFreeCompleted)] > 0;
    std::vector<allocator::Event> trace;
    trace.reserve(lives.size() * 2);
    for (const Life& l : lives)
      if (l.alloc == kBefore) {
        allocator::Event a;
        a.kind = allocator::Event::kAlloc;
        a.id = ~static_cast<uint64_t>(trace.size());  // ids of their own: addresses may recur
        a.size = l.bytes;
        trace.push_back(a);
      }
    // Map a pre-existing block's address to its id for the trace's free of it.
    std::unordered_map<uint64_t, uint64_t> before_id;
    {
      size_t k = 0;
      for (const Life& l : lives)
        if (l.alloc == kBefore) {
          if (l.free != kNever) before_id[ev[l.free].addr] = trace[k].id;
          ++k;
        }
    }
    const Action free_action = completed ? Action::kFreeCompleted : Action::kFreeRequested;
    for (int64_t i = 0; i < n; ++i) {
      const Event& e = ev[i];
      allocator::Event x;
      x.stream = e.stream;
      if (e.action == Action::kAlloc) {
        x.kind = allocator::Event::kAlloc;
        x.id = e.addr;
        x.size = e.size;
      } else if (e.action == free_action) {
        x.kind = allocator::Event::kFree;
        auto it = before_id.find(e.addr);
        x.id = it != before_id.end() ? it->second : e.addr;
        if (it != before_id.end()) before_id.erase(it);
      } else {
        continue;
      }
      trace.push_back(x);
    }
    allocator::Config cfg;
    cfg.expandable_segments = s.settings.expandable_segments;
    if (s.settings.max_split_size && s.settings.max_split_size < (1ULL << 62))
      cfg.max_split_size = s.settings.max_split_size;
    if (s.settings.garbage_collection_threshold > 0 && s.settings.garbage_collection_threshold < 1)
      cfg.garbage_collection_threshold = s.settings.garbage_collection_threshold;
    std::vector<allocator::SegmentInfo> segs;
    const allocator::Stats st = allocator::replay(trace, cfg, false, &segs);
    r.replayed = true;
    r.replay_reserved_peak = st.peak_reserved_bytes;
    r.replay_allocated_peak = st.peak_allocated_bytes;
    r.replay_segments = segs.size();
  }

  if (r.counts[static_cast<int>(Action::kFreeRequested)] == 0 &&
      r.counts[static_cast<int>(Action::kFreeCompleted)] > 0)
    r.notes.push_back("the trace has free_completed entries but no free_requested ones");
  if (n > 0 && !r.has_frames)
    r.notes.push_back(
        "the trace has no frames (recorded with context=None): steps come from the allocation "
        "pattern and categories are unattributed");
  return r;
}

}  // namespace snapshot
}  // namespace trainmem
