// Saved-for-backward bytes of transformer blocks, derived op by op from HF transformers' eager
// modules (modeling_gpt2.py, modeling_bert.py, modeling_llama.py) and PyTorch's autograd
// formulas (tools/derivatives.yaml: which inputs/outputs each backward needs). Each entry names
// the op that keeps it. Measured counterpart: tools/measure_activations.py ->
// tests/fixtures/torch_activations.json (test_activations.cpp compares them).
#include "trainmem/activations.hpp"

#include <algorithm>
#include <cmath>

#include "io/json_fields.hpp"
#include "io/request.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace activations {

bool parse_precision(const std::string& s, Precision* out) {
  if (s == "fp32")
    *out = Precision::fp32;
  else if (s == "amp-fp16")
    *out = Precision::amp_fp16;
  else if (s == "amp-bf16")
    *out = Precision::amp_bf16;
  else if (s == "bf16")
    *out = Precision::bf16;
  else if (s == "fp16")
    *out = Precision::fp16;
  else
    return false;
  return true;
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"fp32", "amp-fp16", "amp-bf16", "bf16", "fp16"};
  return names;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::amp_fp16:
      return "amp-fp16";
    case Precision::amp_bf16:
      return "amp-bf16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "fp32";
}

double korthikanti_layer_bytes(uint64_t s, uint64_t b, uint64_t h, uint64_t a, uint64_t t,
                               bool sequence_parallel, bool selective) {
  const double sbh = static_cast<double>(s) * b * h;
  const double attn = selective ? 0.0 : 5.0 * a * s / static_cast<double>(h);
  const double tt = static_cast<double>(t == 0 ? 1 : t);
  // Korthikanti et al. 2022 eq. (1) t = 1; eq. (2) tensor parallel; sequence parallel: all / t.
  if (tt == 1.0) return sbh * (34.0 + attn);
  if (sequence_parallel) return sbh * (34.0 + attn) / tt;
  return sbh * (10.0 + 24.0 / tt + attn / tt);
}

namespace {

// Element widths of one precision (bytes).
struct Widths {
  uint64_t res = 4;    // residual stream, norm inputs (fp32 under autocast: embeddings and
                       // layer_norm run in fp32 — PyTorch autocast op lists)
  uint64_t lin = 4;    // matmul operands and outputs (16-bit under autocast)
  uint64_t sm = 4;     // softmax output (autocast runs softmax in fp32)
  uint64_t stats = 4;  // LayerNorm mean / rstd
  bool amp = false;
};

Widths widths(const Settings& s) {
  Widths w;
  switch (s.precision) {
    case Precision::fp32:
      break;
    case Precision::amp_fp16:
    case Precision::amp_bf16:
      w.lin = 2;
      w.amp = true;
      break;
    case Precision::bf16:
    case Precision::fp16:
      w.res = w.lin = w.sm = 2;
      w.stats = s.runtime.norm_stats_fp32 ? 4 : 2;
      break;
  }
  return w;
}

class Builder {
 public:
  Builder(const Settings& s, const std::string& field) : s_(s), field_(field) {}
  uint64_t mul(std::initializer_list<uint64_t> xs) const {
    uint64_t r = 1;
    for (uint64_t x : xs) r = checked_mul(r, x, field_);
    return r;
  }
  // Tensor-parallel split (heads, intermediate): / t. Replicated (norms, residual, dropout
  // masks of h-sized tensors): / t only with sequence parallelism (Korthikanti et al. 4.2.2).
  uint64_t tp(uint64_t bytes) const { return bytes / s_.tensor_parallel; }
  uint64_t rep(uint64_t bytes) const {
    return s_.sequence_parallel ? bytes / s_.tensor_parallel : bytes;
  }
  uint64_t mask(uint64_t elements, uint64_t masked_width) const {
    const uint64_t w = s_.runtime.dropout_mask_bytes ? s_.runtime.dropout_mask_bytes : masked_width;
    return mul({elements, w});
  }
  // Names are C strings: most are literals, and the name is only kept with `detail`.
  // `n`: the entry is n tensors of equal size (one allocation each in the trace).
  void add(LayerActivations* l, const char* name, uint64_t bytes, const char* source,
           uint64_t n = 1) const {
    if (bytes == 0) return;
    if (s_.detail) l->saved.push_back({name, bytes, source});
    l->saved_bytes = checked_add(l->saved_bytes, bytes, field_);
    for (uint64_t k = 0; k < n; ++k) l->tensors.push_back(bytes / n);
  }
  void add(LayerActivations* l, const std::string& name, uint64_t bytes, const char* source,
           uint64_t n = 1) const {
    add(l, name.c_str(), bytes, source, n);
  }
  const Settings& settings() const { return s_; }
  // Removes the last saved tensor (one the chosen loss does not keep after all).
  void drop_last(LayerActivations* l) const {
    if (l->tensors.empty()) return;
    l->saved_bytes -= l->tensors.back();
    l->tensors.pop_back();
    if (s_.detail && !l->saved.empty()) l->saved.pop_back();
  }
  // Transients for the trace: `pieces` tensors of `bytes` each, live around tensor index `at`.
  static void temps(std::vector<LayerActivations::TempGroup>* g, size_t at, uint64_t pieces,
                    uint64_t bytes) {
    if (bytes == 0 || pieces == 0) return;
    g->push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(pieces), bytes});
  }
  void output(LayerActivations* l, const char* name, uint64_t bytes, const char* source) const {
    add(l, name, bytes, source);
    l->output_bytes = bytes;
  }

 private:
  const Settings& s_;
  std::string field_;
};

