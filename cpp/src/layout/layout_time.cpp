// The layout planner's step time (layout_planner.hpp; docs/parallelism.md "Layout planner"):
// compute and a fixed cost per block on one rank, tensor-parallel collectives inside the node,
// stage-to-stage sends, the pipeline's bubble, the data-parallel gradient traffic and the
// optimizer's memory traffic. Nothing overlaps (an upper bound of what overlap hides).
#include <algorithm>

#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {
namespace {

double d(uint64_t v) { return static_cast<double>(v); }

// Bytes of one activation element: 16-bit under autocast or 16-bit training, else fp32.
double activation_width(const peak::Request& r) {
  return r.training.precision == vocab::Precision::fp32 ? 4.0 : 2.0;
}

// Ring collectives (Patarasuk & Yuan 2009; NCCL's bus bandwidth, nccl-tests PERFORMANCE.md):
// all-reduce moves 2(n-1)/n of the buffer per GPU, all-gather and reduce-scatter (n-1)/n.
double all_reduce_s(double bytes, uint64_t n, double bw) {
  return n > 1 && bw > 0 ? 2.0 * (d(n) - 1) / d(n) * bytes / bw : 0;
}
double gather_s(double bytes, uint64_t n, double bw) {
  return n > 1 && bw > 0 ? (d(n) - 1) / d(n) * bytes / bw : 0;
}

// Links of a group of `span` consecutive ranks: inside the node when it fits in one
// (Megatron-Core's rank order tp-cp-dp-pp, tp innermost, then cp; its expert ranks
// etp-ep-dp-pp, the planner's etp 1 making an EP group ep consecutive ranks).
double link(const Inputs& in, uint64_t span) {
  return span <= in.gpus_per_node ? in.network.intra_node : in.network.inter_node;
}

// Context parallelism's K/V exchange per block and micro-batch: the all-gather of the
// sequence's keys and values in the forward, again in the backward, and the reduce-scatter
// of their gradients (torch _attention.py at pytorch/pytorch@f2127dbd, rotate "allgather",
// torchtitan's default; Megatron-CP's ring sends the same bytes in cp - 1 steps), each
// (cp-1)/cp of the buffer per GPU; full recompute repeats the forward's.
double context_s(const Inputs& in, const Layout& l, double micro_batches, double blocks,
                 double tokens_full) {
  const uint64_t cp = token_split(l);
  if (cp <= 1) return 0;
  const Architecture& a = in.base.model.description().arch;
  const uint64_t kv = a.kv_heads ? a.kv_heads : a.heads;
  const uint64_t head_dim = a.head_dim ? a.head_dim : a.hidden / std::max<uint64_t>(a.heads, 1);
  const double kv_bytes =
      tokens_full * 2.0 * d(kv * head_dim) * activation_width(in.base) / d(l.tp);
  const double exchanges = l.checkpointing == vocab::Strategy::full ? 4.0 : 3.0;
  return micro_batches * blocks * exchanges * gather_s(kv_bytes, cp, link(in, l.tp * cp));
}

// Expert parallelism's token exchange per MoE block and micro-batch: dispatch and combine
// all-to-alls in the forward and their gradients in the backward (Megatron-Core
// MoEAlltoAllTokenDispatcher: token_permutation / token_unpermutation), each moving the
// rank's top-k token copies, (ep-1)/ep of them to other ranks (Lepikhin et al. 2020 GShard
// §2.2); full recompute repeats the forward's two.
double expert_s(const Inputs& in, const Layout& l, double micro_batches, double tokens) {
  const uint64_t ep = expert_ranks(l);
  if (ep <= 1 || in.moe_layers == 0) return 0;
  const Architecture& a = in.base.model.description().arch;
  const double copies = tokens * d(std::max<uint64_t>(a.experts_per_token, 1)) / d(l.tp);
  const double bytes = copies * d(a.hidden) * activation_width(in.base);
  const double bw = link(in, ep);
  const double exchanges = l.checkpointing == vocab::Strategy::full ? 6.0 : 4.0;
  const double per_layer = bw > 0 ? exchanges * (d(ep) - 1) / d(ep) * bytes / bw : 0;
  return micro_batches * d(in.moe_layers) / d(l.pp) * per_layer;
}

// Forward FLOPs per token repeated in the backward: Megatron's full recompute repeats every
// block's forward, its selective recompute the attention core (Korthikanti et al. 2022 §5).
double recompute_per_token(const Inputs& in, vocab::Strategy ck) {
  if (ck == vocab::Strategy::full) return in.flops.blocks;
  if (ck == vocab::Strategy::attention_recompute) return in.flops.attention_core;
  return 0;
}

}  // namespace

