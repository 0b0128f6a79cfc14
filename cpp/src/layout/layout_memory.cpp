// The layout planner's memory model (layout_planner.hpp): one layout as a peakMemory request,
// evaluated on the pipeline's first and last ranks.
#include <string>

#include "layout/layout_memory.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace layout {
peak::Request request_for(const Inputs& in, const Layout& l) {
  peak::Request r = in.base;
  r.training.micro_batch = l.micro_batch;
  r.training.accumulation_steps = l.micro_batches;
  r.parallelism.data = l.dp;
  r.parallelism.tensor = l.tp;
  // Megatron's recipes run sequence parallelism with every TP > 1 (Korthikanti et al. 2022)
  r.parallelism.sequence = l.tp > 1;
  r.parallelism.pipeline = peak::PipelineParallel{};
  r.parallelism.pipeline.stages = l.pp;
  r.parallelism.pipeline.schedule = l.schedule;
  r.parallelism.pipeline.virtual_stages = l.virtual_stages;
  r.training.checkpointing = peak::Checkpointing{};
  r.training.checkpointing.strategy = l.checkpointing;
  r.parallelism.zero.stage = 0;
  r.parallelism.fsdp = peak::Fsdp{};
  // (the shard group is dp x cp: context parallelism's apply multiplies both by cp)
  const bool shards = shard_ranks(l) > 1;
  if (l.sharding == Sharding::zero1) {
    r.parallelism.zero.stage = shards ? 1 : 0;
  } else if (shards) {
    r.parallelism.fsdp.enabled = true;
    r.parallelism.fsdp.shard_degree = l.dp;
    // torchtitan's FSDP2 mixed precision under autocast-style training: bf16 parameters for
    // compute, fp32 reductions (torchtitan config: mixed_precision_param / _reduce)
    if (r.training.precision == vocab::Precision::amp_bf16 ||
        r.training.precision == vocab::Precision::amp_fp16) {
      r.parallelism.fsdp.param_bytes = 2;
      r.parallelism.fsdp.param_dtype =
          r.training.precision == vocab::Precision::amp_bf16 ? DType::bf16 : DType::fp16;
      r.parallelism.fsdp.reduce_bytes = 4;
    }
  }
  for (size_t i = 0; i < l.extra.size() && i < extra_dimensions().size(); ++i)
    extra_dimensions()[i].apply(&r, l.extra[i]);
  r.answer.search_max_micro_batch = false;
  r.answer.verdict_only = true;
  r.answer.timeline = false;
  return r;
}

namespace {

uint64_t judged(const peak::Result& r) { return r.simulated ? r.device_used_bytes : r.peak_bytes; }

// One rank of the pipeline (parallel::pipeline's loop for one rank).
peak::Result stage_result(const peak::Request& rq, uint64_t rank,
                          const std::vector<std::vector<std::vector<uint32_t>>>& layers) {
  const auto& pp = rq.parallelism.pipeline;
  const uint64_t v = parallel::chunks_per_rank(pp.schedule, pp.virtual_stages);
  const uint64_t in_flight =
      parallel::in_flight_chunks(pp.schedule, pp.stages, rank, rq.training.accumulation_steps, v);
  peak::Request q = rq;
  q.parallelism.stage.enabled = true;
  q.parallelism.stage.chunks = layers[rank];
  q.parallelism.stage.resident_chunks = in_flight > v ? in_flight - v : 0;
  return peak::evaluate(q);
}

}  // namespace

Memory memory_of(const peak::Request& rq, bool replay) {
  peak::Request r = rq;
  if (!replay) r.allocator.simulate = false;
  Memory out;
  if (r.parallelism.pipeline.stages <= 1) {
    const peak::Result res = peak::evaluate(r);
    out.bytes = judged(res);
    out.fits = res.has_device && res.fits;
    out.evaluations = 1;
    return out;
  }
  const uint64_t p = r.parallelism.pipeline.stages;
  const uint64_t v = parallel::chunks_per_rank(r.parallelism.pipeline.schedule,
                                               r.parallelism.pipeline.virtual_stages);
  const size_t nl = r.model.description().arch.layers + 2;
  const auto layers = parallel::split_layers(r.parallelism.pipeline.schedule, p, v, nl, {});
  // The first rank holds the embeddings, the most blocks (earlier chunks take the remainder)
  // and the most in-flight micro-batches; the last holds the head and the loss. A middle rank
  // holds no more than the first (docs/parallelism.md "Layout planner").
  const uint64_t ranks[2] = {0, p - 1};
  out.fits = true;
  for (uint64_t rank : ranks) {
    const peak::Result res = stage_result(r, rank, layers);
    ++out.evaluations;
    if (rank == 0 || judged(res) > out.bytes) {
      out.bytes = judged(res);
      out.stage = static_cast<uint32_t>(rank);
    }
    out.fits = out.fits && res.has_device && res.fits;
    if (!out.fits) break;  // (the verdict is settled)
  }
  return out;
}

}  // namespace layout
}  // namespace trainmem
