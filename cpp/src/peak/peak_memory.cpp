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
  return rq.zero_stage > 0 && is_amp(rq.precision) && rq.zero_model_dtype_16bit;
}

// The activation settings of the request and the per-layer activations they give.
void build_activations(const Request& rq, Step* s) {
  activations::Settings& st = s->st;
  st.micro_batch = rq.micro_batch;
  st.seq_len = rq.seq_len;
  st.target_len = rq.target_len;
  st.precision = rq.precision;
  st.attention = rq.attention;
  st.tensor_parallel = rq.tensor_parallel;
  st.sequence_parallel = rq.sequence_parallel;
  // context and expert parallelism (io reads them; seq_len is already the rank's share)
  st.context_parallel = rq.context.size;
  st.cp_all_gather = rq.context.all_gather;
  st.expert_parallel = rq.expert.size;
  st.expert_tensor_parallel = rq.expert.tensor;
  st.expert_tokens =
      rq.expert.capacity_factor > 0 ? rq.expert.capacity_factor : rq.expert.imbalance;
  st.runtime = rq.runtime.traits;
  st.detail = false;
  st.loss = rq.loss;
  st.loss_chunks = rq.loss_chunks;
  st.compiled = rq.compiled;
  // DeepSpeed's bf16 / fp16 config section converts the model (engine.py
  // _configure_distributed_model: module.bfloat16() / half()): with ZeRO, amp-* runs with
  // 16-bit activations, not autocast's
  if (ds_model_dtype_16bit(rq))
    st.precision = rq.precision == Precision::amp_bf16 ? Precision::bf16 : Precision::fp16;
  // FSDP's MixedPrecisionPolicy(param_dtype) without autocast: the unsharded parameters are cast
  // to that dtype before each unit runs, so the module computes in it (FSDP2 _fsdp_param.py
  // init_unsharded_param; FSDP1 MixedPrecision.param_dtype): activations as in that precision
  if (rq.fsdp.enabled && rq.fsdp.param_bytes == 2 && rq.precision == Precision::fp32)
    st.precision = rq.fsdp.param_dtype == DType::fp16 ? Precision::fp16 : Precision::bf16;
  st.float8 = rq.float8;
  st.head_weight_bytes = is_half(st.precision) ? 2 : 4;
  s->acts = rq.is_mlp ? activations::mlp_activations(rq.mlp, st)
                      : activations::transformer_activations(rq.model(), st);
  s->nl = s->acts.layers.size();
  if (!rq.lora.enabled) return;
  // LoRA: the adapted linears per chain layer (PEFT's matching), then what autograd keeps with a
  // frozen base (activations' LoRA recipes, measured: tests/fixtures/torch_lora.json)
  s->lora = plan_lora(rq.model(), rq.lora, s->nl);
  activations::LoraSettings& l = st.lora;
  l.enabled = true;
  l.adapted = s->lora.per_layer_modules;
  l.rank = rq.lora.rank;
  l.dropout = rq.lora.dropout;
  l.qlora = rq.lora.qlora;
  if (rq.lora.base_dtype_set) l.base_dtype = rq.lora.base_dtype;
  const DType base = rq.lora.base_dtype_set ? rq.lora.base_dtype
                     : is_half(rq.precision)
                         ? (rq.precision == Precision::fp16 ? DType::fp16 : DType::bf16)
                         : DType::fp32;
  l.adapter_dtype = rq.lora.adapters_fp32 ? DType::fp32 : base;
  // transformers' enable_input_require_grads: PEFT calls it for reentrant gradient
  // checkpointing (peft_model.py) and prepare_model_for_kbit_training (QLoRA)
  l.embeddings_require_grad =
      rq.lora.qlora || (rq.checkpointing.strategy != "none" && rq.runtime.reentrant_checkpointing);
  s->acts = activations::transformer_activations(rq.model(), st);
}

// Parameters per chain layer.
void layout_parameters(const Request& rq, Step* s) {
  s->params = params_by_layer(rq, s->acts);
  s->P = s->params.total;
  // (expert parallelism: the rank's share of the experts, counted from its tensors)
  const bool experts_sharded = rq.expert.size > 1 || rq.expert.tensor > 1;
  if (!rq.is_mlp && rq.model().params > 0 && !experts_sharded) s->P = rq.model().params;
}

