// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot), read as plain data: a
// restricted unpickler that builds nothing but the typed records below, then a summary
// (series, steps, peak, categories) and a comparison with trainmem's prediction.
// Schema: torch/csrc/cuda/memory_snapshot.cpp (_memory_snapshot_pickled) and
// torch/cuda/memory.py (_snapshot docstring, _dump_snapshot = pickle.dump), pytorch/pytorch
// at 00067369c9339bed950762afec327514d6fa2566 and 00b65a04a2d30e498eedcb1e3476abd547f428f1.
// Limits: docs/robustness.md, "Snapshot files".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainmem {
namespace snapshot {

// Reader limits (each beyond: too_large naming it). A snapshot of 1,000,000 trace entries is
// about 200 MB of pickle and needs ~1.5 M memo entries and containers.
inline constexpr uint64_t kMaxFileBytes = 1ULL << 30;          // 1 GiB of pickle
inline constexpr uint64_t kMaxNesting = 64;                    // open MARKs at once
inline constexpr uint64_t kMaxStackValues = 1000000;           // values on the unpickler stack
inline constexpr uint64_t kMaxMemoEntries = 50000000;          // memo slots (index + 1)
inline constexpr uint64_t kMaxContainers = 50000000;           // lists, dicts, tuples built
inline constexpr uint64_t kMaxStringBytes = 1ULL << 20;        // one str or bytes value
inline constexpr uint64_t kMaxStringPoolBytes = 256ULL << 20;  // all distinct strings
inline constexpr uint64_t kMaxTraceEvents = 20000000;          // trace entries, all devices
inline constexpr uint64_t kMaxDevices = 1024;                  // device_traces lists
inline constexpr uint64_t kMaxSegments = 1000000;              // segments
inline constexpr uint64_t kMaxBlocks = 10000000;               // blocks of all segments
inline constexpr uint64_t kMaxFramesPerStack = 4096;           // frames of one traceback
// Working memory (beside the file's own bytes): the reader's records (trace entries, memo,
// containers, strings) and then the summary's (lifetimes, the series, the allocator replay)
// each stay within kReaderWorkPerFileByte x the file + kReaderWorkBaseBytes, checked as they
// grow: a file needing more (a crafted one: memo indices far apart, endless lists) is
// too_large on "snapshot". A real snapshot needs about 1.5 x its size (docs/snapshot.md).
inline constexpr uint64_t kReaderWorkPerFileByte = 2;
inline constexpr uint64_t kReaderWorkBaseBytes = 64ULL << 20;

struct Frame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

// One trace entry (TraceEntry::Action in c10/cuda/CUDACachingAllocator.h).
enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  kOther,  // an action this reader does not use (e.g. "annotate")
};

inline constexpr uint32_t kNoStack = 0xffffffffu;

struct Event {
  uint64_t addr = 0;  // device_free for an OOM
  uint64_t size = 0;  // requested bytes (alloc, free_*), segment bytes (segment_*)
  int64_t time_us = 0;
  uint32_t stack = kNoStack;  // index into Snapshot::stacks
  uint16_t stream = 0;        // index into Snapshot::streams (at most 4,096 of them)
  Action action = Action::kOther;
  bool has_time = false;
};
static_assert(sizeof(Event) == 32, "a trace entry in 32 bytes (the reader's memory per entry)");

enum class BlockState : uint8_t { kActiveAllocated, kActivePendingFree, kInactive };

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;
  uint32_t stack = kNoStack;
  BlockState state = BlockState::kInactive;
};

struct Segment {
  uint64_t device = 0;
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t allocated_size = 0;
  uint64_t active_size = 0;
  uint64_t requested_size = 0;
  int64_t stream = 0;
  bool large = true;
  bool expandable = false;
  std::vector<Block> blocks;
};

struct AllocatorSettings {
  bool present = false;
  std::string conf;  // PYTORCH_CUDA_ALLOC_CONF as the process saw it
  bool expandable_segments = false;
  uint64_t max_split_size = 0;  // as written (SIZE_MAX for "unlimited")
  double garbage_collection_threshold = 0;
};

struct Snapshot {
  int protocol = 0;
  uint64_t file_bytes = 0;
  bool segments_only = false;  // an old list-of-segments pickle (torch.cuda.memory_snapshot())
  std::vector<Frame> frames;   // distinct frames
  // stacks[i] = frame indices, innermost first (as PyTorch writes them)
  std::vector<std::vector<uint32_t>> stacks;
  std::vector<int64_t> streams;  // distinct stream values
  std::vector<Segment> segments;
  std::vector<std::vector<Event>> device_traces;
  AllocatorSettings settings;
};

