// The trace specification of one training step (peak_trace_spec.hpp). Each rule names its
// source; the layer-level order of events is step_trace.cpp's.
#include "peak/peak_trace_spec.hpp"

#include <algorithm>
#include <cmath>

#include "peak/peak_sharding.hpp"
#include "peak/peak_stage.hpp"
#include "trainmem/error.hpp"
#include "trainmem/optimizer.hpp"

namespace trainmem {
namespace peak {
namespace {

using activations::Precision;
using placement::Op;

bool is_amp(Precision p) { return p == Precision::amp_fp16 || p == Precision::amp_bf16; }

uint64_t div_round(double bytes, uint64_t divisor) {
  return static_cast<uint64_t>(std::llround(bytes / static_cast<double>(divisor)));
}

// bitsandbytes Params4bit (bnb.nn.Linear4bit, quant_type nf4, blocksize 64, compress_statistics
// = double quantisation): the packed 4-bit data, one 8-bit absmax per 64 values and one fp32
// absmax per 256 of those (bitsandbytes/functional.py quantize_4bit; Dettmers et al. 2023)
std::vector<uint64_t> nf4_pieces(uint64_t numel, uint64_t divisor) {
  const uint64_t blocks = (numel + 63) / 64;
  return {(numel + 1) / 2 / divisor, blocks / divisor, (blocks + 255) / 256 * 4 / divisor};
}

// One micro-step's schedule: the plan's own op sequence (multi-level strategies) or the
// single-level one torch.utils.checkpoint runs.
std::vector<Op> schedule_of(const placement::Chain& chain, const placement::PlanResult& plan) {
  if (!plan.scheduled) fail(code::kInternal, "", Message{"error.internal.noSchedule", {}});
  if (plan.schedule.empty()) return placement::single_level_ops(chain, plan.checkpointed);
  return plan.schedule;
}

// A parameter's .grad and optimizer entry, kept per layer so that a tied weight's can move to
// the layer whose backward makes it.
struct Trainable {
  uint64_t numel = 0;
  uint64_t grad = 0;
  trace::OptimizerParam opt;
};

// torch/distributed/optim/zero_redundancy_optimizer.py @ 013a31b7 _partition_parameters: the
// parameters, largest first, each to the rank with the fewest elements so far. Returns, for
// each parameter (in the order given), whether the rank holding the most elements owns it: that
// rank's memory binds.
std::vector<bool> zero_redundancy_owned(const std::vector<uint64_t>& numel, uint64_t ranks) {
  std::vector<size_t> order(numel.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return numel[a] > numel[b]; });
  std::vector<uint64_t> sizes(ranks, 0);
  std::vector<uint64_t> rank_of(numel.size(), 0);
  for (size_t k : order) {
    const auto r =
        static_cast<uint64_t>(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
    rank_of[k] = r;
    sizes[r] += numel[k];
  }
  const auto binding =
      static_cast<uint64_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
  std::vector<bool> owned(numel.size());
  for (size_t k = 0; k < numel.size(); ++k) owned[k] = rank_of[k] == binding;
  return owned;
}

class SpecBuilder {
 public:
  SpecBuilder(const Request& rq, const Step& s, uint64_t* managed)
      : rq_(rq), s_(s), h_(s.hold), managed_(*managed) {
    managed_ = 0;
    amp_ = is_amp(rq.training.precision);
    gathered_ = rq.parallelism.zero.stage == 3 || rq.parallelism.fsdp.enabled;
    facts_ = step_facts(rq.training.optimizer, rq.training.optimizer_implementation,
                        rq.runtime.profile.foreach_adam_lists);
    trainables_.assign(s.nl, {});
    late_.assign(s.nl, {});
    units_.numel.assign(s.nl, 0);
    units_.bytes.assign(s.nl, 0);
    units_.trainable.assign(s.nl, 0);
    units_.expert_trainable.assign(s.nl, 0);
  }