struct Dims {
  // q: the attention width, heads x head_dim (= h except where head_dim is set apart from
  // hidden / heads: Gemma 2/3, Qwen3, MLA's qk_head_dim)
  uint64_t b, s, T, h, a, i, V, d, q;
  bool p_attn, p_hid;
};

// Eager attention core shared by the recipes: QK^T, softmax, dropout, PV.
// `probs_cast`: the probabilities are cast before PV (GPT-2 `.type(value.dtype)` under
// autocast, Llama `.to(query.dtype)` after an fp32 softmax).
void eager_core(const Builder& B, const Dims& d, const Widths& w, uint64_t sm_width,
                bool cast_before_dropout, LayerActivations* l) {
  const uint64_t bas2 = B.mul({d.b, d.a, d.s, d.s});
  B.add(l, "q, k^T (bmm operands, reshape copies)", B.tp(B.mul({2, d.T, d.q, w.lin})),
        "torch.matmul -> bmm saves both operands (BmmBackward0)", 2);
  if (B.settings().runtime.softmax_saves_input)
    B.add(l, "softmax input (scores + mask)", B.tp(bas2 * sm_width),
          "SoftmaxBackward keeps its input too (torch <= 1.10)");
  B.add(l, "softmax output", B.tp(bas2 * sm_width), "SoftmaxBackward0 keeps its result");
  const uint64_t core_start = l->saved_bytes;
  const uint64_t qk_v_bytes = B.tp(B.mul({2, d.T, d.q, w.lin})) + B.tp(B.mul({d.T, d.q, w.lin}));
  const uint64_t p_width = cast_before_dropout ? w.lin : sm_width;
  if (cast_before_dropout && w.lin != sm_width) {
    // the cast copy is what dropout (or PV) reads; kept by PV when there is no dropout
    if (!d.p_attn)
      B.add(l, "probabilities cast for PV", B.tp(bas2 * w.lin), "BmmBackward0 keeps its operand");
  }
  if (d.p_attn) {
    B.add(l, "attention dropout mask", B.tp(B.mask(bas2, p_width)),
          "native_dropout mask (CUDA: bool) / _dropout noise tensor (CPU)");
    B.add(l, "attention dropout output (PV operand)", B.tp(bas2 * w.lin),
          "BmmBackward0 keeps its operand (autocast: 16-bit copy)");
  } else if (!cast_before_dropout && w.lin != sm_width) {
    B.add(l, "probabilities cast for PV", B.tp(bas2 * w.lin), "BmmBackward0 keeps its operand");
  }
  B.add(l, "v (bmm operand, reshape copy)", B.tp(B.mul({d.T, d.q, w.lin})),
        "BmmBackward0 keeps its operand");
  // Megatron's selective recompute drops the s^2 tensors (softmax, dropout, probabilities)
  l->attention_core_bytes += l->saved_bytes - core_start - qk_v_bytes;
}

void sdpa_core(const Builder& B, const Dims& d, const Widths& w, LayerActivations* l) {
  B.add(l, "q, k, v (kept by scaled_dot_product_attention)", B.tp(B.mul({3, d.T, d.q, w.lin})),
        "flash / memory-efficient SDPA backward reads q, k, v", 3);
  B.add(l, "SDPA output", B.tp(B.mul({d.T, d.q, w.lin})), "flash SDPA backward reads out");
  B.add(l, "SDPA logsumexp (fp32)", B.tp(B.mul({d.b, d.a, d.s, 4})),
        "flash SDPA backward reads softmax_lse");
}

uint64_t attn_forward_temp(const Builder& B, const Dims& d, const Widths& w, bool eager) {
  // eager: the score tensor and its scaled/masked successor coexist (2 x b a s^2);
  // sdpa: the kernel output only.
  if (eager) return B.tp(B.mul({2, d.b, d.a, d.s, d.s, std::max(w.lin, w.sm)}));
  return B.tp(B.mul({d.T, d.q, w.lin}));
}

uint64_t attn_backward_temp(const Builder& B, const Dims& d, const Widths& w, bool eager) {
  // eager: grad of the probabilities and grad of the scores (softmax backward) coexist;
  // sdpa: dq, dk, dv (+ fp32 dq accumulator of flash-attention 2).
  if (eager) return B.tp(B.mul({2, d.b, d.a, d.s, d.s, std::max(w.lin, w.sm)}));
  return B.tp(B.mul({d.T, d.q, 3 * w.lin + 4}));
}

// Llama-style RMSNorm written with tensor ops (HF LlamaRMSNorm): x.to(fp32); pow(2).mean;
// rsqrt; x * rsqrt; weight * x.to(input dtype). `input_counted`: the fp32 input is the previous
// layer's output (fp32 runs) and is not counted again. `consumers`: linears reading the output
// (each casts it separately under autocast).
void rms_norm(const Builder& B, const Dims& d, const Widths& w, const Settings& s,
              bool input_counted, int consumers, const std::string& what, LayerActivations* l) {
  // A 16-bit input is not kept itself (only its fp32 copy is), but the chain counts the input
  // once as the previous layer's output: the copy adds (4 - w.res) bytes per element here.
  // compiled: the fp32 cast is recomputed from the 16-bit input (a cast, not a matmul)
  if (!input_counted && !s.compiled)
    B.add(l, what + " input in fp32 (beyond the 16-bit input)", B.rep(B.mul({d.T, d.h, 4 - w.res})),
          "PowBackward0 / MulBackward0 keep x.to(float32)");
  if (s.runtime.mean_saves_input)
    B.add(l, what + " x^2", B.rep(B.mul({d.T, d.h, 4})),
          "MeanBackward1 keeps its input (torch 1.13)");
  B.add(l, what + " rsqrt", B.rep(B.mul({d.T, 4})), "RsqrtBackward0 keeps its result");
  // compiled: one fused kernel; x * rsqrt is recomputed from x and the saved rsqrt
  if (!s.compiled)
    B.add(l, what + " normalized", B.rep(B.mul({d.T, d.h, w.res == 4 ? 4 : w.lin})),
          "weight * x.to(dtype): MulBackward0 keeps x");
  if (w.amp)
    B.add(l, what + " output, cast to 16-bit per linear",
          B.rep(B.mul({uint64_t(consumers), d.T, d.h, 2})),
          "autocast casts the fp32 input of each linear; the mm keeps the copy", consumers);
  else
    B.add(l, what + " output (linear input)", B.rep(B.mul({d.T, d.h, w.lin})),
          "MmBackward0 keeps its input");
}

