// A simulator of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): what
// torch.cuda.memory_allocated / memory_reserved and nvidia-smi show for a sequence of tensor
// allocations and frees. Plain C++ (no JSON): peak memory feeds it the allocation trace of whole
// training steps; the snapshot reader replays recorded traces through it. Rules and the source
// lines they follow: docs/allocator.md.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace trainmem {
namespace allocator {

// PYTORCH_CUDA_ALLOC_CONF options (c10/cuda/CUDAAllocatorConfig.cpp) and the device's capacity.
struct Config {
  // max_split_size_mb in bytes; "unlimited" (the default) = no limit. Blocks larger than this
  // are never split, and requests at most this large never take them.
  uint64_t max_split_size = std::numeric_limits<uint64_t>::max();
  // roundup_power2_divisions (a single value for every size; 0 or 1 = off, the default).
  uint32_t roundup_power2_divisions = 0;
  // expandable_segments:True (torch >= 2.1): one growing segment per pool and stream, mapped in
  // 2 MiB (small pool) / 20 MiB (large pool) pages, instead of one cudaMalloc per segment.
  bool expandable_segments = false;
  // garbage_collection_threshold (0 = off; else in (0, 1)): before a cudaMalloc that would take
  // reserved memory past threshold x capacity, free cached blocks that are oldest in use.
  double garbage_collection_threshold = 0;
  // Bytes the allocator may reserve (the GPU's memory less the CUDA context and other
  // processes); 0 = unlimited (no OOM, no retry). With a limit, a cudaMalloc that does not fit
  // frees every cached block (release_cached_blocks) and retries, then reports an OOM.
  uint64_t capacity_bytes = 0;
};

// One event of an allocation trace: stream 0 is the default stream.
struct Event {
  enum Kind : uint8_t { kAlloc, kFree, kEmptyCache };
  Kind kind = kAlloc;
  uint32_t stream = 0;
  uint64_t id = 0;    // the tensor's handle, unique among live allocations
  uint64_t size = 0;  // requested bytes (kAlloc), before the allocator's rounding
};

// One segment (one cudaMalloc, or the mapped part of an expandable segment).
struct SegmentInfo {
  uint64_t address = 0;  // the simulator's own address space, in allocation order
  uint64_t size = 0;
  uint32_t stream = 0;
  bool small_pool = false;
  uint64_t allocated_bytes = 0;  // bytes of its blocks that are in use
  uint32_t blocks = 0;           // blocks it is split into (in use or free)
};

// What torch.cuda.memory_stats() reports (the "all" pools), plus what an OOM message names.
struct Stats {
  uint64_t allocated_bytes = 0;       // memory_allocated(): rounded sizes of live blocks
  uint64_t reserved_bytes = 0;        // memory_reserved(): bytes of all segments
  uint64_t peak_allocated_bytes = 0;  // max_memory_allocated()
  uint64_t peak_reserved_bytes = 0;   // max_memory_reserved()
  uint64_t requested_bytes = 0;       // requested (unrounded) bytes of live blocks
  // Inactive split bytes ("inactive_split_bytes.all.current") and reserved − allocated, both
  // taken when reserved memory last reached its peak.
  uint64_t inactive_split_bytes_at_peak = 0;
  uint64_t allocated_bytes_at_reserved_peak = 0;
  uint64_t largest_request_bytes = 0;  // the largest single request (rounded)
  uint64_t num_alloc_retries = 0;      // cudaMalloc failed, cache freed, retried
  uint64_t num_ooms = 0;               // requests that failed after the retry
  uint64_t num_device_allocs = 0;      // cudaMalloc calls (segments created)
  uint64_t num_device_frees = 0;       // cudaFree calls (segments released)
  uint64_t failed_request_bytes = 0;   // the first request that ran out of memory (0 = none)
};

class CachingAllocator {
 public:
  explicit CachingAllocator(const Config& config = {});
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Allocates `size` bytes for handle `id` on `stream`; false when the device is out of memory
  // (the OOM is counted in stats; nothing is allocated). A size of 0 allocates nothing.
  bool malloc(uint64_t id, uint64_t size, uint32_t stream = 0);
  // Frees the block of handle `id` (an unknown id is ignored).
  void free(uint64_t id);
  // torch.cuda.empty_cache(): releases every segment that has no block in use.
  void empty_cache();
  // Resets the peaks to the current values (torch.cuda.reset_peak_memory_stats()).
  void reset_peak_stats();

  const Stats& stats() const;
  std::vector<SegmentInfo> segments() const;
  // segments().size() without listing them (peak memory's replays read only the count).
  uint64_t segment_count() const;

  // The allocator's size rules, exposed for tests and for callers that need the same numbers.
  static uint64_t round_size(uint64_t size, uint32_t roundup_power2_divisions = 0);
  static uint64_t allocation_size(uint64_t rounded_size);  // the segment a miss creates

 private:
  struct Impl;
  Impl* impl_;
};

// Runs a whole trace through a fresh allocator; stops at the first OOM when `stop_at_oom`.
Stats replay(const std::vector<Event>& trace, const Config& config, bool stop_at_oom = false,
             std::vector<SegmentInfo>* final_segments = nullptr);

}  // namespace allocator
}  // namespace trainmem