// Checkpointing: the chain and its segments through the placement engine (and the
// assumptions of the op-level modes).
void plan_checkpointing(const Request& rq, Step* s, std::vector<std::string>* assumptions) {
  const size_t nl = s->nl;
  const activations::ModelActivations& acts = s->acts;
  s->chain = activations::to_chain(acts);
  const std::string& strat = rq.checkpointing.strategy;
  if (strat == "attention-recompute") {
    // Megatron-LM recompute_granularity="selective" with its default recompute_modules
    // ["core_attn"] (megatron/core/transformer/transformer_config.py at d2c5e8b4; Korthikanti
    // et al. 2022 section 5): the attention core (s^2 terms) is recomputed.
    for (size_t i = 1; i + 1 < nl; ++i) {
      s->chain.layers[i].saved_bytes -= s->acts.layers[i].attention_core_bytes;
      s->selective_recompute += 4.0 * rq.micro_batch * rq.seq_len * rq.seq_len *
                                rq.model().arch.hidden / rq.tensor_parallel;  // QK^T and PV again
    }
  }
  const bool op_level = strat == "selective-op" || strat == "torchtitan-op";
  if (op_level) {
    // create_selective_checkpoint_contexts (torch/utils/checkpoint.py, PyTorch 2.4): each block
    // runs under a non-reentrant checkpoint; the outputs of the policy's ops are cached until
    // the block is recomputed, every other op runs again
    std::vector<std::string> absent;
    for (size_t i = 1; i + 1 < nl; ++i) {
      if (acts.layers[i].op_outputs.empty())
        fail(code::kUnsupported, "checkpointing",
             {"checkpointing '", strat, "' is modelled for Llama-family blocks; the '", acts.recipe,
              "' recipe lists no ops to keep"});
      const activations::SelectiveKeep k =
          activations::selective_keep(acts.layers[i], rq.checkpointing.save);
      placement::Layer& L = s->chain.layers[i];
      L.selective = true;
      L.selective_kept_bytes = k.bytes;
      L.selective_recompute_cost = std::max(0.0, L.forward_cost - k.saved_flops);
      if (i == 1) absent = k.absent;
    }
    std::string names;
    for (const auto& n : rq.checkpointing.save.ops) names += (names.empty() ? "" : ", ") + n;
    assumptions->push_back(
        "op-level selective checkpointing (" +
        (strat == "torchtitan-op"
             ? std::string("torchtitan selective_ac_option=\"op\": mm and SDPA outputs kept, every "
                           "second mm recomputed")
             : "outputs of " + (names.empty() ? std::string("no op") : names) + " kept" +
                   (rq.checkpointing.save.every_other_mm ? ", every second mm recomputed" : "")) +
        "): each block keeps its input and those outputs; the recomputation re-creates the rest "
        "(measured with a torch 1.13 emulation of the policy on CPU, eager attention; SDPA "
        "outputs from the kernel's signature)");
    if (rq.compiled)
      assumptions->push_back(
          "torch.compile with op-level selective checkpointing (torchtitan's default: "
          "apply_ac then apply_compile per block): AOTAutograd's partitioner honours the policy's "
          "MUST_SAVE outputs and recomputes the rest, so each block keeps what the eager policy "
          "keeps; its transients are the compiled block's (not measured on a GPU)");
    for (const auto& a : absent)
      assumptions->push_back(
          "saveOps '" + a + "' matches no op of these blocks (" +
          (rq.attention == activations::Attention::sdpa ? "SDPA attention" : "eager attention") +
          "): nothing kept for it");
  }
  if (strat == "none" || strat == "attention-recompute") {
    s->plan = placement::evaluate(s->chain, {});
  } else if (strat == "selective-layer") {
    // torchtitan selective_ac_option = k (torchtitan/distributed/activation_checkpoint.py
    // _apply_layer_sac): the j-th block (1-based) is checkpointed when j % k == 0; chain
    // layer i is block i (1-based)
    std::vector<placement::Segment> segs;
    for (uint32_t i = 1; i + 1 < nl; ++i)
      if (i % rq.checkpointing.layer_every == 0) segs.push_back({i, i});
    s->plan = placement::evaluate(s->chain, segs);
  } else if (strat == "full" || op_level) {
    // HF gradient_checkpointing / Megatron full: every block is its own checkpointed segment;
    // diffusers wraps only its ResnetBlock2D and transformer blocks (checkpointable), not the
    // glue between them (unet_2d_blocks.py: self._gradient_checkpointing_func(resnet, ...))
    std::vector<placement::Segment> segs;
    const uint32_t first = rq.is_mlp ? 0 : 1,
                   last = rq.is_mlp ? uint32_t(nl - 1) : uint32_t(nl - 2);
    for (uint32_t i = first; i <= last; ++i)
      if (acts.layers[i].checkpointable) segs.push_back({i, i});
    s->plan = placement::evaluate(s->chain, segs);
  } else {
    s->plan = placement::plan(s->chain, rq.checkpointing.placement);
  }
}