void layer_norm_stats(const Builder& B, const Dims& d, const Widths& w, const std::string& what,
                      LayerActivations* l) {
  B.add(l, what + " mean, rstd", B.rep(B.mul({2, d.T, w.stats})), "NativeLayerNormBackward0", 2);
}

std::string family(const Architecture& a) {
  const std::string& t = a.model_type;
  if (t == "gpt2" || t == "gpt_neox" || t == "gptj" || t == "opt" || t == "gpt_bigcode")
    return "gpt2";
  if (t == "bert" || t == "roberta" || t == "distilbert" || t == "electra") return "bert";
  // Llama-style decoders (RMSNorm, rotary, gated MLP); MLA and MoE details approximate.
  if (t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2" || t == "gemma" ||
      t == "qwen2_moe" || t == "phi3" || t == "qwen3" || t == "qwen3_moe" || t == "gemma2" ||
      t == "gemma3_text" || t == "deepseek_v3" || a.generic)
    return "llama";
  if (a.gated_mlp || a.norm == "rmsnorm") return "llama";
  if (a.encoder_only) return "bert";
  return "gpt2";
}

// What the Llama recipe leaves out for the newer decoders (their modeling_*.py files).
void family_assumptions(const Architecture& a, std::vector<std::string>* out) {
  const std::string& t = a.model_type;
  if (a.mla)
    out->push_back(
        "multi-head latent attention: saved tensors as Llama attention with heads x "
        "qk_head_dim per token; the q/kv low-rank projections and their norms are not counted "
        "(approximate)");
  if (a.shared_experts > 0)
    out->push_back(
        "shared experts counted as extra experts per token; the first dense layers "
        "as MoE layers (approximate)");
  if (t == "gemma2" || t == "gemma3_text")
    out->push_back(
        "Gemma's pre/post feed-forward norms and q/k norms are not counted; GeGLU as "
        "SwiGLU (approximate)");
  if (t == "qwen3" || t == "qwen3_moe")
    out->push_back("q_norm / k_norm are not counted (approximate)");
}

bool python_gelu(const Architecture& a) {
  // HF ACT2FN["gelu_new"] is NewGELUActivation, a Python formula of 8 tensor ops.
  return a.activation == "gelu_new";
}

