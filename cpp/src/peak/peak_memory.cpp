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
  const std::string& n = o.name;
  if (n == "adam" || n == "adamw") {
    // foreach: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs); for-loop: denom = (sqrt / c).add_
    // holds sqrt and its quotient at once.
    return foreach ? trainable : 2 * largest;
  }
  if (n == "adagrad" || n == "rmsprop") return foreach ? trainable : largest;  // std / avg = sqrt
  if (n == "lion") return 2 * largest;  // update = exp_avg.clone()...; per tensor
  if (n == "adafactor" || n == "torch-adafactor") return 2 * largest;  // grad**2 + eps, update
  return 0;  // sgd (in-place), adam-8bit (fused bitsandbytes kernel)
}

struct Persistent {
  uint64_t weights = 0, master = 0, grads_full = 0, state = 0, opt_temp = 0, zero_gather = 0;
  uint64_t opt_temp_one = 0;  // one tensor's step temporaries (optimizer in backward)
  uint64_t grad_bytes_per_param = 4;
  std::vector<uint64_t> grads_per_layer;
  std::string weights_src, master_src, grads_src, state_src, temp_src;
  uint64_t trainable = 0, params = 0;
};

}  // namespace

Result evaluate(const Request& rq) {
  Result r;
  activations::Settings st;
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
  st.head_weight_bytes = is_half(rq.precision) ? 2 : 4;
  activations::ModelActivations acts = rq.is_mlp
                                           ? activations::mlp_activations(rq.mlp, st)
                                           : activations::transformer_activations(rq.model(), st);
  const size_t nl = acts.layers.size();

  // ---- parameters per chain layer
  ParamLayout lay;
  if (rq.is_mlp) {
    lay.per_layer.clear();
    for (const auto& l : acts.layers) {
      lay.per_layer.push_back(l.params);
      lay.largest_tensor = std::max(lay.largest_tensor, l.params);
    }
    lay.largest_layer = lay.largest_tensor;
  } else {
    lay = layout_of(rq.model(), nl);
  }
  uint64_t P = 0;
  for (uint64_t x : lay.per_layer) P += x;
  if (!rq.is_mlp && rq.model().params > 0) P = rq.model().params;

  // ---- LoRA
  LoraPlan lora;
  if (rq.lora.enabled) {
    lora = plan_lora(rq.model(), rq.lora, nl);
    const uint64_t T = rq.micro_batch * rq.seq_len;
    // encoder-decoder: the decoder's layers (after the encoder's) and the head run on the
    // decoder's tokens (its cross-attention k and v read the encoder's: counted as decoder ones)
    const uint64_t E = acts.recipe == "t5" ? rq.model().arch.encoder_layers : nl;
    const uint64_t T_dec = rq.micro_batch * (rq.target_len ? rq.target_len : rq.seq_len);
    const uint64_t lin = (rq.precision == Precision::fp32) ? 4 : 2;
    for (size_t i = 0; i < nl; ++i)
      for (const auto& io : lora.per_layer[i])
        acts.layers[i].saved_bytes +=
            lora_saved_bytes(i > E ? T_dec : T, rq.lora.rank, io.first, rq.lora.dropout, lin,
                             st.runtime.dropout_mask_bytes);
  }

  // ---- checkpointing -> placement engine
  placement::Chain chain = activations::to_chain(acts);
  double selective_recompute = 0;
  if (rq.checkpointing.strategy == "selective") {
    // Megatron selective recompute: the attention core (s^2 terms) is recomputed, not kept.
    for (size_t i = 1; i + 1 < nl; ++i) {
      chain.layers[i].saved_bytes -= acts.layers[i].attention_core_bytes;
      selective_recompute += 4.0 * rq.micro_batch * rq.seq_len * rq.seq_len *
                             rq.model().arch.hidden / rq.tensor_parallel;  // QK^T and PV again
    }
  }
  placement::PlanResult plan;
  const std::string& strat = rq.checkpointing.strategy;
  if (strat == "none" || strat == "selective") {
    plan = placement::evaluate(chain, {});
  } else if (strat == "full") {
    // HF gradient_checkpointing / Megatron full: every block is its own checkpointed segment
    std::vector<placement::Segment> segs;
    const uint32_t first = rq.is_mlp ? 0 : 1,
                   last = rq.is_mlp ? uint32_t(nl - 1) : uint32_t(nl - 2);
    for (uint32_t i = first; i <= last; ++i) segs.push_back({i, i});
    plan = placement::evaluate(chain, segs);
  } else {
    plan = placement::plan(chain, rq.checkpointing.placement);
  }

  // ---- persistent state
  Persistent ps;
  const bool amp = is_amp(rq.precision), half = is_half(rq.precision);
  const bool deepspeed_mp = amp && rq.zero_stage > 0;  // ZeRO's 16-bit params + fp32 master
  const uint64_t N = rq.zero_stage > 0 ? rq.data_parallel : 1;
  const uint64_t t = rq.tensor_parallel;
  const uint64_t Pt_full = rq.lora.enabled ? lora.params : P;
  ps.params = P + (rq.lora.enabled ? Pt_full : 0);
  ps.trainable = Pt_full;
  const uint64_t wb = (half || deepspeed_mp) ? 2 : 4;
  // weights
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
    ps.weights_src = deepspeed_mp ? "ZeRO (Rajbhandari et al. 2020): 16-bit parameters, 2 B/param"
                     : half
                         ? "parameters in 16-bit: 2 B/param"
                         : (amp ? "torch.autocast keeps fp32 parameters: 4 B/param (16-bit copies "
                                  "are per-step activations)"
                                : "fp32 parameters: 4 B/param");
  }
  weights /= t;
  if (rq.zero_stage == 3) {
    weights /= N;
    ps.weights_src += "; ZeRO-3 partitions them over " + std::to_string(N) + " ranks";
    // DeepSpeed stage3.py estimator: the largest layer is gathered whole (x2 with prefetch)
    ps.zero_gather = 2 * lay.largest_layer * wb / t;
  }
  if (rq.offload_params) {
    weights = 0;
    ps.weights_src += "; offloaded to CPU (ZeRO-Infinity / ZeRO-Offload)";
  }
  ps.weights = static_cast<uint64_t>(std::llround(weights));
  // gradients
  ps.grad_bytes_per_param = (half || deepspeed_mp) ? 2 : 4;
  const uint64_t grad_div = t * (rq.zero_stage >= 2 ? N : 1);
  ps.grads_full = Pt_full * ps.grad_bytes_per_param / grad_div;
  ps.grads_src =
      std::to_string(ps.grad_bytes_per_param) + " B per trainable parameter (" +
      (ps.grad_bytes_per_param == 4 ? "fp32 .grad" : "16-bit .grad") + ")" +
      (rq.zero_stage >= 2 ? "; ZeRO-2/3 partitions them over " + std::to_string(N) + " ranks"
                          : "") +
      (rq.accumulation_steps > 1 ? "; kept across the " + std::to_string(rq.accumulation_steps) +
                                       " accumulation micro-steps"
                                 : "; allocated layer by layer in the backward (set_to_none)");
  ps.grads_per_layer.assign(nl, 0);
  for (size_t i = 0; i < nl; ++i) {
    uint64_t n = lay.per_layer[i];
    if (rq.lora.enabled) {
      n = 0;
      for (const auto& io : lora.per_layer[i]) n += rq.lora.rank * (io.first + io.second);
    }
    ps.grads_per_layer[i] = n * ps.grad_bytes_per_param / grad_div;
  }
  // master weights (mixed precision with ZeRO / DeepSpeed keeps an fp32 copy in the optimizer)
  if (deepspeed_mp) {
    ps.master = Pt_full * 4 / (t * N);
    ps.master_src = "ZeRO mixed precision: fp32 master copy, 4 B/param, partitioned over " +
                    std::to_string(N) + " ranks (Rajbhandari et al. 2020, K = 12 incl. states)";
  } else {
    ps.master_src = amp ? "none: torch.autocast trains the fp32 parameters directly"
                        : "none: no separate master copy in this precision";
  }
  // optimizer state: the optimizer's real layout (optimizer.hpp) per parameter tensor
  const DType state_dtype = (half && !deepspeed_mp)
                                ? (rq.precision == Precision::bf16 ? DType::bf16 : DType::fp16)
                                : DType::fp32;
  uint64_t state = 0;
  if (rq.lora.enabled) {
    for (size_t i = 0; i < nl; ++i)
      for (const auto& io : lora.per_layer[i]) {
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
    state = optimizer_state_bytes(rq.optimizer, TensorSpec{"params", {Pt_full}}, state_dtype);
    r.assumptions.push_back(
        "optimizer state from the parameter count as one tensor (factored optimizers "
        "need the tensor shapes: give a preset or config)");
  }
  state += optimizer_shared_state_bytes(rq.optimizer, rq.optimizer.name == "adam-8bit");
  ps.state = state / (t * N);
  ps.state_src = "optimizer '" + rq.optimizer.name +
                 "' state layout per parameter tensor (torch/optim, " + dtype_name(state_dtype) +
                 " states)" +
                 (N > 1 ? "; ZeRO partitions it over " + std::to_string(N) + " ranks" : "") +
                 (rq.optimizer.paged
                      ? "; bitsandbytes paged: tensors of 100,000 values or more in CUDA managed "
                        "memory, outside torch.cuda's allocated and reserved bytes (in "
                        "deviceUsedBytes)"
                      : "");
  // optimizer step transients
  const uint64_t state_w = state_dtype == DType::fp32 ? 4 : 2;
  ps.opt_temp = optimizer_temp_elements(rq.optimizer, rq.runtime.foreach_optimizers,
                                        Pt_full / (t * N), std::min(lay.largest_tensor, Pt_full)) *
                state_w;
  ps.temp_src = rq.runtime.foreach_optimizers
                    ? "optimizer step: _foreach_* temporaries over all trainable "
                      "tensors (torch/optim, PyTorch 2.x on CUDA)"
                    : "optimizer step: for-loop temporaries of the largest tensor "
                      "(torch/optim, foreach=False)";
  // one parameter at a time (optimizer in backward: a single-tensor optimizer per parameter)
  ps.opt_temp_one = optimizer_temp_elements(rq.optimizer, false, 0,
                                            std::min(lay.largest_tensor, Pt_full) / (t * N)) *
                    state_w;
  if (deepspeed_mp) ps.opt_temp += Pt_full * 4 / (t * N);  // fp32 gradient partition for the update
  if (rq.offload_optimizer) {
    ps.master = 0;
    ps.state = 0;
    ps.opt_temp = 0;
    ps.state_src += "; offloaded to CPU (ZeRO-Offload)";
    ps.master_src += "; offloaded to CPU";
  }

  // ---- runtime
  const uint64_t runtime_bytes = rq.runtime_overhead_set
                                     ? rq.runtime_overhead_bytes
                                     : rq.runtime.context_bytes + rq.runtime.workspace_bytes;
  const std::string runtime_src =
      rq.runtime_overhead_set
          ? "runtimeOverheadBytes (given)"
          : rq.runtime.context_source + (rq.runtime.workspace_bytes ? " + cuBLAS workspace" : "");

  // ---- walk the step
  // DDP (torch/nn/parallel/distributed.py): the reducer's buckets hold a flat copy of every
  // gradient from the wrapping on; with gradient_as_bucket_view the .grad tensors are those
  // buckets ("the saved memory size will be equal to the total gradients size")
  const bool ddp = rq.data_parallel > 1 && rq.zero_stage == 0;
  const uint64_t ddp_buckets = ddp ? ps.grads_full : 0;
  const bool grads_in_buckets = ddp && rq.ddp_gradient_as_bucket_view;
  const uint64_t fixed = ps.weights + ps.master + ps.state + runtime_bytes + ddp_buckets;
  const bool grads_from_start = rq.accumulation_steps > 1;
  uint64_t grads_now = grads_from_start ? ps.grads_full : 0;
  // optimizer in backward (torchtune register_optim_in_bwd_hooks): each parameter steps in its
  // post-accumulate-grad hook and its .grad is dropped at once: at most the largest layer's
  // gradient and one tensor's optimizer temporaries exist at a time
  const bool in_bwd = rq.optimizer_in_backward;
  uint64_t largest_grads = 0;
  for (uint64_t g : ps.grads_per_layer) largest_grads = std::max(largest_grads, g);
  const uint64_t in_bwd_temp = in_bwd ? largest_grads + ps.opt_temp_one : 0;
  uint64_t best = 0;
  TimelinePoint best_pt;
  uint64_t best_temp = 0, best_act = 0;
  auto temp_of = [&](const placement::StepEvent& e) -> uint64_t {
    if (e.layer < 0 || static_cast<size_t>(e.layer) >= nl) return 0;
    const auto& L = chain.layers[e.layer];
    if (e.phase == "backward") return L.backward_temp_bytes;
    return L.forward_temp_bytes;
  };
  for (const auto& e : plan.timeline) {
    if (e.phase == "backward" && !grads_from_start && !in_bwd && !grads_in_buckets)
      grads_now += ps.grads_per_layer[e.layer];
    TimelinePoint pt;
    pt.phase = e.phase;
    pt.layer = e.layer;
    pt.name = e.layer >= 0 ? acts.layers[e.layer].name : "loss";
    pt.activation_bytes = e.live_bytes;
    pt.gradient_bytes = grads_now;
    const uint64_t zg = (rq.zero_stage == 3 && e.phase != "loss") ? ps.zero_gather : 0;
    const uint64_t step_in_bwd = e.phase == "backward" ? in_bwd_temp : 0;
    pt.total_bytes = fixed + grads_now + e.live_bytes + zg + step_in_bwd;
    if (pt.total_bytes > best) {
      best = pt.total_bytes;
      best_pt = pt;
      const uint64_t tmp = std::min(temp_of(e), e.live_bytes);
      best_act = e.live_bytes - tmp;
      best_temp = tmp + zg + step_in_bwd;
    }
    r.timeline.push_back(pt);
  }
  {
    TimelinePoint pt;
    pt.phase = "optimizer";
    pt.name = "optimizer step";
    pt.gradient_bytes = (in_bwd || grads_in_buckets) ? 0 : ps.grads_full;
    pt.activation_bytes = acts.input_bytes;  // the batch is still referenced
    pt.total_bytes = fixed + pt.gradient_bytes + (in_bwd ? 0 : ps.opt_temp) + acts.input_bytes;
    if (pt.total_bytes > best) {
      best = pt.total_bytes;
      best_pt = pt;
      best_act = acts.input_bytes;
      best_temp = in_bwd ? 0 : ps.opt_temp;
    }
    r.timeline.push_back(pt);
  }

  // ---- result
  r.peak_bytes = best;
  r.allocated_peak_bytes = best - runtime_bytes;
  r.peak_phase = best_pt.phase;
  r.peak_layer = best_pt.layer;
  r.weights = {ps.weights, ps.weights_src};
  r.master_weights = {ps.master, ps.master_src};
  r.gradients = {
      best_pt.gradient_bytes + ddp_buckets,
      ps.grads_src + (ddp ? (grads_in_buckets ? "; DDP: the .grad tensors are views of the "
                                                "reducer's buckets (gradient_as_bucket_view)"
                                              : "; DDP: the reducer's buckets hold a second copy "
                                                "of every gradient (gradient_as_bucket_view=False)")
                          : "")};
  r.optimizer_state = {ps.state, ps.state_src};
  r.activations = {best_act, "saved-for-backward tensors derived per op (" + acts.recipe +
                                 " recipe, activations.cpp), planned by the placement engine (" +
                                 strat + ")"};
  r.temporaries = {best_temp, best_pt.phase == "optimizer"
                                  ? ps.temp_src
                                  : "transients of the op at the peak (activations.cpp: "
                                    "forward/backward temporaries of layer '" +
                                        best_pt.name + "')"};
  r.runtime = {runtime_bytes, runtime_src};
  r.params = ps.params;
  r.trainable_params = ps.trainable;
  r.stored_activation_bytes = plan.stored_bytes;
  r.forward_flops = plan.forward_cost;
  r.recompute_flops = plan.recompute_cost + selective_recompute;
  const double base = plan.forward_cost + plan.backward_cost;
  r.recompute_fraction = base > 0 ? r.recompute_flops / base : 0;
  r.korthikanti_layer_bytes = acts.korthikanti_layer_bytes;
  r.derived_layer_bytes = nl > 2 ? acts.layers[1].saved_bytes : 0;
  if (!rq.is_mlp)
    for (const auto& a : rq.model().assumptions) r.assumptions.push_back(a);
  for (const auto& a : acts.assumptions) r.assumptions.push_back(a);
  if (rq.lora.enabled) {
    r.assumptions.push_back("LoRA: " + std::to_string(lora.modules) +
                            " linear layers adapted; activations as in full fine-tuning plus the "
                            "adapters' own");
    for (const auto& a : lora.assumptions) r.assumptions.push_back(a);
  }
  if (rq.simulate_allocator) {
    device::Facts f;
    f.weight_bytes_per_param = static_cast<double>(wb);
    f.grad_bytes_per_param = ps.grad_bytes_per_param;
    f.state_width = state_w;
    f.state_dtype = state_dtype;
    f.weight_divisor = t * (rq.zero_stage == 3 ? N : 1);
    f.grad_divisor = grad_div;
    f.state_divisor = t * N;
    f.master_bytes_per_param = deepspeed_mp ? 4 : 0;
    f.zero_gather_bytes = ps.zero_gather;
    f.offload_params = rq.offload_params;
    f.offload_optimizer = rq.offload_optimizer;
    f.lora_io = lora.per_layer;
    if (rq.lora.enabled && rq.lora.qlora)
      f.weight_bytes_per_param = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
    device::simulate(rq, acts, chain, plan, f, &r);
    if (rq.offload_activations)
      r.assumptions.push_back(
          "activation offloading: the allocator simulation moves each saved tensor of 1 KiB or "
          "more to the CPU once five newer ones exist, and brings a layer's back before its "
          "backward (torchtune OffloadActivations); peakBytes and the breakdown do not");
    r.assumptions.push_back("device memory: the caching allocator simulated over " +
                            std::to_string(r.steps_simulated) + " steps (" + rq.runtime.name +
                            "; zero_grad(set_to_none=" + (rq.set_to_none ? "True" : "False") +
                            "), optimizer " + rq.optimizer_implementation +
                            "); nvidia-smi = reserved + the CUDA context" +
                            (r.nccl_bytes ? " + NCCL buffers" : ""));
  }
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
