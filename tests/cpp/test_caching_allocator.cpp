// The CUDA caching allocator simulator (cpp/src/allocator/caching_allocator.cpp) on hand-made
// sequences. Every expected value is worked out by hand from the rule named beside it (function of
// c10/cuda/CUDACachingAllocator.cpp, pytorch/pytorch 001074d2); docs/allocator.md lists the rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "trainmem/caching_allocator.hpp"

using namespace trainmem::allocator;

namespace {
constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GiB = 1024 * MiB;

uint64_t segment_bytes(const std::vector<SegmentInfo>& segs) {
  uint64_t s = 0;
  for (const auto& g : segs) s += g.size;
  return s;
}
}  // namespace

TEST_CASE("allocator: round_size rounds to 512 B, or to power-of-two divisions", "[allocator]") {
  // round_size: size < kMinBlockSize (512) -> 512; else 512 * ceil(size / 512).
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(1000) == 1024);
  // 5 GiB is a multiple of 512, so 5 GiB + 1 -> 5 GiB + 512 = 5,368,709,632.
  CHECK(CachingAllocator::round_size(5 * GiB + 1) == 5368709632ULL);
  // divisions = 1 is off: 5 MiB + 1 -> 5 MiB + 512.
  CHECK(CachingAllocator::round_size(5 * MiB + 1, 1) == 5 * MiB + 512);
  // round_size only divides when size > 512 x divisions: 1200 <= 2048 with 4 divisions, so 1200
  // -> 1536 (512 rounding), not the 1280 of the comment above roundup_power2_next_division.
  CHECK(CachingAllocator::round_size(1200, 4) == 1536);
  // roundup_power2_next_division(5 MiB + 1, 4): floor 4 MiB, step 4 MiB >> 2 = 1 MiB, so 6 MiB.
  CHECK(CachingAllocator::round_size(5 * MiB + 1, 4) == 6 * MiB);
  // (600 MiB, 8): floor 512 MiB, step 64 MiB; 600 / 64 = 9.4 -> 10 x 64 = 640 MiB.
  CHECK(CachingAllocator::round_size(600 * MiB, 8) == 640 * MiB);
  // A power of two stays as it is.
  CHECK(CachingAllocator::round_size(8 * MiB, 4) == 8 * MiB);
  // (5 GiB + 1, 2): floor 4 GiB, step 2 GiB -> 6 GiB = 6,442,450,944.
  CHECK(CachingAllocator::round_size(5 * GiB + 1, 2) == 6442450944ULL);
}

TEST_CASE("allocator: allocation_size picks the segment a miss creates", "[allocator]") {
  // get_allocation_size: <= kSmallSize (1 MiB) -> 2 MiB; < kMinLargeAlloc (10 MiB) -> 20 MiB;
  // else kRoundLarge (2 MiB) x ceil(size / 2 MiB).
  CHECK(CachingAllocator::allocation_size(512) == 2 * MiB);
  CHECK(CachingAllocator::allocation_size(1 * MiB) == 2 * MiB);
  CHECK(CachingAllocator::allocation_size(1 * MiB + 512) == 20 * MiB);
  CHECK(CachingAllocator::allocation_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CachingAllocator::allocation_size(10 * MiB) == 10 * MiB);
  CHECK(CachingAllocator::allocation_size(11 * MiB) == 12 * MiB);
  // 5 GiB + 512 -> the next multiple of 2 MiB: 5 GiB + 2 MiB = 5,370,806,272.
  CHECK(CachingAllocator::allocation_size(5 * GiB + 512) == 5370806272ULL);
}

TEST_CASE("allocator: small pool packs requests <= 1 MiB into 2 MiB segments", "[allocator]") {
  CachingAllocator a;
  // 1000 B -> 1024 B (round_size); small pool; miss -> one 2 MiB segment, split because the rest
  // 2 MiB - 1024 >= 512 (should_split, small pool).
  REQUIRE(a.malloc(1, 1000));
  CHECK(a.stats().allocated_bytes == 1024);
  CHECK(a.stats().requested_bytes == 1000);
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  // 1 MiB is still small (size <= kSmallSize): best fit is the 2 MiB - 1024 rest; the new rest
  // 2 MiB - 1024 - 1 MiB = 1,047,552 >= 512 -> split again. Still one segment.
  REQUIRE(a.malloc(2, 1 * MiB));
  CHECK(a.stats().allocated_bytes == 1024 + 1 * MiB);
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  // Exactly the rest (1,047,552 B, a multiple of 512): remaining 0 < 512 -> no split.
  REQUIRE(a.malloc(3, 1047552));
  CHECK(a.stats().allocated_bytes == 2 * MiB);
  auto segs = a.segments();
  REQUIRE(segs.size() == 1);
  CHECK(segs[0].small_pool);
  CHECK(segs[0].blocks == 3);
  CHECK(segs[0].allocated_bytes == 2 * MiB);
  // The segment is full: 1 B -> 512 B needs a second 2 MiB segment.
  REQUIRE(a.malloc(4, 1));
  CHECK(a.stats().reserved_bytes == 4 * MiB);
  CHECK(a.stats().num_device_allocs == 2);
  // free_block merges the three blocks of segment 1 back into one 2 MiB block; empty_cache
  // (release_cached_blocks) frees that whole segment, not the one holding handle 4.
  a.free(1);
  a.free(2);
  a.free(3);
  segs = a.segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].blocks == 1);
  CHECK(segs[0].allocated_bytes == 0);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  CHECK(a.stats().num_device_frees == 1);
  CHECK(a.stats().allocated_bytes == 512);
}

