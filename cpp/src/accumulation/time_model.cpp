// Step-time model (see time_model.hpp and docs/accumulation.md "Time model").
#include "trainmem/time_model.hpp"

#include <algorithm>

#include "trainmem/error.hpp"

namespace trainmem {
namespace time_model {

namespace {

// What the architecture count leaves out (Kaplan et al. 2020 Table 1).
constexpr const char* kUncountedOps = "flops.notCounted";

// T5 (modeling_t5.py, transformers 6b8b757): encoder blocks run self-attention (q, k, v, o of
// width heads x d_kv) and the MLP on the seqLen input tokens; decoder blocks run self-attention,
// the cross-attention's q and o and the MLP on the targetLen decoder tokens, its k and v on the
// encoder's tokens; scores over (own length) and (encoder length) keys; the LM head on the
// decoder tokens. Per sample, then spread over the seqLen input tokens.
void encoder_decoder_flops(const Architecture& a, double s, double t, ForwardFlops* f) {
  const double h = static_cast<double>(a.hidden);
  const double q = static_cast<double>(a.heads) *
                   static_cast<double>(a.head_dim ? a.head_dim : a.hidden / a.heads);
  const double mlp = (a.gated_mlp ? 3.0 : 2.0) * h * static_cast<double>(a.intermediate);
  const double E = static_cast<double>(a.encoder_layers), D = static_cast<double>(a.layers);
  const double r = t / s;  // decoder tokens per input token
  // Kaplan et al. 2020 Table 1: 2 FLOPs per weight per token
  f->block_matmul =
      E * 2.0 * (4.0 * h * q + mlp) + D * 2.0 * (2.0 * h * q) + r * D * 2.0 * (6.0 * h * q + mlp);
  // Narayanan et al. 2021: QK^T and AV, 2 x keys x width each per query token
  f->attention = E * 4.0 * s * q + r * D * 4.0 * (t + s) * q;
  f->attention_core = f->attention;
  f->head = r * 2.0 * h * static_cast<double>(a.vocab);
  f->layers = a.layers + a.encoder_layers;
  f->method = "architecture";
  f->assumptions.push_back(Text("flops.encdec", {}));
}

}  // namespace

ForwardFlops forward_flops_per_token(const ModelDescription& m, uint64_t seq_len,
                                     uint64_t target_len) {
  ForwardFlops f;
  const Architecture& a = m.arch;
  const double s = static_cast<double>(seq_len);
  if (m.has_architecture() && a.heads > 0 && a.intermediate > 0 && a.encoder_layers > 0 &&
      (a.model_type == "t5" || a.model_type == "mt5")) {
    encoder_decoder_flops(a, s, static_cast<double>(target_len ? target_len : seq_len), &f);
    f.assumptions.push_back(Text(kUncountedOps, {}));
  } else if (m.has_architecture() && a.heads > 0 && a.intermediate > 0 && a.model_type != "t5") {
    f.method = "architecture";
    const double h = static_cast<double>(a.hidden);
    const double heads = static_cast<double>(a.heads);
    const double hd = static_cast<double>(a.head_dim ? a.head_dim : a.hidden / a.heads);
    const double kv = static_cast<double>(a.kv_heads ? a.kv_heads : a.heads);
    const double inter = static_cast<double>(a.intermediate);
    f.layers = a.layers + a.encoder_layers;
    const double layers = static_cast<double>(f.layers);
    // Attention projections: q and o are h x (heads*hd); k and v are h x (kv*hd) (GQA).
    const double attn_weights = h * hd * (2 * heads + 2 * kv);
    // MLP: two matrices, three when gated (SwiGLU/GeGLU); MoE runs experts_per_token experts
    // per token plus the router (Fedus et al. 2021; Mixtral config semantics).
    double mlp_weights = (a.gated_mlp ? 3.0 : 2.0) * h * inter;
    if (a.num_experts > 0) {
      const double k = static_cast<double>(a.experts_per_token ? a.experts_per_token : 1);
      mlp_weights = mlp_weights * k + h * static_cast<double>(a.num_experts);
    }
    // Kaplan et al. 2020 Table 1: a matmul costs 2 FLOPs per weight per token.
    f.block_matmul = layers * 2.0 * (attn_weights + mlp_weights);
    // Narayanan et al. 2021 (Megatron, eq. 3 derivation): QK^T and AV cost 2*s*(heads*hd) each
    // per token and layer, counted over the full s x s score matrix (no causal halving).
    f.attention = layers * 4.0 * s * heads * hd;
    f.attention_core = f.attention;
    if (!a.encoder_only && a.vocab > 0) {
      // Output layer h x V on every token (Narayanan et al. 2021: the 6sbhV term over 3 passes).
      f.head = 2.0 * h * static_cast<double>(a.vocab);
    } else if (a.encoder_only && a.num_labels > 0) {
      // BERT sequence classification: pooler (h x h) + classifier (h x labels) on one token
      // per sequence, spread over its s tokens.
      f.head = (2.0 * h * h + 2.0 * h * static_cast<double>(a.num_labels)) / s;
    } else {
      f.assumptions.push_back(Text("flops.noHead", {}));
    }
    f.assumptions.push_back(Text(kUncountedOps, {}));
  } else if (m.params > 0) {
    f.method = "parameters";
    // Kaplan et al. 2020 eq. 2.2: C_forward ~ 2N per token (training ~ 6N).
    f.block_matmul = 2.0 * static_cast<double>(m.params);
    f.layers = a.layers;
    f.assumptions.push_back(Text("flops.unknown", {}));
  } else {
    fail(code::kUnsupported, "model", Message{"error.time.model", {}});
  }
  f.blocks = f.block_matmul + f.attention;
  f.total = f.blocks + f.head;
  return f;
}

double optimizer_bytes_per_param(uint32_t state_copies, double weight_bytes, double state_bytes) {
  // Minimal memory traffic of an element-wise update: read+write weights, read the gradient
  // (same width as the weights in PyTorch), read+write each state (roofline lower bound,
  // Williams et al. 2009).
  return 2.0 * weight_bytes + weight_bytes + 2.0 * state_copies * state_bytes;
}

StepTime estimate_step(const ForwardFlops& flops, const StepInputs& in, const Device& device,
                       const Knobs& knobs) {
  StepTime t;
  const double tokens = static_cast<double>(in.micro_batch) * static_cast<double>(in.seq_len);
  // Backward costs twice the forward (Kaplan et al. 2020 sec. 2.1; Narayanan et al. 2021).
  t.useful_flops_per_micro_step = 3.0 * flops.total * tokens;
  // Checkpointing repeats the forward of the recomputed layers once (Chen et al. 2016).
  t.recompute_flops_per_micro_step = in.recompute_flops_per_token * tokens;
  const double rate = device.peak_flops * knobs.utilization;
  t.compute_seconds_per_micro_step =
      (t.useful_flops_per_micro_step + t.recompute_flops_per_micro_step) / rate;
  // Hockney's model t = t0 + W / r_inf (r(W) = r_inf W / (W + W_half), W_half = r_inf t0):
  // a fixed cost per micro-step, proportional to the number of blocks (kernels launched).
  const double layers = static_cast<double>(std::max<uint64_t>(flops.layers, 1));
  t.overhead_seconds_per_micro_step = knobs.overhead_per_layer_s * layers;
  t.micro_step_seconds = t.compute_seconds_per_micro_step + t.overhead_seconds_per_micro_step;
  if (device.memory_bandwidth > 0)
    t.optimizer_seconds = in.optimizer_bytes / device.memory_bandwidth;
  if (device.interconnect_bandwidth > 0 && in.data_parallel > 1) {
    // Ring all-reduce moves 2(N-1)/N of the buffer per GPU (Patarasuk & Yuan 2009; NCCL busbw).
    const double n = static_cast<double>(in.data_parallel);
    t.allreduce_seconds = 2.0 * (n - 1.0) / n * in.allreduce_bytes / device.interconnect_bandwidth;
  }
  t.step_seconds = static_cast<double>(in.accumulation_steps) * t.micro_step_seconds +
                   t.optimizer_seconds + t.allreduce_seconds;
  const double samples = static_cast<double>(in.micro_batch) *
                         static_cast<double>(in.accumulation_steps) *
                         static_cast<double>(in.data_parallel);
  t.samples_per_second = samples / t.step_seconds;
  t.tokens_per_second = t.samples_per_second * static_cast<double>(in.seq_len);
  const double steps = static_cast<double>(in.accumulation_steps);
  // PaLM (Chowdhery et al. 2022, App. B): MFU counts the model's FLOPs, not rematerialisation.
  t.model_flops_utilization =
      steps * t.useful_flops_per_micro_step / (device.peak_flops * t.step_seconds);
  t.hardware_flops_utilization =
      steps * (t.useful_flops_per_micro_step + t.recompute_flops_per_micro_step) /
      (device.peak_flops * t.step_seconds);
  return t;
}

}  // namespace time_model
}  // namespace trainmem
