// Peak memory of one training step: the step is walked op by op (forward per layer, loss,
// backward per layer with recomputation, optimizer step) by the placement engine's simulator
// (placement::plan / evaluate) for activations, and the persistent and transient state is added
// per event. Model, defaults and sources: docs/peak-memory.md.
#include "trainmem/peak_memory.hpp"

#include <algorithm>
#include <cmath>

#include "io/request.hpp"
#include "peak/peak_device.hpp"
#include "peak/peak_lora.hpp"
#include "trainmem/error.hpp"

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

struct ParamLayout {
  std::vector<uint64_t> per_layer;  // parameters per chain layer (embed, blocks..., head)
  uint64_t largest_tensor = 0;
  uint64_t largest_layer = 0;
  uint64_t block_linear = 0;  // 2-D weights inside blocks (QLoRA quantises these)
};

ParamLayout layout_of(const ModelDescription& m, size_t chain_layers) {
  ParamLayout p;
  p.per_layer.assign(chain_layers, 0);
  const size_t blocks = chain_layers >= 2 ? chain_layers - 2 : 0;
  if (m.has_tensors()) {
    bool seen_block = false;
    for (const auto& t : m.tensors) {
      if (!t.tied_to.empty()) continue;
      const uint64_t n = t.numel();
      p.largest_tensor = std::max(p.largest_tensor, n);
      const int64_t b = t.block;
      size_t slot;
      if (b >= 0 && static_cast<size_t>(b) < blocks) {
        slot = static_cast<size_t>(b) + 1;
        seen_block = true;
        if (t.shape.size() == 2) p.block_linear += n;
      } else if (t.embedding || !seen_block) {
        slot = 0;
      } else {
        slot = chain_layers - 1;
      }
      p.per_layer[slot] += n;
    }
  } else {
    const Architecture& a = m.arch;
    const uint64_t emb = a.vocab * a.hidden;
    const uint64_t head = a.tied_embeddings ? 0 : emb;
    const uint64_t rest = m.params > emb + head ? m.params - emb - head : m.params;
    p.per_layer[0] = std::min(emb, m.params);
    if (blocks > 0)
      for (size_t i = 1; i <= blocks; ++i) p.per_layer[i] = rest / blocks;
    p.per_layer[chain_layers - 1] =
        m.params - p.per_layer[0] - (blocks ? rest / blocks * blocks : 0);
    p.largest_tensor =
        std::max({emb, a.hidden * std::max<uint64_t>(a.intermediate, 4 * a.hidden), uint64_t(1)});
    p.block_linear = blocks ? rest : 0;
  }
  for (uint64_t x : p.per_layer) p.largest_layer = std::max(p.largest_layer, x);
  return p;
}

// LoRA's activations: lora_A's output (lora_B's input), r per token, and with dropout the
// dropped input and its mask, in_features per token (PEFT lora.Linear.forward:
// lora_B(lora_A(dropout(x)))).
uint64_t lora_saved_bytes(uint64_t tokens, uint64_t rank, uint64_t in, double dropout, uint64_t lin,
                          uint64_t mask_bytes) {
  uint64_t extra = tokens * rank * lin;
  if (dropout > 0) extra += tokens * in * (lin + (mask_bytes ? mask_bytes : lin));
  return extra;
}

// Optimizer temporaries during step(): torch/optim/*.py. foreach (_multi_tensor_*, default on
// CUDA in torch 2.x) builds a list as large as all state; the for-loop (torch 1.13 default)
// one tensor at a time.
uint64_t optimizer_temp_elements(const OptimizerSpec& o, bool foreach, uint64_t trainable,
                                 uint64_t largest) {
  using vocab::Optimizer;
  const Optimizer n = o.type;
  if (n == Optimizer::adam || n == Optimizer::adamw) {
    // foreach: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs); for-loop: denom = (sqrt / c).add_
    // holds sqrt and its quotient at once.
    return foreach ? trainable : 2 * largest;
  }
  // std / avg = sqrt
  if (n == Optimizer::adagrad || n == Optimizer::rmsprop) return foreach ? trainable : largest;
  if (n == Optimizer::lion) return 2 * largest;  // update = exp_avg.clone()...; per tensor
  // grad**2 + eps, update
  if (n == Optimizer::adafactor || n == Optimizer::torch_adafactor) return 2 * largest;
  // torchao low-bit AdamW: one torch.compile'd single_param_adam per tensor (adam.py @ 0372e5ff);
  // its fp32 values (p.float(), exp_avg.float().lerp(...)) are taken as fused by inductor into
  // the kernels, with no whole-tensor buffer (an assumption, stated in the result)
  return 0;  // sgd (in-place), adam-8bit (fused bitsandbytes kernel), torchao (compiled step)
}

