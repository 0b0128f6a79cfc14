// ZeRO-3's and FSDP's unsharded state around one op (peak_sharding.hpp).
#include "peak/peak_sharding.hpp"

#include <algorithm>

#include "peak/peak_parallel.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {
namespace {

// ZeRO-3's gathered parameters at one op as DeepSpeed's coordinator fetches them
// (deepspeed/runtime/zero/partitioned_param_coordinator.py; defaults config.py, commit
// 1b88ac36): the running layer, the next layers' parameters up to stage3_prefetch_bucket_size
// while fewer than stage3_max_live_parameters are available, and earlier layers not released
// because their next use (their backward) comes within stage3_max_reuse_distance elements.
void zero3_gathered(const Request& rq, const UnitSizes& u, OpPhase phase, int32_t layer,
                    std::vector<uint64_t>* out) {
  const std::vector<uint64_t>& per = u.numel;
  const Zero3& z = rq.parallelism.zero.stage3;
  const size_t nl = per.size();
  if (layer < 0 || nl == 0) return;
  const uint64_t t = rq.parallelism.tensor;
  const size_t L = static_cast<size_t>(layer);
  // elements fetched between layer i's forward use and its backward use: the rest of the
  // forward and the backward down to it
  std::vector<uint64_t> after(nl + 1, 0);
  for (size_t i = nl; i-- > 0;) after[i] = after[i + 1] + per[i];
  uint64_t retained = 0;
  for (size_t i = 0; i < L; ++i)
    if (2 * after[i + 1] <= z.max_reuse_distance) {
      retained += per[i];
      out->push_back(u.bytes[i] / t);
    }
  const uint64_t cur = per[L];
  uint64_t ahead = 0;  // the next layers in execution order
  if (phase == OpPhase::forward) {
    for (size_t i = L + 1; i < nl; ++i) ahead += per[i];
  } else {
    for (size_t i = 0; i < L; ++i) ahead += per[i];
    ahead -= std::min(ahead, retained);  // retained layers need no fetch
  }
  const uint64_t live = cur + retained;
  const uint64_t room = z.max_live > live ? z.max_live - live : 0;
  const uint64_t prefetch = std::min({ahead, z.prefetch_bucket, room});
  out->push_back(u.bytes[L] / t);
  // the prefetched elements, at the next layer's bytes per element
  const size_t next = phase == OpPhase::forward ? std::min(L + 1, nl - 1) : (L > 0 ? L - 1 : 0);
  out->push_back(u.bytes_of(next, prefetch) / t);
}

// Whether FSDP's unit of chain layer `i` (0 the embeddings, nl - 1 the head, the blocks between;
// the two ends only when they are units of their own) reshards after its forward.
bool unit_reshards(const Fsdp& fs, size_t i, size_t nl) {
  if (i == 0) return fs.reshard_embedding;
  if (i == nl - 1) return fs.reshard_head;
  if (!fs.reshard_blocks.empty()) return fs.reshard_blocks[i - 1] != 0;
  return i == nl - 2 ? fs.reshard_last_block : fs.reshard_after_forward;
}

// Whether FSDP's unit `i` is gathered while chain layer `L` runs (L = nl: the loss, after the
// whole forward): forward, the unit itself and the next `pf` (prefetched), and every earlier
// unit that does not reshard after its forward; backward (and recomputation), the unit and the
// previous `pf` (prefetched), and every unit not yet through its backward that kept its
// parameters since the forward.
bool fsdp_unit_gathered(bool reshards, size_t pf, size_t i, size_t L, bool bwd) {
  if (!bwd) return (i >= L && i <= L + pf) || (i < L && !reshards);
  return i <= L && (i + pf >= L || !reshards);
}

// FSDP's unsharded state at one op: the all-gathered units (param_dtype) and, in the backward,
// the unit's unsharded gradients with the reduce-scatter's input and output. Units: the root
// (embeddings + head) and one per block; FSDP2 _fully_shard.py (commit 0257dd1c):
// reshard_after_forward defaults to True except for the root, which stays gathered from its
// forward to its backward unless given an explicit True (_fsdp_state.py _lazy_init:
// post_forward_mesh_info = None when _auto_reshard_after_forward); FSDP1 never frees the
// root's parameters after the forward (_runtime_utils.py _post_forward_reshard). The root's
// forward is the whole model's, its backward the whole backward: resharded, it is missing at
// the loss only. Prefetch (FSDP2 _fsdp_param_group.py implicit forward / backward prefetch,
// FSDP1 BACKWARD_PRE and forward_prefetch): the next `prefetch` units are gathered while one
// computes.
void fsdp_unsharded(const Request& rq, const UnitSizes& u, uint64_t grad_bytes, OpPhase phase,
                    int32_t layer, std::vector<uint64_t>* out) {
  const Fsdp& fs = rq.parallelism.fsdp;
  const std::vector<uint64_t>& per = u.bytes;
  const size_t nl = per.size();
  if (!fs.enabled || nl < 3) return;
  const uint64_t pb = fs.param_bytes ? fs.param_bytes : grad_bytes;
  const uint64_t rb = fs.reduce_bytes ? fs.reduce_bytes : pb;
  const uint64_t t = rq.parallelism.tensor;
  const uint64_t S = fs.shard_degree;
  const bool copies = fsdp_root_gathered(rq, grad_bytes);
  // the units of the blocks, and of the embeddings and the head when they have their own
  const size_t first = fs.embedding_unit ? 0 : 1, last = fs.head_unit ? nl - 1 : nl - 2;
  const bool root_holds = !(fs.embedding_unit && fs.head_unit);
  const uint64_t root = (fs.embedding_unit ? 0 : per[0]) + (fs.head_unit ? 0 : per[nl - 1]);
  if (copies && root_holds && !(fs.reshard_root && phase == OpPhase::loss))
    out->push_back(root / t);  // the root unit
  const bool bwd = phase == OpPhase::backward || phase == OpPhase::recompute;
  const size_t L = layer < 0 ? nl : static_cast<size_t>(layer);
  const auto pf = static_cast<size_t>(fs.prefetch);
  if (copies)
    for (size_t i = first; i <= last; ++i)
      if (fsdp_unit_gathered(unit_reshards(fs, i, nl), pf, i, L, bwd)) out->push_back(per[i] / t);
  if (phase == OpPhase::backward && layer >= 0) {
    // the unit's gradients unsharded in param_dtype, cast to reduce_dtype for the
    // reduce-scatter when they differ, and its 1/S output (FSDP2 _fsdp_collectives.py
    // foreach_reduce; FSDP1 _runtime_utils.py _reduce_grad)
    const uint64_t g = u.trainable[L] / t;
    out->push_back(g * pb);
    if (rb != pb) out->push_back(g * rb);
    // a routed expert's share reduce-scatters over the expert-data-parallel group
    // (peak_parallel.hpp expert_shard_ranks)
    const uint64_t ge = L < u.expert_trainable.size() ? u.expert_trainable[L] / t : 0;
    if (S > 1) out->push_back((g - ge) * rb / S + ge * rb / expert_shard_ranks(rq, S));
  }
}

}  // namespace