TEST_CASE("allocator: small pool splits when exactly 512 B would remain", "[allocator]") {
  CachingAllocator a;
  REQUIRE(a.malloc(1, 1 * MiB));  // 2 MiB segment: [1 MiB used][1 MiB free]
  // 1 MiB - 512 from the 1 MiB rest leaves 512 >= kMinBlockSize -> split (should_split).
  REQUIRE(a.malloc(2, 1 * MiB - 512));
  auto segs = a.segments();
  REQUIRE(segs.size() == 1);
  CHECK(segs[0].blocks == 3);
  // The 512 B block is the best fit for a 512 B request: no new segment.
  REQUIRE(a.malloc(3, 100));
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  CHECK(a.stats().allocated_bytes == 2 * MiB);
  CHECK(a.segments()[0].blocks == 3);
}

TEST_CASE("allocator: large pool segments and the > 1 MiB split rule", "[allocator]") {
  CachingAllocator a;
  // 3 MiB > kSmallSize: large pool; 3 MiB < kMinLargeAlloc -> 20 MiB segment (kLargeBuffer);
  // rest 17 MiB > 1 MiB -> split.
  REQUIRE(a.malloc(1, 3 * MiB));
  CHECK(a.stats().reserved_bytes == 20 * MiB);
  CHECK(a.stats().allocated_bytes == 3 * MiB);
  // 16 MiB from the 17 MiB rest would leave exactly 1 MiB, not > kSmallSize: no split, the
  // whole 17 MiB block is handed out (allocated_bytes counts block sizes).
  REQUIRE(a.malloc(2, 16 * MiB));
  CHECK(a.stats().allocated_bytes == 20 * MiB);
  CHECK(a.stats().requested_bytes == 19 * MiB);
  CHECK(a.stats().reserved_bytes == 20 * MiB);
  // 12 MiB + 1 -> 12 MiB + 512 >= 10 MiB: its own segment, 2 MiB multiple -> 14 MiB; the rest
  // 2 MiB - 512 > 1 MiB -> split.
  REQUIRE(a.malloc(3, 12 * MiB + 1));
  CHECK(a.stats().reserved_bytes == 34 * MiB);
  CHECK(a.stats().allocated_bytes == 32 * MiB + 512);
  // 19 MiB - 512 in a fresh 20 MiB segment leaves 1 MiB + 512 > 1 MiB -> split.
  REQUIRE(a.malloc(4, 19 * MiB - 512));
  CHECK(a.stats().reserved_bytes == 54 * MiB);
  CHECK(a.stats().allocated_bytes == 51 * MiB);
  const auto segs = a.segments();
  REQUIRE(segs.size() == 3);
  CHECK(segs[0].blocks == 2);  // [3 MiB][17 MiB], no free block left
  CHECK(segs[0].allocated_bytes == 20 * MiB);
  CHECK(segs[1].size == 14 * MiB);
  CHECK(segs[1].blocks == 2);
  CHECK(segs[2].blocks == 2);
  CHECK(!segs[2].small_pool);
}

TEST_CASE("allocator: a request above 4 GiB gets its own 2 MiB-rounded segment", "[allocator]") {
  CachingAllocator a;
  // 5 GiB + 1 -> 5 GiB + 512 (round_size) -> segment 5 GiB + 2 MiB (get_allocation_size); the
  // rest 2 MiB - 512 > 1 MiB -> split.
  REQUIRE(a.malloc(1, 5 * GiB + 1));
  CHECK(a.stats().allocated_bytes == 5 * GiB + 512);
  CHECK(a.stats().reserved_bytes == 5 * GiB + 2 * MiB);
  CHECK(a.stats().largest_request_bytes == 5 * GiB + 512);
  // A second 6 GiB tensor: its own 6 GiB segment (a multiple of 2 MiB, no rest).
  REQUIRE(a.malloc(2, 6 * GiB));
  CHECK(a.stats().reserved_bytes == 11 * GiB + 2 * MiB);
  CHECK(a.stats().peak_allocated_bytes == 11 * GiB + 512);
  a.free(1);
  // 4 GiB fits the cached 5 GiB + 2 MiB block (best fit): split, rest 1 GiB + 2 MiB.
  REQUIRE(a.malloc(3, 4 * GiB));
  CHECK(a.stats().reserved_bytes == 11 * GiB + 2 * MiB);
  CHECK(a.stats().allocated_bytes == 10 * GiB);
  CHECK(a.stats().num_device_allocs == 2);
}