  trace::StepSpec build() {
    spec_.input_bytes = s_.acts.input_bytes;
    spec_.held = s_.acts.held;
    if (rq_.parallelism.stage.enabled) spec_.in_flight = resident_tensors(rq_, s_);
    for (size_t i = 0; i < s_.nl; ++i) spec_.layers.push_back(layer(i));
    for (size_t i = 0; i < s_.nl; ++i) {
      for (const ParamRef& p : s_.params.layers[i]) parameter(i, p);
      if (rq_.model.lora.enabled && i < s_.lora.per_layer.size()) adapters(i);
    }
    for (const TiedUse& u : s_.params.tied) tied(u);
    if (rq_.parallelism.ddp.zero_redundancy_optimizer) drop_unowned_state();
    for (size_t i = 0; i < s_.nl; ++i) {
      for (auto& t : trainables_[i]) {
        spec_.layers[i].grads.push_back(t.grad);
        spec_.params.push_back(std::move(t.opt));
      }
      for (auto& t : late_[i]) {
        spec_.layers[i].grads.push_back(t.grad);
        spec_.params.push_back(std::move(t.opt));
        ++spec_.layers[i].late_grads;
      }
    }
    for (const TiedGrad& t : tied_grads_) {
      const auto slot = static_cast<uint32_t>(trainables_[t.user].size() + t.late);
      spec_.layers[t.owner].tied_grads.push_back({static_cast<uint32_t>(t.user), slot, t.bytes});
    }
    spec_.ops = schedule_of(s_.chain, s_.plan);
    optimizer();
    gathers();
    runtime_and_parallel();
    return std::move(spec_);
  }

 private:
  // The layer's saved tensors, transients and selective cache (activations.hpp).
  trace::TraceLayer layer(size_t i) const {
    const auto& la = s_.acts.layers[i];
    trace::TraceLayer L;
    L.tensors = la.tensors;
    if (L.tensors.empty() && la.saved_bytes) L.tensors.push_back(la.saved_bytes);
    L.output_bytes = la.output_bytes;
    L.input_saved = la.input_saved;
    L.skips = la.skips;
    L.concat_input = la.concat_input;
    // LoRA: the recipe lists the frozen weights' 16-bit copies the graph keeps (a frozen
    // weight is cast per op, not cached: autocast_mode.cpp cached_cast)
    if (rq_.model.lora.enabled) {
      L.cast_weights = la.kept_weight_casts;
      L.casts_cached = false;
    }
    L.forward_temps = la.forward_temps;
    L.backward_temps = la.backward_temps;
    if (s_.chain.layers[i].selective)
      L.selective_kept = activations::selective_keep(la, rq_.training.checkpointing.save).tensors;
    if (recomputes_core(i)) {
      // Megatron selective recompute (as plan_checkpointing's chain): the core's s^2 tensors
      // are not kept; its backward recomputes them, alive while the backward walks the core
      for (uint32_t k = la.core_first; k < la.core_end; ++k) L.tensors[k] = 0;
      L.backward_temps.push_back({la.core_end - 1, 1, la.attention_core_bytes});
    }
    // layers without per-tensor transients: the layer's lump as one piece
    if (L.forward_temps.empty() && la.forward_temp_bytes)
      L.forward_temps.push_back({0, 1, la.forward_temp_bytes});
    if (L.backward_temps.empty() && la.backward_temp_bytes) {
      const uint64_t dinput = i > 0 ? s_.acts.layers[i - 1].output_bytes : 0;
      if (la.backward_temp_bytes > dinput)
        L.backward_temps.push_back({0, 1, la.backward_temp_bytes - dinput});
    }
    return L;
  }

  // Whether the layer's attention core is recomputed (checkpointing "attention-recompute";
  // embeddings and head excepted, as the chain's).
  bool recomputes_core(size_t i) const {
    const auto& la = s_.acts.layers[i];
    return rq_.training.checkpointing.strategy == vocab::Strategy::attention_recompute && i > 0 &&
           i + 1 < s_.nl && la.core_end > la.core_first && la.core_end <= la.tensors.size();
  }