struct Persistent {
  uint64_t weights = 0, master = 0, grads_full = 0, state = 0, opt_temp = 0, zero_gather = 0;
  uint64_t opt_temp_one = 0;  // one tensor's step temporaries (optimizer in backward)
  uint64_t grad_bytes_per_param = 4;
  std::vector<uint64_t> grads_per_layer;
  std::string weights_src, master_src, grads_src, state_src, temp_src;
  uint64_t trainable = 0, params = 0;
  // what the allocator simulation needs besides the lines above
  uint64_t wb = 4, state_w = 4, N = 1, grad_div = 1;
  DType state_dtype = DType::fp32;
  bool deepspeed_mp = false;
};

// Everything one evaluation derives before the step is walked.
struct Step {
  activations::Settings st;
  activations::ModelActivations acts;
  size_t nl = 0;
  ParamLayout lay;
  uint64_t P = 0;  // parameters (before LoRA's adapters)
  LoraPlan lora;
  placement::Chain chain;
  placement::PlanResult plan;
  double selective_recompute = 0;
  Persistent ps;
  uint64_t runtime_bytes = 0;
  std::string runtime_src;
};

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
  st.float8 = rq.float8;
  st.head_weight_bytes = is_half(st.precision) ? 2 : 4;
  s->acts = rq.is_mlp ? activations::mlp_activations(rq.mlp, st)
                      : activations::transformer_activations(rq.model(), st);
  s->nl = s->acts.layers.size();
}

// Parameters per chain layer, then LoRA's adapters and their activations.
void layout_parameters(const Request& rq, Step* s) {
  ParamLayout& lay = s->lay;
  if (rq.is_mlp) {
    lay.per_layer.clear();
    for (const auto& l : s->acts.layers) {
      lay.per_layer.push_back(l.params);
      lay.largest_tensor = std::max(lay.largest_tensor, l.params);
    }
    lay.largest_layer = lay.largest_tensor;
  } else {
    lay = layout_of(rq.model(), s->nl);
  }
  s->P = 0;
  for (uint64_t x : lay.per_layer) s->P += x;
  if (!rq.is_mlp && rq.model().params > 0) s->P = rq.model().params;

  if (rq.lora.enabled) {
    s->lora = plan_lora(rq.model(), rq.lora, s->nl);
    const uint64_t T = rq.micro_batch * rq.seq_len;
    // encoder-decoder: the decoder's layers (after the encoder's) and the head run on the
    // decoder's tokens (its cross-attention k and v read the encoder's: counted as decoder ones)
    const uint64_t lin = (rq.precision == Precision::fp32) ? 4 : 2;
    const uint64_t E = s->acts.recipe == "t5" ? rq.model().arch.encoder_layers : s->nl;
    const uint64_t T_dec = rq.micro_batch * (rq.target_len ? rq.target_len : rq.seq_len);
    for (size_t i = 0; i < s->nl; ++i)
      for (const auto& io : s->lora.per_layer[i])
        s->acts.layers[i].saved_bytes +=
            lora_saved_bytes(i > E ? T_dec : T, rq.lora.rank, io.first, rq.lora.dropout, lin,
                             s->st.runtime.dropout_mask_bytes);
  }
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
    // HF gradient_checkpointing / Megatron full: every block is its own checkpointed segment
    std::vector<placement::Segment> segs;
    const uint32_t first = rq.is_mlp ? 0 : 1,
                   last = rq.is_mlp ? uint32_t(nl - 1) : uint32_t(nl - 2);
    for (uint32_t i = first; i <= last; ++i) segs.push_back({i, i});
    s->plan = placement::evaluate(s->chain, segs);
  } else {
    s->plan = placement::plan(s->chain, rq.checkpointing.placement);
  }
}