TEST_CASE("allocator: best fit takes the smallest cached block that holds the request",
          "[allocator]") {
  CachingAllocator a;
  // Three segments of their own size (>= 10 MiB, multiples of 2 MiB): 30, 24 and 40 MiB.
  REQUIRE(a.malloc(1, 30 * MiB));
  REQUIRE(a.malloc(2, 24 * MiB));
  REQUIRE(a.malloc(3, 40 * MiB));
  a.free(1);
  a.free(2);
  a.free(3);
  CHECK(a.stats().reserved_bytes == 94 * MiB);
  // 22 MiB: smallest cached block >= 22 MiB is the 24 MiB one (get_free_block lower_bound);
  // rest 2 MiB > 1 MiB -> split.
  REQUIRE(a.malloc(4, 22 * MiB));
  // 25 MiB: the 30 MiB block; rest 5 MiB -> split.
  REQUIRE(a.malloc(5, 25 * MiB));
  CHECK(a.stats().reserved_bytes == 94 * MiB);
  auto segs = a.segments();  // in address order: 30, 24, 40 MiB
  REQUIRE(segs.size() == 3);
  CHECK(segs[0].allocated_bytes == 25 * MiB);
  CHECK(segs[1].allocated_bytes == 22 * MiB);
  CHECK(segs[2].allocated_bytes == 0);
  // 41 MiB fits none (40 < 41): a new 42 MiB segment.
  REQUIRE(a.malloc(6, 41 * MiB));
  CHECK(a.stats().reserved_bytes == 136 * MiB);
}

TEST_CASE("allocator: among thousands of equal free blocks best fit takes the lowest address",
          "[allocator]") {
  // 4,000 requests of 512 B share one 2 MiB small segment (4,000 x 512 = 2,048,000 B; the
  // tail of 49,152 B stays free); freeing the odd ones, in a shuffled order, leaves 1,999 free
  // blocks of 512 B (block 3,999 coalesces with the tail): one size class of thousands of
  // entries, filed in any order.
  CachingAllocator a;
  for (uint64_t id = 0; id < 4000; ++id) REQUIRE(a.malloc(id, 512));
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  std::vector<uint64_t> odd;
  for (uint64_t id = 1; id < 4000; id += 2) odd.push_back(id);
  std::shuffle(odd.begin(), odd.end(), std::mt19937_64(3));
  for (uint64_t id : odd) a.free(id);
  REQUIRE(a.segments().size() == 1);
  CHECK(a.segments()[0].blocks == 4000);  // 3,999 blocks and the tail with block 3,999
  // get_free_block: lower_bound on (size, address): the 512 B hole of block 1, taken whole.
  REQUIRE(a.malloc(5000, 512));
  CHECK(a.segments()[0].blocks == 4000);
  // free_block merges free neighbours: block 0 sits between the segment's start and the new
  // block (no merge), block 2 merges with hole 3 -> one block fewer. Had the new block gone to
  // any other hole, 0, 1, 2 and 3 would merge into one block (3,997).
  a.free(0);
  a.free(2);
  CHECK(a.segments()[0].blocks == 3999);
  // Every hole is still found: 1,998 more requests of 512 B fill them without a new segment.
  for (uint64_t id = 6000; id < 6000 + 1998; ++id) REQUIRE(a.malloc(id, 512));
  CHECK(a.stats().reserved_bytes == 2 * MiB);
}

TEST_CASE("allocator: blocks never move between streams", "[allocator]") {
  CachingAllocator a;
  REQUIRE(a.malloc(1, 3 * MiB, 0));  // stream 0: 20 MiB segment
  a.free(1);
  // Stream 1 cannot take stream 0's cached 20 MiB block (BlockComparator orders by stream
  // first; get_free_block checks the stream): a second 20 MiB segment.
  REQUIRE(a.malloc(2, 3 * MiB, 1));
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  // Stream 0 reuses its own block.
  REQUIRE(a.malloc(3, 3 * MiB, 0));
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  // A block freed on stream 1 returns to stream 1's pool: stream 0 still misses.
  a.free(2);
  // Stream 0 has 17 MiB free only; 18 MiB >= kMinLargeAlloc: its own 18 MiB segment.
  REQUIRE(a.malloc(4, 18 * MiB, 0));
  CHECK(a.stats().reserved_bytes == 58 * MiB);
  const auto segs = a.segments();
  REQUIRE(segs.size() == 3);
  CHECK(segs[0].stream == 0);
  CHECK(segs[1].stream == 1);
  CHECK(segs[1].allocated_bytes == 0);
  CHECK(segs[2].stream == 0);
}