  // Whether the weight is multiplied in fp32 under torch.autocast, so that it is cast to 16 bit
  // (autocast_mode.cpp: the lower-precision ops cast fp32 arguments).
  bool cast_under_autocast(size_t layer, const ParamRef& p, bool quantised) const {
    if (!amp_ || !p.matrix || quantised || h_.weights_gathered_16bit) return false;
    if (layer == 0 && !rq_.model.is_mlp) return false;  // the embeddings: a lookup, not a matmul
    const uint64_t bytes = rq_.model.lora.enabled ? h_.base_bytes : h_.weight_bytes;
    return bytes == 4;
  }

  void parameter(size_t i, const ParamRef& p) {
    const TensorSpec& t = *p.spec;
    const bool quantised = rq_.model.lora.qlora && p.in_block && t.linear != LinearKind::none;
    const bool frozen = rq_.model.lora.enabled || !t.trainable;
    // ZeRO-3 stage3_param_persistence_threshold: tensors this small are never partitioned
    // (partition_parameters.py ds_persist); each rank holds them whole
    const bool persistent_whole = rq_.parallelism.zero.stage3.enabled &&
                                  rq_.parallelism.zero.stage == 3 &&
                                  p.numel <= rq_.parallelism.zero.stage3.persistence_threshold;
    const uint64_t wdiv = persistent_whole ? rq_.parallelism.tensor
                          : p.expert       ? h_.expert_weight_divisor
                                           : h_.weight_divisor;
    const uint64_t wb = rq_.model.lora.enabled ? h_.base_bytes : h_.weight_bytes;
    uint64_t whole = 0;
    for (uint64_t b : quantised ? nf4_pieces(p.numel, 1) : std::vector<uint64_t>{p.numel * wb})
      whole += b;
    add_unit(i, p.numel, whole, quantised, !frozen, p.expert);
    if (!h_.offload_params) {
      if (quantised) {
        for (uint64_t b : nf4_pieces(p.numel, wdiv)) spec_.weights.push_back(b);
      } else {
        spec_.weights.push_back(div_round(double(p.numel) * wb, wdiv));
      }
    }
    if (!rq_.model.lora.enabled && cast_under_autocast(i, p, quantised)) {
      spec_.layers[i].cast_weights.push_back(p.numel * 2 / rq_.parallelism.tensor);
      // a frozen weight is no leaf requiring grad, nor is a gathered shard's view (FSDP1's
      // flat parameter views; the issue of ZeRO-3 and FSDP2 stated with the result): cast per
      // op, not cached
      if (frozen || gathered_) spec_.layers[i].casts_cached = false;
    }
    if (frozen) return;
    trainables_[i].push_back(trainable(t, p.numel, h_.grad_bytes, h_.state_dtype, p.expert));
  }

  // `expert`: a routed expert's share, sharded over the expert-data-parallel group.
  Trainable trainable(const TensorSpec& t, uint64_t numel, uint64_t grad_bytes, DType state_dtype,
                      bool expert = false) {
    Trainable tr;
    tr.numel = numel;
    const uint64_t gdiv = expert ? h_.expert_grad_divisor : h_.grad_divisor;
    const uint64_t sdiv = expert ? h_.expert_state_divisor : h_.state_divisor;
    if (expert) expert_trainable_ += numel;
    tr.grad = h_.offload_grads ? 0 : numel * grad_bytes / gdiv;
    if (h_.offload_optimizer) return tr;
    // torch's `step` is a CPU scalar tensor unless the step is fused or capturable
    // (torch/optim/adamw.py _init_group: device=p.device only then)
    // expert parallelism: a rank's share of a routed expert tensor (peak_params.cpp
    // shard_experts) has its state in proportion: the first dimension scaled
    TensorSpec share;
    const bool sharded = numel != t.numel() && !t.shape.empty() && t.numel() > 0;
    if (sharded) {
      share = t;
      share.shape[0] = std::max<uint64_t>(1, t.shape[0] * numel / t.numel());
    }
    const StateBytes& sb = state_of(sharded ? share : t, state_dtype, sdiv);
    managed_ += sb.managed;
    tr.opt.state = sb.device;
    if (h_.deepspeed_mp) tr.opt.master = numel * 4 / sdiv;
    tr.opt.temp_bytes = numel * dtype_bytes_for(state_dtype, 1) / sdiv;
    tr.opt.group = state_dtype == DType::fp32 ? 0 : 1;
    return tr;
  }