// Reads a pickle (protocols 2-5) of plain data in PyTorch's snapshot schema. Never imports or
// calls anything: GLOBAL, REDUCE, BUILD, … are `unsupported` naming the opcode and its byte
// offset; a truncated or malformed pickle is `invalid_json` ("not a valid pickle"); a limit
// above is `too_large`; a field of the wrong type `invalid_type`. Field: "snapshot…".
Snapshot read_pickle(std::string_view bytes);

// ------------------------------------------------------------------ what the trace shows
enum class Category : uint8_t {
  kWeights,
  kGradients,
  kOptimizerState,
  kActivations,
  kTemporaries,
  kUnattributed,  // allocated while recording without frames: no rule applies
};
inline constexpr int kCategories = 6;
const char* category_name(Category c);  // "weights", "gradients", "optimizerState", …

struct SeriesPoint {
  uint64_t event = 0;  // index of the bucket's highest point in the device's trace
  double x = 0;        // microseconds since the first entry (time_us), else the event index
  uint64_t allocated_bytes = 0;
  uint64_t requested_bytes = 0;
  uint64_t reserved_bytes = 0;
};

struct Step {
  uint64_t start_event = 0, end_event = 0;  // inclusive
  double start_x = 0, end_x = 0;
  uint64_t peak_allocated_bytes = 0;
  int64_t forward_event = -1;              // first forward-phase allocation of the step
  uint64_t gradient_bytes_at_forward = 0;  // gradients of earlier steps live then
};

struct TopFrame {
  std::string filename, name;
  int64_t line = 0;
  uint64_t bytes = 0, blocks = 0;
  Category category = Category::kUnattributed;
};

struct Cause {
  std::string code;
  std::vector<std::pair<std::string, double>> params;  // numbers only (bytes, ratios, steps)
  std::string message;                                 // English; the page translates codes
};

struct Summary {
  std::string source = "snapshot";  // or "memoryStats"
  int protocol = 0;
  uint64_t file_bytes = 0;
  uint64_t device = 0, devices = 0;
  bool has_frames = false, has_time = false;
  uint64_t events = 0, counts[10] = {};  // by Action
  AllocatorSettings settings;
  uint64_t segments = 0, segment_reserved_bytes = 0, segment_allocated_bytes = 0;
  uint64_t baseline_allocated_bytes = 0;  // live when recording began (not in the trace)
  uint64_t baseline_reserved_bytes = 0;
  std::vector<SeriesPoint> series;
  // the peak of allocated bytes (the 512-byte rounded requests, memory_allocated's unit)
  uint64_t peak_allocated_bytes = 0, peak_requested_bytes = 0, peak_reserved_at_peak = 0;
  uint64_t peak_event = 0;
  double peak_x = 0;
  int64_t peak_time_us = 0;
  int64_t peak_step = -1;
  std::string peak_phase;
  uint64_t peak_reserved_bytes = 0, peak_reserved_event = 0;
  uint64_t at_peak[kCategories] = {};  // live bytes by category at the peak
  std::vector<TopFrame> top_frames;
  std::string steps_method = "none";  // optimizer-frames | periodicity | none
  uint64_t period_events = 0;
  std::vector<Step> steps;
  uint64_t kept_gradient_bytes = 0;  // largest gradient_bytes_at_forward over steps
  int64_t kept_gradient_step = -1;
  // memory_stats() figures (source "memoryStats", or given beside a snapshot)
  bool has_stats = false;
  uint64_t stats_allocated_peak = 0, stats_reserved_peak = 0, stats_num_alloc_retries = 0,
           stats_num_ooms = 0;
  // The trace replayed through trainmem::allocator (caching_allocator.hpp): does the simulator
  // reproduce the recorded segments?
  bool replayed = false;
  uint64_t replay_reserved_peak = 0, replay_allocated_peak = 0, replay_segments = 0;
  std::vector<std::string> notes;
};

struct SummaryOptions {
  int64_t device = -1;    // -1: the device with the most trace entries
  uint32_t points = 400;  // series points (each the highest of its bucket)
  uint32_t top_frames = 10;
};

Summary summarize(const Snapshot& s, const SummaryOptions& options);
// torch.cuda.memory_stats() as JSON text: read at the edge (io/snapshot_json.cpp).
// Causes that the measurement alone shows (reserved far above allocated, kept gradients, OOMs).
std::vector<Cause> measured_causes(const Summary& s);

// JSON at the edge: the readSnapshot and compareSnapshot functions of api.cpp.
// `request` is the parsed request object, `bytes` the file.
std::string format_bytes(double bytes);  // "3.1 GiB", "512.0 MiB", "640 B"

}  // namespace snapshot
}  // namespace trainmem