TEST_CASE("allocator: freed neighbours coalesce", "[allocator]") {
  CachingAllocator a;
  // One 20 MiB segment: a = 3 MiB (rest 17), b = 4 MiB (rest 13), c = 12 MiB: 13 - 12 = 1 MiB is
  // not > 1 MiB, so c takes the whole 13 MiB. Blocks [a 3][b 4][c 13].
  REQUIRE(a.malloc(1, 3 * MiB));
  REQUIRE(a.malloc(2, 4 * MiB));
  REQUIRE(a.malloc(3, 12 * MiB));
  CHECK(a.stats().allocated_bytes == 20 * MiB);
  CHECK(a.segments()[0].blocks == 3);
  // At the reserved peak (the 20 MiB segment's cudaMalloc, handle 1): 17 MiB of the split
  // segment was inactive (alloc_found_block: a new split inactive block of remaining->size).
  CHECK(a.stats().inactive_split_bytes_at_peak == 17 * MiB);
  CHECK(a.stats().allocated_bytes_at_reserved_peak == 3 * MiB);
  // free_block: b's neighbours are in use -> no merge; then a merges with b -> one 7 MiB block.
  a.free(2);
  CHECK(a.segments()[0].blocks == 3);
  a.free(1);
  CHECK(a.segments()[0].blocks == 2);
  // 7 MiB fits only the merged block (3 and 4 MiB apart would not): no new segment; the rest 0.
  REQUIRE(a.malloc(4, 7 * MiB));
  CHECK(a.stats().reserved_bytes == 20 * MiB);
  CHECK(a.stats().num_device_allocs == 1);
  // Freeing everything gives back one 20 MiB block, which empty_cache releases.
  a.free(4);
  a.free(3);
  REQUIRE(a.segments().size() == 1);
  CHECK(a.segments()[0].blocks == 1);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes == 0);
  CHECK(a.segments().empty());
}

TEST_CASE("allocator: max_split_size keeps oversize blocks whole", "[allocator]") {
  Config c;
  c.max_split_size = 100 * MiB;
  CachingAllocator a(c);
  // 200 MiB >= max_split_size: should_split is false (size < max_split_size fails).
  REQUIRE(a.malloc(1, 200 * MiB));
  a.free(1);
  // 50 MiB < max_split_size may not take the cached 200 MiB block (get_free_block: "Do not
  // return an oversized block for a large request"): a new 50 MiB segment.
  REQUIRE(a.malloc(2, 50 * MiB));
  CHECK(a.stats().reserved_bytes == 250 * MiB);
  // 190 MiB is oversize: the 200 MiB block is < 190 + 20 MiB (kLargeBuffer) larger -> taken
  // whole, not split.
  REQUIRE(a.malloc(3, 190 * MiB));
  CHECK(a.stats().reserved_bytes == 250 * MiB);
  CHECK(a.stats().allocated_bytes == 250 * MiB);
  CHECK(a.stats().requested_bytes == 240 * MiB);
  CHECK(a.segments()[0].blocks == 1);
  a.free(3);
  // 180 MiB: 200 >= 180 + 20 -> refused (the limit is strict); a new 180 MiB segment.
  REQUIRE(a.malloc(4, 180 * MiB));
  CHECK(a.stats().reserved_bytes == 430 * MiB);
  // Below max_split_size the large pool still splits: 3 MiB -> 20 MiB segment, rest 17 MiB.
  REQUIRE(a.malloc(5, 3 * MiB));
  CHECK(a.stats().reserved_bytes == 450 * MiB);
  CHECK(a.segments().back().blocks == 2);
}