  // The state tensors of one parameter on the device (and in managed memory), computed once per
  // (shape, dtype, shard divisor): a model repeats a few shapes many times.
  struct StateBytes {
    std::vector<uint64_t> shape;
    DType param = DType::fp32, state = DType::fp32;
    uint64_t divisor = 1;
    std::vector<uint64_t> device;
    uint64_t managed = 0;
  };
  const StateBytes& state_of(const TensorSpec& t, DType state_dtype, uint64_t divisor) {
    for (const StateBytes& c : state_cache_)
      if (c.shape == t.shape && c.param == t.dtype && c.state == state_dtype &&
          c.divisor == divisor)
        return c;
    StateBytes c{t.shape, t.dtype, state_dtype, divisor, {}, 0};
    // torch's `step` is a CPU scalar tensor unless the step is fused or capturable
    // (torch/optim/adamw.py _init_group: device=p.device only then)
    const bool step_on_device = facts_.impl == vocab::OptimizerImpl::fused && !facts_.own_kernel;
    for (const auto& st : optimizer_state(rq_.training.optimizer, t, state_dtype)) {
      if (st.kind != StateKind::tensor || (st.shape.empty() && !step_on_device)) continue;
      // paged (bitsandbytes get_state_buffer): >= 100,000 values go to managed memory
      if (rq_.training.optimizer.paged && st.numel() >= 100000)
        c.managed += st.bytes() / divisor;
      else
        c.device.push_back(st.bytes() / divisor);
    }
    if (state_cache_.size() >= 64) state_cache_.erase(state_cache_.begin());
    state_cache_.push_back(std::move(c));
    return state_cache_.back();
  }

  // LoRA's A [r, in] and B [out, r] per adapted linear: trainable leaves in the adapter dtype,
  // their .grad and optimizer state in it too (torch keeps both in the parameter's dtype).
  void adapters(size_t i) {
    const uint64_t r = rq_.model.lora.rank;
    for (const auto& io : s_.lora.per_layer[i])
      for (const TensorSpec& t :
           {TensorSpec{"lora_A", {r, io.first}}, TensorSpec{"lora_B", {io.second, r}}}) {
        // sharded with the base under ZeRO-3 / FSDP (use_orig_params: one unit per block)
        add_unit(i, t.numel(), t.numel() * h_.adapter_bytes, false, true);
        if (!h_.offload_params)
          spec_.weights.push_back(
              div_round(double(t.numel()) * h_.adapter_bytes, h_.weight_divisor));
        if (amp_ && h_.adapter_bytes == 4) spec_.layers[i].cast_weights.push_back(t.numel() * 2);
        trainables_[i].push_back(trainable(t, t.numel(), h_.adapter_bytes, h_.adapter_dtype));
      }
  }

  // ZeroRedundancyOptimizer: the binding rank steps (and holds state for) its own parameters.
  void drop_unowned_state() {
    std::vector<Trainable*> all;
    for (size_t i = 0; i < s_.nl; ++i) {
      for (auto& t : trainables_[i]) all.push_back(&t);
      for (auto& t : late_[i]) all.push_back(&t);
    }
    std::vector<uint64_t> numel;
    for (const Trainable* t : all) numel.push_back(t->numel);
    const std::vector<bool> owned = zero_redundancy_owned(numel, rq_.parallelism.data);
    for (size_t k = 0; k < all.size(); ++k)
      if (!owned[k]) all[k]->opt = trace::OptimizerParam{};
  }

