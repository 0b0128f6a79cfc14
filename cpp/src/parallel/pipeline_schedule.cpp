// Pipeline schedules: in-flight micro-batches, bubbles and the layers of each rank
// (parallel.hpp). Each count comes from the schedule's definition, cited per case.
#include <algorithm>

#include "trainmem/parallel.hpp"

namespace trainmem {
namespace parallel {

uint64_t chunks_per_rank(PipelineSchedule s, uint64_t virtual_stages) {
  if (s == PipelineSchedule::interleaved) return std::max<uint64_t>(1, virtual_stages);
  if (s == PipelineSchedule::zb_v) return 2;  // torch ScheduleZBVZeroBubble: two stages per rank
  return 1;
}

uint64_t in_flight_chunks(PipelineSchedule s, uint64_t p, uint64_t rank, uint64_t m, uint64_t v) {
  switch (s) {
    case PipelineSchedule::gpipe:
      // torch.distributed.pipelining ScheduleGPipe (schedules.py): every forward, then every
      // backward: all m micro-batches are held at the turn
      return m;
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::zb_h1:
      // Megatron-Core schedules.py get_pp_rank_microbatches (@ d98e8a6): p - rank - 1 warmup
      // forwards, then one forward before each backward (torch Schedule1F1B the same);
      // ZB-H1 keeps 1F1B's order of F and B, W only later (Qi et al. 2023 §3.1: 1F1B's peak)
      return std::min(p - rank, m);
    case PipelineSchedule::interleaved: {
      // Megatron-Core get_pp_rank_microbatches (@ d98e8a6): warmup = 2(p - rank - 1) +
      // (v - 1) * microbatch_group_size_per_vp_stage (default p), capped at m * v; one more
      // forward before the first backward
      const uint64_t warmup = std::min(2 * (p - rank - 1) + (v - 1) * p, m * v);
      return std::min(warmup + 1, m * v);
    }
    case PipelineSchedule::zb_v:
      // torch ScheduleZBVZeroBubble._calculate_single_rank_operations: 2(p - rank) - 1 forwards
      // of chunk 0, rank pairs of (chunk 1, chunk 0), then chunk 1's first forward before its
      // first backward: min(2p - rank - 1, m) chunk-0 and min(rank + 1, m) chunk-1 forwards
      return std::min(2 * p - rank - 1, m) + std::min(rank + 1, m);
  }
  return m;
}

double bubble_fraction(PipelineSchedule s, uint64_t p, uint64_t m, uint64_t v) {
  const double pp = static_cast<double>(p), mm = static_cast<double>(m);
  switch (s) {
    case PipelineSchedule::gpipe:
    case PipelineSchedule::one_f_one_b:
      // Narayanan et al. 2021 §2.2.1: bubble (p - 1)(t_f + t_b) beside m(t_f + t_b) of work
      return (pp - 1) / (mm + pp - 1);
    case PipelineSchedule::interleaved: {
      // Narayanan et al. 2021 §2.2.2: the bubble shrinks by v
      const double b = (pp - 1) / static_cast<double>(v);
      return b / (mm + b);
    }
    case PipelineSchedule::zb_h1: {
      // Qi et al. 2023 §3.1: bubble (p - 1)(T_F + T_B - T_W) beside m(T_F + T_B + T_W); equal
      // passes: (p - 1) beside 3m
      return (pp - 1) / (3 * mm + pp - 1);
    }
    case PipelineSchedule::zb_v:
      // Qi et al. 2023 §6 (torch ScheduleZBVZeroBubble docstring): zero bubble when
      // T_F = T_B = T_W and m >= 2p - 1; below that the fill is counted as ZB-H1's
      return m >= 2 * p - 1 ? 0.0 : (pp - 1) / (3 * mm + pp - 1);
  }
  return 0;
}

namespace {

// The model chunk that rank `r`'s local chunk `k` is (p ranks, v chunks each).
uint64_t model_chunk(PipelineSchedule s, uint64_t p, uint64_t r, uint64_t k) {
  // ZB-V: torch generate_stage_to_rank_mapping(style="v"): rank r holds stages r and 2p - 1 - r
  if (s == PipelineSchedule::zb_v) return k == 0 ? r : 2 * p - 1 - r;
  // interleaved (Megatron virtual pipeline): rank r holds model chunks r, r + p, r + 2p, ...
  return k * p + r;
}

}  // namespace

std::vector<std::vector<std::vector<uint32_t>>> split_layers(
    PipelineSchedule s, uint64_t p, uint64_t v, size_t chain_layers,
    const std::vector<uint64_t>& blocks_per_stage) {
  const uint64_t c = p * v;  // model chunks
  const uint64_t blocks = chain_layers >= 2 ? chain_layers - 2 : 0;
  std::vector<uint64_t> count(c, 0);
  if (blocks_per_stage.size() == c) {
    count = blocks_per_stage;
  } else {
    for (uint64_t k = 0; k < c; ++k) count[k] = blocks / c + (k < blocks % c ? 1 : 0);
  }
  // chain layers of each model chunk: blocks [start, start + count) are chain layers + 1
  std::vector<std::vector<uint32_t>> model(c);
  uint64_t start = 0;
  for (uint64_t k = 0; k < c; ++k) {
    if (k == 0) model[k].push_back(0);  // the embeddings
    for (uint64_t b = 0; b < count[k]; ++b)
      model[k].push_back(static_cast<uint32_t>(start + b + 1));
    start += count[k];
    if (k + 1 == c) model[k].push_back(static_cast<uint32_t>(chain_layers - 1));  // head + loss
  }
  std::vector<std::vector<std::vector<uint32_t>>> out(p);
  for (uint64_t r = 0; r < p; ++r)
    for (uint64_t k = 0; k < v; ++k) out[r].push_back(model[model_chunk(s, p, r, k)]);
  return out;
}

}  // namespace parallel
}  // namespace trainmem