// Weights and gradients: bytes per parameter by precision, ZeRO's partitions, offload.
void weights_and_gradients(const Request& rq, Step* s) {
  Persistent& ps = s->ps;
  const ParamLayout& lay = s->lay;
  const uint64_t P = s->P;
  const bool amp = is_amp(rq.precision), half = is_half(rq.precision);
  // ZeRO's 16-bit params + fp32 master; DeepSpeed's torch_autocast keeps fp32 parameters
  // (deepspeed/runtime/torch_autocast.py, commit f13ab493: "All parameters must be float32")
  ps.deepspeed_mp = ds_model_dtype_16bit(rq);
  ps.N = rq.zero_stage > 0 ? rq.data_parallel : 1;
  const uint64_t N = ps.N, t = rq.tensor_parallel;
  const uint64_t Pt_full = rq.lora.enabled ? s->lora.params : P;
  ps.params = P + (rq.lora.enabled ? Pt_full : 0);
  ps.trainable = Pt_full;
  ps.wb = (half || ps.deepspeed_mp) ? 2 : 4;
  const uint64_t wb = ps.wb;
  double weights = 0;
  if (rq.lora.enabled) {
    const double base_bytes =
        rq.lora.qlora ? 0.5 + 1.0 / 64 + 4.0 / (64 * 256) : static_cast<double>(wb);
    const uint64_t lin = std::min(lay.block_linear, P);
    weights = lin * base_bytes + (P - lin) * (rq.lora.qlora ? 2.0 : wb) + Pt_full * 4.0;
    ps.weights_src =
        rq.lora.qlora
            ? "QLoRA (Dettmers et al. 2023): block linears in 4-bit NF4 with double-quantised "
              "absmax (4.127 bits/param), other weights 16-bit, adapters fp32"
            : "LoRA (Hu et al. 2021): frozen base in its dtype, adapters fp32";
  } else {
    weights = static_cast<double>(P) * wb;
    ps.weights_src =
        ps.deepspeed_mp ? "ZeRO (Rajbhandari et al. 2020): 16-bit parameters, 2 B/param"
        : half          ? "parameters in 16-bit: 2 B/param"
                        : (amp ? "torch.autocast keeps fp32 parameters: 4 B/param (16-bit copies "
                                 "are per-step activations)"
                               : "fp32 parameters: 4 B/param");
  }
  weights /= t;
  const Request::Fsdp& fs = rq.fsdp;
  if (fs.enabled) {
    // FSDP1 _flat_param.py / FSDP2 _fsdp_param.py: each rank keeps 1/S of every parameter in its
    // original dtype (the sharded FlatParameter / DTensor), S = the shard group
    ps.N = fs.shard_degree;
    weights /= fs.shard_degree;
    ps.weights_src += "; FSDP" + std::to_string(fs.version) + " " + fs.strategy +
                      " shards them over " + std::to_string(fs.shard_degree) + " ranks";
    if (fs.cpu_offload) {
      weights = 0;
      ps.weights_src += "; on the CPU (CPUOffload / CPUOffloadPolicy)";
    }
  }
  if (rq.zero_stage == 3) {
    weights /= N;
    ps.weights_src += "; ZeRO-3 partitions them over " + std::to_string(N) + " ranks";
    // DeepSpeed stage3.py estimator: the largest layer is gathered whole (x2 with prefetch)
    ps.zero_gather = 2 * lay.largest_layer * wb / t;
  }
  if (rq.zero3.enabled && !rq.is_mlp && rq.model().has_tensors()) {
    // stage3_param_persistence_threshold: tensors this small are never partitioned
    // (partition_parameters.py ds_persist), each rank holds them whole
    uint64_t small = 0;
    for (const auto& tn : rq.model().tensors)
      if (tn.tied_to.empty() && tn.numel() <= rq.zero3.persistence_threshold) small += tn.numel();
    weights += static_cast<double>(small) * wb / t * (1.0 - 1.0 / N);
    if (small)
      ps.weights_src +=
          "; " + std::to_string(small) +
          " parameters in tensors under stage3_param_persistence_threshold kept whole";
  }
  if (rq.offload_params) {
    weights = 0;
    ps.weights_src += "; offloaded to CPU (ZeRO-Infinity / ZeRO-Offload)";
  }
  ps.weights = static_cast<uint64_t>(std::llround(weights));
  // gradients
  ps.grad_bytes_per_param = (half || ps.deepspeed_mp) ? 2 : 4;
  ps.grad_div = t * (rq.zero_stage >= 2 || fs.enabled ? ps.N : 1);
  ps.grads_full = Pt_full * ps.grad_bytes_per_param / ps.grad_div;
  ps.grads_src =
      std::to_string(ps.grad_bytes_per_param) + " B per trainable parameter (" +
      (ps.grad_bytes_per_param == 4 ? "fp32 .grad" : "16-bit .grad") + ")" +
      (rq.zero_stage >= 2 ? "; ZeRO-2/3 partitions them over " + std::to_string(N) + " ranks"
                          : "") +
      (fs.enabled ? "; FSDP reduce-scatters them into shards over " + std::to_string(ps.N) +
                        " ranks" + (fs.cpu_offload ? ", copied to the CPU" : "")
                  : "") +
      (rq.accumulation_steps > 1 ? "; kept across the " + std::to_string(rq.accumulation_steps) +
                                       " accumulation micro-steps"
                                 : "; allocated layer by layer in the backward (set_to_none)");
  ps.grads_per_layer.assign(s->nl, 0);
  for (size_t i = 0; i < s->nl; ++i) {
    uint64_t n = lay.per_layer[i];
    if (rq.lora.enabled) {
      n = 0;
      for (const auto& io : s->lora.per_layer[i]) n += rq.lora.rank * (io.first + io.second);
    }
    ps.grads_per_layer[i] = n * ps.grad_bytes_per_param / ps.grad_div;
  }
  if (fs.enabled && fs.cpu_offload) {
    // FSDP1 _runtime_utils.py _post_backward_hook / FSDP2 foreach_reduce: the sharded gradient
    // is copied to the CPU and its device copy freed
    ps.grads_full = 0;
    ps.grads_per_layer.assign(s->nl, 0);
  }
}