// Bytes of one element of a dtype.
uint64_t width(DType d) { return dtype_bytes_for(d, 1); }

// How parameters and gradients are held on the device: dtypes, ZeRO's and FSDP's shards,
// offload; and the sources the breakdown names.
void hold_weights(const Request& rq, Step* s) {
  Holding& h = s->hold;
  const bool amp = is_amp(rq.precision), half = is_half(rq.precision);
  const DType half_type = rq.precision == Precision::fp16 ? DType::fp16 : DType::bf16;
  // ZeRO's 16-bit params + fp32 master; DeepSpeed's torch_autocast keeps fp32 parameters
  // (deepspeed/runtime/torch_autocast.py, commit f13ab493: "All parameters must be float32")
  h.deepspeed_mp = ds_model_dtype_16bit(rq);
  h.ranks = rq.fsdp.enabled ? rq.fsdp.shard_degree : (rq.zero_stage > 0 ? rq.data_parallel : 1);
  const uint64_t N = h.ranks, t = rq.tensor_parallel;
  h.weight_bytes = (half || h.deepspeed_mp) ? 2 : 4;
  h.grad_bytes = h.weight_bytes;  // torch keeps a .grad in its parameter's dtype
  // LoRA: the base as loaded (from_pretrained torch_dtype), the adapters fp32 unless PEFT's
  // autocast_adapter_dtype is off (peft/tuners/tuners_utils.py _cast_adapter_dtype)
  const DType base = rq.lora.base_dtype_set ? rq.lora.base_dtype : (half ? half_type : DType::fp32);
  h.base_dtype = base;
  h.base_bytes = width(base);
  h.adapter_dtype = rq.lora.adapters_fp32 ? DType::fp32 : base;
  h.adapter_bytes = width(h.adapter_dtype);
  const ModelDescription& m = rq.model();
  h.trainable = rq.lora.enabled                   ? s->lora.params
                : (!rq.is_mlp && m.has_tensors()) ? m.trainable_params
                                                  : s->P;
  h.params = s->P + (rq.lora.enabled ? s->lora.params : 0);
  const bool sharded_weights = rq.zero_stage == 3 || rq.fsdp.enabled;
  h.weight_divisor = t * (sharded_weights ? N : 1);
  h.grad_divisor = t * (rq.zero_stage >= 2 || rq.fsdp.enabled ? N : 1);
  h.state_divisor = t * N;
  const bool fsdp_offload = rq.fsdp.enabled && rq.fsdp.cpu_offload;
  h.offload_params = rq.offload_params || fsdp_offload;
  h.offload_optimizer = rq.offload_optimizer || fsdp_offload;
  h.offload_grads = fsdp_offload;
  h.weights_gathered_16bit = (rq.fsdp.enabled && rq.fsdp.param_bytes == 2) || h.deepspeed_mp;
  if (rq.lora.qlora)
    h.weights_src =
        std::string("QLoRA (Dettmers et al. 2023): the blocks' linear weights in 4-bit ") +
        "NF4 with double-quantised absmax (bitsandbytes Params4bit: 4.127 bits per "
        "value), the other weights in " +
        dtype_name(base) + ", adapters in " + dtype_name(h.adapter_dtype) + " (PEFT)";
  else if (rq.lora.enabled)
    h.weights_src = std::string("LoRA (Hu et al. 2021): frozen base in ") + dtype_name(base) +
                    ", adapters in " + dtype_name(h.adapter_dtype) + " (PEFT)";
  else
    h.weights_src = h.deepspeed_mp ? "ZeRO (Rajbhandari et al. 2020): 16-bit parameters, 2 B/param"
                    : half         ? "parameters in 16-bit: 2 B/param"
                           : (amp ? "torch.autocast keeps fp32 parameters: 4 B/param (its 16-bit "
                                    "copies are temporaries)"
                                  : "fp32 parameters: 4 B/param");
  if (t > 1) h.weights_src += "; tensor parallel splits them over " + std::to_string(t) + " ranks";
  if (rq.fsdp.enabled)
    h.weights_src += "; FSDP" + std::to_string(rq.fsdp.version) + " " + rq.fsdp.strategy +
                     " shards them over " + std::to_string(N) + " ranks";
  if (rq.zero_stage == 3)
    h.weights_src += "; ZeRO-3 partitions them over " + std::to_string(N) + " ranks";
  if (rq.zero3.enabled && rq.zero_stage == 3)
    h.weights_src += "; tensors of at most stage3_param_persistence_threshold values kept whole";
  if (h.offload_params)
    h.weights_src += fsdp_offload ? "; on the CPU (CPUOffload / CPUOffloadPolicy)"
                                  : "; offloaded to CPU (ZeRO-Infinity / ZeRO-Offload)";
  const uint64_t gb = rq.lora.enabled ? h.adapter_bytes : h.grad_bytes;
  h.grads_src =
      std::to_string(gb) + " B per trainable parameter (" + (gb == 4 ? "fp32" : "16-bit") +
      " .grad, in the parameter's dtype)" +
      (rq.zero_stage >= 2 ? "; ZeRO-2/3 partitions them over " + std::to_string(N) + " ranks"
                          : "") +
      (rq.fsdp.enabled ? "; FSDP reduce-scatters them into shards over " + std::to_string(N) +
                             " ranks" + (fsdp_offload ? ", copied to the CPU" : "")
                       : "") +
      (rq.accumulation_steps > 1 ? "; kept across the " + std::to_string(rq.accumulation_steps) +
                                       " accumulation micro-steps"
                                 : "; allocated layer by layer in the backward (set_to_none)");
}