StepEstimate estimate(const Inputs& in, const Layout& l) {
  StepEstimate t;
  const peak::Request& b = in.base;
  const uint64_t cp = token_split(l);
  const double m = d(l.micro_batches), seq = d(b.training.seq_len), mb = d(l.micro_batch);
  const double tokens = mb * seq / d(cp);  // tokens of one micro-batch on one rank
  const double blocks = d(std::max<uint64_t>(in.flops.layers, 1)) / d(l.pp);
  // Kaplan et al. 2020: training costs 3x the forward; the rank runs 1/(tp pp) of it.
  const double flops =
      (3.0 * in.flops.total + recompute_per_token(in, l.checkpointing)) * tokens / d(l.tp * l.pp);
  const double rate = in.peak_flops * in.knobs.utilization;
  t.compute_s = m * flops / rate;
  // Hockney's fixed cost per block and micro-step (time_model.hpp), on the rank's blocks.
  t.overhead_s = m * in.knobs.overhead_per_layer_s * blocks;
  const double act = tokens * d(b.model.description().arch.hidden) * activation_width(b);
  // Korthikanti et al. 2022 §4.2.2: per block 2 all-reduces of the activation (with sequence
  // parallelism, all-gather + reduce-scatter pairs: the same bytes) in the forward, 2 in the
  // backward, and the forward's 2 again under full recompute.
  const double collectives = l.checkpointing == vocab::Strategy::full ? 6.0 : 4.0;
  t.tp_comm_s = m * blocks * collectives * all_reduce_s(act, l.tp, in.network.intra_node);
  // Narayanan et al. 2021 §4.1: one activation forward and one gradient backward per stage
  // boundary and micro-batch, 1/tp of it per rank (the scatter/gather optimisation); inside
  // the node when the whole pipeline fits in one.
  const double pp_bw =
      l.tp * l.pp <= in.gpus_per_node ? in.network.intra_node : in.network.inter_node;
  if (l.pp > 1 && pp_bw > 0) t.pp_comm_s = m * 2.0 * act / d(l.tp) / pp_bw * d(l.virtual_stages);
  t.cp_comm_s = context_s(in, l, m, blocks, mb * seq);
  t.ep_comm_s = expert_s(in, l, m, tokens);
  const double busy =
      t.compute_s + t.overhead_s + t.tp_comm_s + t.pp_comm_s + t.cp_comm_s + t.ep_comm_s;
  if (l.pipelined) {
    t.bubble_fraction =
        parallel::bubble_fraction(l.schedule, l.pp, l.micro_batches, l.virtual_stages);
    // the bubble's share of the pipeline's time: busy / (1 - bubble) in all
    t.bubble_s = busy * t.bubble_fraction / (1.0 - t.bubble_fraction);
  }
  // The data-parallel group spans nodes when the job does (one NIC per GPU, DGX-style).
  const double dp_bw = in.gpus > in.gpus_per_node ? in.network.inter_node : in.network.intra_node;
  // The other parameters' group is dp x cp; the routed experts' share (1/ep of them per rank,
  // not split by tp) is reduced over the expert-data-parallel group dp x cp x tp / ep
  // (peak_parallel.hpp expert_shard_ranks)
  const uint64_t n = shard_ranks(l), ep = expert_ranks(l);
  const double dense = 1.0 - (ep > 1 ? in.expert_fraction : 0.0);
  const double expert_share = ep > 1 ? in.expert_fraction / d(ep * l.pp) : 0.0;
  const uint64_t n_experts = n * l.tp / ep;
  const double grads = in.gradient_bytes * dense / d(l.tp * l.pp);
  const double expert_grads = in.gradient_bytes * expert_share;
  if (l.sharding == Sharding::fsdp) {
    // FSDP2 FULL_SHARD: every micro-batch all-gathers the parameters for the forward and again
    // for the backward, and reduce-scatters the gradients (torch fully_shard; Zhao et al. 2023)
    auto fsdp = [&](double params, double g, uint64_t ranks) {
      return m * (2.0 * gather_s(params, ranks, dp_bw) + gather_s(g, ranks, dp_bw));
    };
    t.dp_comm_s = fsdp(in.gather_bytes * dense / d(l.tp * l.pp), grads, n) +
                  fsdp(in.gather_bytes * expert_share, expert_grads, n_experts);
  } else {
    // distributed optimizer: gradients reduce-scattered, parameters all-gathered once per
    // step (Megatron-Core distrib_optimizer.py): an all-reduce's bytes
    t.dp_comm_s = all_reduce_s(grads, n, dp_bw) + all_reduce_s(expert_grads, n_experts, dp_bw);
  }
  // the optimizer's memory traffic of the rank's shard (time_model.hpp)
  if (in.memory_bandwidth > 0)
    t.optimizer_s = in.optimizer_bytes / d(l.tp * l.pp * n) / in.memory_bandwidth;
  t.step_s = busy + t.bubble_s + t.dp_comm_s + t.optimizer_s;
  const double step_tokens = d(in.global_batch) * seq;
  t.tokens_per_second_per_gpu = step_tokens / t.step_s / d(in.gpus);
  // PaLM (Chowdhery et al. 2022, App. B): the model's FLOPs over the cluster's peak
  t.model_flops_utilization =
      3.0 * in.flops.total * step_tokens / (d(in.gpus) * in.peak_flops * t.step_s);
  return t;
}

}  // namespace layout
}  // namespace trainmem