// Optimizer state in its real layout (optimizer.hpp) per parameter tensor.
uint64_t optimizer_state_total(const Request& rq, const Step& s, DType state_dtype,
                               std::vector<std::string>* assumptions) {
  uint64_t state = 0;
  if (rq.lora.enabled) {
    for (size_t i = 0; i < s.nl; ++i)
      for (const auto& io : s.lora.per_layer[i]) {
        TensorSpec a{"lora_A", {rq.lora.rank, io.first}};
        TensorSpec b{"lora_B", {io.second, rq.lora.rank}};
        state += optimizer_state_bytes(rq.optimizer, a, state_dtype) +
                 optimizer_state_bytes(rq.optimizer, b, state_dtype);
      }
  } else if (!rq.is_mlp && rq.model().has_tensors()) {
    // many tensors share a shape: compute the layout once per (shape, dtype)
    std::vector<std::pair<const TensorSpec*, uint64_t>> seen;
    for (const auto& tn : rq.model().tensors) {
      if (!tn.tied_to.empty() || !tn.trainable) continue;
      uint64_t b = 0;
      bool hit = false;
      for (const auto& sv : seen)
        if (sv.first->shape == tn.shape && sv.first->dtype == tn.dtype) {
          b = sv.second;
          hit = true;
          break;
        }
      if (!hit) {
        b = optimizer_state_bytes(rq.optimizer, tn, state_dtype);
        if (seen.size() < 64) seen.push_back({&tn, b});
      }
      state += b;
    }
  } else if (rq.is_mlp) {
    for (size_t i = 0; i + 1 < rq.mlp.sizes.size(); ++i) {
      TensorSpec w{"weight", {rq.mlp.sizes[i + 1], rq.mlp.sizes[i]}};
      state += optimizer_state_bytes(rq.optimizer, w, state_dtype);
      if (rq.mlp.bias)
        state += optimizer_state_bytes(rq.optimizer, TensorSpec{"bias", {rq.mlp.sizes[i + 1]}},
                                       state_dtype);
    }
  } else {
    state =
        optimizer_state_bytes(rq.optimizer, TensorSpec{"params", {s.ps.trainable}}, state_dtype);
    assumptions->push_back(
        "optimizer state from the parameter count as one tensor (factored optimizers "
        "need the tensor shapes: give a preset or config)");
  }
  state +=
      optimizer_shared_state_bytes(rq.optimizer, rq.optimizer.type == vocab::Optimizer::adam_8bit);
  return state;
}

// Master weights, optimizer state and the step's temporaries; offload moves them to the CPU.
void optimizer_lines(const Request& rq, Step* s, std::vector<std::string>* assumptions) {
  Persistent& ps = s->ps;
  const bool amp = is_amp(rq.precision), half = is_half(rq.precision);
  const uint64_t N = ps.N, t = rq.tensor_parallel, Pt_full = ps.trainable;
  // master weights (mixed precision with ZeRO / DeepSpeed keeps an fp32 copy in the optimizer)
  if (ps.deepspeed_mp) {
    ps.master = Pt_full * 4 / (t * N);
    ps.master_src = "ZeRO mixed precision: fp32 master copy, 4 B/param, partitioned over " +
                    std::to_string(N) + " ranks (Rajbhandari et al. 2020, K = 12 incl. states)";
  } else {
    ps.master_src = amp ? "none: torch.autocast trains the fp32 parameters directly"
                        : "none: no separate master copy in this precision";
  }
  ps.state_dtype = (half && !ps.deepspeed_mp)
                       ? (rq.precision == Precision::bf16 ? DType::bf16 : DType::fp16)
                       : DType::fp32;
  const uint64_t state = optimizer_state_total(rq, *s, ps.state_dtype, assumptions);
  ps.state = state / (t * N);
  ps.state_src = "optimizer '" + optimizer_name(rq.optimizer) +
                 "' state layout per parameter tensor (torch/optim, " + dtype_name(ps.state_dtype) +
                 " states)" +
                 (N > 1 ? (rq.fsdp.enabled ? "; FSDP shards" : "; ZeRO partitions") +
                              std::string(" it over ") + std::to_string(N) + " ranks"
                        : "") +
                 (rq.optimizer.paged
                      ? "; bitsandbytes paged: tensors of 100,000 values or more in CUDA managed "
                        "memory, outside torch.cuda's allocated and reserved bytes (in "
                        "deviceUsedBytes)"
                      : "");
  // optimizer step transients
  ps.state_w = ps.state_dtype == DType::fp32 ? 4 : 2;
  const uint64_t largest = std::min(s->lay.largest_tensor, Pt_full);
  ps.opt_temp = optimizer_temp_elements(rq.optimizer, rq.runtime.foreach_optimizers,
                                        Pt_full / (t * N), largest) *
                ps.state_w;
  ps.temp_src = is_torchao_low_bit(rq.optimizer)
                    ? "optimizer step: torchao's torch.compile'd step, one tensor at a time "
                      "(torchao/optim/adam.py)"
                : rq.runtime.foreach_optimizers
                    ? "optimizer step: _foreach_* temporaries over all trainable "
                      "tensors (torch/optim, PyTorch 2.x on CUDA)"
                    : "optimizer step: for-loop temporaries of the largest tensor "
                      "(torch/optim, foreach=False)";
  if (is_torchao_low_bit(rq.optimizer))
    assumptions->push_back(
        "torchao low-bit AdamW: states quantised only for tensors of at least 4096 values that "
        "divide into blockSize blocks (others keep zeros_like(param)); the compiled step's fp32 "
        "values are taken as fused into its kernels, with no whole-tensor temporaries (not "
        "measured)");
  // one parameter at a time (optimizer in backward: a single-tensor optimizer per parameter)
  ps.opt_temp_one = optimizer_temp_elements(rq.optimizer, false, 0, largest / (t * N)) * ps.state_w;
  if (ps.deepspeed_mp) ps.opt_temp += Pt_full * 4 / (t * N);  // fp32 gradient partition
  if (rq.fsdp.enabled && rq.fsdp.cpu_offload) {
    // the optimizer steps the CPU shards (FSDP CPU offload): nothing of it on the GPU
    ps.state = 0;
    ps.opt_temp = 0;
    ps.state_src += "; on the CPU with the sharded parameters (FSDP CPU offload)";
  }
  if (rq.offload_optimizer) {
    ps.master = 0;
    ps.state = 0;
    ps.opt_temp = 0;
    ps.state_src += "; offloaded to CPU (ZeRO-Offload)";
    ps.master_src += "; offloaded to CPU";
  }
  // runtime
  s->runtime_bytes = rq.runtime_overhead_set
                         ? rq.runtime_overhead_bytes
                         : rq.runtime.context_bytes + rq.runtime.workspace_bytes;
  s->runtime_src =
      rq.runtime_overhead_set
          ? "runtimeOverheadBytes (given)"
          : rq.runtime.context_source + (rq.runtime.workspace_bytes ? " + cuBLAS workspace" : "");
}