// The language-model loss over T tokens and Vt vocabulary columns (the head's saves and
// transients after the final norm).
void lm_loss(const Builder& B, const Dims& d, const Widths& w, const Settings& s, uint64_t Vt,
             LayerActivations* head) {
  using Loss = Settings::Loss;
  if (s.loss == Loss::liger_fused) {
    // liger_kernel/ops/fused_linear_cross_entropy.py fused_linear_cross_entropy_forward: the
    // input and weight gradients are computed in the forward and saved for the backward;
    // logits exist one chunk at a time: chunk = next_pow2(ceil(BT / ceil(V / H))) <= BT
    B.add(head, "grad_input (computed in the forward)", B.rep(B.mul({d.T, d.h, w.lin})),
          "LigerFusedLinearCrossEntropyFunction saves grad_input");
    B.add(head, "grad_weight (computed in the forward)", B.mul({Vt, d.h, s.head_weight_bytes}),
          "LigerFusedLinearCrossEntropyFunction saves grad_weight");
    B.add(head, "loss per token (fp32)", B.mul({d.T, 4}), "loss_1d");
    const uint64_t inc = (Vt + d.h - 1) / d.h;
    uint64_t chunk = 1;
    while (chunk < (d.T + inc - 1) / inc) chunk *= 2;
    chunk = std::min(chunk, d.T);
    head->forward_temp_bytes = B.mul({chunk, Vt, w.lin});
    Builder::temps(&head->forward_temps, 0, 1, head->forward_temp_bytes);
    head->backward_temp_bytes = 0;
    return;
  }
  const uint64_t n = s.loss == Loss::chunked ? std::max<uint64_t>(1, s.loss_chunks) : 1;
  const size_t logits_at = head->tensors.size();
  const bool keeps_logits = s.runtime.softmax_saves_input;
  if (keeps_logits)
    B.add(head, "log_softmax input (logits in fp32)", B.mul({d.T, Vt, 4}),
          "LogSoftmaxBackward keeps its input too (torch <= 1.10)", n);
  if (s.compiled && s.loss == Loss::chunked && w.lin != 4) {
    // torchtune compiles the per-chunk cross-entropy (compile_loss): the compiled function
    // keeps its 16-bit logits chunk and the row's logsumexp, and recomputes the upcast
    B.add(head, "logits chunks (16-bit; the compiled loss keeps its input)",
          B.mul({d.T, Vt, w.lin}), "compiled cross_entropy keeps its input and logsumexp", n);
    B.add(head, "logsumexp per token (fp32)", B.mul({d.T, 4}), "compiled cross_entropy");
  } else
    B.add(
        head, "log_softmax output (logits upcast to fp32)", B.mul({d.T, Vt, 4}),
        s.loss == Loss::chunked
            ? "torchtune CEWithChunkedOutputLoss: cross_entropy(chunk.float()) per output chunk "
              "-> LogSoftmaxBackward0 keeps each chunk's result"
            : "HF ForCausalLMLoss: logits.float(); cross_entropy -> LogSoftmaxBackward0 keeps its "
              "result",
        n);
  B.add(head, "labels (int64)", B.mul({d.T, 8}), "NllLossBackward0 keeps its target");
  const uint64_t logits16 = w.lin == 4 ? 0 : B.mul({d.T, Vt, w.lin});
  if (s.loss == Loss::chunked) {
    // the 16-bit logits of every chunk live until the loss is summed (the recipe then deletes
    // them); each chunk's fp32 copy only while its log_softmax runs. Compiled, the logits
    // chunks are what the loss keeps (counted above) and the upcast happens inside the fused
    // kernel: no transient beyond them.
    const bool fused = s.compiled && w.lin != 4;
    const uint64_t copy = keeps_logits || fused ? 0 : B.mul({d.T, Vt, 4}) / n;
    const uint64_t logits16_temp = fused ? 0 : logits16;
    head->forward_temp_bytes = logits16_temp + copy;
    if (logits16_temp) Builder::temps(&head->forward_temps, logits_at, 1, logits16_temp);
    if (copy) Builder::temps(&head->forward_temps, logits_at, 1, copy);
    head->backward_temp_bytes = 2 * (B.mul({d.T, Vt, 4}) / n);
    Builder::temps(&head->backward_temps, 0, 2, B.mul({d.T, Vt, 4}) / n);
    return;
  }
  // logits (and their fp32 copy) exist while log_softmax runs; freed when forward returns
  // (torch <= 1.10 keeps the fp32 logits, so only a 16-bit original is transient)
  const uint64_t fp32_logits = B.mul({d.T, Vt, 4});
  head->forward_temp_bytes =
      keeps_logits ? logits16 : (w.lin == 4 ? fp32_logits : logits16 + fp32_logits);
  // nll_loss backward's grad + log_softmax backward's grad (fp32), with the saved result
  head->backward_temp_bytes = B.mul({2, d.T, Vt, 4});
  if (!keeps_logits || w.lin != 4)
    Builder::temps(&head->forward_temps, logits_at, 1, B.mul({d.T, Vt, w.lin}));
  if (!keeps_logits && w.lin != 4)
    Builder::temps(&head->forward_temps, logits_at, 1, B.mul({d.T, Vt, 4}));
  Builder::temps(&head->backward_temps, 0, 2, B.mul({d.T, Vt, 4}));
}

// The outputs of the ops of a Llama block (HF LlamaDecoderLayer; torchtitan TransformerBlock
// has the same op order: wq, wk, wv, attention, wo, w1, silu, w3, w2) that a selective
// checkpointing policy can name. Shapes from the module code; measured op by op in
// tests/fixtures/torch_sac.json (tools/measure_sac.py). mm outputs have the matmul width.
void llama_op_outputs(const Builder& B, const Dims& d, const Widths& w, bool eager, uint64_t kvq,
                      LayerActivations* l) {
  auto op = [&](const char* name, uint64_t bytes, double flops) {
    l->op_outputs.push_back({name, bytes, flops});
  };
  // a linear without bias on [b, s, in]: aten.mm of [T, in] x [in, out] (2 T in out FLOPs)
  auto mm = [&](uint64_t in, uint64_t outf) {
    op("mm", B.mul({d.T, outf, w.lin}), 2.0 * d.T * in * outf);
  };
  mm(d.h, d.q);                                     // q_proj
  mm(d.h, kvq);                                     // k_proj
  mm(d.h, kvq);                                     // v_proj
  const double core = 2.0 * d.b * d.s * d.s * d.q;  // one of QK^T, PV
  if (eager) {
    op("bmm", B.mul({d.b, d.a, d.s, d.s, w.lin}), core);  // QK^T scores
    // softmax(dtype=float32): an fp32 output (Llama eager_attention_forward)
    op("softmax", B.mul({d.b, d.a, d.s, d.s, 4}), 0);
    op("bmm", B.mul({d.T, d.q, w.lin}), core);  // PV
  } else {
    // _scaled_dot_product_flash_attention returns the output and the fp32 logsumexp
    // (aten/src/ATen/native/native_functions.yaml; the philox seed/offset are scalars)
    op("sdpa", B.mul({d.T, d.q, w.lin}) + B.mul({d.b, d.a, d.s, 4}), 2.0 * core);
  }
  mm(d.q, d.h);                             // o_proj
  mm(d.h, d.i);                             // gate_proj (w1)
  op("silu", B.mul({d.T, d.i, w.lin}), 0);  // act_fn(gate)
  mm(d.h, d.i);                             // up_proj (w3)
  mm(d.i, d.h);                             // down_proj (w2)
}

}  // namespace

const std::vector<std::string>& sac_op_names() {
  static const std::vector<std::string> n = {"mm", "sdpa", "bmm", "softmax", "silu"};
  return n;
}

