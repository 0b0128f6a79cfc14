// Each pipeline rank's memory: the rank's layers through the one step model (peak::evaluate
// with Request::stage), holding the activations of its in-flight micro-batches (parallel.hpp).
#include <algorithm>
#include <cstdio>
#include <string>

#include "trainmem/error.hpp"
#include "trainmem/parallel.hpp"

namespace trainmem {
namespace parallel {
namespace {

uint64_t judged(const peak::Result& r) { return r.simulated ? r.device_used_bytes : r.peak_bytes; }

void check(const peak::Request& rq, uint64_t v, size_t chain_layers) {
  const auto& pp = rq.parallelism.pipeline;
  if (rq.model.is_mlp)
    fail(code::kUnsupported, "pipelineParallel", Message{"error.pipeline.transformer", {}});
  if (rq.model.lora.enabled)
    fail(code::kUnsupported, "pipelineParallel", Message{"error.pipeline.lora", {}});
  const std::string cs = vocab::name_of(rq.training.checkpointing.strategy);
  if (vocab::op_level(rq.training.checkpointing.strategy))
    fail(code::kUnsupported, "pipelineParallel",
         Message{"error.pipeline.checkpointing", {{"strategy", cs}}});
  const uint64_t blocks = chain_layers >= 2 ? chain_layers - 2 : 0;
  if (!pp.blocks_per_stage.empty()) {
    uint64_t sum = 0;
    for (uint64_t b : pp.blocks_per_stage) sum += b;
    if (pp.blocks_per_stage.size() != pp.stages * v || sum != blocks)
      fail(
          code::kInconsistent, "stageBlocks",
          Message{"error.pipeline.stageBlocks",
                  {{"chunks", std::to_string(pp.stages * v)}, {"blocks", std::to_string(blocks)}}});
  } else if (blocks < pp.stages * v) {
    fail(code::kInconsistent, "pipelineParallel",
         Message{"error.pipeline.tooManyStages",
                 {{"chunks", std::to_string(pp.stages * v)}, {"blocks", std::to_string(blocks)}}});
  }
}

}  // namespace

PipelineResult pipeline(const peak::Request& rq) {
  const auto& pp = rq.parallelism.pipeline;
  const uint64_t p = pp.stages, m = rq.training.accumulation_steps;
  const uint64_t v = chunks_per_rank(pp.schedule, pp.virtual_stages);
  // the layers of the chain: one activations pass of the whole model
  peak::Request probe = rq;
  probe.answer.search_max_micro_batch = false;
  const size_t nl = rq.model.description().arch.layers + 2;
  check(rq, v, nl);
  PipelineResult out;
  out.schedule = vocab::name_for(vocab::kPipelineSchedules, pp.schedule);
  out.stages = p;
  out.virtual_stages = v;
  out.micro_batches = m;
  out.bubble_fraction = bubble_fraction(pp.schedule, p, m, v);
  const auto layers = split_layers(pp.schedule, p, v, nl, pp.blocks_per_stage);
  uint64_t worst = 0;
  for (uint64_t r = 0; r < p; ++r) {
    StageFigures f;
    f.rank = static_cast<uint32_t>(r);
    f.chunks = layers[r];
    for (const auto& c : f.chunks)
      for (uint32_t i : c) f.blocks += (i > 0 && i + 1 < nl) ? 1 : 0;
    f.in_flight_chunks = in_flight_chunks(pp.schedule, p, r, m, v);
    f.in_flight_micro_batches = static_cast<double>(f.in_flight_chunks) / static_cast<double>(v);
    peak::Request q = probe;
    q.parallelism.stage.enabled = true;
    q.parallelism.stage.chunks = f.chunks;
    q.parallelism.stage.resident_chunks = f.in_flight_chunks > v ? f.in_flight_chunks - v : 0;
    f.result = peak::evaluate(q);
    if (r == 0 || judged(f.result) > worst) {
      worst = judged(f.result);
      out.peak_stage = f.rank;
    }
    out.stages_figures.push_back(std::move(f));
  }
  // the binding rank's maxMicroBatch (the search reruns that rank's evaluation)
  if (rq.answer.search_max_micro_batch && rq.runtime.gpu_memory_bytes > 0) {
    peak::Request q = rq;
    q.parallelism.stage.enabled = true;
    StageFigures& f = out.stages_figures[out.peak_stage];
    q.parallelism.stage.chunks = f.chunks;
    q.parallelism.stage.resident_chunks = f.in_flight_chunks > v ? f.in_flight_chunks - v : 0;
    f.result = peak::compute(q);
  }
  StageFigures& top = out.stages_figures[out.peak_stage];
  char in_flight[32];
  std::snprintf(in_flight, sizeof in_flight, "%g", top.in_flight_micro_batches);
  top.result.assumptions.push_back(
      Text("peak.assume.pipeline", {{"schedule", out.schedule},
                                    {"stages", std::to_string(p)},
                                    {"microBatches", std::to_string(m)},
                                    {"stage", std::to_string(top.rank)},
                                    {"inFlight", in_flight}}));
  return out;
}

}  // namespace parallel
}  // namespace trainmem