// ZeRO-3's gathered parameters at one event as DeepSpeed's coordinator fetches them
// (deepspeed/runtime/zero/partitioned_param_coordinator.py; defaults config.py, commit
// 1b88ac36): the running layer, the next layers' parameters up to stage3_prefetch_bucket_size
// while fewer than stage3_max_live_parameters are available, and earlier layers not released
// because their next use (their backward) comes within stage3_max_reuse_distance elements.
uint64_t zero3_gathered(const Request& rq, const Step& s, const placement::StepEvent& e) {
  const Request::Zero3& z = rq.zero3;
  const auto& per = s.lay.per_layer;
  const size_t nl = s.nl;
  if (e.layer < 0 || nl == 0) return 0;
  const size_t L = static_cast<size_t>(e.layer);
  const bool fwd = e.phase == "forward";
  // elements fetched between layer i's forward use and its backward use: the rest of the
  // forward and the backward down to it
  std::vector<uint64_t> after(nl + 1, 0);
  for (size_t i = nl; i-- > 0;) after[i] = after[i + 1] + per[i];
  uint64_t retained = 0;
  for (size_t i = 0; i < L; ++i)
    if (2 * after[i + 1] <= z.max_reuse_distance) retained += per[i];
  const uint64_t cur = per[L];
  uint64_t ahead = 0;  // the next layers in execution order
  if (fwd) {
    for (size_t i = L + 1; i < nl; ++i) ahead += per[i];
  } else {
    for (size_t i = 0; i < L; ++i) ahead += per[i];
    ahead -= std::min(ahead, retained);  // retained layers need no fetch
  }
  const uint64_t live = cur + retained;
  const uint64_t room = z.max_live > live ? z.max_live - live : 0;
  const uint64_t prefetch = std::min({ahead, z.prefetch_bucket, room});
  return (live + prefetch) * s.ps.wb / rq.tensor_parallel;
}