TEST_CASE("allocator: OOM frees the cache and retries, then fails", "[allocator]") {
  Config c;
  c.capacity_bytes = 100 * MiB;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 60 * MiB));
  REQUIRE(a.malloc(2, 30 * MiB));
  a.free(1);  // 60 MiB cached
  // 70 MiB: no cached block fits; cudaMalloc(70 MiB) on 90 reserved of 100 fails; no
  // max_split_size so release_available_cached_blocks frees nothing; release_cached_blocks frees
  // the 60 MiB segment; the retry (num_alloc_retries + 1) fits: 30 + 70 = 100 <= 100.
  REQUIRE(a.malloc(3, 70 * MiB));
  CHECK(a.stats().reserved_bytes == 100 * MiB);
  CHECK(a.stats().num_alloc_retries == 1);
  CHECK(a.stats().num_ooms == 0);
  CHECK(a.stats().num_device_frees == 1);
  CHECK(a.stats().num_device_allocs == 3);
  CHECK(a.stats().peak_reserved_bytes == 100 * MiB);
  // 1 MiB needs a 2 MiB small segment: 102 > 100; nothing cached to free; the retry fails too.
  CHECK_FALSE(a.malloc(4, 1 * MiB));
  CHECK(a.stats().num_alloc_retries == 2);
  CHECK(a.stats().num_ooms == 1);
  CHECK(a.stats().failed_request_bytes == 2 * MiB);  // "Tried to allocate" names alloc_size
  CHECK(a.stats().allocated_bytes == 100 * MiB);
  // A later OOM does not replace the first failed request.
  CHECK_FALSE(a.malloc(5, 50 * MiB));
  CHECK(a.stats().num_ooms == 2);
  CHECK(a.stats().failed_request_bytes == 2 * MiB);
}

TEST_CASE("allocator: OOM retry above 4 GiB", "[allocator]") {
  Config c;
  c.capacity_bytes = 80 * GiB;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 40 * GiB));
  REQUIRE(a.malloc(2, 30 * GiB));
  a.free(1);
  // 45 GiB: 70 + 45 > 80 fails; release_cached_blocks frees 40 GiB; 30 + 45 = 75 <= 80.
  REQUIRE(a.malloc(3, 45 * GiB));
  CHECK(a.stats().reserved_bytes == 75 * GiB);
  CHECK(a.stats().peak_reserved_bytes == 75 * GiB);
  CHECK(a.stats().num_alloc_retries == 1);
  // 6 GiB: 75 + 6 > 80 and nothing is cached: OOM naming 6 GiB.
  CHECK_FALSE(a.malloc(4, 6 * GiB));
  CHECK(a.stats().failed_request_bytes == 6 * GiB);
}

TEST_CASE("allocator: release_available_cached_blocks frees oversize blocks first", "[allocator]") {
  Config c;
  c.capacity_bytes = 400 * MiB;
  c.max_split_size = 100 * MiB;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 150 * MiB));
  REQUIRE(a.malloc(2, 120 * MiB));
  REQUIRE(a.malloc(3, 100 * MiB));  // 100 >= max_split_size: oversize too
  a.free(1);
  a.free(2);
  a.free(3);
  CHECK(a.stats().reserved_bytes == 370 * MiB);
  // 200 MiB: no cached block holds it; 370 + 200 > 400 fails. release_available_cached_blocks:
  // key = max(200, 100) = 200 MiB; no single block that large, so from the largest down: 150
  // (150 < 200, go on), 120 (270 >= 200, stop). The second alloc_block fits: 100 + 200 = 300.
  // Not a retry (that is only the one after release_cached_blocks), and the 100 MiB block stays.
  REQUIRE(a.malloc(4, 200 * MiB));
  CHECK(a.stats().reserved_bytes == 300 * MiB);
  CHECK(a.stats().num_device_frees == 2);
  CHECK(a.stats().num_alloc_retries == 0);
  a.free(4);
  // 150 MiB: the cached 200 MiB block is >= 150 + 20 MiB larger, so not reused; 300 + 150 > 400
  // fails; a single oversize block >= 150 MiB (the 200 MiB one) is freed: 100 + 150 = 250.
  REQUIRE(a.malloc(5, 150 * MiB));
  CHECK(a.stats().reserved_bytes == 250 * MiB);
  CHECK(a.stats().num_device_frees == 3);
  CHECK(a.segments().size() == 2);
}

TEST_CASE("allocator: empty_cache frees only segments with no block in use", "[allocator]") {
  const std::vector<Event> trace = {
      {Event::kAlloc, 0, 1, 1000},      // small: 2 MiB segment
      {Event::kAlloc, 0, 2, 3 * MiB},   // large: 20 MiB segment
      {Event::kAlloc, 0, 3, 30 * MiB},  // large: 30 MiB segment
      {Event::kFree, 0, 1, 0},         {Event::kFree, 0, 3, 0}, {Event::kEmptyCache, 0, 0, 0},
  };
  std::vector<SegmentInfo> segs;
  const Stats s = replay(trace, Config{}, false, &segs);
  // release_cached_blocks frees the 2 MiB and 30 MiB segments; the 20 MiB one holds handle 2.
  CHECK(s.peak_reserved_bytes == 52 * MiB);
  CHECK(s.reserved_bytes == 20 * MiB);
  CHECK(s.num_device_frees == 2);
  REQUIRE(segs.size() == 1);
  CHECK(segs[0].size == 20 * MiB);
  CHECK(segs[0].allocated_bytes == 3 * MiB);
}

