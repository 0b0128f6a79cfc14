// Saved-for-backward bytes of transformer blocks, derived op by op from HF transformers' eager
// modules (modeling_gpt2.py, modeling_bert.py, modeling_llama.py) and PyTorch's autograd
// formulas (tools/derivatives.yaml: which inputs/outputs each backward needs). Each entry names
// the op that keeps it. Measured counterpart: tools/measure_activations.py ->
// tests/fixtures/torch_activations.json (test_activations.cpp compares them).
#include "trainmem/activations.hpp"

#include <algorithm>
#include <cmath>

#include "activations/diffusion_recipe.hpp"
#include "activations/llm_families.hpp"
#include "activations/lora_recipes.hpp"
#include "net/net_model.hpp"
#include "trainmem/error.hpp"
#include "trainmem/traced_model.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace activations {

bool parse_precision(const std::string& s, Precision* out) {
  const vocab::PrecisionTerm* t = vocab::find(vocab::kPrecisions, s);
  if (t) *out = t->value;
  return t != nullptr;
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = vocab::names(vocab::kPrecisions);
  return names;
}

const char* precision_name(Precision p) { return vocab::name_for(vocab::kPrecisions, p); }

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
    // compiled: the random tensor may not be recomputed (partitioners.py get_default_op_list:
    // native_dropout, rand_like are random ops), the cheapest cut after it is the bool keep-mask
    const uint64_t w = s_.compiled                     ? 1
                       : s_.runtime.dropout_mask_bytes ? s_.runtime.dropout_mask_bytes
                                                       : masked_width;
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
  // keys and values: their length and tokens (= s and T except in T5's cross-attention, whose
  // keys are the encoder's tokens)
  uint64_t sk, Tk;
};

// Eager attention core shared by the recipes: QK^T, softmax, dropout, PV.
// `probs_cast`: the probabilities are cast before PV (GPT-2 `.type(value.dtype)` under
// autocast, Llama `.to(query.dtype)` after an fp32 softmax).
void eager_core(const Builder& B, const Dims& d, const Widths& w, uint64_t sm_width,
                bool cast_before_dropout, LayerActivations* l) {
  const uint64_t bas2 = B.mul({d.b, d.a, d.s, d.sk});
  const char* qk_source = "torch.matmul -> bmm saves both operands (BmmBackward0)";
  if (d.Tk == d.T) {
    B.add(l, "q, k^T (bmm operands, reshape copies)", B.tp(B.mul({2, d.T, d.q, w.lin})), qk_source,
          2);
  } else {
    B.add(l, "q (bmm operand, reshape copy)", B.tp(B.mul({d.T, d.q, w.lin})), qk_source);
    B.add(l, "k^T (bmm operand, reshape copy)", B.tp(B.mul({d.Tk, d.q, w.lin})), qk_source);
  }
  const size_t core_first = l->tensors.size();
  if (B.settings().runtime.softmax_saves_input)
    B.add(l, "softmax input (scores + mask)", B.tp(bas2 * sm_width),
          "SoftmaxBackward keeps its input too (torch <= 1.10)");
  B.add(l, "softmax output", B.tp(bas2 * sm_width), "SoftmaxBackward0 keeps its result");
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
  // Megatron's selective recompute drops the s^2 tensors (softmax, dropout, probabilities):
  // 5as^2b of Korthikanti et al. 2022 (section 5) in 16-bit training; q, k and v stay, the
  // checkpointed core's inputs
  l->mark_core(core_first);
  B.add(l, "v (bmm operand, reshape copy)", B.tp(B.mul({d.Tk, d.q, w.lin})),
        "BmmBackward0 keeps its operand");
}

void sdpa_core(const Builder& B, const Dims& d, const Widths& w, LayerActivations* l) {
  const char* qkv_source = "flash / memory-efficient SDPA backward reads q, k, v";
  if (d.Tk == d.T) {
    B.add(l, "q, k, v (kept by scaled_dot_product_attention)", B.tp(B.mul({3, d.T, d.q, w.lin})),
          qkv_source, 3);
  } else {
    B.add(l, "q (kept by scaled_dot_product_attention)", B.tp(B.mul({d.T, d.q, w.lin})),
          qkv_source);
    B.add(l, "k, v (kept by scaled_dot_product_attention)", B.tp(B.mul({2, d.Tk, d.q, w.lin})),
          qkv_source, 2);
  }
  B.add(l, "SDPA output", B.tp(B.mul({d.T, d.q, w.lin})), "flash SDPA backward reads out");
  B.add(l, "SDPA logsumexp (fp32)", B.tp(B.mul({d.b, d.a, d.s, 4})),
        "flash SDPA backward reads softmax_lse");
}

uint64_t attn_forward_temp(const Builder& B, const Dims& d, const Widths& w, bool eager) {
  // eager: the score tensor and its scaled/masked successor coexist (2 x b a s^2);
  // sdpa: the kernel output only.
  if (eager) return B.tp(B.mul({2, d.b, d.a, d.s, d.sk, std::max(w.lin, w.sm)}));
  return B.tp(B.mul({d.T, d.q, w.lin}));
}

uint64_t attn_backward_temp(const Builder& B, const Dims& d, const Widths& w, bool eager) {
  // eager: grad of the probabilities and grad of the scores (softmax backward) coexist;
  // sdpa: dq, dk, dv (+ fp32 dq accumulator of flash-attention 2).
  if (eager) return B.tp(B.mul({2, d.b, d.a, d.s, d.sk, std::max(w.lin, w.sm)}));
  return B.tp(B.mul({d.T, d.q, w.lin + 4}) + B.mul({2, d.Tk, d.q, w.lin}));
}

// What an RMSNorm keeps of its input's fp32 copy beyond the input the chain already counts.
// none: the input is counted (fp32, or the caller counts it). beyond_input (HF LlamaRMSNorm:
// x = x.to(fp32), then pow and x * rsqrt read the copy only): a 16-bit input is not kept itself,
// but the chain counts it once as the previous layer's output, so the copy adds (4 - w.res) bytes
// per element. full (T5LayerNorm, modeling_t5.py: pow reads x.to(fp32), the product reads the
// original x): the 16-bit input and its whole fp32 copy are both kept.
enum class Fp32Copy { none, beyond_input, full };