// FSDP's unsharded state at one event: the all-gathered units (param_dtype) and, in the
// backward, the unit's unsharded gradients with the reduce-scatter's input and output.
// Units: the root (embeddings + head) and one per block; FSDP2 _fully_shard.py (commit
// 0257dd1c): reshard_after_forward defaults to True except for the root, which stays gathered;
// FSDP1 sets the root's reshard_after_forward to False too. Prefetch (FSDP2
// _fsdp_param_group.py implicit forward / backward prefetch, FSDP1 BACKWARD_PRE and
// forward_prefetch): the next `prefetch` units are gathered while one computes.
uint64_t fsdp_unsharded(const Request& rq, const Step& s, const placement::StepEvent& e) {
  const Request::Fsdp& fs = rq.fsdp;
  const size_t nl = s.nl;
  if (!fs.enabled || nl < 3) return 0;
  const uint64_t wb = s.ps.wb, pb = fs.param_bytes ? fs.param_bytes : wb;
  const uint64_t rb = fs.reduce_bytes ? fs.reduce_bytes : pb;
  const uint64_t t = rq.tensor_parallel, S = fs.shard_degree;
  // NO_SHARD without a cast keeps the full parameters: nothing is gathered
  const bool copies = S > 1 || pb != wb;
  const auto& per = s.lay.per_layer;
  const size_t first = 1, last = nl - 2;  // block units
  uint64_t units = copies ? per[0] + per[nl - 1] : 0;
  const bool bwd = e.phase == "backward" || e.phase == "recompute";
  const size_t L = e.layer < 0 ? nl - 1 : static_cast<size_t>(e.layer);
  const size_t pf = static_cast<size_t>(fs.prefetch);
  // the gathered blocks form one interval: forward, this unit and the next pf (and, without
  // resharding, every block since the first); backward, this unit and the previous pf (and,
  // without resharding, every block not yet through its backward)
  size_t lo, hi;
  if (!bwd) {
    lo = fs.reshard_after_forward ? std::max(L, first) : first;
    hi = L >= nl - 1 ? (fs.reshard_after_forward ? 0 : last) : L + pf;
  } else {
    lo = fs.reshard_after_forward ? (L > pf ? L - pf : first) : first;
    hi = L == 0 ? 0 : std::min(L, last);
  }
  lo = std::max(lo, first);
  hi = std::min(hi, last);
  if (copies)
    for (size_t i = lo; i <= hi; ++i) units += per[i];
  uint64_t bytes = units * pb / t;
  if (e.phase == "backward" && e.layer >= 0) {
    // the unit's gradients unsharded in param_dtype, cast to reduce_dtype for the
    // reduce-scatter when they differ, and its 1/S output (FSDP2 _fsdp_collectives.py
    // foreach_reduce; FSDP1 _runtime_utils.py _reduce_grad)
    const uint64_t g = per[L] / t;
    bytes += g * pb + (rb != pb ? g * rb : 0) + (S > 1 ? g * rb / S : 0);
  }
  return bytes;
}

// The highest point of the walk and what it holds.
struct Peak {
  uint64_t bytes = 0, temp = 0, act = 0, ddp_buckets = 0;
  TimelinePoint point;
  bool ddp = false, grads_in_buckets = false;
};

// Walks the step event by event (forward, loss, backward, optimizer step), adding the
// persistent and transient state to the live activations; the timeline goes into r.
Peak walk_step(const Request& rq, const Step& s, Result* r) {
  const Persistent& ps = s.ps;
  Peak pk;
  // DDP (torch/nn/parallel/distributed.py): the reducer's buckets hold a flat copy of every
  // gradient from the wrapping on; with gradient_as_bucket_view the .grad tensors are those
  // buckets ("the saved memory size will be equal to the total gradients size")
  pk.ddp = rq.data_parallel > 1 && rq.zero_stage == 0 && !rq.fsdp.enabled;
  pk.ddp_buckets = pk.ddp ? ps.grads_full : 0;
  pk.grads_in_buckets = pk.ddp && rq.ddp_gradient_as_bucket_view;
  const uint64_t fixed = ps.weights + ps.master + ps.state + s.runtime_bytes + pk.ddp_buckets;
  const bool grads_from_start = rq.accumulation_steps > 1;
  uint64_t grads_now = grads_from_start ? ps.grads_full : 0;
  // optimizer in backward (torchtune register_optim_in_bwd_hooks): each parameter steps in its
  // post-accumulate-grad hook and its .grad is dropped at once: at most the largest layer's
  // gradient and one tensor's optimizer temporaries exist at a time
  const bool in_bwd = rq.optimizer_in_backward;
  uint64_t largest_grads = 0;
  for (uint64_t g : ps.grads_per_layer) largest_grads = std::max(largest_grads, g);
  const uint64_t in_bwd_temp = in_bwd ? largest_grads + ps.opt_temp_one : 0;
  auto temp_of = [&](const placement::StepEvent& e) -> uint64_t {
    if (e.layer < 0 || static_cast<size_t>(e.layer) >= s.nl) return 0;
    const auto& L = s.chain.layers[e.layer];
    if (e.phase == "backward") return L.backward_temp_bytes;
    return L.forward_temp_bytes;
  };
  for (const auto& e : s.plan.timeline) {
    if (e.phase == "backward" && !grads_from_start && !in_bwd && !pk.grads_in_buckets)
      grads_now += ps.grads_per_layer[e.layer];
    TimelinePoint pt;
    pt.phase = e.phase;
    pt.layer = e.layer;
    pt.name = e.layer >= 0 ? s.acts.layers[e.layer].name : "loss";
    pt.activation_bytes = e.live_bytes;
    pt.gradient_bytes = grads_now;
    const uint64_t zg = ((rq.zero_stage == 3 && e.phase != "loss")
                             ? (rq.zero3.enabled ? zero3_gathered(rq, s, e) : ps.zero_gather)
                             : 0) +
                        fsdp_unsharded(rq, s, e);
    const uint64_t step_in_bwd = e.phase == "backward" ? in_bwd_temp : 0;
    pt.total_bytes = fixed + grads_now + e.live_bytes + zg + step_in_bwd;
    if (pt.total_bytes > pk.bytes) {
      pk.bytes = pt.total_bytes;
      pk.point = pt;
      const uint64_t tmp = std::min(temp_of(e), e.live_bytes);
      pk.act = e.live_bytes - tmp;
      pk.temp = tmp + zg + step_in_bwd;
    }
    r->timeline.push_back(pt);
  }
  TimelinePoint pt;
  pt.phase = "optimizer";
  pt.name = "optimizer step";
  pt.gradient_bytes = (in_bwd || pk.grads_in_buckets) ? 0 : ps.grads_full;
  pt.activation_bytes = s.acts.input_bytes;  // the batch is still referenced
  pt.total_bytes = fixed + pt.gradient_bytes + (in_bwd ? 0 : ps.opt_temp) + s.acts.input_bytes;
  if (pt.total_bytes > pk.bytes) {
    pk.bytes = pt.total_bytes;
    pk.point = pt;
    pk.act = s.acts.input_bytes;
    pk.temp = in_bwd ? 0 : ps.opt_temp;
  }
  r->timeline.push_back(pt);
  return pk;
}