TEST_CASE("allocator: garbage collection frees the oldest cached segments", "[allocator]") {
  Config c;
  c.capacity_bytes = 100 * MiB;
  c.garbage_collection_threshold = 0.5;  // gc_threshold = 50 MiB
  CachingAllocator a(c);
  // Age = get_free_block calls on the large pool since the block was cached (gc_count).
  REQUIRE(a.malloc(1, 20 * MiB));  // call 1; reserved 0 <= 50: no GC; segment A (20 MiB)
  a.free(1);                       // A cached at count 1
  REQUIRE(a.malloc(2, 22 * MiB));  // call 2; A too small; 20 <= 50: no GC; B (22 MiB)
  a.free(2);                       // B cached at 2
  REQUIRE(a.malloc(3, 24 * MiB));  // call 3; 42 <= 50: no GC; C (24 MiB)
  a.free(3);                       // C cached at 3
  CHECK(a.stats().reserved_bytes == 66 * MiB);
  // 26 MiB (call 4): no cached block fits; 66 > 50 -> target 16 MiB. Ages A 3, B 2, C 1, mean
  // 2: A and B (>= 2) are freed in one pass (42 MiB >= 16); C stays. Then 24 + 26 = 50 MiB.
  REQUIRE(a.malloc(4, 26 * MiB));
  CHECK(a.stats().reserved_bytes == 50 * MiB);
  CHECK(a.stats().num_device_frees == 2);
  CHECK(a.stats().num_alloc_retries == 0);
  REQUIRE(a.segments().size() == 2);
  CHECK(a.segments()[0].size == 24 * MiB);

  // Without a capacity (PyTorch: without set_per_process_memory_fraction) GC never runs.
  Config off = c;
  off.capacity_bytes = 0;
  CachingAllocator b(off);
  for (uint64_t i = 0; i < 3; ++i) {
    REQUIRE(b.malloc(i, (20 + 2 * i) * MiB));
    b.free(i);
  }
  REQUIRE(b.malloc(9, 26 * MiB));
  CHECK(b.stats().reserved_bytes == 92 * MiB);
}

TEST_CASE("allocator: garbage collection repeats passes until the target", "[allocator]") {
  Config c;
  c.capacity_bytes = 100 * MiB;
  c.garbage_collection_threshold = 0.5;  // 50 MiB
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 12 * MiB));  // call 1: A 12 MiB
  a.free(1);                       // A at 1
  REQUIRE(a.malloc(2, 14 * MiB));  // call 2: 12 <= 50, B 14
  REQUIRE(a.malloc(3, 16 * MiB));  // call 3: 26 <= 50, C 16
  REQUIRE(a.malloc(4, 22 * MiB));  // call 4: 42 <= 50, D 22 -> reserved 64
  a.free(2);
  a.free(3);
  a.free(4);  // B, C, D at 4
  // 30 MiB (call 5): nothing fits; 64 > 50 -> target 14 MiB. Ages A 4, B C D 1: mean 7/4 = 1.75
  // frees A only (12 < 14); next pass: mean of B C D = 3/3 = 1 frees all three (a pass does not
  // stop at the target). Reserved 0, then the 30 MiB segment.
  REQUIRE(a.malloc(5, 30 * MiB));
  CHECK(a.stats().num_device_frees == 4);
  CHECK(a.stats().reserved_bytes == 30 * MiB);
  CHECK(a.stats().peak_reserved_bytes == 64 * MiB);
}

TEST_CASE("allocator: expandable segments map pages instead of new segments", "[allocator]") {
  Config c;
  c.expandable_segments = true;
  CachingAllocator a(c);
  // Small pool: one segment for (stream 0, small) maps one 2 MiB page for 1024 B; the rest
  // 2 MiB - 1024 >= 512 is split off (should_split: expandable -> >= kMinBlockSize).
  REQUIRE(a.malloc(1, 1000));
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  // Large pool: its own segment, 20 MiB pages (kLargeBuffer): ceil(3 / 20) = 1 page.
  REQUIRE(a.malloc(2, 3 * MiB));
  CHECK(a.stats().reserved_bytes == 22 * MiB);
  // 50 MiB: the free 17 MiB tail is too small; find_expandable_block starts at that free block
  // before the unmapped space and maps 50 - 17 = 33 MiB -> 2 pages (40 MiB), merged to 57 MiB;
  // the rest 7 MiB is split off. Without expandable segments: a 50 MiB segment (72 MiB reserved).
  REQUIRE(a.malloc(3, 50 * MiB));
  CHECK(a.stats().reserved_bytes == 62 * MiB);
  CHECK(a.stats().allocated_bytes == 1024 + 53 * MiB);
  CHECK(a.stats().num_device_allocs == 3);  // map_block counts as num_device_alloc
  auto segs = a.segments();                 // snapshot: one segment per contiguous mapped range
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].small_pool);
  CHECK(segs[0].size == 2 * MiB);
  CHECK(segs[1].size == 60 * MiB);
  CHECK(segs[1].blocks == 3);  // [3 MiB][50 MiB][7 MiB free]
  // empty_cache unmaps only whole pages inside free blocks: the free 3 MiB (0-3 MiB of page 0)
  // and 7 MiB (53-60 MiB, inside page 2) blocks and the small rest hold no whole page.
  a.free(2);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes == 62 * MiB);
  CHECK(a.stats().num_device_frees == 0);
  // Everything free: the 60 MiB block merges, its 3 pages are unmapped and the segment dropped;
  // the small page too.
  a.free(3);
  a.free(1);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes == 0);
  CHECK(a.stats().num_device_frees == 2);
  CHECK(a.segments().empty());
  CHECK(a.stats().peak_reserved_bytes == 62 * MiB);
}