// RMSNorm written with tensor ops (HF LlamaRMSNorm, T5LayerNorm): x.to(fp32); pow(2).mean;
// rsqrt; x * rsqrt; weight * x.to(input dtype). `consumers`: linears reading the output (each
// casts it separately under autocast). `output_saved`: false where a dropout, not a linear, reads
// the output (T5's final norms).
void rms_norm(const Builder& B, const Dims& d, const Widths& w, const Settings& s, Fp32Copy copy,
              int consumers, const std::string& what, LayerActivations* l,
              bool output_saved = true) {
  // compiled: the fp32 cast is recomputed from the 16-bit input (a cast, not a matmul)
  if (copy == Fp32Copy::beyond_input && !s.compiled)
    B.add(l, what + " input in fp32 (beyond the 16-bit input)", B.rep(B.mul({d.T, d.h, 4 - w.res})),
          "PowBackward0 / MulBackward0 keep x.to(float32)");
  if (copy == Fp32Copy::full && w.res != 4 && !s.compiled)
    B.add(l, what + " input in fp32", B.rep(B.mul({d.T, d.h, 4})),
          "PowBackward0 keeps x.to(float32); MulBackward0 keeps the 16-bit x");
  if (s.runtime.mean_saves_input)
    B.add(l, what + " x^2", B.rep(B.mul({d.T, d.h, 4})),
          "MeanBackward1 keeps its input (torch 1.13)");
  B.add(l, what + " rsqrt", B.rep(B.mul({d.T, 4})), "RsqrtBackward0 keeps its result");
  // compiled: one fused kernel; x * rsqrt is recomputed from x and the saved rsqrt
  if (!s.compiled)
    B.add(l, what + " normalized", B.rep(B.mul({d.T, d.h, w.res == 4 ? 4 : w.lin})),
          "weight * x.to(dtype): MulBackward0 keeps x");
  if (!output_saved) return;
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

bool python_gelu(const Architecture& a) {
  // HF ACT2FN["gelu_new"] is NewGELUActivation, a Python formula of 8 tensor ops.
  return a.activation == "gelu_new";
}

std::string family(const Architecture& a) {
  const std::string& t = a.model_type;
  if (t == "gpt2" || t == "gpt_neox" || t == "gptj" || t == "opt" || t == "gpt_bigcode")
    return "gpt2";
  if (t == "bert" || t == "roberta" || t == "distilbert" || t == "electra") return "bert";
  if ((t == "t5" || t == "mt5") && a.encoder_layers > 0) return "t5";
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
void family_assumptions(const Architecture& a, std::vector<Text>* out) {
  const std::string& t = a.model_type;
  if (a.mla) out->push_back(Text("act.mla", {}));
  if (a.shared_experts > 0) out->push_back(Text("act.moe.shared", {}));
  if (t == "gemma")  // llm_family() leaves Gemma here for the features only this recipe has
    out->push_back(Text("fam.assume.gemmaLlama", {}));
  if (t == "gemma2" || t == "gemma3_text") out->push_back(Text("act.gemma", {}));
  if (t == "qwen3" || t == "qwen3_moe") out->push_back(Text("act.qknorm", {}));
}

// Liger's fused linear cross-entropy (the head's saves and transients after the final norm).
void liger_fused_loss(const Builder& B, const Dims& d, const Widths& w, const Settings& s,
                      uint64_t Vt, LayerActivations* head) {
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
}

// The language-model loss over T tokens and Vt vocabulary columns (the head's saves and
// transients after the final norm). `upcast`: the loss reads logits.float() (HF
// ForCausalLMLoss); T5ForConditionalGeneration passes the logits as they are, so log_softmax
// keeps them in their own dtype (fp32 under autocast, whose op list runs log_softmax in fp32).
// The loss's backward in the allocation trace: nll_loss's and log_softmax's gradients (two
// logits-sized tensors) while the loss's saved tensors are read, then the logits' gradient
// alone while the output projection's backward reads its input (MmBackward0); the tensor
// before `logits_at` is that input.
void loss_backward_temps(size_t logits_at, uint64_t logits_bytes, LayerActivations* head,
                         uint32_t pieces = 2) {
  Builder::temps(&head->backward_temps, logits_at, pieces, logits_bytes);
  if (logits_at > 0) Builder::temps(&head->backward_temps, logits_at - 1, 1, logits_bytes);
}

void lm_loss(const Builder& B, const Dims& d, const Widths& w, const Settings& s, uint64_t Vt,
             LayerActivations* head, bool upcast = true) {
  using Loss = Settings::Loss;
  if (s.loss == Loss::liger_fused) return liger_fused_loss(B, d, w, s, Vt, head);
  const uint64_t n = s.loss == Loss::chunked ? std::max<uint64_t>(1, s.loss_chunks) : 1;
  const size_t logits_at = head->tensors.size();
  const bool keeps_logits = s.runtime.softmax_saves_input;
  if (keeps_logits)
    B.add(head, "log_softmax input (logits in fp32)", B.mul({d.T, Vt, 4}),
          "LogSoftmaxBackward keeps its input too (torch <= 1.10)", n);
  // torchtune compiles the chunked loss's per-chunk cross-entropy (compile_loss); its
  // full-logits row keeps fp32 logits (the published "+ Chunked CE" drop, 51.0 -> 42.9 GiB)
  const bool compiled_loss = s.compiled && s.loss == Loss::chunked && w.lin != 4;
  if (compiled_loss) {
    // torchtune compiles the per-chunk cross-entropy (compile_loss): the compiled function
    // keeps its 16-bit logits chunk and the row's logsumexp, and recomputes the upcast
    B.add(head, "logits chunks (16-bit; the compiled loss keeps its input)",
          B.mul({d.T, Vt, w.lin}), "compiled cross_entropy keeps its input and logsumexp", n);
    B.add(head, "logsumexp per token (fp32)", B.mul({d.T, 4}), "compiled cross_entropy");
  } else if (!upcast && s.loss == Loss::cross_entropy && !w.amp && w.lin != 4) {
    B.add(head, "log_softmax output (16-bit logits)", B.mul({d.T, Vt, w.lin}),
          "CrossEntropyLoss on the logits as they are -> LogSoftmaxBackward0 keeps its result");
  } else
    B.add(
        head, "log_softmax output (logits upcast to fp32)", B.mul({d.T, Vt, 4}),
        s.loss == Loss::chunked
            ? "torchtune CEWithChunkedOutputLoss: cross_entropy(chunk.float()) per output chunk "
              "-> LogSoftmaxBackward0 keeps each chunk's result"
            : "HF ForCausalLMLoss: logits.float(); cross_entropy -> LogSoftmaxBackward0 keeps its "
              "result",
        n);
  // the last chunk's log-probabilities: the chunked loss's transients peak while it is made
  const size_t last_chunk = head->tensors.empty() ? 0 : head->tensors.size() - 1;
  B.add(head, "labels (int64)", B.mul({d.T, 8}), "NllLossBackward0 keeps its target");
  const uint64_t logits16 = w.lin == 4 ? 0 : B.mul({d.T, Vt, w.lin});
  if (s.loss == Loss::chunked) {
    // the 16-bit logits of every chunk live until the loss is summed (the recipe then deletes
    // them); each chunk's fp32 copy only while its log_softmax runs. Compiled, the logits
    // chunks are what the loss keeps (counted above) and the upcast happens inside the fused
    // kernel: no transient beyond them.
    const bool fused = compiled_loss;
    const uint64_t copy = keeps_logits || fused ? 0 : B.mul({d.T, Vt, 4}) / n;
    const uint64_t logits16_temp = fused ? 0 : logits16;
    head->forward_temp_bytes = logits16_temp + copy;
    if (logits16_temp) Builder::temps(&head->forward_temps, last_chunk, 1, logits16_temp);
    if (copy) Builder::temps(&head->forward_temps, last_chunk, 1, copy);
    if (fused) {
      // the compiled loss's backward is one inductor kernel from the saved 16-bit chunk and
      // its logsumexp to the chunk's 16-bit gradient (the fp32 values stay in registers): one
      // chunk-sized 16-bit tensor at a time (an assumption: not measured on a GPU)
      head->backward_temp_bytes = B.mul({d.T, Vt, w.lin}) / n;
      loss_backward_temps(logits_at, B.mul({d.T, Vt, w.lin}) / n, head, 1);
      return;
    }
    head->backward_temp_bytes = 2 * (B.mul({d.T, Vt, 4}) / n);
    loss_backward_temps(logits_at, B.mul({d.T, Vt, 4}) / n, head);
    return;
  }
  if (!upcast && !w.amp && w.lin != 4) {
    // 16-bit logits, no fp32 copy: the logits while log_softmax runs, then two 16-bit gradients
    head->forward_temp_bytes = logits16;
    head->backward_temp_bytes = 2 * logits16;
    Builder::temps(&head->forward_temps, logits_at, 1, logits16);
    loss_backward_temps(logits_at, logits16, head);
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
  loss_backward_temps(logits_at, B.mul({d.T, Vt, 4}), head);
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

// What every recipe below reads: the builder, the shapes, the widths, the settings.
struct Ctx {
  const Builder& B;
  const Dims& d;
  const Widths& w;
  const Settings& s;
  const Architecture& ar;
  bool eager;
};

// Where a block's attention core and its MLP start: saved bytes and tensor index at that moment
// (the transients are placed and sized from them).
struct Marks {
  uint64_t attn = 0, mlp = 0;
  size_t attn_i = 0, mlp_i = 0;
};

void mark_mlp(const LayerActivations& l, Marks* mk) {
  mk->mlp = l.saved_bytes;
  mk->mlp_i = l.tensors.size();
}

// The attention core, eager or SDPA, with its start marked.
void attention_core(const Ctx& c, const Dims& d, uint64_t sm_width, bool cast_before_dropout,
                    Marks* mk, LayerActivations* l) {
  mk->attn = l->saved_bytes;
  mk->attn_i = l->tensors.size();
  if (c.eager)
    eager_core(c.B, d, c.w, sm_width, cast_before_dropout, l);
  else
    sdpa_core(c.B, d, c.w, l);
}

// nn.Dropout on an h-wide residual branch: its mask, when the model has hidden dropout.
void hidden_dropout(const Ctx& c, const Dims& d, const char* name, LayerActivations* l) {
  if (d.p_hid) c.B.add(l, name, c.B.rep(c.B.mask(c.B.mul({d.T, d.h}), c.w.lin)), "dropout");
}

// A LayerNorm over the residual sum: NativeLayerNormBackward0 keeps its input and statistics.
void layer_norm_input(const Ctx& c, const char* input_name, const char* what, LayerActivations* l) {
  c.B.add(l, input_name, c.B.rep(c.B.mul({c.d.T, c.d.h, c.w.res})),
          "NativeLayerNormBackward0 keeps its input");
  layer_norm_stats(c.B, c.d, c.w, what, l);
}

// The names of what follows a GPT-2 / BERT attention core.
struct AttentionOutputNames {
  const char* proj_input;
  const char* dropout;
  const char* ln_input;
  const char* ln;
};

// The output projection's input (heads merged), its dropout, the LayerNorm over the residual sum.
void attention_output(const Ctx& c, const AttentionOutputNames& n, LayerActivations* l) {
  c.B.add(l, n.proj_input, c.B.tp(c.B.mul({c.d.T, c.d.h, c.w.lin})), "AddmmBackward0 keeps mat1");
  hidden_dropout(c, c.d, n.dropout, l);
  layer_norm_input(c, n.ln_input, n.ln, l);
}

// HF NewGELUActivation ("gelu_new") over d.i per token.
void gelu_new_saves(const Ctx& c, const Dims& d, LayerActivations* l) {
  if (c.s.compiled) {
    // compiled: pow, tanh, mul are recomputable pointwise ops; x is a matmul output (mm may not
    // be recomputed), so x alone is kept
    c.B.add(l, "gelu_new input (the formula recomputed)", c.B.tp(c.B.mul({d.T, d.i, c.w.lin})),
            "compiled: the linear's output, kept for the recomputed gelu_new");
    return;
  }
  // 0.5*x*(1+tanh(c*(x+0.044715*x^3))): pow keeps x, tanh its result, the final mul both
  // factors (0.5x and 1+tanh). Autocast runs pow in fp32: x fp32 copy, fp32 tanh and sum.
  const uint64_t per = c.w.amp ? 4 + 4 + 4 + 2 : 4 * c.w.lin;
  c.B.add(l, "gelu_new: x, tanh(.), 0.5x, 1+tanh(.)", c.B.tp(c.B.mul({d.T, d.i, per})),
          "NewGELUActivation as Python ops (PowBackward0, TanhBackward0, MulBackward0)", 4);
}

// The names of a GELU MLP's saved tensors (GPT-2 mlp, BERT intermediate + output).
struct GeluMlpNames {
  const char* fc_input;
  const char* fc_source;
  const char* act_input;
  const char* proj_input;
  const char* dropout;
};

// LayerNorm output -> linear -> GELU -> linear -> dropout.
void gelu_mlp(const Ctx& c, const GeluMlpNames& n, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  mark_mlp(*l, mk);
  B.add(l, n.fc_input, B.rep(B.mul({d.T, d.h, c.w.lin})), n.fc_source);
  if (python_gelu(c.ar))
    gelu_new_saves(c, d, l);
  else
    B.add(l, n.act_input, B.tp(B.mul({d.T, d.i, c.w.lin})), "GeluBackward0 keeps its input");
  B.add(l, n.proj_input, B.tp(B.mul({d.T, d.i, c.w.lin})), "AddmmBackward0 keeps mat1");
  hidden_dropout(c, d, n.dropout, l);
}

// GPT-2 block (modeling_gpt2.py GPT2Block): ln_1, fused c_attn, attention, c_proj, ln_2, MLP.
void gpt2_block(const Ctx& c, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  layer_norm_stats(B, d, w, "ln_1", l);
  B.add(l, "c_attn input (ln_1 output)", B.rep(B.mul({d.T, d.h, w.lin})),
        "AddmmBackward0 keeps mat1 (autocast: the 16-bit copy)");
  attention_core(c, d, w.sm, true, mk, l);
  attention_output(c,
                   {"attention c_proj input (heads merged)", "attention residual dropout mask",
                    "ln_2 input (residual sum)", "ln_2"},
                   l);
  gelu_mlp(c,
           {"c_fc input (ln_2 output)", "AddmmBackward0 keeps mat1", "activation input",
            "mlp c_proj input (activation output)", "mlp dropout mask"},
           mk, l);
  B.output(l, "block output (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
           "read by the next block's ln_1 (NativeLayerNormBackward0)");
}

// BERT layer (modeling_bert.py BertLayer): separate q, k, v linears, post-LayerNorm.
void bert_block(const Ctx& c, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  if (w.amp)
    B.add(l, "q, k, v linear inputs (16-bit copies)", B.rep(B.mul({3, d.T, d.h, 2})),
          "autocast casts the fp32 input per linear; AddmmBackward0 keeps it", 3);
  attention_core(c, d, w.sm, false, mk, l);
  attention_output(c,
                   {"attention output dense input (context)", "attention output dropout mask",
                    "LayerNorm input (residual sum)", "attention LayerNorm"},
                   l);
  gelu_mlp(c,
           {"intermediate dense input (LayerNorm output)",
            "AddmmBackward0 keeps mat1 (autocast: the 16-bit copy)", "GELU input",
            "output dense input (GELU output)", "output dropout mask"},
           mk, l);
  layer_norm_input(c, "LayerNorm input (residual sum)", "output LayerNorm", l);
  B.output(l, "layer output (LayerNorm output)", B.rep(B.mul({d.T, d.h, w.res})),
           "read by the next layer's q, k, v linears");
}

// Llama-style MLP (LlamaMLP): SwiGLU; for mixture-of-experts blocks (MixtralSparseMoeBlock,
// DeepSeek's shared experts) the router's fp32 logits and weights, and the expert MLP once per
// routed or shared expert of each token.
void swiglu_mlp(const Ctx& c, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const uint64_t k = std::max<uint64_t>(1, c.ar.experts_per_token + c.ar.shared_experts);
  if (c.ar.num_experts > 0)
    B.add(l, "router logits and routing weights (fp32)", B.mul({d.T, c.ar.num_experts, 4 + 4}),
          "softmax over experts in fp32 (HF MixtralSparseMoeBlock)");
  if (c.ar.num_experts > 0 && (c.s.expert_parallel > 1 || c.s.expert_tensor_parallel > 1)) {
    // expert parallelism: the rank's routed experts run expert_tokens x T x top-k token copies,
    // each expert's intermediate split over expertTensorParallel; the shared experts run the
    // rank's own tokens, split over tensorParallel (Megatron-Core MoELayer, shared_experts.py)
    const uint64_t routed = std::max<uint64_t>(1, c.ar.experts_per_token);
    const uint64_t per_copy = B.mul({4, d.T, routed, d.i, c.w.lin});
    const uint64_t expert_bytes =
        static_cast<uint64_t>(std::ceil(static_cast<double>(per_copy) * c.s.expert_tokens)) /
        c.s.expert_tensor_parallel;
    B.add(l, "expert MLPs (SwiGLU: gate, SiLU(gate), up, product) on the tokens routed here",
          expert_bytes, "SiluBackward0 keeps its input; MulBackward0 both factors", 4);
    if (c.ar.shared_experts > 0)
      B.add(l, "shared experts (SwiGLU: gate, SiLU(gate), up, product)",
            B.tp(B.mul({4, d.T, c.ar.shared_experts, d.i, c.w.lin})),
            "SiluBackward0 keeps its input; MulBackward0 both factors", 4);
    return;
  }
  B.add(l, "SwiGLU: gate, SiLU(gate), up, product", B.tp(B.mul({4, d.T, k, d.i, c.w.lin})),
        "SiluBackward0 keeps its input; MulBackward0 both factors; MmBackward0 the product", 4);
}

// Llama-style decoder layer (LlamaDecoderLayer and the families that share it).
void llama_block(const Ctx& c, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  const Settings& s = c.s;
  rms_norm(B, d, w, s, Fp32Copy::beyond_input, 3, "input_layernorm", l);
  attention_core(c, d, 4, false, mk, l);  // softmax(dtype=float32) then .to(query dtype)
  // compiled: the o_proj input is a transposed copy of the SDPA output (recomputed), and
  // the residual sum is kept in its own dtype instead of its fp32 cast
  if (!s.compiled)
    B.add(l, "o_proj input", B.tp(B.mul({d.T, d.q, w.lin})), "MmBackward0 keeps its input");
  B.add(l,
        s.compiled ? "post_attention_layernorm input (residual sum)"
                   : "post_attention_layernorm input (residual sum, fp32)",
        B.rep(B.mul({d.T, d.h, s.compiled ? w.res : 4})),
        s.compiled ? "compiled RMSNorm recomputes the fp32 cast from the residual"
                   : "PowBackward0 / MulBackward0 keep x.to(float32)");
  rms_norm(B, d, w, s, Fp32Copy::none, 2, "post_attention_layernorm", l);
  mark_mlp(*l, mk);
  swiglu_mlp(c, l);
  B.output(l, "block output (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
           "read by the next block's input_layernorm");
}

// T5: huggingface/transformers src/transformers/models/t5/modeling_t5.py at
// 6b8b757dfcb582379a64f013cdce46c43629f2b0. T5Attention: no scaling of the scores, the relative
// position bias added in place (AddBackward keeps nothing), softmax(scores.float()).type_as(
// scores), dropout on the probabilities: the eager core with an fp32 softmax cast before dropout.
// After the attention: o's input, the sub-layer's dropout, the residual sum (kept by the next
// T5LayerNorm's product).
void t5_attention(const Ctx& c, const Dims& d, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  attention_core(c, d, 4, true, mk, l);
  B.add(l, "o input (heads merged)", B.tp(B.mul({d.T, d.q, c.w.lin})),
        "MmBackward0 keeps its input");
  hidden_dropout(c, d, "attention output dropout mask", l);
  B.add(l, "residual sum", B.rep(B.mul({d.T, d.h, c.w.res})),
        "the next T5LayerNorm: MulBackward0 keeps x");
}

// T5LayerFF: T5LayerNorm, DenseReluDense (wi, relu, dropout, wo) or T5DenseGatedActDense
// (act(wi_0) * wi_1, dropout, wo; t5 v1.1 and mT5 "gated-gelu" use gelu_new), dropout, residual.
void t5_ff(const Ctx& c, const Dims& d, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Widths& w = c.w;
  const bool gated = c.ar.gated_mlp;
  rms_norm(B, d, w, c.s, Fp32Copy::full, gated ? 2 : 1, "feed-forward layer_norm", l);
  mark_mlp(*l, mk);
  const uint64_t inner = B.tp(B.mul({d.T, d.i, w.lin}));
  const bool relu = c.ar.activation == "relu";
  if (relu)
    B.add(l, "ReLU output", inner, "ThresholdBackward0 keeps its result");
  else if (python_gelu(c.ar))
    gelu_new_saves(c, d, l);
  else
    B.add(l, "activation input", inner, "the activation's backward keeps its input");
  if (gated) {
    // compiled: act(wi_0 output) is recomputed from the kept wi_0 output
    if (!relu && !c.s.compiled)
      B.add(l, "activation output (wi_0 branch)", inner, "MulBackward0 keeps it");
    B.add(l, "wi_1 output", inner, "MulBackward0 keeps it");
  }
  if (d.p_hid) {
    B.add(l, "inner dropout mask", B.tp(B.mask(B.mul({d.T, d.i}), w.lin)), "dropout");
    B.add(l, "wo input (dropout output)", inner, "MmBackward0 keeps its input");
  } else if (gated || !relu) {
    B.add(l, "wo input", inner, "MmBackward0 keeps its input");
  }
  hidden_dropout(c, d, "feed-forward dropout mask", l);
  B.output(l, "block output (residual sum)", B.rep(B.mul({d.T, d.h, w.res})),
           "the next block's T5LayerNorm: MulBackward0 keeps x");
}

// T5Block of the encoder (self-attention, feed-forward) or of the decoder (self-attention,
// cross-attention over the encoder output, feed-forward). `cross`: the decoder's dims with the
// encoder's tokens as keys.
void t5_block(const Ctx& c, const Dims* cross, Marks* mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  rms_norm(B, d, c.w, c.s, Fp32Copy::full, 3, "self-attention layer_norm", l);
  t5_attention(c, d, mk, l);
  if (cross) {
    const Marks self_marks = *mk;
    rms_norm(B, d, c.w, c.s, Fp32Copy::full, 1, "cross-attention layer_norm", l);
    // k and v read the encoder output (counted once, where the encoder ends); under autocast
    // each of them keeps its own 16-bit copy, in every decoder layer
    if (c.w.amp)
      B.add(l, "encoder output cast to 16-bit for k, v", B.rep(B.mul({2, cross->Tk, d.h, 2})),
            "autocast casts the fp32 input per linear; MmBackward0 keeps it", 2);
    t5_attention(c, *cross, mk, l);
    *mk = self_marks;  // the transients are sized from the self-attention (its own length)
  }
  t5_ff(c, d, mk, l);
}

// Where T5's encoder ends and its decoder starts (T5Stack.forward, T5ForConditionalGeneration):
// the encoder's final_layer_norm and dropout, the encoder output every decoder layer's
// cross-attention reads, the decoder ids (labels shifted right), the decoder's relative
// position buckets and embedding dropout. Kept in the last encoder block, whose output is then
// both the encoder output and the decoder's embedded input.
void t5_encoder_end(const Ctx& c, const Dims& dec, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  rms_norm(B, d, w, c.s, Fp32Copy::full, 1, "encoder final_layer_norm", l, false);
  if (d.p_hid)
    B.add(l, "encoder final dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.res)), "dropout");
  const uint64_t enc_out = B.rep(B.mul({d.T, d.h, w.res}));
  B.add(l, "encoder output (read by every decoder layer's k and v)", enc_out,
        "MmBackward0 of each cross-attention k, v keeps it (one storage)");
  B.add(l, "decoder input ids (int64, labels shifted right)", B.mul({dec.T, 8}),
        "EmbeddingBackward0 keeps its indices");
  B.add(l, "decoder relative position buckets (int64, shared by its layers)",
        B.mul({dec.s, dec.s, 8}),
        "EmbeddingBackward0 of relative_attention_bias keeps its indices");
  if (dec.p_hid)
    B.add(l, "decoder embedding dropout mask", B.rep(B.mask(B.mul({dec.T, dec.h}), w.res)),
          "dropout");
  B.output(l, "decoder embedding output", B.rep(B.mul({dec.T, dec.h, w.res})),
           "read by the first decoder layer");
  l->output_bytes += enc_out;  // the encoder output lives on beside it
}

// T5's head: the decoder's final_layer_norm and dropout, the tied head's d_model^-0.5 rescale,
// lm_head, CrossEntropyLoss on the logits as they are (no upcast).
void t5_head(const Ctx& c, const Dims& dec, uint64_t Vt, LayerActivations* head) {
  const Builder& B = c.B;
  const Widths& w = c.w;
  const bool tied = c.ar.tied_embeddings;
  rms_norm(B, dec, w, c.s, Fp32Copy::full, 1, "decoder final_layer_norm", head,
           !dec.p_hid && !tied);
  if (dec.p_hid)
    B.add(head, "decoder final dropout mask", B.rep(B.mask(B.mul({dec.T, dec.h}), w.res)),
          "dropout");
  if (dec.p_hid || tied)
    B.add(head, tied ? "lm_head input (rescaled by d_model^-0.5)" : "lm_head input",
          B.rep(B.mul({dec.T, dec.h, w.lin})), "MmBackward0 keeps its input");
  lm_loss(B, dec, w, c.s, Vt, head, false);
}

// Context parallelism (ring attention, torch/distributed/tensor/experimental/_attention.py at
// pytorch/pytorch@f2127dbd): per block, with T the rank's tokens and KV = its K and V in one
// buffer (torch.cat([key.flatten(), value.flatten()]), 2 T q bytes of the matmul dtype).
// Forward (_templated_ring_attention), while the SDPA output is made: the cat buffer, the
// exchanged K/V (_AllGatherRotater: all cp ranks' buffers at once; _AllToAllRotater: the one
// received), and _SDPAMerger's fp32 state: the running output and logsumexp, the step's output
// converted to fp32 and one intermediate of the merge (3 x T q x 4 B, 2 x b a s x 4 B).
// Backward (_templated_ring_attention_backward), while the attention's backward runs: fp32
// accumulators for dq, dk, dv (zeros_like(..., dtype=float32)), the K/V cat buffer and its
// exchange again, and the dK/dV rotation (always all-to-all): the fp32 cat of grad_key and
// grad_value and the one received (2 x 2 T q x 4 B).
void context_parallel_temps(const Ctx& c, const Marks& mk, LayerActivations* l) {
  const Settings& s = c.s;
  if (s.context_parallel <= 1 || c.eager) return;
  const Builder& B = c.B;
  const Dims& d = c.d;
  const uint64_t kv = B.tp(B.mul({2, d.Tk, d.q, c.w.lin}));
  const uint64_t exchanged = s.cp_all_gather ? B.mul({s.context_parallel, kv}) : kv;
  const uint64_t out32 = B.tp(B.mul({d.T, d.q, 4}));
  const uint64_t lse32 = B.tp(B.mul({d.b, d.a, d.s, 4}));
  const size_t sdpa_out = mk.attn_i + 3;  // q, k, v, then the output (sdpa_core)
  Builder::temps(&l->forward_temps, sdpa_out, 1, kv);
  Builder::temps(&l->forward_temps, sdpa_out, 1, exchanged);
  Builder::temps(&l->forward_temps, sdpa_out, 3, out32);
  Builder::temps(&l->forward_temps, sdpa_out, 2, lse32);
  const uint64_t kv32 = B.tp(B.mul({2, d.Tk, d.q, 4}));
  Builder::temps(&l->backward_temps, mk.attn_i, 3, out32);
  Builder::temps(&l->backward_temps, mk.attn_i, 1, kv);
  Builder::temps(&l->backward_temps, mk.attn_i, 1, exchanged);
  Builder::temps(&l->backward_temps, mk.attn_i, 2, kv32);
  l->forward_temp_bytes += kv + exchanged + 3 * out32 + 2 * lse32;
  l->backward_temp_bytes += 3 * out32 + kv + exchanged + 2 * kv32;
}

// Expert parallelism: the token dispatcher's all-to-all buffers around the MoE MLP (Megatron-
// Core MoEAlltoAllTokenDispatcher, megatron/core/transformer/moe/token_dispatcher.py): the
// permuted tokens sent (T k rows of h) and those received (T k x expert_tokens rows) at the
// dispatch, the experts' outputs sent back and received at the combine; the two buffers of one
// exchange coexist. The same pair again in the backward (the all-to-all's gradient).
void expert_parallel_temps(const Ctx& c, const Marks& mk, LayerActivations* l) {
  const Settings& s = c.s;
  if (s.expert_parallel <= 1 || c.ar.num_experts == 0) return;
  const Builder& B = c.B;
  const uint64_t sent =
      B.mul({c.d.T, std::max<uint64_t>(1, c.ar.experts_per_token), c.d.h, c.w.lin});
  const uint64_t received =
      static_cast<uint64_t>(std::ceil(static_cast<double>(sent) * s.expert_tokens));
  Builder::temps(&l->forward_temps, mk.mlp_i + 1, 1, sent);
  Builder::temps(&l->forward_temps, mk.mlp_i + 1, 1, received);
  Builder::temps(&l->backward_temps, mk.mlp_i, 1, sent);
  Builder::temps(&l->backward_temps, mk.mlp_i, 1, received);
  l->forward_temp_bytes += sent + received;
  l->backward_temp_bytes += sent + received;
}

// Transients, as the excess over what the layer has saved at that moment (the simulator adds
// them on top of the whole layer's saved bytes): in the forward, the attention scores exist
// before anything from the attention on is saved, the MLP holds one intermediate; in the
// backward (MLP first) the MLP's gradients coexist with all saved tensors, the attention's once
// the MLP's saved tensors are freed; plus the input gradient d[i].
void block_transients(const Ctx& c, const Marks& mk, LayerActivations* l) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  const bool eager = c.eager;
  const uint64_t after_attn = l->saved_bytes - mk.attn, mlp_saved = l->saved_bytes - mk.mlp;
  const uint64_t attn_ft = attn_forward_temp(B, d, w, eager),
                 attn_bt = attn_backward_temp(B, d, w, eager);
  const uint64_t mlp_ft = B.tp(B.mul({d.T, d.i, w.lin}));
  const uint64_t mlp_bt = 2 * mlp_ft;
  l->forward_temp_bytes = std::max(mlp_ft, attn_ft > after_attn ? attn_ft - after_attn : 0);
  l->backward_temp_bytes = std::max(mlp_bt, attn_bt > mlp_saved ? attn_bt - mlp_saved : 0) +
                           B.rep(B.mul({d.T, d.h, w.res}));
  // float8 (torchao/float8/float8_linear.py @ 7ca1bfbe, matmul_with_hp_or_float8_args):
  // forward: hp_tensor_to_float8_dynamic casts input and weight to 1-byte float8 for the mm
  // (save_for_backward keeps input_hp and weight_hp_t); backward: grad_output (dim0), weight,
  // then grad_output again (dim1) and input, all four held until the grad_weight mm. The
  // largest block Linear is the MLP's gate/up (h -> i): forward T*h + h*i, backward
  // 2*T*i + h*i + T*h bytes (one SwiGLU projection's share, tensor-parallel split). Llama
  // blocks only (transformer_activations refuses the others).
  uint64_t f8_in = 0, f8_w = 0, f8_go = 0;
  if (c.s.float8) {
    f8_in = B.rep(B.mul({d.T, d.h}));
    f8_w = B.tp(B.mul({d.h, d.i}));
    f8_go = B.tp(B.mul({d.T, d.i}));
    l->forward_temp_bytes += f8_in + f8_w;
    l->backward_temp_bytes += 2 * f8_go + f8_w + f8_in;
  }
  // The same transients as tensors for the allocation trace: the scores (eager: two
  // b a s^2 tensors) until the softmax output (index attn_i + 2) exists, the SDPA kernel
  // output, one MLP intermediate; in the backward the MLP's two intermediate gradients while
  // its saved tensors are freed, then the attention's.
  const uint64_t attn_piece = eager ? attn_ft / 2 : attn_ft;
  Builder::temps(&l->forward_temps, mk.attn_i + (eager ? 2 : 3), eager ? 2 : 1, attn_piece);
  Builder::temps(&l->forward_temps, mk.mlp_i + 1, 1, mlp_ft);
  Builder::temps(&l->backward_temps, mk.mlp_i, 2, mlp_ft);
  Builder::temps(&l->backward_temps, mk.attn_i, eager ? 2 : 1, eager ? attn_bt / 2 : attn_bt);
  // float8 casts of the MLP's gate/up Linear while the MLP runs and while its backward runs
  Builder::temps(&l->forward_temps, mk.mlp_i + 1, 1, f8_in);
  Builder::temps(&l->forward_temps, mk.mlp_i + 1, 1, f8_w);
  Builder::temps(&l->backward_temps, mk.mlp_i, 2, f8_go);
  Builder::temps(&l->backward_temps, mk.mlp_i, 1, f8_w);
  Builder::temps(&l->backward_temps, mk.mlp_i, 1, f8_in);
  context_parallel_temps(c, mk, l);
  expert_parallel_temps(c, mk, l);
}

// Matmul parameters of one block (its forward FLOPs are 2 x tokens x these, plus QK^T and PV).
double block_matmul_params(const std::string& recipe, const Dims& d, const Architecture& ar) {
  if (recipe == "llama")
    return static_cast<double>(d.h) * (2.0 * d.h + 2.0 * (ar.kv_heads ? ar.kv_heads : d.a) * d.d) +
           3.0 * d.h * d.i * std::max<uint64_t>(1, ar.experts_per_token + ar.shared_experts);
  if (recipe == "t5")  // q, k, v, o of width heads x d_kv; wi (wi_0, wi_1) and wo
    return 4.0 * d.h * d.q + (ar.gated_mlp ? 3.0 : 2.0) * d.h * d.i;
  return 4.0 * d.h * d.h + 2.0 * d.h * d.i;
}

// The embeddings layer of each recipe.
LayerActivations embeddings(const Ctx& c, const std::string& recipe) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  LayerActivations emb;
  emb.name = "embeddings";
  if (recipe == "gpt2")
    B.add(&emb, "position ids (int64)", B.mul({d.s, 8}), "EmbeddingBackward0 keeps its indices");
  if (recipe == "bert") {
    B.add(&emb, "LayerNorm input (word + position + token type)", B.rep(B.mul({d.T, d.h, w.res})),
          "NativeLayerNormBackward0 keeps its input");
    layer_norm_stats(B, d, w, "LayerNorm", &emb);
  }
  if (recipe == "t5")
    B.add(&emb, "encoder relative position buckets (int64, shared by its layers)",
          B.mul({d.s, d.s, 8}), "EmbeddingBackward0 of relative_attention_bias keeps its indices");
  if (recipe == "llama")
    B.add(&emb, "RoPE cos, sin (shared by all layers)", B.mul({2, d.b, d.s, d.d, w.res}),
          "q * cos + rotate_half(q) * sin: MulBackward0 keeps cos and sin", 2);
  else if (d.p_hid)
    B.add(&emb, "embedding dropout mask", B.rep(B.mask(B.mul({d.T, d.h}), w.res)), "dropout");
  B.output(&emb, "embedding output", B.rep(B.mul({d.T, d.h, w.res})),
           recipe == "gpt2" ? "read by the first block" : "read by the first layer");
  emb.forward_flops = 2.0 * d.T * d.h;                    // a gather (no matmul): nominal cost
  emb.backward_temp_bytes = B.rep(B.mul({d.T, d.h, 4}));  // dense grad before index_add
  return emb;
}

// BERT's sequence-classification head (BertForSequenceClassification: pooler, dropout,
// classifier, cross-entropy over the labels).
void bert_cls_head(const Ctx& c, LayerActivations* head) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  const Widths& w = c.w;
  if (w.amp) B.add(head, "pooler input (16-bit copy)", B.mul({d.b, d.h, 2}), "autocast copy");
  B.add(head, "pooler tanh output", B.mul({d.b, d.h, w.lin}), "TanhBackward0 keeps its result");
  if (d.p_hid) B.add(head, "classifier dropout mask", B.mask(B.mul({d.b, d.h}), w.lin), "dropout");
  B.add(head, "classifier input", B.mul({d.b, d.h, w.lin}), "AddmmBackward0 keeps mat1");
  if (c.s.runtime.softmax_saves_input)
    B.add(head, "log_softmax input (logits)", B.mul({d.b, c.ar.num_labels, w.lin}),
          "LogSoftmaxBackward keeps its input too (torch <= 1.10)");
  B.add(head, "log_softmax output (fp32)", B.mul({d.b, c.ar.num_labels, 4}), "LogSoftmaxBackward0");
  B.add(head, "labels (int64)", B.mul({d.b, 8}), "NllLossBackward0 keeps its target");
  head->forward_flops = 2.0 * d.b * d.h * (d.h + c.ar.num_labels);
}

// A language-model head: the final norm, lm_head, the loss.
void lm_head(const Ctx& c, const std::string& recipe, uint64_t Vt, LayerActivations* head) {
  const Builder& B = c.B;
  const Dims& d = c.d;
  if (recipe == "llama") {
    rms_norm(B, d, c.w, c.s, Fp32Copy::beyond_input, 1, "final norm", head);
  } else {
    layer_norm_stats(B, d, c.w, "final LayerNorm", head);
    B.add(head, "lm_head input (final LayerNorm output)", B.rep(B.mul({d.T, d.h, c.w.lin})),
          "MmBackward0 keeps its input");
  }
  // Liger's fused function reads the hidden states without autograd: no matmul keeps them
  if (c.s.loss == Settings::Loss::liger_fused) B.drop_last(head);
  lm_loss(B, d, c.w, c.s, Vt, head);
  head->forward_flops = 2.0 * d.T * d.h * Vt;
}

Dims dims_of(const Architecture& ar, const Settings& s, const Builder& B) {
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
  d.sk = d.s;
  d.Tk = d.T;
  return d;
}

void check_settings(const ModelDescription& m, const Settings& s, const std::string& recipe) {
  const Architecture& ar = m.arch;
  if (!m.has_architecture() || ar.heads == 0 || ar.vocab == 0)
    fail(code::kUnsupported, "model", Message{"error.act.architecture", {}});
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
  if (s.seq_len == 0) fail(code::kOutOfRange, "seqLen", Message{"error.seqLen.min", {}});
  if (ar.heads % s.tensor_parallel != 0)
    fail(code::kInconsistent, "tensorParallel",
         Message{"error.tensorParallel.heads",
                 {{"tp", std::to_string(s.tensor_parallel)}, {"heads", std::to_string(ar.heads)}}});
  if (s.target_len > 0 && recipe != "t5")
    fail(code::kInconsistent, "targetLen",
         Message{"error.act.targetLen", {{"modelType", ar.model_type}}});
}

// What the result states about its recipe.
void recipe_assumptions(const Architecture& ar, const Settings& s, const std::string& recipe,
                        std::vector<Text>* out) {
  out->push_back(Text("act.recipe", {{"recipe", recipe}, {"modelType", ar.model_type}}));
  if (recipe == "t5" && s.target_len == 0) out->push_back(Text("act.encdec.targetLen", {}));
  if (recipe == "t5") out->push_back(Text("act.encdec.encoderOutput", {}));
  if (ar.num_experts > 0) out->push_back(Text("act.moe", {}));
  family_assumptions(ar, out);
}

}  // namespace

const std::vector<std::string>& sac_op_names() {
  static const std::vector<std::string> n = vocab::names(vocab::kSaveOps);
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

namespace {

// What torch.compile and float8 change, stated in the result (float8 outside Llama blocks is an
// error).
void setting_assumptions(const Architecture& ar, const Settings& s, const std::string& recipe,
                         std::vector<Text>* out) {
  if (s.compiled && recipe == "llama")
    out->push_back(Text("peak.assume.compile", {}));
  else if (s.compiled)
    out->push_back(Text("act.compile.derived", {}));
  if (s.float8 && recipe != "llama")
    fail(code::kUnsupported, "float8", Message{"error.act.float8", {{"modelType", ar.model_type}}});
  if (s.float8)
    out->push_back(
        s.compiled
            ? Text("peak.assume.float8", {})
                  .then_all(Text("compiled, the partitioner may keep the 1-byte casts instead "
                                 "of the 16-bit inputs (not modelled)"))
            : Text("peak.assume.float8", {}));
}

// The shapes of one stack of blocks (T5 has two) and what their FLOPs need.
struct Stack {
  const Ctx& c;
  const Dims* cross;  // T5's decoder: its cross-attention's shapes; else null
  double matmul_params;
};

// The first block of a stack (every block of a stack has the same shapes).
LayerActivations first_block(const std::string& recipe, const Stack& st, const Dims& d) {
  const Ctx& bc = st.c;
  const Architecture& ar = bc.ar;
  const Settings& s = bc.s;
  const bool t5 = recipe == "t5";
  LayerActivations l;
  Marks mk;
  if (recipe == "gpt2")
    gpt2_block(bc, &mk, &l);
  else if (recipe == "bert")
    bert_block(bc, &mk, &l);
  else if (t5)
    t5_block(bc, st.cross, &mk, &l);
  else
    llama_block(bc, &mk, &l);
  block_transients(bc, mk, &l);
  const Dims& bd = bc.d;
  l.forward_flops = 2.0 * bd.T * st.matmul_params / s.tensor_parallel +
                    4.0 * bd.b * bd.s * bd.sk * bd.q / s.tensor_parallel;  // QK^T and PV
  if (st.cross)  // the cross-attention's QK^T and PV over the encoder's keys
    l.forward_flops += 4.0 * d.b * bd.s * d.s * d.q / s.tensor_parallel;
  if (recipe == "llama" && !t5 && ar.num_experts == 0 && ar.shared_experts == 0)
    llama_op_outputs(bc.B, bd, bc.w, bc.eager, (ar.kv_heads ? ar.kv_heads : bd.a) * bd.d, &l);
  return l;
}

// The blocks (T5: the encoder's, then the decoder's), appended to out->layers.
void blocks(const Stack& enc, const Stack& dec, const Dims& d, ModelActivations* out) {
  const Architecture& ar = enc.c.ar;
  const bool t5 = out->recipe == "t5";
  const uint64_t E = t5 ? ar.encoder_layers : 0;
  const uint64_t L = ar.layers + ar.encoder_layers;
  for (uint64_t li = 0; li < L; ++li) {
    const bool decoder = t5 && li >= E;
    // every block of a stack has the same shapes: copy its first, except T5's last encoder
    // block, which also holds where the encoder ends
    const bool first = li == 0 || li == E;
    const bool last_encoder = t5 && li + 1 == E;
    if (!first && !last_encoder) {
      LayerActivations copy = out->layers.back();
      copy.name = "block " + std::to_string(li);
      out->layers.push_back(std::move(copy));
      continue;
    }
    LayerActivations l = last_encoder && li > 0 ? out->layers.back()
                                                : first_block(out->recipe, decoder ? dec : enc, d);
    l.name = "block " + std::to_string(li);
    if (last_encoder) t5_encoder_end(enc.c, dec.c.d, &l);
    out->layers.push_back(l);
  }
}

// The head layer of the recipe, ending in the loss.
LayerActivations head_layer(const std::string& recipe, const Ctx& c, const Ctx& dc) {
  const Dims& d = c.d;
  LayerActivations head;
  head.name = "head";
  const uint64_t Vt = d.V / c.s.tensor_parallel;  // Megatron vocab-parallel logits
  if (recipe == "bert" && c.ar.num_labels > 0) {
    bert_cls_head(c, &head);
  } else if (recipe == "t5") {
    t5_head(dc, dc.d, Vt, &head);
    head.forward_flops = 2.0 * dc.d.T * d.h * Vt;
  } else {
    lm_head(c, recipe, Vt, &head);
  }
  c.B.output(&head, "loss (scalar)", 4, "the loss tensor");
  return head;
}

}  // namespace

// A model known only by its parameter count: no shapes, so no activations; the chain has one
// empty block, and what peak memory adds (weights, gradients, optimizer state, the runtime) is
// a lower bound.
ModelActivations count_only(const Settings& s) {
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
  ModelActivations out;
  out.recipe = "count";
  for (const char* name : {"embeddings", "blocks", "head"}) {
    LayerActivations l;
    l.name = name;
    l.forward_flops = 1;
    out.layers.push_back(l);
  }
  out.layers.back().tensors.push_back(4);  // the loss
  out.layers.back().saved_bytes = out.layers.back().output_bytes = 4;
  out.total_saved_bytes = 4;
  out.assumptions.push_back(Text("peak.assume.count.lowerBound", {}));
  return out;
}

ModelActivations transformer_activations(const ModelDescription& m, const Settings& s) {
  if (m.trace) return traced::traced_activations(*m.trace, s);  // the model's own step
  if (m.arch.net) return net::activations(m, s);                // vision and speech (cpp/src/net)
  if (m.source == "params" && !m.has_architecture()) return count_only(s);
  if (m.diffusion) return diffusion_activations(m, s);
  if (llm_family(m.arch, s) && m.has_architecture()) return llm_family_activations(m, s);
  if (m.arch.model_type == "nn.Transformer") return torch_transformer_activations(m, s);
  const Architecture& ar = m.arch;
  ModelActivations out;
  out.recipe = family(ar);
  check_settings(m, s, out.recipe);
  if (s.lora.enabled) {
    // a frozen base keeps other tensors: the LoRA recipes (lora_recipes.cpp)
    ModelActivations lo = lora::lora_activations(m, s, out.recipe);
    recipe_assumptions(ar, s, lo.recipe, &lo.assumptions);
    return lo;
  }
  const std::string field = "microBatch";
  Builder B(s, field);
  const Widths w = widths(s);
  const Dims d = dims_of(ar, s, B);
  const bool t5 = out.recipe == "t5";
  // T5Attention computes its scores, bias and softmax itself and T5PreTrainedModel declares no
  // SDPA support (transformers modeling_t5.py @ 6b8b757d): T5 always saves the eager core
  const bool eager = s.attention == Attention::eager || t5;
  const Ctx c{B, d, w, s, ar, eager};
  // T5: the decoder's own length (targetLen; seqLen when not given), its keys in the
  // cross-attention the encoder's tokens
  Dims dec = d;
  if (t5) {
    dec.s = s.target_len ? s.target_len : s.seq_len;
    dec.T = B.mul({d.b, dec.s});
    dec.sk = dec.s;
    dec.Tk = dec.T;
  }
  Dims cross = dec;
  cross.sk = d.s;
  cross.Tk = d.T;
  const Ctx dc{B, dec, w, s, ar, eager};
  setting_assumptions(ar, s, out.recipe, &out.assumptions);
  if (t5 && s.attention != Attention::eager) out.assumptions.push_back(Text("act.t5.eager", {}));
  out.input_bytes = B.mul({d.T, 8});  // int64 input_ids
  out.layers.push_back(embeddings(c, out.recipe));
  const double matmul_params = block_matmul_params(out.recipe, d, ar);
  blocks({c, nullptr, matmul_params}, {dc, t5 ? &cross : nullptr, matmul_params}, d, &out);
  out.layers.push_back(head_layer(out.recipe, c, dc));
  out.total_saved_bytes = out.input_bytes;
  for (auto& l : out.layers) {
    if (l.forward_flops <= 0) l.forward_flops = 1;
    out.total_saved_bytes = checked_add(out.total_saved_bytes, l.saved_bytes, field);
  }
  out.korthikanti_layer_bytes = static_cast<uint64_t>(
      korthikanti_layer_bytes(d.s, d.b, d.h, d.a, s.tensor_parallel, s.sequence_parallel, false));
  recipe_assumptions(ar, s, out.recipe, &out.assumptions);
  return out;
}

void append_lm_loss(const ModelDescription& m, const Settings& s, Precision p, uint64_t tokens,
                    bool upcast, bool head_trainable, LayerActivations* head) {
  Settings ls = s;
  ls.precision = p;
  if (!head_trainable) ls.head_weight_bytes = 0;  // Liger: no grad_weight for a frozen weight
  const Builder B(ls, "microBatch");
  const Widths w = widths(ls);
  Dims d = dims_of(m.arch, ls, B);
  d.T = tokens;
  lm_loss(B, d, w, ls, d.V / ls.tensor_parallel, head, upcast);
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
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
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
    pl.skips = l.skips;
    pl.input_saved = l.input_saved;
    pl.concat_input = l.concat_input;
    c.layers.push_back(pl);
  }
  return c;
}

placement::Chain build_chain(const ModelDescription& model, const Settings& s) {
  return to_chain(transformer_activations(model, s));
}

}  // namespace activations
}  // namespace trainmem