  // tie_word_embeddings: the head multiplies by the embedding's weight. The head's backward
  // (which runs first) makes the first gradient, the embedding's the second; the engine sums
  // them before AccumulateGrad (step_trace.hpp TraceLayer::tied_grads).
  void tied(const TiedUse& u) {
    auto& owner = trainables_[u.owner_layer];
    const TensorSpec* spec = u.owner.spec;
    if (!rq_.model.lora.enabled && cast_under_autocast(u.user_layer, u.owner, false))
      spec_.layers[u.user_layer].cast_weights.push_back(u.owner.numel * 2 / rq_.parallelism.tensor);
    if (rq_.model.lora.enabled || !spec->trainable) return;
    // the owner's entry is the last one pushed for that tensor in its layer: find it by order
    size_t k = 0;
    for (const ParamRef& p : s_.params.layers[u.owner_layer]) {
      if (p.spec == spec) break;
      if (p.spec->trainable) ++k;
    }
    if (k >= owner.size()) return;
    Trainable moved = owner[k];
    owner.erase(owner.begin() + static_cast<long>(k));
    tied_grads_.push_back({u.owner_layer, u.user_layer, late_[u.user_layer].size(), moved.grad});
    late_[u.user_layer].push_back(std::move(moved));
  }

  void optimizer() {
    const StepFacts& f = facts_;
    spec_.impl = f.impl == vocab::OptimizerImpl::foreach ? trace::OptimizerImpl::foreach
                 : f.impl == vocab::OptimizerImpl::fused ? trace::OptimizerImpl::fused
                                                         : trace::OptimizerImpl::for_loop;
    spec_.temp_copies = h_.offload_optimizer ? 0 : f.loop_copies;
    spec_.foreach_lists = h_.offload_optimizer ? 0 : f.foreach_lists;
    if (h_.deepspeed_mp && !h_.offload_optimizer)
      spec_.step_grad_partition =
          (h_.trainable - std::min(h_.trainable, expert_trainable_)) * 4 / h_.state_divisor +
          expert_trainable_ * 4 / h_.expert_state_divisor;
  }

  // ZeRO-3 / FSDP: what is gathered around each layer's forward, recomputation and backward.
  void gathers() {
    if (rq_.parallelism.zero.stage != 3 && !rq_.parallelism.fsdp.enabled) return;
    check_fsdp_units(rq_, s_.nl, !s_.params.tied.empty());
    const uint64_t gb = rq_.model.lora.enabled ? h_.adapter_bytes : h_.weight_bytes;
    for (size_t i = 0; i < s_.nl; ++i) {
      const auto L = static_cast<int32_t>(i);
      spec_.layers[i].gather_forward = gathered_units(rq_, units_, gb, OpPhase::forward, L);
      spec_.layers[i].gather_recompute = gathered_units(rq_, units_, gb, OpPhase::recompute, L);
      spec_.layers[i].gather_backward = gathered_units(rq_, units_, gb, OpPhase::backward, L);
    }
    spec_.gather_loss = gathered_units(rq_, units_, gb, OpPhase::loss, -1);
    // FSDP1 limit_all_gathers=False: the CPU no longer waits in _unshard for the free event of
    // the all-gather two back (torch/distributed/fsdp/_runtime_utils.py _unshard:
    // _free_event_queue.dequeue_if_needed, event.synchronize), so it may run a pass ahead: each
    // layer's gathers on a stream of their own, the root unit's (held all step) on the default
    // one (step_trace.hpp TraceLayer::gather_stream)
    if (rq_.parallelism.fsdp.enabled && !rq_.parallelism.fsdp.limit_all_gathers)
      for (size_t i = 0; i < s_.nl; ++i) {
        spec_.layers[i].gather_stream = static_cast<uint32_t>(i + 1);
        spec_.layers[i].gather_shared = fsdp_root_gathered(rq_, gb) ? 1 : 0;
      }
  }

  // A tensor of `numel` elements in `bytes` as the model holds it, gathered: FSDP casts floating
  // parameters to its param_dtype (a packed 4-bit base stays packed).
  void add_unit(size_t i, uint64_t numel, uint64_t bytes, bool packed, bool trainable,
                bool expert = false) {
    units_.numel[i] += numel;
    units_.bytes[i] += rq_.parallelism.fsdp.param_bytes && !packed
                           ? numel * rq_.parallelism.fsdp.param_bytes
                           : bytes;
    if (trainable) units_.trainable[i] += numel;
    if (trainable && expert) units_.expert_trainable[i] += numel;
  }

