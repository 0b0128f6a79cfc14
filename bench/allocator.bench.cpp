// Replay speed of the caching allocator simulator (cpp/src/allocator/caching_allocator.cpp). Not
// part of the build; from the repository root (one line):
//   g++ -std=c++17 -O2 -Icpp/include cpp/src/allocator/caching_allocator.cpp
//   bench/allocator.bench.cpp -o /tmp/allocator.bench && /tmp/allocator.bench
// The trace imitates training steps: per layer, forward saves a few activations and frees
// temporaries; backward frees the saved tensors in reverse while gradients come and go; small
// (<= 1 MiB) and large tensors are mixed, with sizes jittered per step.
//
// Recorded 2026-12-01 (g++ 12 -O2, a 2-core AMD EPYC VM shared with other jobs, 100,608-event
// trace, best of 20 runs), before -> after the free-block index below:
//   default              12.2 -> 19.5 M events/s (8.2 -> 5.1 ms; ~70 free blocks per pool)
//   expandable_segments  35.0 -> 32.1 M events/s (2.9 -> 3.1 ms: few free blocks)
//   max_split+gc         12.3 -> 19.5 M events/s (8.2 -> 5.1 ms)
// WebAssembly (Debian emcc 3.1.6, node 20, same trace): with the core's flags (-Oz
// -sINLINING_LIMIT=0 -flto) the std::set version ran 4.4 M events/s; with this file compiled -O2
// (CMakeLists' TRAINMEM_HOT_FLAGS, link still -Oz -flto) default 9.8 -> 17.4 M events/s (10.3 ->
// 5.8 ms), expandable segments 22.5 -> 27.5, max_split+gc 9.8 -> 17.4.
// The 43,860-event trace that peak memory replays for the Llama-2-70B bench request (~130 free
// large-pool blocks of ~25 sizes): natively 13.2 -> 30.2 M events/s, in WebAssembly 10.6 -> 22.9.
// What changed (the results are identical event for event): the pools' free blocks, a std::set in
// PyTorch's BlockPool, are per stream 512 size classes (8 per power of two) of short arrays sorted
// by (size, address) with room at both ends, found through a two-level bitmap; handles up to 2^20
// index a dense array (a hash map beyond); Blocks come from a free list of their own. A flat sorted
// array per pool was slower than std::set (memmove of ~130 entries per insert and erase), and so
// were branch-free binary searches, here and in WebAssembly.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "trainmem/caching_allocator.hpp"

using namespace trainmem::allocator;

namespace {

std::vector<Event> make_trace(std::size_t target_events, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Event> t;
  t.reserve(target_events + 1024);
  uint64_t id = 1;
  const int layers = 48;
  auto alloc = [&](uint64_t size) {
    t.push_back(Event{Event::kAlloc, 0, id, size});
    return id++;
  };
  auto release = [&](uint64_t h) { t.push_back(Event{Event::kFree, 0, h, 0}); };
  while (t.size() < target_events) {
    const uint64_t batch = 8 + rng() % 3;  // the step's batch jitters
    std::vector<std::vector<uint64_t>> saved(layers);
    for (int l = 0; l < layers; ++l) {
      for (int k = 0; k < 4; ++k) saved[l].push_back(alloc(batch * (1u << 20) + rng() % 4096));
      const uint64_t tmp1 = alloc(batch * (3u << 20));
      const uint64_t tmp2 = alloc(64 * 1024 + rng() % 8192);
      release(tmp2);
      release(tmp1);
    }
    for (int l = layers - 1; l >= 0; --l) {
      const uint64_t g = alloc(batch * (1u << 20));
      const uint64_t s = alloc(4096 + rng() % 1024);
      for (uint64_t h : saved[l]) release(h);
      release(s);
      release(g);
    }
  }
  return t;
}

double best_events_per_second(const std::vector<Event>& trace, const Config& config) {
  double best = 0;
  uint64_t check = 0;
  for (int run = 0; run < 20; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const Stats s = replay(trace, config);
    const auto t1 = std::chrono::steady_clock::now();
    check += s.peak_reserved_bytes;
    const double sec = std::chrono::duration<double>(t1 - t0).count();
    best = std::max(best, static_cast<double>(trace.size()) / sec);
  }
  if (check == 0) std::printf("(no memory reserved?)\n");
  return best;
}

}  // namespace

int main() {
  const std::vector<Event> trace = make_trace(100000, 1);
  Config plain;
  Config expandable;
  expandable.expandable_segments = true;
  Config limited;
  limited.max_split_size = 256ull << 20;
  limited.capacity_bytes = 16ull << 30;
  limited.garbage_collection_threshold = 0.8;
  const struct {
    const char* name;
    Config config;
  } cases[] = {{"default", plain}, {"expandable_segments", expandable}, {"max_split+gc", limited}};
  for (const auto& c : cases) {
    const double eps = best_events_per_second(trace, c.config);
    const Stats s = replay(trace, c.config);
    std::printf("%-20s %zu events: %.1f M events/s (%.2f ms), peak reserved %.1f MiB\n", c.name,
                trace.size(), eps / 1e6, 1e3 * static_cast<double>(trace.size()) / eps,
                static_cast<double>(s.peak_reserved_bytes) / (1 << 20));
  }
  return 0;
}
