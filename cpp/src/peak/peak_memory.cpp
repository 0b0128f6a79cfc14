// Peak memory of one training step: the step is walked op by op (forward per layer, loss,
// backward per layer with recomputation, optimizer step) by the placement engine's simulator
// (placement::plan / evaluate) for activations, and the persistent and transient state is added
// per event. Model, defaults and sources: docs/peak-memory.md.
#include "trainmem/peak_memory.hpp"

#include <algorithm>
#include <cmath>

#include "peak/peak_device.hpp"
#include "peak/peak_lora.hpp"
#include "peak/peak_parallel.hpp"
#include "peak/peak_sharding.hpp"
#include "peak/peak_stage.hpp"
#include "peak/peak_step.hpp"
#include "trainmem/error.hpp"
#include "trainmem/optimizer.hpp"

namespace trainmem {
namespace peak {
namespace {

using activations::Precision;

bool is_amp(Precision p) { return p == Precision::amp_fp16 || p == Precision::amp_bf16; }
bool is_half(Precision p) { return p == Precision::bf16 || p == Precision::fp16; }

// ZeRO with amp-* run by DeepSpeed's bf16 / fp16 section (the default; zeroMixedPrecision)
bool ds_model_dtype_16bit(const Request& rq) {
  return rq.parallelism.zero.stage > 0 && is_amp(rq.training.precision) &&
         rq.parallelism.zero.model_dtype_16bit;
}

// The activation settings of the request and the per-layer activations they give.
void build_activations(const Request& rq, Step* s) {
  activations::Settings& st = s->st;
  st.micro_batch = rq.training.micro_batch;
  st.seq_len = rq.training.seq_len;
  st.target_len = rq.training.target_len;
  st.precision = rq.training.precision;
  st.attention = rq.training.attention;
  st.tensor_parallel = rq.parallelism.tensor;
  st.sequence_parallel = rq.parallelism.sequence;
  // context and expert parallelism (io reads them; seq_len is already the rank's share)
  st.context_parallel = rq.parallelism.context.size;
  st.cp_all_gather = rq.parallelism.context.all_gather;
  st.expert_parallel = rq.parallelism.expert.size;
  st.expert_tensor_parallel = rq.parallelism.expert.tensor;
  st.expert_tokens = rq.parallelism.expert.capacity_factor > 0
                         ? rq.parallelism.expert.capacity_factor
                         : rq.parallelism.expert.imbalance;
  st.runtime = rq.runtime.profile.traits;
  st.detail = false;
  st.loss = rq.training.loss;
  st.loss_chunks = rq.training.loss_chunks;
  st.compiled = rq.features.compiled;
  // DeepSpeed's bf16 / fp16 config section converts the model (engine.py
  // _configure_distributed_model: module.bfloat16() / half()): with ZeRO, amp-* runs with
  // 16-bit activations, not autocast's
  if (ds_model_dtype_16bit(rq))
    st.precision = rq.training.precision == Precision::amp_bf16 ? Precision::bf16 : Precision::fp16;
  // FSDP's MixedPrecisionPolicy(param_dtype) without autocast: the unsharded parameters are cast
  // to that dtype before each unit runs, so the module computes in it (FSDP2 _fsdp_param.py
  // init_unsharded_param; FSDP1 MixedPrecision.param_dtype): activations as in that precision
  if (rq.parallelism.fsdp.enabled && rq.parallelism.fsdp.param_bytes == 2 &&
      rq.training.precision == Precision::fp32)
    st.precision =
        rq.parallelism.fsdp.param_dtype == DType::fp16 ? Precision::fp16 : Precision::bf16;
  st.float8 = rq.features.float8;
  st.head_weight_bytes = is_half(st.precision) ? 2 : 4;
  s->acts = rq.model.is_mlp ? activations::mlp_activations(rq.model.mlp, st)
                            : activations::transformer_activations(rq.model.description(), st);
  s->nl = s->acts.layers.size();
  if (!rq.model.lora.enabled) return;
  // LoRA: the adapted linears per chain layer (PEFT's matching), then what autograd keeps with a
  // frozen base (activations' LoRA recipes, measured: tests/fixtures/torch_lora.json)
  s->lora = plan_lora(rq.model.description(), rq.model.lora, s->nl);
  activations::LoraSettings& l = st.lora;
  l.enabled = true;
  l.adapted = s->lora.per_layer_modules;
  l.rank = rq.model.lora.rank;
  l.dropout = rq.model.lora.dropout;
  l.qlora = rq.model.lora.qlora;
  if (rq.model.lora.base_dtype_set) l.base_dtype = rq.model.lora.base_dtype;
  const DType base = rq.model.lora.base_dtype_set ? rq.model.lora.base_dtype
                     : is_half(rq.training.precision)
                         ? (rq.training.precision == Precision::fp16 ? DType::fp16 : DType::bf16)
                         : DType::fp32;
  l.adapter_dtype = rq.model.lora.adapters_fp32 ? DType::fp32 : base;
  // transformers' enable_input_require_grads: PEFT calls it for reentrant gradient
  // checkpointing (peft_model.py) and prepare_model_for_kbit_training (QLoRA)
  l.embeddings_require_grad =
      rq.model.lora.qlora || (rq.training.checkpointing.strategy != vocab::Strategy::none &&
                              rq.runtime.profile.reentrant_checkpointing);
  s->acts = activations::transformer_activations(rq.model.description(), st);
}

// Parameters per chain layer.
void layout_parameters(const Request& rq, Step* s) {
  s->params = params_by_layer(rq, s->acts);
  s->P = s->params.total;
  // (expert parallelism: the rank's share of the experts, counted from its tensors)
  const bool experts_sharded = rq.parallelism.expert.size > 1 || rq.parallelism.expert.tensor > 1;
  if (!rq.model.is_mlp && rq.model.description().params > 0 && !experts_sharded)
    s->P = rq.model.description().params;
}

// Checkpointing: the chain and its segments through the placement engine (and the
// assumptions of the op-level modes).
void plan_checkpointing(const Request& rq, Step* s, std::vector<Text>* assumptions) {
  const size_t nl = s->nl;
  const activations::ModelActivations& acts = s->acts;
  s->chain = activations::to_chain(acts);
  using vocab::Strategy;
  const Strategy kind = rq.training.checkpointing.strategy;
  const std::string strat = vocab::name_of(kind);
  if (kind == Strategy::attention_recompute) {
    // Megatron-LM recompute_granularity="selective" with its default recompute_modules
    // ["core_attn"] (megatron/core/transformer/transformer_config.py at d2c5e8b4; Korthikanti
    // et al. 2022 section 5): the attention core (s^2 terms) is recomputed.
    uint64_t core = 0;
    for (size_t i = 1; i + 1 < nl; ++i) core += s->acts.layers[i].attention_core_bytes;
    // nothing to drop (SDPA/flash keep no s^2 tensor, or a recipe without them): said, not silent
    if (core == 0) assumptions->push_back(Text("peak.assume.attnRecompute.none", {}));
    for (size_t i = 1; i + 1 < nl; ++i) {
      s->chain.layers[i].saved_bytes -= s->acts.layers[i].attention_core_bytes;
      s->selective_recompute += 4.0 * rq.training.micro_batch * rq.training.seq_len *
                                rq.training.seq_len * rq.model.description().arch.hidden /
                                rq.parallelism.tensor;  // QK^T and PV again
    }
  }
  const bool op_level = vocab::op_level(kind);
  if (op_level) {
    // create_selective_checkpoint_contexts (torch/utils/checkpoint.py, PyTorch 2.4): each block
    // runs under a non-reentrant checkpoint; the outputs of the policy's ops are cached until
    // the block is recomputed, every other op runs again
    std::vector<std::string> absent;
    for (size_t i = 1; i + 1 < nl; ++i) {
      if (acts.layers[i].op_outputs.empty())
        fail(code::kUnsupported, "checkpointing",
             Message{"error.checkpointing.recipe", {{"strat", strat}, {"recipe", acts.recipe}}});
      const activations::SelectiveKeep k =
          activations::selective_keep(acts.layers[i], rq.training.checkpointing.save);
      placement::Layer& L = s->chain.layers[i];
      L.selective = true;
      L.selective_kept_bytes = k.bytes;
      L.selective_recompute_cost = std::max(0.0, L.forward_cost - k.saved_flops);
      if (i == 1) absent = k.absent;
    }
    std::string names;
    for (const auto& n : rq.training.checkpointing.save.ops)
      names += (names.empty() ? "" : ", ") + n;
    const char* sac = kind == vocab::Strategy::torchtitan_op ? "peak.assume.sac.torchtitan"
                      : rq.training.checkpointing.save.every_other_mm
                          ? "peak.assume.sac.opsEveryOther"
                          : "peak.assume.sac.ops";
    assumptions->push_back(Text(sac, {{"ops", names.empty() ? std::string("no op") : names}}));
    if (rq.features.compiled) assumptions->push_back(Text("peak.assume.sac.compile", {}));
    for (const auto& a : absent)
      assumptions->push_back(
          Text("peak.assume.sac.absent",
               {{"op", a},
                {"attention",
                 rq.training.attention == activations::Attention::sdpa ? "SDPA" : "eager"}}));
  }
  if (kind == Strategy::none || kind == Strategy::attention_recompute) {
    s->plan = placement::evaluate(s->chain, {});
  } else if (kind == Strategy::selective_layer) {
    // torchtitan selective_ac_option = k (torchtitan/distributed/activation_checkpoint.py
    // _apply_layer_sac): the j-th block (1-based) is checkpointed when j % k == 0; chain
    // layer i is block i (1-based)
    std::vector<placement::Segment> segs;
    for (uint32_t i = 1; i + 1 < nl; ++i)
      if (i % rq.training.checkpointing.layer_every == 0) segs.push_back({i, i});
    s->plan = placement::evaluate(s->chain, segs);
  } else if (kind == Strategy::full || op_level) {
    // HF gradient_checkpointing / Megatron full: every block is its own checkpointed segment;
    // diffusers wraps only its ResnetBlock2D and transformer blocks (checkpointable), not the
    // glue between them (unet_2d_blocks.py: self._gradient_checkpointing_func(resnet, ...))
    std::vector<placement::Segment> segs;
    const uint32_t first = rq.model.is_mlp ? 0 : 1,
                   last = rq.model.is_mlp ? uint32_t(nl - 1) : uint32_t(nl - 2);
    for (uint32_t i = first; i <= last; ++i)
      if (acts.layers[i].checkpointable) segs.push_back({i, i});
    s->plan = placement::evaluate(s->chain, segs);
  } else {
    s->plan = placement::plan(s->chain, rq.training.checkpointing.placement);
  }
}

// Bytes of one element of a dtype.
uint64_t width(DType d) { return dtype_bytes_for(d, 1); }

// How parameters and gradients are held on the device: dtypes, ZeRO's and FSDP's shards,
// offload; and the sources the breakdown names.
void hold_weights(const Request& rq, Step* s) {
  Holding& h = s->hold;
  const bool amp = is_amp(rq.training.precision), half = is_half(rq.training.precision);
  const DType half_type = rq.training.precision == Precision::fp16 ? DType::fp16 : DType::bf16;
  // ZeRO's 16-bit params + fp32 master; DeepSpeed's torch_autocast keeps fp32 parameters
  // (deepspeed/runtime/torch_autocast.py, commit f13ab493: "All parameters must be float32")
  h.deepspeed_mp = ds_model_dtype_16bit(rq);
  h.ranks = rq.parallelism.fsdp.enabled ? rq.parallelism.fsdp.shard_degree
                                        : (rq.parallelism.zero.stage > 0 ? rq.parallelism.data : 1);
  const uint64_t N = h.ranks, t = rq.parallelism.tensor;
  h.weight_bytes = (half || h.deepspeed_mp) ? 2 : 4;
  h.grad_bytes = h.weight_bytes;  // torch keeps a .grad in its parameter's dtype
  // LoRA: the base as loaded (from_pretrained torch_dtype), the adapters fp32 unless PEFT's
  // autocast_adapter_dtype is off (peft/tuners/tuners_utils.py _cast_adapter_dtype)
  const DType base =
      rq.model.lora.base_dtype_set ? rq.model.lora.base_dtype : (half ? half_type : DType::fp32);
  h.base_dtype = base;
  h.base_bytes = width(base);
  h.adapter_dtype = rq.model.lora.adapters_fp32 ? DType::fp32 : base;
  h.adapter_bytes = width(h.adapter_dtype);
  const ModelDescription& m = rq.model.description();
  h.trainable = rq.model.lora.enabled                   ? s->lora.params
                : (!rq.model.is_mlp && m.has_tensors()) ? m.trainable_params
                                                        : s->P;
  h.params = s->P + (rq.model.lora.enabled ? s->lora.params : 0);
  const bool sharded_weights = rq.parallelism.zero.stage == 3 || rq.parallelism.fsdp.enabled;
  h.weight_divisor = t * (sharded_weights ? N : 1);
  h.grad_divisor = t * (rq.parallelism.zero.stage >= 2 || rq.parallelism.fsdp.enabled ? N : 1);
  h.state_divisor = t * N;
  // the routed experts' shares shard over the expert-data-parallel group (peak_parallel.hpp)
  h.expert_ranks = expert_shard_ranks(rq, N);
  const uint64_t Ne = h.expert_ranks;
  h.expert_weight_divisor = t * (sharded_weights ? Ne : 1);
  h.expert_grad_divisor =
      t * (rq.parallelism.zero.stage >= 2 || rq.parallelism.fsdp.enabled ? Ne : 1);
  h.expert_state_divisor = t * Ne;
  const bool fsdp_offload = rq.parallelism.fsdp.enabled && rq.parallelism.fsdp.cpu_offload;
  h.offload_params = rq.parallelism.zero.offload_params || fsdp_offload;
  h.offload_optimizer = rq.parallelism.zero.offload_optimizer || fsdp_offload;
  h.offload_grads = fsdp_offload;
  h.weights_gathered_16bit =
      (rq.parallelism.fsdp.enabled && rq.parallelism.fsdp.param_bytes == 2) || h.deepspeed_mp;
  const std::string ranks = std::to_string(N);
  const MessageParams dtypes = {{"base", dtype_name(base)},
                                {"adapter", dtype_name(h.adapter_dtype)}};
  h.weights_src = rq.model.lora.qlora     ? Text("peak.weights.qlora", dtypes)
                  : rq.model.lora.enabled ? Text("peak.weights.lora", dtypes)
                  : h.deepspeed_mp        ? Text("peak.weights.zero", {})
                  : half                  ? Text("peak.weights.half", {})
                  : amp                   ? Text("peak.weights.autocast", {})
                                          : Text("peak.weights.fp32", {});
  if (t > 1) h.weights_src.then({"peak.weights.tp", {{"ranks", std::to_string(t)}}});
  if (rq.parallelism.fsdp.enabled)
    h.weights_src.then(
        {"peak.weights.fsdp",
         {{"version", std::to_string(rq.parallelism.fsdp.version)},
          {"strategy", vocab::name_for(vocab::kFsdpStrategies, rq.parallelism.fsdp.strategy)},
          {"ranks", ranks}}});
  if (rq.parallelism.zero.stage == 3)
    h.weights_src.then({"peak.weights.zero3", {{"ranks", ranks}}});
  if (rq.parallelism.zero.stage3.enabled && rq.parallelism.zero.stage == 3)
    h.weights_src.then({"peak.weights.zero3.whole", {}});
  if (h.offload_params)
    h.weights_src.then({fsdp_offload ? "peak.weights.fsdp.cpu" : "peak.offloaded.params", {}});
  const uint64_t gb = rq.model.lora.enabled ? h.adapter_bytes : h.grad_bytes;
  h.grads_src = Text("peak.grads.bytes",
                     {{"bytes", std::to_string(gb)}, {"dtype", gb == 4 ? "fp32" : "16-bit"}});
  if (rq.parallelism.zero.stage >= 2) h.grads_src.then({"peak.grads.zero", {{"ranks", ranks}}});
  if (rq.parallelism.fsdp.enabled)
    h.grads_src.then(
        {fsdp_offload ? "peak.grads.fsdp.cpu" : "peak.grads.fsdp", {{"ranks", ranks}}});
  if (rq.training.accumulation_steps > 1)
    h.grads_src.then(
        {"peak.grads.accumulation", {{"steps", std::to_string(rq.training.accumulation_steps)}}});
  else
    h.grads_src.then({"peak.grads.backward", {}});
}

// Master weights, optimizer state and the step's temporaries: their dtypes and sources.
void hold_optimizer(const Request& rq, Step* s, std::vector<Text>* assumptions) {
  Holding& h = s->hold;
  const bool amp = is_amp(rq.training.precision), half = is_half(rq.training.precision);
  const uint64_t N = h.ranks;
  const std::string ranks = std::to_string(N);
  h.master_src = h.deepspeed_mp ? Text("peak.master.zero", {{"ranks", ranks}})
                 : amp          ? Text("peak.master.autocast", {})
                                : Text("peak.master.none", {});
  // torch's optimizers keep state in the parameter's dtype (zeros_like(param)); ZeRO's
  // mixed precision steps the fp32 master partition
  h.state_dtype = (half && !h.deepspeed_mp)
                      ? (rq.training.precision == Precision::bf16 ? DType::bf16 : DType::fp16)
                      : DType::fp32;
  const DType state_shown = rq.model.lora.enabled ? h.adapter_dtype : h.state_dtype;
  h.state_width = width(h.state_dtype);
  h.state_src = Text("peak.state.layout", {{"optimizer", optimizer_name(rq.training.optimizer)},
                                           {"dtype", dtype_name(state_shown)}});
  if (N > 1)
    h.state_src.then(
        {rq.parallelism.fsdp.enabled ? "peak.state.fsdp" : "peak.state.zero", {{"ranks", ranks}}});
  if (rq.training.optimizer.paged) h.state_src.then({"peak.state.paged.outside", {}});
  if (!rq.model.is_mlp && !rq.model.description().has_tensors() && !rq.model.lora.enabled)
    assumptions->push_back(Text("peak.assume.state.count", {}));
  const StepFacts f = step_facts(rq.training.optimizer, rq.training.optimizer_implementation,
                                 rq.runtime.profile.foreach_adam_lists);
  const uint32_t temps = f.impl == vocab::OptimizerImpl::foreach ? f.foreach_lists : f.loop_copies;
  h.temp_src = f.own_kernel ? Text(is_torchao_low_bit(rq.training.optimizer) ? "peak.temp.torchao"
                                                                             : "peak.temp.bnb",
                                   {})
               : f.impl == vocab::OptimizerImpl::fused ? Text("peak.temp.fused", {})
               : temps == 0                            ? Text("peak.temp.inplace", {})
               : f.impl == vocab::OptimizerImpl::foreach
                   ? Text("peak.temp.foreach.lists", {{"lists", std::to_string(temps)}})
                   : Text("peak.temp.loop", {{"copies", std::to_string(temps)}});
  if (is_torchao_low_bit(rq.training.optimizer))
    assumptions->push_back(Text("peak.assume.torchao", {}));
  if (rq.parallelism.fsdp.enabled && rq.parallelism.fsdp.cpu_offload)
    h.state_src.then({"peak.state.fsdp.cpu", {}});
  if (rq.parallelism.ddp.zero_redundancy_optimizer)
    h.state_src.then({"peak.state.zro", {{"ranks", std::to_string(rq.parallelism.data)}}});
  if (rq.parallelism.zero.offload_optimizer) {
    h.state_src.then({"peak.state.offloaded", {}});
    h.master_src.then({"peak.offloaded", {}});
  }
  s->context_bytes = rq.runtime.overhead_set        ? rq.runtime.overhead_bytes
                     : rq.runtime.profile.is_cuda() ? rq.runtime.profile.context_bytes
                                                    : 0;
  s->runtime_src =
      rq.runtime.overhead_set ? Text("peak.runtime.given", {}) : rq.runtime.profile.context_source;
}

Line line_of(const device::Figures& f, Text source,
             std::initializer_list<std::pair<const char*, trace::Part>> parts) {
  Line l;
  l.source = std::move(source);
  for (const auto& p : parts) {
    const uint64_t b = f.at_peak[static_cast<size_t>(p.second)];
    l.bytes += b;
    if (parts.size() > 1) l.parts.push_back({p.first, b});
  }
  return l;
}

// The breakdown: what is live at the allocated peak, per line; the runtime outside the
// allocator.
void fill_lines(const Request& rq, const Step& s, const device::Figures& f, Result* r) {
  using trace::Part;
  const Holding& h = s.hold;
  const bool ddp =
      rq.parallelism.data > 1 && rq.parallelism.zero.stage == 0 && !rq.parallelism.fsdp.enabled;
  r->allocated_peak_bytes = f.allocated_peak;
  r->peak_phase = f.peak_phase;
  r->peak_layer = f.peak_layer;
  r->timeline = f.timeline;
  r->weights = line_of(f, h.weights_src, {{"weights", Part::weights}});
  r->master_weights = line_of(f, h.master_src, {{"masterWeights", Part::master_weights}});
  Text grads = h.grads_src;
  if (ddp)
    grads.then(
        {rq.parallelism.ddp.gradient_as_bucket_view ? "peak.grads.ddp.view" : "peak.grads.ddp.copy",
         {}});
  r->gradients = line_of(f, grads,
                         {{"grads", Part::gradients},
                          {"ddpBuckets", Part::ddp_buckets},
                          {"reduceBuckets", Part::reduce_buckets}});
  r->optimizer_state = line_of(f, h.state_src, {{"optimizerState", Part::optimizer_state}});
  r->activations =
      line_of(f,
              Text("peak.activations.source",
                   {{"recipe", s.acts.recipe},
                    {"strategy", vocab::name_of(rq.training.checkpointing.strategy)}})
                  .then({"peak.activations.more", {}}),
              {{"batch", Part::batch}, {"saved", Part::saved}, {"boundaries", Part::boundaries}});
  r->temporaries = line_of(f, Text("peak.temp.line", {}).then_all(h.temp_src),
                           {{"activationGradients", Part::activation_grads},
                            {"opTransients", Part::op_transients},
                            {"autocastCopies", Part::autocast_copies},
                            {"gatheredParameters", Part::gathered},
                            {"optimizerTemporaries", Part::optimizer_temps},
                            {"gradientPartition", Part::grad_partition}});
  r->workspace = line_of(f, rq.runtime.profile.workspace_source, {{"workspace", Part::workspace}});
  r->allocator_rounding = {
      f.rounding_at_peak,
      Text(rq.runtime.profile.is_cuda() ? "peak.rounding.cuda" : "peak.rounding.cpu", {}),
      {}};
  const uint64_t nccl = (rq.parallelism.data > 1 || rq.parallelism.tensor > 1) &&
                                !rq.runtime.overhead_set && rq.runtime.profile.is_cuda()
                            ? rq.runtime.profile.nccl_bytes
                            : 0;
  r->runtime = {s.context_bytes + nccl,
                nccl ? Text("peak.runtime.nccl", {}).then_all(s.runtime_src) : s.runtime_src,
                {}};
  r->paged_optimizer_state = {f.managed, Text("peak.paged.source", {}), {}};
  r->peak_bytes = f.allocated_peak + r->runtime.bytes + f.managed;
}

// The breakdown at the peak, the plan's figures and the assumptions.
void fill_result(const Request& rq, const Step& s, Result* out) {
  Result& r = *out;
  const Holding& h = s.hold;
  r.params = h.params;
  r.trainable_params = h.trainable;
  r.stored_activation_bytes = s.plan.stored_bytes;
  r.forward_flops = s.plan.forward_cost;
  r.recompute_flops = s.plan.recompute_cost + s.selective_recompute;
  const double base = s.plan.forward_cost + s.plan.backward_cost;
  r.recompute_fraction = base > 0 ? r.recompute_flops / base : 0;
  r.korthikanti_layer_bytes = s.acts.korthikanti_layer_bytes;
  r.derived_layer_bytes = s.nl > 2 ? s.acts.layers[1].saved_bytes : 0;
  if (!rq.model.is_mlp)
    for (const auto& a : rq.model.description().assumptions) r.assumptions.push_back(a);
  if (!rq.features.float8_gpu_note.empty()) r.assumptions.push_back(rq.features.float8_gpu_note);
  if (rq.training.samples.packed)
    r.assumptions.push_back(Text("peak.assume.packed", {}));
  else if (rq.training.samples.given)
    r.assumptions.push_back(
        Text("peak.assume.padded", {{"tokens", std::to_string(rq.training.seq_len)}}));
  for (const auto& a : s.acts.assumptions) r.assumptions.push_back(a);
  if (rq.parallelism.zero.stage > 0 && is_amp(rq.training.precision))
    r.assumptions.push_back(Text(rq.parallelism.zero.model_dtype_16bit
                                     ? "peak.assume.zero.modelDtype"
                                     : "peak.assume.zero.autocast",
                                 {}));
  if (rq.parallelism.zero.stage == 3)
    r.assumptions.push_back(Text(rq.parallelism.zero.stage3.enabled
                                     ? "peak.assume.zero3.coordinator"
                                     : "peak.assume.zero3.estimator",
                                 {}));
  if (is_amp(rq.training.precision) &&
      (rq.parallelism.fsdp.enabled || rq.parallelism.zero.stage == 3) &&
      !s.hold.weights_gathered_16bit)
    r.assumptions.push_back(Text("peak.assume.autocast.gathered", {}));
  if (rq.parallelism.fsdp.enabled)
    r.assumptions.push_back(Text(
        "peak.assume.fsdp",
        {{"version", std::to_string(rq.parallelism.fsdp.version)},
         {"strategy", vocab::name_for(vocab::kFsdpStrategies, rq.parallelism.fsdp.strategy)}}));
  sharding_assumptions(rq, &r.assumptions);
  if (rq.model.lora.enabled) {
    r.assumptions.push_back(Text("peak.assume.lora", {{"modules", std::to_string(s.lora.modules)},
                                                      {"base", dtype_name(h.base_dtype)},
                                                      {"adapter", dtype_name(h.adapter_dtype)}}));
    for (const auto& a : s.lora.assumptions) r.assumptions.push_back(a);
  }
}

}  // namespace

Result evaluate(const Request& rq) {
  Result r;
  Step s;
  build_activations(rq, &s);
  layout_parameters(rq, &s);
  restrict_to_stage(rq, &s);  // a pipeline rank's layers only (parallel.hpp)
  plan_checkpointing(rq, &s, &r.assumptions);
  hold_weights(rq, &s);
  for (auto& a : parallel_assumptions(rq)) r.assumptions.push_back(std::move(a));
  if (rq.parallelism.stage.enabled || rq.parallelism.expert.size > 1 ||
      rq.parallelism.expert.tensor > 1) {
    s.hold.trainable = stage_trainable(s);
    s.hold.params = s.P;
  }
  hold_optimizer(rq, &s, &r.assumptions);
  fill_result(rq, s, &r);
  const device::Figures f = device::run_step(rq, s, &r);
  fill_lines(rq, s, f, &r);
  if (rq.features.offload_activations) r.assumptions.push_back(Text("peak.assume.offload", {}));
  // a tied weight's two gradients summed in place (runtime inputBufferInPlace): from the
  // source (torch/csrc/autograd/input_buffer.cpp after 1.13), not measured
  if (!s.params.tied.empty() && !rq.model.lora.enabled && rq.runtime.profile.input_buffer_in_place)
    r.assumptions.push_back(Text(Message{"peak.assume.tied.inPlace", {}}.with(
        "runtime", {Message{rq.runtime.profile.name_code, {}}})));
  if (r.simulated)
    r.assumptions.push_back(
        Text(Message{r.nccl_bytes ? "peak.assume.device.nccl" : "peak.assume.device",
                     {{"steps", std::to_string(r.steps_simulated)},
                      {"setToNone", rq.training.set_to_none ? "True" : "False"},
                      {"implementation", vocab::name_for(vocab::kOptimizerImpls,
                                                         rq.training.optimizer_implementation)}}}
                 .with("runtime", {Message{rq.runtime.profile.name_code, {}}})));
  if (rq.runtime.gpu_memory_bytes > 0) {
    r.has_device = true;
    const uint64_t judged = r.simulated ? r.device_used_bytes : r.peak_bytes;
    r.fits = judged <= rq.runtime.gpu_memory_bytes && r.ooms == 0;
    r.headroom_bytes =
        static_cast<int64_t>(rq.runtime.gpu_memory_bytes) - static_cast<int64_t>(judged);
  }
  return r;
}

namespace {

// The bytes the verdict judges: what nvidia-smi shows when the allocator is simulated (what the
// run would need, also when it ran out of memory), else peakBytes.
uint64_t judged_bytes(const Result& r) { return r.simulated ? r.device_used_bytes : r.peak_bytes; }

// One evaluated micro-batch of the search.
struct Probe {
  uint64_t b = 0;
  double judged = 0;
  double allocated = 0;   // peakBytes: grows with every sample, where the reserve moves in segments
  bool measured = false;  // false: refused (an infeasible checkpointing budget)
};

// The micro-batch the line through two probes puts at the device's memory: memory grows about
// linearly with the micro-batch (the activations), a little faster (convex: the larger
// transients), so the line is refined from the newest probes.
uint64_t secant(const Probe& p, const Probe& q, uint64_t cap) {
  if (!p.measured || !q.measured || p.b == q.b) return 0;
  const double db = static_cast<double>(q.b) - static_cast<double>(p.b);
  double slope = (q.judged - p.judged) / db;
  // the reserve grows in whole segments (2 and 20 MiB, or a tensor's own), so two small
  // micro-batches often reserve the same: the tensors' bytes still give the slope
  if (!(slope > 0)) slope = (q.allocated - p.allocated) / db;
  if (!(slope > 0)) return 0;
  const double b = static_cast<double>(q.b) + (static_cast<double>(cap) - q.judged) / slope;
  return b < 1 ? 0 : static_cast<uint64_t>(std::min(b, double(uint64_t{1} << 21)));
}

// Trace events the maxMicroBatch search may evaluate, all probes together (each probe builds
// the trace, counts it and replays it through the allocator): about a second of WebAssembly
// (bench/bounded.bench.mjs). A search that reaches it answers the largest micro-batch known to
// fit and says so (maxMicroBatchBelow: the smallest known not to).
constexpr uint64_t kSearchEvents = uint64_t{4} << 20;

}  // namespace

Result compute(const Request& rq) {
  Result r = evaluate(rq);
  if (!r.has_device || !rq.answer.search_max_micro_batch) return r;
  // The largest micro-batch that fits: memory grows with the micro-batch, so what fits lies
  // below what does not. Infeasible checkpointing budgets count as "does not fit".
  constexpr uint64_t kMaxSearch = 1u << 20;
  uint64_t lo = 0, hi = kMaxSearch + 1;  // lo fits (0: none known), hi does not
  uint64_t work = r.trace_events;        // trace events evaluated so far
  auto note = [&](const Probe& p, bool fits) {
    (fits ? lo : hi) = fits ? std::max(lo, p.b) : std::min(hi, p.b);
  };
  auto probe = [&](uint64_t b) {
    Request q = rq;
    q.training.micro_batch = b;
    q.answer.verdict_only = true;
    Probe p{b, 0, 0, false};
    bool fits = false;
    try {
      const Result e = evaluate(q);
      work += e.trace_events;
      p = {b, static_cast<double>(judged_bytes(e)), static_cast<double>(e.peak_bytes), true};
      fits = e.fits;
    } catch (const RequestError& e) {
      if (e.code() != code::kInfeasible && e.code() != code::kTooLarge) throw;
    }
    note(p, fits);
    return p;
  };
  Probe last{rq.training.micro_batch, static_cast<double>(judged_bytes(r)),
             static_cast<double>(r.peak_bytes), true};
  note(last, r.fits);
  Probe newest = probe(rq.training.micro_batch + std::max<uint64_t>(1, rq.training.micro_batch));
  // secant steps while they narrow the interval quickly, bisection otherwise; within the work
  // bound (each probe costs about what the last did)
  for (int bisect_next = 0; hi - lo > 1;) {
    if (work + r.trace_events > kSearchEvents) {
      r.max_micro_batch_below = hi;
      r.assumptions.push_back(
          Text("peak.assume.searchBound",
               {{"fits", std::to_string(lo)}, {"doesNotFit", std::to_string(hi)}}));
      break;
    }
    uint64_t c = bisect_next ? 0 : secant(last, newest, rq.runtime.gpu_memory_bytes);
    if (c <= lo || c >= hi) {
      // outside what is known: 16 times what fits (a few probes span the range; the secant
      // between far probes is then accurate), or halve the interval
      c = hi > kMaxSearch ? std::max<uint64_t>(16 * lo, lo + 1) : lo + (hi - lo) / 2;
      if (c >= hi) c = hi - 1;
    }
    const uint64_t width = hi - lo;
    last = newest;
    newest = probe(c);
    bisect_next = hi - lo > width / 2;  // the step did not halve the interval
  }
  r.max_micro_batch = lo > kMaxSearch ? kMaxSearch : lo;
  return r;
}

}  // namespace peak
}  // namespace trainmem