SelectiveKeep selective_keep(const LayerActivations& layer, const SavePolicy& p) {
  SelectiveKeep k;
  uint64_t mm_count = 0;
  std::vector<bool> seen(p.ops.size(), false);
  for (const auto& o : layer.op_outputs) {
    const std::string name = o.op;
    if (name == "mm") ++mm_count;
    bool listed = false;
    for (size_t j = 0; j < p.ops.size(); ++j)
      if (p.ops[j] == name) listed = seen[j] = true;
    // torchtitan _get_custom_policy: to_save = func in _save_list and not (func is mm and
    // the block's mm count is even)
    if (!listed || (p.every_other_mm && name == "mm" && mm_count % 2 == 0)) continue;
    k.tensors.push_back(o.bytes);
    k.bytes += o.bytes;
    k.saved_flops += o.flops;
  }
  for (size_t j = 0; j < p.ops.size(); ++j)
    if (!seen[j]) k.absent.push_back(p.ops[j]);
  return k;
}

ModelActivations transformer_activations(const ModelDescription& m, const Settings& s) {
  const Architecture& ar = m.arch;
  if (!m.has_architecture() || ar.heads == 0 || ar.vocab == 0)
    fail(code::kUnsupported, "model",
         "activation memory needs the architecture (layers, hidden size, heads, "
         "vocabulary): give the model as a preset or a config, not a parameter count");
  if (s.micro_batch == 0) fail(code::kOutOfRange, "microBatch", "microBatch must be >= 1");
  if (s.seq_len == 0) fail(code::kOutOfRange, "seqLen", "seqLen must be >= 1");
  if (ar.heads % s.tensor_parallel != 0)
    fail(code::kInconsistent, "tensorParallel",
         {"tensorParallel (", std::to_string(s.tensor_parallel),
          ") must divide the number of attention heads (", std::to_string(ar.heads), ")"});
  const std::string field = "microBatch";
  Builder B(s, field);
  const Widths w = widths(s);
  Dims d{};
  d.b = s.micro_batch;
  d.s = s.seq_len;
  d.T = B.mul({d.b, d.s});
  d.h = ar.hidden;
  d.a = ar.heads;
  d.d = ar.head_dim ? ar.head_dim : ar.hidden / ar.heads;
  d.q = d.a * d.d;
  d.i = ar.intermediate ? ar.intermediate : 4 * ar.hidden;
  d.V = ar.vocab;
  d.p_attn = s.dropout && ar.attention_dropout > 0;
  d.p_hid = s.dropout && ar.hidden_dropout > 0;
  const bool eager = s.attention == Attention::eager;

  ModelActivations out;
  out.recipe = family(ar);
  if (s.compiled && out.recipe != "llama")
    fail(code::kUnsupported, "compile",
         {"compile is modelled for Llama-family blocks; '", ar.model_type,
          "' runs its eager recipe only: leave compile out"});
  if (s.compiled)
    out.assumptions.push_back(
        "torch.compile (each block): casts, copies and pointwise duplicates are recomputed in "
        "the backward, matmul, attention and reduction outputs kept (the partitioner's rules; "
        "checked against torchtune's published Llama 3.2 3B rows, not against a trace)");
  out.input_bytes = B.mul({d.T, 8});  // int64 input_ids
  const uint64_t L = ar.layers + ar.encoder_layers;

  // ---------------- embeddings
  LayerActivations emb;
  emb.name = "embeddings";
  if (out.recipe == "gpt2") {
    B.add(&emb, "position ids (int64)", B.mul({d.s, 8}), "EmbeddingBackward0 keeps its indices");
    if (d.p_hid)
      B.add(&emb, "embedding dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.res)), "dropout");
    B.output(&emb, "embedding output", B.rep(B.mul({d.T, d.h, w.res})), "read by the first block");
  } else if (out.recipe == "bert") {
    B.add(&emb, "LayerNorm input (word + position + token type)", B.rep(B.mul({d.T, d.h, w.res})),
          "NativeLayerNormBackward0 keeps its input");
    layer_norm_stats(B, d, w, "LayerNorm", &emb);
    if (d.p_hid)
      B.add(&emb, "embedding dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.res)), "dropout");
    B.output(&emb, "embedding output", B.rep(B.mul({d.T, d.h, w.res})), "read by the first layer");
  } else {
    B.add(&emb, "RoPE cos, sin (shared by all layers)", B.mul({2, d.b, d.s, d.d, w.res}),
          "q * cos + rotate_half(q) * sin: MulBackward0 keeps cos and sin", 2);
    B.output(&emb, "embedding output", B.rep(B.mul({d.T, d.h, w.res})), "read by the first layer");
  }
  emb.forward_flops = 2.0 * d.T * d.h;                    // a gather (no matmul): nominal cost
  emb.backward_temp_bytes = B.rep(B.mul({d.T, d.h, 4}));  // dense grad before index_add
  out.layers.push_back(emb);

  // ---------------- blocks
  const double block_matmul_params =
      out.recipe == "llama"
          ? static_cast<double>(d.h) * (2.0 * d.h + 2.0 * (ar.kv_heads ? ar.kv_heads : d.a) * d.d) +
                3.0 * d.h * d.i * std::max<uint64_t>(1, ar.experts_per_token + ar.shared_experts)
          : 4.0 * d.h * d.h + 2.0 * d.h * d.i;
  for (uint64_t li = 0; li < L; ++li) {
    if (li > 0) {  // every block has the same shapes: copy the first
      LayerActivations copy = out.layers.back();
      copy.name = "block " + std::to_string(li);
      out.layers.push_back(std::move(copy));
      continue;
    }
    LayerActivations l;
    l.name = "block " + std::to_string(li);
    uint64_t pre_attn = 0, pre_mlp = 0;    // saved bytes when the attention core / MLP starts
    size_t pre_attn_i = 0, pre_mlp_i = 0;  // the same as indices into l.tensors
    if (out.recipe == "gpt2") {
      layer_norm_stats(B, d, w, "ln_1", &l);
      B.add(&l, "c_attn input (ln_1 output)", B.rep(B.mul({d.T, d.h, w.lin})),
            "AddmmBackward0 keeps mat1 (autocast: the 16-bit copy)");
      pre_attn = l.saved_bytes;
      pre_attn_i = l.tensors.size();
      if (eager)
        eager_core(B, d, w, w.sm, true, &l);
      else
        sdpa_core(B, d, w, &l);
      B.add(&l, "attention c_proj input (heads merged)", B.tp(B.mul({d.T, d.h, w.lin})),
            "AddmmBackward0 keeps mat1");
      if (d.p_hid)
        B.add(&l, "attention residual dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.lin)),
              "dropout");
      B.add(&l, "ln_2 input (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
            "NativeLayerNormBackward0 keeps its input");
      layer_norm_stats(B, d, w, "ln_2", &l);
      pre_mlp = l.saved_bytes;
      pre_mlp_i = l.tensors.size();
      B.add(&l, "c_fc input (ln_2 output)", B.rep(B.mul({d.T, d.h, w.lin})),
            "AddmmBackward0 keeps mat1");
      if (python_gelu(ar)) {
        // 0.5*x*(1+tanh(c*(x+0.044715*x^3))): pow keeps x, tanh its result, the final mul both
        // factors (0.5x and 1+tanh). Autocast runs pow in fp32: x fp32 copy, fp32 tanh and sum.
        const uint64_t per = w.amp ? 4 + 4 + 4 + 2 : 4 * w.lin;
        B.add(&l, "gelu_new: x, tanh(.), 0.5x, 1+tanh(.)", B.tp(B.mul({d.T, d.i, per})),
              "NewGELUActivation as Python ops (PowBackward0, TanhBackward0, MulBackward0)", 4);
      } else {
        B.add(&l, "activation input", B.tp(B.mul({d.T, d.i, w.lin})),
              "GeluBackward0 keeps its input");
      }
      B.add(&l, "mlp c_proj input (activation output)", B.tp(B.mul({d.T, d.i, w.lin})),
            "AddmmBackward0 keeps mat1");
      if (d.p_hid)
        B.add(&l, "mlp dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.lin)), "dropout");
      B.output(&l, "block output (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
               "read by the next block's ln_1 (NativeLayerNormBackward0)");
    } else if (out.recipe == "bert") {
      if (w.amp)
        B.add(&l, "q, k, v linear inputs (16-bit copies)", B.rep(B.mul({3, d.T, d.h, 2})),
              "autocast casts the fp32 input per linear; AddmmBackward0 keeps it", 3);
      pre_attn = l.saved_bytes;
      pre_attn_i = l.tensors.size();
      if (eager)
        eager_core(B, d, w, w.sm, false, &l);
      else
        sdpa_core(B, d, w, &l);
      B.add(&l, "attention output dense input (context)", B.tp(B.mul({d.T, d.h, w.lin})),
            "AddmmBackward0 keeps mat1");
      if (d.p_hid)
        B.add(&l, "attention output dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.lin)),
              "dropout");
      B.add(&l, "LayerNorm input (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
            "NativeLayerNormBackward0 keeps its input");
      layer_norm_stats(B, d, w, "attention LayerNorm", &l);
      pre_mlp = l.saved_bytes;
      pre_mlp_i = l.tensors.size();
      B.add(&l, "intermediate dense input (LayerNorm output)", B.rep(B.mul({d.T, d.h, w.lin})),
            "AddmmBackward0 keeps mat1 (autocast: the 16-bit copy)");
      B.add(&l, "GELU input", B.tp(B.mul({d.T, d.i, w.lin})), "GeluBackward0 keeps its input");
      B.add(&l, "output dense input (GELU output)", B.tp(B.mul({d.T, d.i, w.lin})),
            "AddmmBackward0 keeps mat1");
      if (d.p_hid)
        B.add(&l, "output dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.lin)), "dropout");
      B.add(&l, "LayerNorm input (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
            "NativeLayerNormBackward0 keeps its input");
      layer_norm_stats(B, d, w, "output LayerNorm", &l);
      B.output(&l, "layer output (LayerNorm output)", B.rep(B.mul({d.T, d.h, w.res})),
               "read by the next layer's q, k, v linears");
    } else {  // llama family
      rms_norm(B, d, w, s, w.res == 4, 3, "input_layernorm", &l);
      pre_attn = l.saved_bytes;
      pre_attn_i = l.tensors.size();
      if (eager) {
        eager_core(B, d, w, 4, false, &l);  // softmax(dtype=float32) then .to(query dtype)
      } else {
        sdpa_core(B, d, w, &l);
      }
      // compiled: the o_proj input is a transposed copy of the SDPA output (recomputed), and
      // the residual sum is kept in its own dtype instead of its fp32 cast
      if (!s.compiled)
        B.add(&l, "o_proj input", B.tp(B.mul({d.T, d.q, w.lin})), "MmBackward0 keeps its input");
      B.add(&l,
            s.compiled ? "post_attention_layernorm input (residual sum)"
                       : "post_attention_layernorm input (residual sum, fp32)",
            B.rep(B.mul({d.T, d.h, s.compiled ? w.res : 4})),
            s.compiled ? "compiled RMSNorm recomputes the fp32 cast from the residual"
                       : "PowBackward0 / MulBackward0 keep x.to(float32)");
      rms_norm(B, d, w, s, true, 2, "post_attention_layernorm", &l);
      pre_mlp = l.saved_bytes;
      pre_mlp_i = l.tensors.size();
      // routed experts per token plus DeepSeek's always-active shared experts
      const uint64_t k = std::max<uint64_t>(1, ar.experts_per_token + ar.shared_experts);
      if (ar.num_experts > 0)
        B.add(&l, "router logits and routing weights (fp32)", B.mul({d.T, ar.num_experts, 4 + 4}),
              "softmax over experts in fp32 (HF MixtralSparseMoeBlock)");
      B.add(&l, "SwiGLU: gate, SiLU(gate), up, product", B.tp(B.mul({4, d.T, k, d.i, w.lin})),
            "SiluBackward0 keeps its input; MulBackward0 both factors; MmBackward0 the product", 4);
      B.output(&l, "block output (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
               "read by the next block's input_layernorm");
    }
    // Transients, as the excess over what the layer has saved at that moment (the simulator
    // adds them on top of the whole layer's saved bytes): in the forward, the attention scores
    // exist before anything from the attention on is saved, the MLP holds one intermediate; in
    // the backward (MLP first) the MLP's gradients coexist with all saved tensors, the
    // attention's once the MLP's saved tensors are freed; plus the input gradient d[i].
    const uint64_t after_attn = l.saved_bytes - pre_attn, mlp_saved = l.saved_bytes - pre_mlp;
    const uint64_t attn_ft = attn_forward_temp(B, d, w, eager),
                   attn_bt = attn_backward_temp(B, d, w, eager);
    const uint64_t mlp_ft = B.tp(B.mul({d.T, d.i, w.lin}));
    const uint64_t mlp_bt = 2 * mlp_ft;
    l.forward_temp_bytes = std::max(mlp_ft, attn_ft > after_attn ? attn_ft - after_attn : 0);
    l.backward_temp_bytes = std::max(mlp_bt, attn_bt > mlp_saved ? attn_bt - mlp_saved : 0) +
                            B.rep(B.mul({d.T, d.h, w.res}));
    // The same transients as tensors for the allocation trace: the scores (eager: two
    // b a s^2 tensors) until the softmax output (index pre_attn_i + 2) exists, the SDPA kernel
    // output, one MLP intermediate; in the backward the MLP's two intermediate gradients while
    // its saved tensors are freed, then the attention's.
    const uint64_t attn_piece = eager ? attn_ft / 2 : attn_ft;
    Builder::temps(&l.forward_temps, pre_attn_i + (eager ? 2 : 3), eager ? 2 : 1, attn_piece);
    Builder::temps(&l.forward_temps, pre_mlp_i + 1, 1, mlp_ft);
    Builder::temps(&l.backward_temps, pre_mlp_i, 2, mlp_ft);
    Builder::temps(&l.backward_temps, pre_attn_i, eager ? 2 : 1, eager ? attn_bt / 2 : attn_bt);
    l.forward_flops = 2.0 * d.T * block_matmul_params / s.tensor_parallel +
                      4.0 * d.b * d.s * d.s * d.q / s.tensor_parallel;  // QK^T and PV
    if (out.recipe == "llama" && ar.num_experts == 0 && ar.shared_experts == 0)
      llama_op_outputs(B, d, w, eager, (ar.kv_heads ? ar.kv_heads : d.a) * d.d, &l);
    out.layers.push_back(l);
  }

  // ---------------- head
  LayerActivations head;
  head.name = "head";
  const uint64_t Vt = d.V / s.tensor_parallel;  // Megatron vocab-parallel logits
  if (out.recipe == "bert" && ar.num_labels > 0) {
    if (w.amp) B.add(&head, "pooler input (16-bit copy)", B.mul({d.b, d.h, 2}), "autocast copy");
    B.add(&head, "pooler tanh output", B.mul({d.b, d.h, w.lin}), "TanhBackward0 keeps its result");
    if (d.p_hid)
      B.add(&head, "classifier dropout mask", B.mask(B.mul({d.b, d.h}), w.lin), "dropout");
    B.add(&head, "classifier input", B.mul({d.b, d.h, w.lin}), "AddmmBackward0 keeps mat1");
    if (s.runtime.softmax_saves_input)
      B.add(&head, "log_softmax input (logits)", B.mul({d.b, ar.num_labels, w.lin}),
            "LogSoftmaxBackward keeps its input too (torch <= 1.10)");
    B.add(&head, "log_softmax output (fp32)", B.mul({d.b, ar.num_labels, 4}),
          "LogSoftmaxBackward0");
    B.add(&head, "labels (int64)", B.mul({d.b, 8}), "NllLossBackward0 keeps its target");
    head.forward_flops = 2.0 * d.b * d.h * (d.h + ar.num_labels);
  } else {
    if (out.recipe == "llama") {
      rms_norm(B, d, w, s, w.res == 4, 1, "final norm", &head);
    } else {
      layer_norm_stats(B, d, w, "final LayerNorm", &head);
      B.add(&head, "lm_head input (final LayerNorm output)", B.rep(B.mul({d.T, d.h, w.lin})),
            "MmBackward0 keeps its input");
    }
    // Liger's fused function reads the hidden states without autograd: no matmul keeps them
    if (s.loss == Settings::Loss::liger_fused) B.drop_last(&head);
    lm_loss(B, d, w, s, Vt, &head);
    head.forward_flops = 2.0 * d.T * d.h * Vt;
  }
  B.output(&head, "loss (scalar)", 4, "the loss tensor");
  out.layers.push_back(head);

  out.total_saved_bytes = out.input_bytes;
  for (auto& l : out.layers) {
    if (l.forward_flops <= 0) l.forward_flops = 1;
    out.total_saved_bytes = checked_add(out.total_saved_bytes, l.saved_bytes, field);
  }
  out.korthikanti_layer_bytes = static_cast<uint64_t>(
      korthikanti_layer_bytes(d.s, d.b, d.h, d.a, s.tensor_parallel, s.sequence_parallel, false));
  out.assumptions.push_back(std::string("recipe '") + out.recipe +
                            "' (HF transformers eager modules for model_type '" + ar.model_type +
                            "')");
  if (ar.num_experts > 0)
    out.assumptions.push_back(
        "mixture of experts: each token's expert MLP counted experts_per_token "
        "times (not calibrated)");
  family_assumptions(ar, &out.assumptions);
  return out;
}

uint64_t mlp_params(const MlpSpec& mlp) {
  uint64_t p = 0;
  for (size_t i = 0; i + 1 < mlp.sizes.size(); ++i)
    p = checked_add(p,
                    checked_mul(mlp.sizes[i], mlp.sizes[i + 1], "model.mlp") +
                        (mlp.bias ? mlp.sizes[i + 1] : 0),
                    "model.mlp");
  return p;
}

ModelActivations mlp_activations(const MlpSpec& mlp, const Settings& s) {
  if (s.micro_batch == 0) fail(code::kOutOfRange, "microBatch", "microBatch must be >= 1");
  Builder B(s, "microBatch");
  const Widths w = widths(s);
  ModelActivations out;
  out.recipe = "mlp";
  out.input_bytes = B.mul({s.micro_batch, mlp.sizes.at(0), w.lin});
  for (size_t i = 0; i + 1 < mlp.sizes.size(); ++i) {
    LayerActivations l;
    l.name = "layer " + std::to_string(i);
    const uint64_t out_bytes = B.mul({s.micro_batch, mlp.sizes[i + 1], w.lin});
    if (mlp.activation == "gelu")
      B.add(&l, "GELU input (linear output)", out_bytes, "GeluBackward0 keeps its input");
    // ReLU keeps its result, which is the output (one storage); a linear keeps its input,
    // i.e. the previous layer's output (counted there).
    B.output(&l, mlp.activation == "relu" ? "ReLU output" : "layer output", out_bytes,
             "ThresholdBackward0 keeps its result / next AddmmBackward0 keeps its input");
    l.forward_temp_bytes =
        mlp.activation == "none" ? 0 : out_bytes;  // linear output before the activation
    // input gradient and the pre-activation gradient coexist
    l.backward_temp_bytes = B.mul({s.micro_batch, mlp.sizes[i], w.lin}) + out_bytes;
    l.forward_flops = 2.0 * s.micro_batch * mlp.sizes[i] * mlp.sizes[i + 1];
    l.params = mlp.sizes[i] * mlp.sizes[i + 1] + (mlp.bias ? mlp.sizes[i + 1] : 0);
    out.layers.push_back(l);
  }
  out.total_saved_bytes = out.input_bytes;
  for (auto& l : out.layers) out.total_saved_bytes += l.saved_bytes;
  return out;
}

placement::Chain to_chain(const ModelActivations& acts) {
  placement::Chain c;
  c.input_bytes = acts.input_bytes;
  for (const auto& l : acts.layers) {
    placement::Layer pl;
    pl.name = l.name;
    pl.forward_cost = l.forward_flops;
    pl.backward_cost = 2 * l.forward_flops;  // Kaplan et al. 2020: backward = 2 x forward
    pl.output_bytes = l.output_bytes;
    pl.saved_bytes = l.saved_bytes;
    pl.forward_temp_bytes = l.forward_temp_bytes;
    pl.backward_temp_bytes = l.backward_temp_bytes;
    c.layers.push_back(pl);
  }
  return c;
}

placement::Chain build_chain(const ModelDescription& model, const Settings& s) {
  return to_chain(transformer_activations(model, s));
}

nlohmann::json to_json(const ModelActivations& a) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : a.layers) {
    nlohmann::json saved = nlohmann::json::array();
    for (const auto& t : l.saved) {
      nlohmann::json e = nlohmann::json::object();
      put(e, "name", t.name);
      put(e, "bytes", t.bytes);
      put(e, "source", t.source);
      saved.push_back(std::move(e));
    }
    nlohmann::json layer = nlohmann::json::object();
    put(layer, "name", l.name);
    put(layer, "savedBytes", l.saved_bytes);
    put(layer, "outputBytes", l.output_bytes);
    put(layer, "forwardTempBytes", l.forward_temp_bytes);
    put(layer, "backwardTempBytes", l.backward_temp_bytes);
    put(layer, "forwardFlops", l.forward_flops);
    put(layer, "saved", std::move(saved));
    layers.push_back(std::move(layer));
  }
  nlohmann::json j = nlohmann::json::object();
  put(j, "recipe", a.recipe);
  put(j, "inputBytes", a.input_bytes);
  put(j, "totalSavedBytes", a.total_saved_bytes);
  put(j, "korthikantiLayerBytes", a.korthikanti_layer_bytes);
  put(j, "layers", std::move(layers));
  put(j, "assumptions", a.assumptions);
  return j;
}

}  // namespace activations
}  // namespace trainmem