// Master weights, optimizer state and the step's temporaries: their dtypes and sources.
void hold_optimizer(const Request& rq, Step* s, std::vector<std::string>* assumptions) {
  Holding& h = s->hold;
  const bool amp = is_amp(rq.precision), half = is_half(rq.precision);
  const uint64_t N = h.ranks;
  if (h.deepspeed_mp)
    h.master_src = "ZeRO mixed precision: fp32 master copy, 4 B/param, partitioned over " +
                   std::to_string(N) + " ranks (Rajbhandari et al. 2020, K = 12 incl. states)";
  else
    h.master_src = amp ? "none: torch.autocast trains the fp32 parameters directly"
                       : "none: no separate master copy in this precision";
  // torch's optimizers keep state in the parameter's dtype (zeros_like(param)); ZeRO's
  // mixed precision steps the fp32 master partition
  h.state_dtype = (half && !h.deepspeed_mp)
                      ? (rq.precision == Precision::bf16 ? DType::bf16 : DType::fp16)
                      : DType::fp32;
  const DType state_shown = rq.lora.enabled ? h.adapter_dtype : h.state_dtype;
  h.state_width = width(h.state_dtype);
  h.state_src = "optimizer '" + optimizer_name(rq.optimizer) +
                "' state layout per parameter tensor (torch/optim, " + dtype_name(state_shown) +
                " states)" +
                (N > 1 ? (rq.fsdp.enabled ? "; FSDP shards" : "; ZeRO partitions") +
                             std::string(" it over ") + std::to_string(N) + " ranks"
                       : "") +
                (rq.optimizer.paged
                     ? "; bitsandbytes paged: tensors of 100,000 values or more in CUDA managed "
                       "memory, outside torch.cuda's allocated and reserved bytes (line "
                       "pagedOptimizerState)"
                     : "");
  if (!rq.is_mlp && !rq.model().has_tensors() && !rq.lora.enabled)
    assumptions->push_back(
        "optimizer state from the parameter count as one tensor (factored optimizers "
        "need the tensor shapes: give a preset or config)");
  const StepFacts f =
      step_facts(rq.optimizer, rq.optimizer_implementation, rq.runtime.foreach_adam_lists);
  const uint32_t temps = f.impl == vocab::OptimizerImpl::foreach ? f.foreach_lists : f.loop_copies;
  h.temp_src =
      f.own_kernel                            ? (is_torchao_low_bit(rq.optimizer)
                                                     ? "optimizer step: torchao's torch.compile'd step, one tensor at a time "
                                                       "(torchao/optim/adam.py)"
                                                     : "optimizer step: bitsandbytes' fused 8-bit kernels, no temporaries")
      : f.impl == vocab::OptimizerImpl::fused ? "optimizer step: fused kernel (fused=True), no "
                                                "temporaries"
      : temps == 0                            ? "optimizer step: in place, no temporaries"
      : f.impl == vocab::OptimizerImpl::foreach
          ? "optimizer step: _foreach_* lists over all trainable tensors, " +
                std::to_string(temps) + " at once (torch/optim, the runtime's PyTorch line)"
          : "optimizer step: one tensor at a time (for-loop), " + std::to_string(temps) +
                " temporaries of it at once";
  if (is_torchao_low_bit(rq.optimizer))
    assumptions->push_back(
        "torchao low-bit AdamW: states quantised only for tensors of at least 4096 values that "
        "divide into blockSize blocks (others keep zeros_like(param)); the compiled step's fp32 "
        "values are taken as fused into its kernels, with no whole-tensor temporaries (not "
        "measured)");
  if (rq.fsdp.enabled && rq.fsdp.cpu_offload)
    h.state_src += "; on the CPU with the sharded parameters (FSDP CPU offload)";
  if (rq.zero_redundancy_optimizer)
    h.state_src +=
        "; ZeroRedundancyOptimizer: the state of the parameters assigned to the rank "
        "holding the most elements (largest first, each to the least loaded of the " +
        std::to_string(rq.data_parallel) + " ranks)";
  if (rq.offload_optimizer) {
    h.state_src += "; offloaded to CPU (ZeRO-Offload)";
    h.master_src += "; offloaded to CPU";
  }
  s->context_bytes = rq.runtime_overhead_set ? rq.runtime_overhead_bytes
                     : rq.runtime.is_cuda()  ? rq.runtime.context_bytes
                                             : 0;
  s->runtime_src =
      rq.runtime_overhead_set ? "runtimeOverheadBytes (given)" : rq.runtime.context_source;
}