TEST_CASE("allocator: expandable segments, one per stream and pool", "[allocator]") {
  Config c;
  c.expandable_segments = true;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 3 * MiB, 0));
  REQUIRE(a.malloc(2, 3 * MiB, 1));  // stream 1 gets its own segment: another 20 MiB page
  REQUIRE(a.malloc(3, 5 * MiB, 0));  // fits stream 0's 17 MiB free tail: no page mapped
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  const auto segs = a.segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].stream == 0);
  CHECK(segs[0].allocated_bytes == 8 * MiB);
  CHECK(segs[1].stream == 1);
}

TEST_CASE("allocator: expandable best fit counts the unmapped space after a block", "[allocator]") {
  Config c;
  c.expandable_segments = true;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 10 * MiB));  // one 20 MiB page: [1: 10][free 10][unmapped]
  REQUIRE(a.malloc(2, 2 * MiB));   // [1: 10][2: 2][free 8][unmapped]
  a.free(1);                       // [free 10][2: 2][free 8][unmapped]
  // 6 MiB: lower_bound finds the 8 MiB tail first, but get_free_block measures it with the
  // unmapped space after it and moves on to the 10 MiB block, which expands less. Split:
  // [3: 6][free 4][2: 2][free 8][unmapped]. (Had it used the tail: [free 10][2][3: 6][free 2].)
  REQUIRE(a.malloc(3, 6 * MiB));
  CHECK(a.stats().reserved_bytes == 20 * MiB);
  // 9 MiB now fits no mapped free block (4 and 8 MiB): the 8 MiB tail grows by one 20 MiB page.
  // (With the 10 MiB block still free it would have fitted without mapping.)
  REQUIRE(a.malloc(4, 9 * MiB));
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  const auto segs = a.segments();
  REQUIRE(segs.size() == 1);
  // [3: 6][free 4][2: 2][4: 9][free 19]
  CHECK(segs[0].blocks == 5);
  CHECK(segs[0].allocated_bytes == 17 * MiB);
}

TEST_CASE("allocator: expandable segments run out of capacity page by page", "[allocator]") {
  Config c;
  c.expandable_segments = true;
  c.capacity_bytes = 50 * MiB;
  CachingAllocator a(c);
  REQUIRE(a.malloc(1, 30 * MiB));  // 2 pages = 40 MiB; rest 10 MiB free
  // 25 MiB: the 10 MiB tail plus one more 20 MiB page would make 60 > 50: the map fails;
  // release_cached_blocks cannot unmap the tail (no whole page in 30-40 MiB of page 1);
  // the retry fails: OOM, naming get_allocation_size(25 MiB) = 26 MiB.
  CHECK_FALSE(a.malloc(2, 25 * MiB));
  CHECK(a.stats().num_alloc_retries == 1);
  CHECK(a.stats().num_ooms == 1);
  CHECK(a.stats().failed_request_bytes == 26 * MiB);
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  // Once handle 1 is freed the whole 40 MiB is one free block: 25 MiB fits without mapping.
  a.free(1);
  REQUIRE(a.malloc(2, 25 * MiB));
  CHECK(a.stats().reserved_bytes == 40 * MiB);
  CHECK(a.stats().num_device_allocs == 1);
}

