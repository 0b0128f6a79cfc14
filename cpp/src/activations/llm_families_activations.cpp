// Saved-for-backward bytes of the decoder families whose blocks differ from Llama's, op by op from
// huggingface/transformers' eager modules: models/gptj/modeling_gptj.py (GPTJAttention._attn in
// fp32, sin and cos repeated per call, rotate_every_two on rotary_dim), models/phi/modeling_phi.py
// (partial rotary, attention and MLP side by side), models/falcon/modeling_falcon.py @00dcc6dd
// (fused query_key_value; k and v picked by advanced indexing and broadcast over the heads by
// matmul), models/starcoder2/modeling_starcoder2.py (LayerNorm, biases, GELU-tanh MLP, dropouts),
// models/olmo/modeling_olmo.py (OlmoLayerNorm on x.to(float32)), models/olmo2/modeling_olmo2.py
// (post-norms, q_norm / k_norm over all heads), models/gemma/modeling_gemma.py (GemmaRMSNorm in
// fp32 times 1 + weight; embeddings times sqrt(hidden)); HF ForCausalLMLoss. Measured
// counterpart: tools/measure_llm_families.py -> tests/fixtures/torch_llm_families.json.
#include <algorithm>

#include "activations/diffusion_recipe.hpp"
#include "activations/llm_families.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace activations {
namespace {

using dif::Rec;

// Element widths: the residual stream, linear outputs, softmax, norm statistics, dropout masks.
struct W {
  uint64_t res = 4, lin = 4, sm = 4, stats = 4, mask = 4;
  bool amp = false;
};

W widths_of(const Settings& s) {
  W w;
  if (s.precision == Precision::amp_bf16 || s.precision == Precision::amp_fp16) {
    w.lin = 2;
    w.amp = true;
  } else if (s.precision == Precision::bf16 || s.precision == Precision::fp16) {
    w.res = w.lin = w.sm = 2;
    w.stats = s.runtime.norm_stats_fp32 ? 4 : 2;
  }
  w.mask = s.runtime.dropout_mask_bytes ? s.runtime.dropout_mask_bytes : w.lin;
  return w;
}

struct Shape {
  uint64_t b, s, T, h, a, kv, d, i, V;
};

struct Ctx {
  Rec& r;
  const Shape& sh;
  const W& w;
  const Settings& s;
  const Architecture& ar;
  bool eager;
};

// A linear's input: a tensor of the compute dtype (kept once), or under autocast an fp32 tensor
// each of `readers` linears casts to 16-bit (one copy each).
void linear_input(const Ctx& c, uint64_t n, uint64_t readers, const char* what) {
  if (c.w.amp)
    c.r.save(what, readers * n * 2, "autocast casts the fp32 input per linear; each keeps it",
             readers);
  else
    c.r.save(what, n * c.w.lin, "AddmmBackward0 / MmBackward0 keeps its input");
}

// nn.LayerNorm over the stream (its input counted where it was made) or OlmoLayerNorm on
// x.to(float32) (a kept fp32 copy when the stream is 16-bit); mean, rstd; the linears' input
// (OLMo: cast back to the stream's dtype).
void layer_norm(const Ctx& c, bool olmo, uint64_t readers) {
  const uint64_t n = c.sh.T * c.sh.h;
  if (olmo && c.w.res != 4)
    c.r.save("norm input in fp32", n * 4, "NativeLayerNormBackward0 keeps x.to(float32)");
  c.r.save("LayerNorm mean, rstd", 2 * c.sh.T * (olmo ? 4 : c.w.stats), "NativeLayerNormBackward0",
           2);
  linear_input(c, n, readers, "norm output (the linears' input)");
}

// RMSNorm written in tensor ops over `n` elements of T rows: its input in fp32 (`here`: a tensor
// of this layer; a 16-bit input's fp32 copy always), x^2 on torch 1.13, rsqrt, the normalized
// tensor (fp32: OLMo 2 and Gemma multiply by the weight before casting back), Gemma's 1 + weight.
void rms_norm(const Ctx& c, uint64_t n, bool here, bool gemma, const char* what) {
  if (here || c.w.res != 4) c.r.save(what, n * 4, "PowBackward0 / MulBackward0 keep x in fp32");
  if (c.s.runtime.mean_saves_input)
    c.r.save("x^2", n * 4, "MeanBackward1 keeps its input (torch 1.13)");
  c.r.save("rsqrt", c.sh.T * 4, "RsqrtBackward0 keeps its result");
  c.r.save("normalized (fp32)", n * 4, "MulBackward0 keeps it");
  if (gemma) c.r.save("1 + weight (fp32)", c.sh.h * 4, "MulBackward0 keeps it");
}

void dropout(const Ctx& c, uint64_t n, double p, uint64_t width, bool out_kept, const char* what) {
  if (!c.s.dropout || p <= 0) return;
  c.r.save(what, n * c.w.mask, "native_dropout's mask (CPU torch 1.13: a noise tensor)");
  if (out_kept) c.r.save("dropout output", n * width, "the next op keeps it");
}

// The attention core: eager (q and k as bmm operands; softmax, in fp32 where the module asks;
// the probabilities cast back; v; the merged heads) or SDPA (q, k, v, output, logsumexp).
// `qk`: the width of q and k (GPT-J computes them in fp32).
void attention(const Ctx& c, uint64_t kv_width, uint64_t sm, uint64_t qk) {
  const Shape& sh = c.sh;
  const uint64_t qn = sh.T * sh.a * sh.d, scores = sh.b * sh.a * sh.s * sh.s;
  // k and v broadcast over the heads (repeat_kv, or matmul's expand) and reshaped for bmm: a
  // copy per head, except for one sample and one kv head, where the reshape is a view
  const uint64_t kvn = sh.b == 1 && sh.kv == 1 ? sh.T * sh.d : qn;
  if (c.eager) {
    c.r.save("q (bmm operand)", qn * qk, "BmmBackward0 keeps both operands");
    c.r.save("k^T (bmm operand)", kvn * qk, "BmmBackward0 keeps both operands");
    c.r.forward_temp(scores * std::max(qk, sm), 2);
    const size_t core_first = c.r.layer().tensors.size();
    c.r.save("softmax output", scores * sm, "SoftmaxBackward0 keeps its result");
    if (sm != c.w.lin) c.r.save("probabilities cast back", scores * c.w.lin, "BmmBackward0");
    dropout(c, scores, c.ar.attention_dropout, c.w.lin, true, "attention dropout mask");
    // the s^2 tensors Megatron's selective recompute drops (Korthikanti et al. 2022, section 5)
    c.r.layer().mark_core(core_first);
    c.r.save("v (bmm operand)", kvn * c.w.lin, "BmmBackward0 keeps its operand");
    c.r.backward_temp(scores * std::max(c.w.lin, sm), 2);
  } else {
    const uint64_t k = sh.T * kv_width * c.w.lin;
    c.r.save("q, k, v (kept by scaled_dot_product_attention)", qn * c.w.lin + 2 * k,
             "SDPA backward", 3);
    c.r.save("SDPA output", qn * c.w.lin, "SDPA backward reads it");
    c.r.save("SDPA logsumexp (fp32)", sh.b * sh.a * sh.s * 4, "softmax_lse");
    c.r.backward_temp(qn * (c.w.lin + 4) + 2 * k);
  }
  c.r.save("merged heads (the output projection's input)", qn * c.w.lin,
           "MmBackward0 keeps its input");
}

// gelu_new as Python ops (x, tanh(.), 0.5 x, 1 + tanh(.)), or nn.GELU / gelu_pytorch_tanh (its
// input); then the output the second linear keeps.
void gelu_mlp(const Ctx& c, bool python) {
  const uint64_t n = c.sh.T * c.sh.i;
  if (python)
    c.r.save("gelu_new: x, tanh(.), 0.5x, 1+tanh(.)", n * (c.w.amp ? 14 : 4 * c.w.lin),
             "NewGELUActivation as Python ops", 4);
  else
    c.r.save("GELU input", n * c.w.lin, "GeluBackward0 keeps its input");
  c.r.backward_temp(2 * n * c.w.lin, 1);
  c.r.save("the second linear's input (GELU output)", n * c.w.lin, "AddmmBackward0 keeps it");
}

// GPT-J, Phi, Falcon: one norm, attention and MLP side by side, attention + MLP + residual.
void parallel_block(const Ctx& c) {
  const Shape& sh = c.sh;
  const std::string& t = c.ar.model_type;
  const bool gptj = t == "gptj", falcon = t == "falcon";
  const uint64_t rot = static_cast<uint64_t>(static_cast<double>(sh.d) * c.ar.partial_rotary);
  c.r.layer().input_saved = true;        // by the LayerNorm (in fp32 under autocast)
  layer_norm(c, false, falcon ? 2 : 4);  // query_key_value + MLP, or q, k, v + fc
  if (gptj)  // apply_rotary_pos_emb repeats sin and cos on each call (q and k), in fp32
    c.r.save("sin, cos repeated for q and for k (fp32)", 4 * sh.T * rot * 4, "MulBackward0", 4);
  // GPT-J's _attn casts q and k to fp32; Phi's softmax runs in fp32; Falcon's in its dtype
  attention(c, falcon ? sh.kv * sh.d : sh.a * sh.d, gptj || t == "phi" ? 4 : c.w.sm,
            gptj ? 4 : c.w.lin);
  dropout(c, sh.T * sh.h, c.ar.hidden_dropout, c.w.lin, false, "residual dropout mask");
  gelu_mlp(c, c.ar.activation == "gelu_new");
  c.r.forward_temp(sh.T * sh.h * c.w.res);
  c.r.output("block output (attention + MLP + residual)", sh.T * sh.h * c.w.res,
             "the next block's norm keeps it");
}

// StarCoder2, OLMo, OLMo 2, Gemma: Llama's order with their norms, dropouts and MLPs.
void sequential_block(const Ctx& c) {
  const Shape& sh = c.sh;
  const std::string& t = c.ar.model_type;
  const uint64_t n = sh.T * sh.h, q = sh.T * sh.a * sh.d, kvd = sh.kv * sh.d;
  const bool gemma = t == "gemma", olmo2 = t == "olmo2";
  auto pre_norm = [&](uint64_t readers) {
    if (gemma) {
      rms_norm(c, n, false, true, "norm input in fp32");
      linear_input(c, n, readers, "norm output (the linears' input)");
    } else if (!olmo2) {
      layer_norm(c, t == "olmo", readers);
    }
  };
  // the block input is kept by its norm (StarCoder2's LayerNorm; OLMo's and Gemma's when the
  // stream is fp32, else they keep an fp32 copy) or by OLMo 2's q, k, v projections (under
  // autocast they keep 16-bit copies instead)
  c.r.layer().input_saved = t == "starcoder2" || (olmo2 ? !c.w.amp : c.w.res == 4);
  pre_norm(3);
  if (olmo2) {  // q_norm / k_norm over all heads read the projections' outputs
    rms_norm(c, q, true, false, "q_proj output (q_norm input)");
    rms_norm(c, sh.T * kvd, true, false, "k_proj output (k_norm input)");
  }
  attention(c, kvd, 4, c.w.lin);
  dropout(c, n, c.ar.hidden_dropout, c.w.lin, false, "attention residual dropout mask");
  if (olmo2) rms_norm(c, n, true, false, "o_proj output (post-norm input)");
  // the residual sum: kept by the MLP norm (Gemma, OLMo: an fp32 copy of a 16-bit stream
  // instead) or, in OLMo 2, by gate_proj and up_proj (below)
  const bool sum_copy = (gemma || t == "olmo") && c.w.res != 4;
  if (!sum_copy && !olmo2)
    c.r.save("residual sum (the MLP norm's input)", n * c.w.res, "the next norm keeps it");
  pre_norm(t == "starcoder2" ? 1 : 2);
  if (t == "starcoder2") {
    gelu_mlp(c, false);
  } else {
    if (olmo2) linear_input(c, n, 2, "gate_proj, up_proj input (the residual sum)");
    c.r.save("gated MLP: gate, act(gate), up, product", 4 * sh.T * sh.i * c.w.lin,
             "the activation keeps its input; MulBackward0 both factors; down_proj the product", 4);
    c.r.backward_temp(2 * sh.T * sh.i * c.w.lin, 1);
  }
  dropout(c, n, c.ar.hidden_dropout, c.w.lin, false, "MLP residual dropout mask");
  if (olmo2) rms_norm(c, n, true, false, "down_proj output (post-norm input)");
  c.r.forward_temp(n * c.w.res);
  c.r.output("block output (residual sum)", n * c.w.res, "the next block's norm keeps it");
}

void embeddings(const Ctx& c) {
  const Shape& sh = c.sh;
  const std::string& t = c.ar.model_type;
  if (t == "gemma")
    c.r.save("sqrt(hidden) (a 0-dim tensor)", c.w.res, "MulBackward0 keeps the normalizer");
  if (t != "gptj") {  // the rotary module's cos and sin, per sample, read by every block
    const uint64_t rot = static_cast<uint64_t>(static_cast<double>(sh.d) * c.ar.partial_rotary);
    c.r.save("RoPE cos, sin (shared by all layers)", 2 * sh.T * rot * c.w.res,
             "q * cos + rotate_half(q) * sin: MulBackward0 keeps cos and sin", 2);
  }
  dropout(c, sh.T * sh.h, t == "starcoder2" ? c.ar.hidden_dropout : 0.0, c.w.res, false,
          "embedding dropout mask");
  c.r.output("embedding output", sh.T * sh.h * c.w.res, "the first block keeps it");
  c.r.layer().forward_flops = 2.0 * sh.T * sh.h;
  c.r.backward_temp(sh.T * sh.h * 4);
}

// The final norm, lm_head (GPT-J and Phi with a bias), HF ForCausalLMLoss: logits.float(),
// log_softmax kept in fp32, the shifted labels.
void head(const Ctx& c) {
  const Shape& sh = c.sh;
  const std::string& t = c.ar.model_type;
  // LayerNorm keeps its input; the fp32 norms (OLMo, OLMo 2, Gemma) a copy of a 16-bit stream
  c.r.layer().input_saved = t == "starcoder2" || c.ar.parallel_block || c.w.res == 4;
  if (t == "gemma" || t == "olmo2") {
    rms_norm(c, sh.T * sh.h, false, t == "gemma", "final norm input in fp32");
    linear_input(c, sh.T * sh.h, 1, "lm_head input");
  } else {
    layer_norm(c, t == "olmo", 1);
  }
  const uint64_t logits = sh.T * sh.V;
  c.r.forward_temp(logits * (c.w.lin + (c.w.lin == 4 ? 0 : 4)));
  c.r.save("log_softmax output (logits upcast to fp32)", logits * 4,
           "HF ForCausalLMLoss: logits.float(); LogSoftmaxBackward0 keeps its result");
  c.r.save("labels (int64)", sh.T * 8, "NllLossBackward0 keeps its target");
  c.r.backward_temp(logits * 4, 2);
  c.r.output("loss (scalar)", 4, "the loss tensor");
  c.r.layer().forward_flops = 2.0 * sh.T * sh.h * sh.V;
}

}  // namespace