// The breakdown at the peak, the plan's figures and the assumptions.
void fill_result(const Request& rq, const Step& s, const Peak& pk, Result* out) {
  Result& r = *out;
  const Persistent& ps = s.ps;
  r.peak_bytes = pk.bytes;
  r.allocated_peak_bytes = pk.bytes - s.runtime_bytes;
  r.peak_phase = pk.point.phase;
  r.peak_layer = pk.point.layer;
  r.weights = {ps.weights, ps.weights_src};
  r.master_weights = {ps.master, ps.master_src};
  r.gradients = {
      pk.point.gradient_bytes + pk.ddp_buckets,
      ps.grads_src +
          (pk.ddp ? (pk.grads_in_buckets ? "; DDP: the .grad tensors are views of the "
                                           "reducer's buckets (gradient_as_bucket_view)"
                                         : "; DDP: the reducer's buckets hold a second copy "
                                           "of every gradient (gradient_as_bucket_view=False)")
                  : "")};
  r.optimizer_state = {ps.state, ps.state_src};
  r.activations = {pk.act, "saved-for-backward tensors derived per op (" + s.acts.recipe +
                               " recipe, activations.cpp), planned by the placement engine (" +
                               rq.checkpointing.strategy + ")"};
  r.temporaries = {pk.temp, pk.point.phase == "optimizer"
                                ? ps.temp_src
                                : "transients of the op at the peak (activations.cpp: "
                                  "forward/backward temporaries of layer '" +
                                      pk.point.name + "')"};
  r.runtime = {s.runtime_bytes, s.runtime_src};
  r.params = ps.params;
  r.trainable_params = ps.trainable;
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
  if (rq.fsdp.enabled)
    r.assumptions.push_back(
        "FSDP" + std::to_string(rq.fsdp.version) + " " + rq.fsdp.strategy +
        ": one unit per block, embeddings and head as the root unit (gathered for the whole "
        "step); gathered units and unsharded gradients are a transient of each event, not "
        "checked against a GPU measurement; the allocator simulation holds the largest such set "
        "per layer, without FSDP's separate all-gather stream");
  if (rq.lora.enabled) {
    r.assumptions.push_back("LoRA: " + std::to_string(s.lora.modules) +
                            " linear layers adapted; activations as in full fine-tuning plus the "
                            "adapters' own");
    for (const auto& a : s.lora.assumptions) r.assumptions.push_back(a);
  }
}