void check_fsdp_units(const Request& rq, size_t chain_layers, bool tied) {
  const Fsdp& fs = rq.parallelism.fsdp;
  if (!fs.enabled) return;
  const char* units =
      fs.embedding_unit ? "fsdp.reshardAfterForward.embedding" : "fsdp.reshardAfterForward.head";
  const bool own_units = fs.embedding_unit || fs.head_unit;
  if (own_units && tied) fail(code::kUnsupported, units, Message{"error.fsdp.tiedUnits", {}});
  const char* blocks = "fsdp.reshardAfterForward.blocks";
  if ((own_units || !fs.reshard_blocks.empty()) && rq.parallelism.pipeline.stages > 1)
    fail(code::kUnsupported, own_units ? units : blocks, Message{"error.fsdp.unitsPipeline", {}});
  const size_t n = chain_layers >= 2 ? chain_layers - 2 : 0;
  if (!fs.reshard_blocks.empty() && fs.reshard_blocks.size() != n)
    fail(code::kInconsistent, blocks,
         Message{
             "error.fsdp.blockList",
             {{"given", std::to_string(fs.reshard_blocks.size())}, {"blocks", std::to_string(n)}}});
}

void sharding_assumptions(const Request& rq, std::vector<Text>* out) {
  const ZeroBuckets& z = rq.parallelism.zero.buckets;
  const std::string elements = std::to_string(z.reduce_bucket);
  if (rq.parallelism.zero.stage == 3 && z.contiguous_gradients)
    out->push_back(Text("peak.assume.zero3.buckets", {{"elements", elements}}));
  else if (rq.parallelism.zero.stage > 0 && z.contiguous_gradients)
    out->push_back(Text("peak.assume.zero.buckets",
                        {{"buffers", z.overlap_comm ? "2" : "1"}, {"elements", elements}}));
  else if (rq.parallelism.zero.stage > 0)
    out->push_back(Text("peak.assume.zero.noBuckets", {}));
  const Fsdp& fs = rq.parallelism.fsdp;
  if (!fs.enabled) return;
  if (fs.reshard_root) out->push_back(Text("peak.assume.fsdp.rootReshards", {}));
  if (fs.embedding_unit || fs.head_unit)
    out->push_back(Text(fs.embedding_unit && fs.head_unit ? "peak.assume.fsdp.ownUnits"
                        : fs.embedding_unit               ? "peak.assume.fsdp.embeddingUnit"
                                                          : "peak.assume.fsdp.headUnit",
                        {}));
  if (!fs.reshard_blocks.empty()) {
    uint64_t kept = 0;
    for (uint8_t b : fs.reshard_blocks) kept += b ? 0 : 1;
    out->push_back(Text(
        "peak.assume.fsdp.blockList",
        {{"kept", std::to_string(kept)}, {"blocks", std::to_string(fs.reshard_blocks.size())}}));
  } else if (fs.reshard_last_block != fs.reshard_after_forward)
    out->push_back(Text(fs.reshard_last_block ? "peak.assume.fsdp.lastBlockReshards"
                                              : "peak.assume.fsdp.lastBlockKept",
                        {}));
  if (!fs.limit_all_gathers) out->push_back(Text("peak.assume.fsdp.noLimiter", {}));
}