TEST_CASE("allocator: peaks and reset_peak_stats", "[allocator]") {
  CachingAllocator a;
  REQUIRE(a.malloc(1, 30 * MiB));  // 30 MiB segment
  REQUIRE(a.malloc(2, 10 * MiB));  // 10 MiB >= kMinLargeAlloc: a 10 MiB segment, no rest
  CHECK(a.stats().peak_allocated_bytes == 40 * MiB);
  CHECK(a.stats().peak_reserved_bytes == 40 * MiB);
  a.free(1);
  a.empty_cache();
  CHECK(a.stats().allocated_bytes == 10 * MiB);
  CHECK(a.stats().reserved_bytes == 10 * MiB);
  CHECK(a.stats().peak_allocated_bytes == 40 * MiB);
  CHECK(a.stats().peak_reserved_bytes == 40 * MiB);
  // resetPeakStats: peak = current.
  a.reset_peak_stats();
  CHECK(a.stats().peak_allocated_bytes == 10 * MiB);
  CHECK(a.stats().peak_reserved_bytes == 10 * MiB);
  // 4 MiB -> 20 MiB segment (rest 16 MiB split off): reserved 30, allocated 14.
  REQUIRE(a.malloc(3, 4 * MiB));
  CHECK(a.stats().peak_allocated_bytes == 14 * MiB);
  CHECK(a.stats().peak_reserved_bytes == 30 * MiB);
  CHECK(a.stats().allocated_bytes_at_reserved_peak == 14 * MiB);
  CHECK(a.stats().inactive_split_bytes_at_peak == 16 * MiB);
}

TEST_CASE("allocator: replay stops at the first OOM when asked", "[allocator]") {
  Config c;
  c.capacity_bytes = 30 * MiB;
  const std::vector<Event> trace = {
      {Event::kAlloc, 0, 1, 20 * MiB},  // 20 MiB segment
      {Event::kAlloc, 0, 2, 20 * MiB},  // 40 > 30 and nothing cached: OOM
      {Event::kAlloc, 0, 3, 1 * MiB},   // 2 MiB small segment: 22 <= 30
  };
  std::vector<SegmentInfo> segs;
  const Stats stop = replay(trace, c, true, &segs);
  CHECK(stop.num_ooms == 1);
  CHECK(stop.reserved_bytes == 20 * MiB);
  CHECK(segs.size() == 1);
  const Stats go_on = replay(trace, c, false, &segs);
  CHECK(go_on.num_ooms == 1);
  CHECK(go_on.reserved_bytes == 22 * MiB);
  CHECK(segs.size() == 2);
  CHECK(segment_bytes(segs) == 22 * MiB);
}

TEST_CASE("allocator: zero sizes, unknown and repeated handles", "[allocator]") {
  CachingAllocator a;
  CHECK(a.malloc(1, 0));  // nothing allocated
  CHECK(a.stats().reserved_bytes == 0);
  a.free(42);  // unknown: ignored
  REQUIRE(a.malloc(1, 4096));
  CHECK_FALSE(a.malloc(1, 4096));  // handle 1 is live: refused, not an OOM
  CHECK(a.stats().num_ooms == 0);
  CHECK(a.stats().allocated_bytes == 4096);
  a.free(1);
  a.free(1);  // already freed: ignored
  CHECK(a.stats().allocated_bytes == 0);
}

TEST_CASE("allocator: random traces keep the books balanced", "[allocator]") {
  // Invariants only (no simulator numbers): segments add up to reserved and allocated bytes;
  // after every free, non-expandable segments coalesce to one block each and empty_cache
  // leaves nothing reserved.
  for (const bool expandable : {false, true}) {
    Config c;
    c.expandable_segments = expandable;
    CachingAllocator a(c);
    std::mt19937_64 rng(7);
    std::vector<uint64_t> live;
    uint64_t next_id = 0;
    for (int step = 0; step < 20000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        const uint64_t kind = rng() % 4;
        const uint64_t size = kind == 0   ? rng() % (1 * MiB) + 1
                              : kind == 1 ? rng() % (12 * MiB) + 1
                              : kind == 2 ? rng() % (64 * MiB) + 1
                                          : rng() % 4096 + 1;
        REQUIRE(a.malloc(next_id, size, static_cast<uint32_t>(rng() % 2)));
        live.push_back(next_id++);
      } else {
        const std::size_t i = rng() % live.size();
        a.free(live[i]);
        live[i] = live.back();
        live.pop_back();
      }
      if (step % 5000 == 4999) a.empty_cache();
    }
    auto segs = a.segments();
    uint64_t allocated = 0;
    for (const auto& g : segs) allocated += g.allocated_bytes;
    CHECK(segment_bytes(segs) == a.stats().reserved_bytes);
    CHECK(allocated == a.stats().allocated_bytes);
    for (uint64_t id : live) a.free(id);
    CHECK(a.stats().allocated_bytes == 0);
    CHECK(a.stats().requested_bytes == 0);
    if (!expandable) {
      for (const auto& g : a.segments()) CHECK(g.blocks == 1);
    }
    a.empty_cache();
    CHECK(a.stats().reserved_bytes == 0);
    CHECK(a.segments().empty());
  }
}