  void runtime_and_parallel() {
    // Micro-steps after the second repeat the same allocations (the .grad tensors exist from
    // the first on): three per optimizer step reach the allocator's steady state.
    spec_.accumulation_steps = std::min<uint64_t>(rq_.training.accumulation_steps, 3);
    spec_.set_to_none = rq_.training.set_to_none;
    spec_.input_buffer_in_place = rq_.runtime.profile.input_buffer_in_place;
    spec_.workspace_bytes = rq_.runtime.profile.is_cuda() ? rq_.runtime.profile.workspace_bytes : 0;
    // three optimizer steps reach the caching allocator's steady state; counted without it,
    // the second step already repeats every later one (the state exists from the first)
    spec_.steps = rq_.allocator.simulate && rq_.runtime.profile.is_cuda() ? 3 : 2;
    spec_.optimizer_in_backward = rq_.features.optimizer_in_backward;
    spec_.offload_activations = rq_.features.offload_activations;
    if (rq_.parallelism.data > 1 && rq_.parallelism.zero.stage == 0 &&
        !rq_.parallelism.fsdp.enabled)
      ddp_buckets();
    if (rq_.parallelism.zero.stage > 0) zero_buckets();
  }

  // DeepSpeed's gradient (IPG) buckets with contiguous_gradients, in the dtype of the trainable
  // parameters: ZeRO-1/2 torch.empty(reduce_bucket_size, dtype=self.dtype) per backward, a
  // second with overlap_comm (deepspeed/runtime/zero/stage_1_and_2.py @ edaa7221 setup_buckets);
  // ZeRO-3 one per communication dtype, once (stage3.py @ edaa7221 _setup_for_real_optimizer)
  void zero_buckets() {
    const ZeroBuckets& z = rq_.parallelism.zero.buckets;
    if (!z.contiguous_gradients) return;
    const uint64_t width = rq_.model.lora.enabled ? h_.adapter_bytes : h_.weight_bytes;
    const uint64_t bytes = z.reduce_bucket * width;
    if (rq_.parallelism.zero.stage == 3) {
      spec_.reduce_buckets_held.push_back(bytes);
      return;
    }
    spec_.reduce_buckets_per_backward.assign(z.overlap_comm ? 2 : 1, bytes);
  }

  // torch/nn/parallel/distributed.py: buckets of bucket_cap_mb (25 MiB), the first of
  // dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), filled with the parameters in reverse order
  void ddp_buckets() {
    std::vector<uint64_t> grads;
    for (const auto& L : spec_.layers) grads.insert(grads.end(), L.grads.begin(), L.grads.end());
    uint64_t cap = 1ull << 20, cur = 0;
    for (size_t k = grads.size(); k-- > 0;) {
      cur += grads[k];
      if (cur >= cap) {
        spec_.ddp_buckets.push_back(cur);
        cur = 0;
        cap = rq_.parallelism.ddp.bucket_bytes;
      }
    }
    if (cur) spec_.ddp_buckets.push_back(cur);
    spec_.grads_are_bucket_views = rq_.parallelism.ddp.gradient_as_bucket_view;
  }

  const Request& rq_;
  const Step& s_;
  const Holding& h_;
  uint64_t& managed_;
  bool amp_ = false, gathered_ = false;
  StepFacts facts_;
  trace::StepSpec spec_;
  std::vector<std::vector<Trainable>> trainables_, late_;
  // a tied weight: its owner (embedding) layer, the user (head) layer, its index in the user's
  // late_ and its gradient's bytes
  struct TiedGrad {
    size_t owner = 0, user = 0, late = 0;
    uint64_t bytes = 0;
  };
  std::vector<TiedGrad> tied_grads_;
  UnitSizes units_;
  std::vector<StateBytes> state_cache_;
  uint64_t expert_trainable_ = 0;  // routed experts' trainable elements (their own shard group)
};

}  // namespace

trace::StepSpec build_spec(const Request& rq, const Step& s, uint64_t* managed) {
  return SpecBuilder(rq, s, managed).build();
}

}  // namespace peak
}  // namespace trainmem
