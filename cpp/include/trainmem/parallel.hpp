// Parallelism beyond one device's replica: pipeline parallelism (stages, schedules, in-flight
// micro-batches, bubbles). Each stage's memory is one peak-memory evaluation of that stage's
// layers (peak_memory.hpp Request::stage). Model and sources: docs/parallelism.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace parallel {

using vocab::PipelineSchedule;

// Model chunks each rank holds: virtualStages for interleaved 1F1B, 2 for ZB-V, else 1.
uint64_t chunks_per_rank(PipelineSchedule s, uint64_t virtual_stages);

// The most micro-batch chunks whose activations rank `rank` of `p` holds at once (forwards run,
// backwards not yet), with `m` micro-batches per step and `v` chunks per rank.
uint64_t in_flight_chunks(PipelineSchedule s, uint64_t p, uint64_t rank, uint64_t m, uint64_t v);

// The fraction of a step a rank idles in the pipeline's fill and drain (bubble / step time),
// with the forward, backward-input and backward-weight passes taking equal time.
double bubble_fraction(PipelineSchedule s, uint64_t p, uint64_t m, uint64_t v);

// Chain layers per rank: for each rank, its chunks, each a list of chain layers. The blocks
// (chain layers 1 .. nl-2) are split as evenly as the chunks allow (earlier chunks take the
// remainder), the embeddings go with the first chunk, the head and loss with the last;
// `blocks_per_stage` (one count per chunk in pipeline order, optional) gives an uneven split.
// ZB-V places chunk k of rank r as model chunk r for k = 0 and 2p - 1 - r for k = 1 (V shape).
std::vector<std::vector<std::vector<uint32_t>>> split_layers(
    PipelineSchedule s, uint64_t p, uint64_t v, size_t chain_layers,
    const std::vector<uint64_t>& blocks_per_stage);

struct StageFigures {
  uint32_t rank = 0;
  std::vector<std::vector<uint32_t>> chunks;  // chain layers of each chunk
  uint64_t blocks = 0;                        // transformer blocks on the rank
  uint64_t in_flight_chunks = 0;
  double in_flight_micro_batches = 0;  // in_flight_chunks / chunks per rank
  peak::Result result;
};

struct PipelineResult {
  std::string schedule;
  uint64_t stages = 1, virtual_stages = 1, micro_batches = 1;
  double bubble_fraction = 0;
  std::vector<StageFigures> stages_figures;
  uint32_t peak_stage = 0;  // the binding rank: most device memory (the verdict's figure)
};

// Every stage evaluated; the request's pipeline fields say the schedule. Throws RequestError.
PipelineResult pipeline(const peak::Request& rq);

}  // namespace parallel
}  // namespace trainmem
