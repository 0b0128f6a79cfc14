// Every numeric limit of a request, in one place (README "Numeric limits"). The core's
// `vocabulary` function exports them; web/lib/index.d.ts quotes them and
// tests/js/vocabulary.test.js checks the quotes, the CLI and the page against these values.
#pragma once
#include <cstdint>

namespace trainmem {
namespace limits {

// Largest integer a JSON number (IEEE double) holds exactly: 2^53.
inline constexpr uint64_t kMaxExactJson = 9007199254740992ULL;
// Largest byte or element count any result may carry: 2^63; checked_mul / checked_add refuse
// anything larger.
inline constexpr uint64_t kMaxCount = 9223372036854775808ULL;
// Request text: size, nesting depth, number of JSON values.
inline constexpr uint64_t kMaxRequestBytes = 16ULL << 20;
inline constexpr uint64_t kMaxRequestDepth = 64;
inline constexpr uint64_t kMaxRequestValues = 1000000;

// Micro-batch (samples per rank and step), in every calculator: 2^24. accumulation's plan mode
// evaluates each micro-batch it considers through peakMemory, which refused more, so the 2^31
// accumulation had only held for the batch arithmetic of its forward mode.
inline constexpr uint64_t kMaxMicroBatch = 1ULL << 24;
// Gradient accumulation steps: 2^24, as the micro-batch.
inline constexpr uint64_t kMaxAccumulationSteps = 1ULL << 24;
// Global batch to reach (accumulation plan mode): 2^31 samples.
inline constexpr uint64_t kMaxGlobalBatch = 1ULL << 31;
// Sequence length in tokens: 2^24 (peakMemory's; accumulation had 2^22).
inline constexpr uint64_t kMaxSeqLen = 1ULL << 24;
// Ranks of one kind (data, tensor, sequence parallel): 2^20.
inline constexpr uint64_t kMaxRanks = 1ULL << 20;
// Parameters of a model, and parameter counts such as ZeRO-3's prefetch bucket: 1e15 (README
// "Numeric limits").
inline constexpr uint64_t kMaxParams = 1000000000000000ULL;
// Layers of a placement chain, and segments of a manual placement: 100,000.
inline constexpr uint64_t kMaxChainLayers = 100000;
// Events of a placement result's timeline: a longer one (a chain over ~3,000 layers) lists the
// highest event of each of this many equal runs of events, and says how many there were.
inline constexpr uint64_t kMaxTimelineEvents = 10000;

}  // namespace limits

// The names the code has always used for the request-text limits.
using limits::kMaxCount;
using limits::kMaxExactJson;
using limits::kMaxRequestBytes;
using limits::kMaxRequestDepth;
using limits::kMaxRequestValues;

}  // namespace trainmem