bool fsdp_root_gathered(const Request& rq, uint64_t grad_bytes) {
  const uint64_t pb =
      rq.parallelism.fsdp.param_bytes ? rq.parallelism.fsdp.param_bytes : grad_bytes;
  // NO_SHARD without a cast keeps the full parameters: nothing is gathered
  return rq.parallelism.fsdp.enabled && (rq.parallelism.fsdp.shard_degree > 1 || pb != grad_bytes);
}

std::vector<uint64_t> gathered_units(const Request& rq, const UnitSizes& u, uint64_t grad_bytes,
                                     OpPhase phase, int32_t layer) {
  std::vector<uint64_t> out;
  fsdp_unsharded(rq, u, grad_bytes, phase, layer, &out);
  if (rq.parallelism.zero.stage == 3 && phase != OpPhase::loss) {
    if (rq.parallelism.zero.stage3.enabled) {
      zero3_gathered(rq, u, phase, layer, &out);
    } else {
      // DeepSpeed's stage-3 estimator: the largest layer gathered whole, twice with prefetch
      uint64_t largest = 0;
      for (uint64_t x : u.bytes) largest = std::max(largest, x);
      out.push_back(largest / rq.parallelism.tensor);
      out.push_back(largest / rq.parallelism.tensor);
    }
  }
  return out;
}

}  // namespace peak
}  // namespace trainmem