bool llm_family(const Architecture& ar, const Settings& s) {
  const std::string& t = ar.model_type;
  if (t == "gemma")
    return s.tensor_parallel == 1 && !s.sequence_parallel && !s.float8 &&
           s.loss == Settings::Loss::cross_entropy;
  return t == "gptj" || t == "phi" || t == "falcon" || t == "starcoder2" || t == "olmo" ||
         t == "olmo2";
}

ModelActivations llm_family_activations(const ModelDescription& m, const Settings& s) {
  const Architecture& ar = m.arch;
  if (s.tensor_parallel != 1 || s.sequence_parallel)
    fail(code::kUnsupported, "tensorParallel",
         Message{"error.llm.tensorParallel", {{"modelType", ar.model_type}}});
  if (s.float8)
    fail(code::kUnsupported, "float8", Message{"error.llm.float8", {{"modelType", ar.model_type}}});
  if (s.loss != Settings::Loss::cross_entropy)
    fail(code::kUnsupported, "loss", Message{"error.llm.loss", {{"modelType", ar.model_type}}});
  const W w = widths_of(s);
  Shape sh{};
  sh.b = s.micro_batch;
  sh.s = s.seq_len;
  sh.T = checked_mul(sh.b, sh.s, "seqLen");
  sh.h = ar.hidden;
  sh.a = ar.heads;
  sh.kv = ar.kv_heads ? ar.kv_heads : ar.heads;
  sh.d = ar.head_dim ? ar.head_dim : ar.hidden / ar.heads;
  sh.i = ar.intermediate ? ar.intermediate : 4 * ar.hidden;
  sh.V = ar.vocab;
  const bool eager = s.attention == Attention::eager;
  ModelActivations out;
  out.recipe = ar.model_type;
  out.input_bytes = sh.T * 8;  // int64 input_ids
  auto layer = [&](const char* name, int kind) {
    LayerActivations l;
    l.name = name;
    Rec r(s, &l);
    const Ctx c{r, sh, w, s, ar, eager};
    if (kind == 0) embeddings(c);
    if (kind == 1) (ar.parallel_block ? parallel_block(c) : sequential_block(c));
    if (kind == 2) head(c);
    r.finish();
    return l;
  };
  out.layers.push_back(layer("embeddings", 0));
  LayerActivations block = layer("block 0", 1);
  const double h = ar.hidden, T = static_cast<double>(sh.T);
  block.forward_flops = 2.0 * T *
                            (h * (sh.a + 2 * sh.kv) * sh.d + sh.a * sh.d * h +
                             (ar.gated_mlp ? 3.0 : 2.0) * h * sh.i) +
                        4.0 * sh.b * sh.s * sh.s * sh.a * sh.d;
  for (uint64_t i = 0; i < ar.layers; ++i) {
    block.name = "block " + std::to_string(i);
    out.layers.push_back(block);
  }
  out.layers.push_back(layer("head", 2));
  out.total_saved_bytes = dif::kept_total(out, "microBatch");
  out.assumptions.push_back(Text("fam.assume.recipe", {{"type", ar.model_type}}));
  if (s.compiled) out.assumptions.push_back(Text("fam.assume.compile", {}));
  add_lora_adapters(m, s, checked_mul(s.micro_batch, s.seq_len, "microBatch"), &out);
  return out;
}

}  // namespace activations
}  // namespace trainmem