// The caching-allocator simulation over the same step (peak_device.cpp).
void simulate_device(const Request& rq, const Step& s, Result* r) {
  const Persistent& ps = s.ps;
  const uint64_t t = rq.tensor_parallel;
  device::Facts f;
  f.weight_bytes_per_param = static_cast<double>(ps.wb);
  f.grad_bytes_per_param = ps.grad_bytes_per_param;
  f.state_width = ps.state_w;
  f.state_dtype = ps.state_dtype;
  f.weight_divisor = t * (rq.zero_stage == 3 || rq.fsdp.enabled ? ps.N : 1);
  f.grad_divisor = ps.grad_div;
  f.state_divisor = t * ps.N;
  f.master_bytes_per_param = ps.deepspeed_mp ? 4 : 0;
  f.zero_gather_bytes = ps.zero_gather;
  f.offload_params = rq.offload_params;
  f.offload_optimizer = rq.offload_optimizer || (rq.fsdp.enabled && rq.fsdp.cpu_offload);
  f.offload_params = f.offload_params || (rq.fsdp.enabled && rq.fsdp.cpu_offload);
  f.offload_grads = rq.fsdp.enabled && rq.fsdp.cpu_offload;
  f.weights_gathered_16bit =
      (rq.fsdp.enabled && rq.fsdp.param_bytes == 2) || ds_model_dtype_16bit(rq);
  if (rq.zero3.enabled) {
    uint64_t most = 0;
    for (const auto& e : s.plan.timeline) most = std::max(most, zero3_gathered(rq, s, e));
    f.zero_gather_bytes = most;
  }
  if (rq.fsdp.enabled) {
    // one per-layer transient as large as the largest unsharded set of the walk
    uint64_t most = 0;
    for (const auto& e : s.plan.timeline) most = std::max(most, fsdp_unsharded(rq, s, e));
    f.zero_gather_bytes = most;
  }
  f.lora_io = s.lora.per_layer;
  if (rq.lora.enabled && rq.lora.qlora)
    f.weight_bytes_per_param = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
  device::simulate(rq, s.acts, s.chain, s.plan, f, r);
  if (rq.offload_activations)
    r->assumptions.push_back(
        "activation offloading: the allocator simulation moves each saved tensor of 1 KiB or "
        "more to the CPU once five newer ones exist, and brings a layer's back before its "
        "backward (torchtune OffloadActivations); peakBytes and the breakdown do not");
  r->assumptions.push_back(
      "device memory: the caching allocator simulated over " + std::to_string(r->steps_simulated) +
      " steps (" + rq.runtime.name +
      "; zero_grad(set_to_none=" + (rq.set_to_none ? "True" : "False") + "), optimizer " +
      vocab::name_for(vocab::kOptimizerImpls, rq.optimizer_implementation) +
      "); nvidia-smi = reserved + the CUDA context" + (r->nccl_bytes ? " + NCCL buffers" : ""));
}

}  // namespace

Result evaluate(const Request& rq) {
  Result r;
  Step s;
  build_activations(rq, &s);
  layout_parameters(rq, &s);
  plan_checkpointing(rq, &s, &r.assumptions);
  weights_and_gradients(rq, &s);
  optimizer_lines(rq, &s, &r.assumptions);
  const Peak pk = walk_step(rq, s, &r);
  fill_result(rq, s, pk, &r);
  if (rq.simulate_allocator) simulate_device(rq, s, &r);
  if (rq.gpu_memory_bytes > 0) {
    r.has_device = true;
    const uint64_t judged = r.simulated ? r.device_used_bytes : r.peak_bytes;
    r.fits = judged <= rq.gpu_memory_bytes && r.ooms == 0;
    r.headroom_bytes = static_cast<int64_t>(rq.gpu_memory_bytes) - static_cast<int64_t>(judged);
  }
  return r;
}

Result compute(const Request& rq) {
  Result r = evaluate(rq);
  if (!r.has_device || !rq.search_max_micro_batch) return r;
  // Largest micro-batch that fits: peak grows with the micro-batch (activations only), so
  // double then bisect. Infeasible checkpointing budgets count as "does not fit".
  auto fits = [&](uint64_t b) {
    Request q = rq;
    q.micro_batch = b;
    q.verdict_only = true;
    try {
      return evaluate(q).fits;
    } catch (const RequestError& e) {
      if (e.code() == code::kInfeasible || e.code() == code::kTooLarge) return false;
      throw;
    }
  };
  constexpr uint64_t kMaxSearch = 1u << 20;
  if (rq.simulate_allocator) {
    // The allocated-bytes model first (cheap; device-used memory is never below it), then the
    // simulation bisects below that bound.
    Request coarse = rq;
    coarse.simulate_allocator = false;
    const uint64_t bound = compute(coarse).max_micro_batch;
    // gallop from the bound (the answer is usually at or just below it), then bisect
    uint64_t lo = 0, hi = 0;
    if (bound > 0 && fits(bound)) {
      lo = bound;
      for (uint64_t step = 1;; step *= 2) {
        hi = std::min(bound + step, kMaxSearch + 1);
        if (hi > kMaxSearch || !fits(hi)) break;
        lo = hi;
      }
    } else {
      hi = bound > 0 ? bound : 1;
      for (uint64_t step = 1; hi > 1; step *= 2) {
        const uint64_t c = hi > step ? hi - step : 0;
        if (c == 0 || fits(c)) {
          lo = c;
          break;
        }
        hi = c;
      }
    }
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    r.max_micro_batch = lo;
    return r;
  }
  if (!fits(1)) {
    r.max_micro_batch = 0;
    return r;
  }
  uint64_t lo = 1, hi = 2;
  while (hi <= kMaxSearch && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > kMaxSearch) {
    r.max_micro_batch = lo;
    return r;
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  r.max_micro_batch = lo;
  return r;
}

}  // namespace peak
}  // namespace trainmem