Line line_of(const device::Figures& f, std::string source,
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
  const bool ddp = rq.data_parallel > 1 && rq.zero_stage == 0 && !rq.fsdp.enabled;
  r->allocated_peak_bytes = f.allocated_peak;
  r->peak_phase = f.peak_phase;
  r->peak_layer = f.peak_layer;
  r->timeline = f.timeline;
  r->weights = line_of(f, h.weights_src, {{"weights", Part::weights}});
  r->master_weights = line_of(f, h.master_src, {{"masterWeights", Part::master_weights}});
  r->gradients = line_of(
      f,
      h.grads_src + (ddp ? (rq.ddp_gradient_as_bucket_view
                                ? "; DDP: the .grad tensors are views of the reducer's buckets "
                                  "(gradient_as_bucket_view)"
                                : "; DDP: the reducer's buckets hold a second copy of every "
                                  "gradient (gradient_as_bucket_view=False)")
                         : ""),
      {{"grads", Part::gradients}, {"ddpBuckets", Part::ddp_buckets}});
  r->optimizer_state = line_of(f, h.state_src, {{"optimizerState", Part::optimizer_state}});
  r->activations =
      line_of(f,
              "saved-for-backward tensors derived per op (" + s.acts.recipe +
                  " recipe, activations.cpp), planned by the placement engine (" +
                  rq.checkpointing.strategy + "); the batch and the tensors passed between layers",
              {{"batch", Part::batch}, {"saved", Part::saved}, {"boundaries", Part::boundaries}});
  r->temporaries =
      line_of(f,
              "at the peak: gradients of activations, the op's transients (activations.cpp), "
              "autocast's 16-bit weight copies, gathered shards and the optimizer step's "
              "temporaries; " +
                  h.temp_src,
              {{"activationGradients", Part::activation_grads},
               {"opTransients", Part::op_transients},
               {"autocastCopies", Part::autocast_copies},
               {"gatheredParameters", Part::gathered},
               {"optimizerTemporaries", Part::optimizer_temps},
               {"gradientPartition", Part::grad_partition}});
  r->workspace = line_of(f, rq.runtime.workspace_source, {{"workspace", Part::workspace}});
  r->allocator_rounding = {
      f.rounding_at_peak,
      rq.runtime.is_cuda()
          ? "the caching allocator's blocks beyond the tensors' bytes: sizes rounded up to 512 B, "
            "and blocks not split when less than 1 MiB would remain "
            "(c10/cuda/CUDACachingAllocator.cpp round_size, should_split)"
          : "none on the CPU",
      {}};
  const uint64_t nccl = (rq.data_parallel > 1 || rq.tensor_parallel > 1) &&
                                !rq.runtime_overhead_set && rq.runtime.is_cuda()
                            ? rq.runtime.nccl_bytes
                            : 0;
  r->runtime = {
      s.context_bytes + nccl,
      (nccl ? "with NCCL's communicator buffers (allocator.ncclBytes); " : "") + s.runtime_src,
      {}};
  r->paged_optimizer_state = {f.managed,
                              "bitsandbytes paged optimizer: state tensors of 100,000 values or "
                              "more in CUDA managed memory (cudaMallocManaged), outside the "
                              "caching allocator",
                              {}};
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
  if (!rq.is_mlp)
    for (const auto& a : rq.model().assumptions) r.assumptions.push_back(a);
  if (!rq.float8_gpu_note.empty()) r.assumptions.push_back(rq.float8_gpu_note);
  if (rq.samples.packed)
    r.assumptions.push_back(
        "packed rows: every row holds seqLen tokens (torchtune PackedDataset pads each pack to "
        "max_seq_len), so memory is that of seqLen; attention per document (flash varlen or a "
        "block-causal mask) lowers the attention FLOPs, not the saved bytes: SDPA keeps "
        "per-token values and eager attention still builds seqLen x seqLen scores; the "
        "document mask itself (a FlexAttention BlockMask, or without flex a bool b x s x s "
        "mask) is not counted");
  else if (rq.samples.given)
    r.assumptions.push_back(
        "padded batches: memory at the longest sample (" + std::to_string(rq.seq_len) +
        " tokens, the micro-batch that holds it); the mean padded length over random "
        "micro-batches (samples.expectedPaddedLength) is what the step time follows");
  for (const auto& a : s.acts.assumptions) r.assumptions.push_back(a);
  if (rq.zero_stage > 0 && is_amp(rq.precision))
    r.assumptions.push_back(
        rq.zero_model_dtype_16bit
            ? "ZeRO with amp: DeepSpeed's bf16 / fp16 config section (the default): the model runs "
              "in 16-bit (16-bit activations), fp32 master weights in the optimizer partition; "
              "zeroMixedPrecision 'torch-autocast' for DeepSpeed's torch_autocast section"
            : "ZeRO with amp: DeepSpeed's torch_autocast section: fp32 parameters, gradients and "
              "optimizer partitions, 16-bit compute under torch.autocast");
  if (rq.zero_stage == 3)
    r.assumptions.push_back(
        rq.zero3.enabled
            ? "ZeRO-3 gathered parameters per layer from DeepSpeed's prefetch bucket, "
              "max_live_parameters and max_reuse_distance (fetched per chain layer, not per "
              "submodule); not checked against a GPU measurement"
            : "ZeRO-3 gathered parameters: DeepSpeed's estimator, the largest layer twice (give "
              "zero3 for the prefetch bucket and live-parameter limits)");
  if (is_amp(rq.precision) && (rq.fsdp.enabled || rq.zero_stage == 3) &&
      !s.hold.weights_gathered_16bit)
    r.assumptions.push_back(
        "torch.autocast with gathered parameters: each op casts its unsharded weight to 16 bit "
        "and the matmul's backward keeps the copy (FSDP1's views are not leaves, so "
        "autocast_mode.cpp cached_cast does not cache them; FSDP2's and ZeRO-3's unsharded "
        "parameters are taken as uncached too); FSDP's mixedPrecision param dtype avoids the "
        "copies");
  if (rq.fsdp.enabled)
    r.assumptions.push_back(
        "FSDP" + std::to_string(rq.fsdp.version) + " " + rq.fsdp.strategy +
        ": one unit per block, embeddings and head as the root unit (gathered for the whole "
        "step); gathered units and unsharded gradients live around each op (with the next units "
        "prefetched), not checked against a GPU measurement; FSDP's separate all-gather stream "
        "is not modelled");
  if (rq.lora.enabled) {
    r.assumptions.push_back("LoRA: " + std::to_string(s.lora.modules) +
                            " linear layers adapted; activations of the frozen base and the "
                            "adapters as the recipe keeps them; the base in " +
                            dtype_name(h.base_dtype) + " (lora.baseDtype), adapters " +
                            dtype_name(h.adapter_dtype));
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
  if (rq.stage.enabled || rq.expert.size > 1 || rq.expert.tensor > 1) {
    s.hold.trainable = stage_trainable(s);
    s.hold.params = s.P;
  }
  hold_optimizer(rq, &s, &r.assumptions);
  fill_result(rq, s, &r);
  const device::Figures f = device::run_step(rq, s, &r);
  fill_lines(rq, s, f, &r);
  if (rq.offload_activations)
    r.assumptions.push_back(
        "activation offloading: each saved tensor of 1 KiB or more goes to the CPU once five "
        "newer ones exist, and a layer's come back before its backward (torchtune "
        "OffloadActivations)");
  if (r.simulated)
    r.assumptions.push_back(
        "device memory: the caching allocator simulated over " + std::to_string(r.steps_simulated) +
        " steps (" + rq.runtime.name +
        "; zero_grad(set_to_none=" + (rq.set_to_none ? "True" : "False") + "), optimizer " +
        vocab::name_for(vocab::kOptimizerImpls, rq.optimizer_implementation) +
        "); nvidia-smi = reserved + the CUDA context" + (r.nccl_bytes ? " + NCCL buffers" : ""));
  if (rq.gpu_memory_bytes > 0) {
    r.has_device = true;
    const uint64_t judged = r.simulated ? r.device_used_bytes : r.peak_bytes;
    r.fits = judged <= rq.gpu_memory_bytes && r.ooms == 0;
    r.headroom_bytes = static_cast<int64_t>(rq.gpu_memory_bytes) - static_cast<int64_t>(judged);
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
  if (!r.has_device || !rq.search_max_micro_batch) return r;
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
    q.micro_batch = b;
    q.verdict_only = true;
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
  Probe last{rq.micro_batch, static_cast<double>(judged_bytes(r)),
             static_cast<double>(r.peak_bytes), true};
  note(last, r.fits);
  Probe newest = probe(rq.micro_batch + std::max<uint64_t>(1, rq.micro_batch));
  // secant steps while they narrow the interval quickly, bisection otherwise; within the work
  // bound (each probe costs about what the last did)
  for (int bisect_next = 0; hi - lo > 1;) {
    if (work + r.trace_events > kSearchEvents) {
      r.max_micro_batch_below = hi;
      r.assumptions.push_back(
          "maxMicroBatch: the search stopped at its work bound: " + std::to_string(lo) + " fits, " +
          std::to_string(hi) + " does not; the largest that fits lies between them");
      break;
    }
    uint64_t c = bisect_next ? 0 : secant(last, newest, rq.gpu_memory_bytes);
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
