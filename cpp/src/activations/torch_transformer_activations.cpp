// Saved-for-backward bytes of PyTorch's torch.nn.Transformer in training (torch 1.13,
// torch/nn/modules/transformer.py TransformerEncoderLayer / TransformerDecoderLayer with
// norm_first False; torch/nn/functional.py multi_head_attention_forward: the packed in-projection
// made contiguous (q, k, v are views of one copy), q / sqrt(head_dim), bmm / baddbmm, softmax,
// dropout on the weights, bmm, the heads merged into a copy for out_proj). nn.Transformer has no
// embeddings or head: the batch is src (S, N, E) and tgt (T, N, E), the loss a stand-in (the mean
// square of the output). Measured counterpart: tools/measure_llm_families.py.
#include <algorithm>

#include "activations/diffusion_recipe.hpp"
#include "activations/llm_families.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace activations {
namespace {

using dif::Rec;

struct Dims {
  uint64_t n, s, t, e, h, f;  // batch, source and target lengths, d_model, heads, feed-forward
  uint64_t w, mask;           // element and dropout-mask bytes
  double p;                   // dropout
};

void drop(Rec& r, const Dims& d, uint64_t elems, bool kept, const char* what) {
  if (d.p <= 0) return;
  r.save(what, elems * d.mask, "dropout's mask (CPU torch 1.13: a noise tensor)");
  if (kept) r.save("dropout output (the next op's operand)", elems * d.w, "BmmBackward0 / Addmm");
}

// multi_head_attention_forward over `tq` query and `tk` key tokens per sample (torch 1.13):
// _in_projection_packed returns chunks of one linear output (views), which
// `.contiguous()` copies: k and v are bmm operands (copies); q / sqrt(head_dim) is the other;
// the softmax, the weights' dropout, the merged heads (out_proj's input).
void mha(Rec& r, const Dims& d, uint64_t tq, uint64_t tk) {
  const uint64_t q = d.n * tq * d.e * d.w, kv = d.n * tk * d.e * d.w;
  const uint64_t scores = d.n * d.h * tq * tk;
  r.save("q / sqrt(head_dim)", q, "BmmBackward0 keeps its operand");
  r.save("k, v (contiguous copies of the projection's chunks)", 2 * kv,
         "BmmBackward0 keeps its operands", 2);
  r.forward_temp(scores * d.w, 2);
  r.save("softmax output", scores * d.w, "SoftmaxBackward0 keeps its result");
  drop(r, d, scores, true, "attention weights dropout mask");
  r.backward_temp(scores * d.w, 2);
  r.save("out_proj input (heads merged: a copy)", q, "AddmmBackward0 keeps its input");
}

// x + dropout(sublayer) then LayerNorm: the mask, the sum (kept by the norm), mean and rstd.
void add_norm(Rec& r, const Dims& d, uint64_t tokens) {
  const uint64_t n = d.n * tokens * d.e;
  drop(r, d, n, false, "residual dropout mask");
  r.save("residual sum (the norm's input)", n * d.w, "NativeLayerNormBackward0 keeps its input");
  r.save("LayerNorm mean, rstd", 2 * d.n * tokens * 4, "NativeLayerNormBackward0", 2);
}

void feed_forward(Rec& r, const Dims& d, uint64_t tokens, bool relu) {
  const uint64_t n = d.n * tokens * d.e, m = d.n * tokens * d.f;
  r.save("linear1 input (the norm's output)", n * d.w, "AddmmBackward0 keeps its input");
  r.save(relu ? "ReLU output" : "GELU input", m * d.w,
         relu ? "ThresholdBackward0 keeps its result" : "GeluBackward0 keeps its input");
  if (!relu) r.save("GELU output", m * d.w, "the dropout or linear2 keeps it");
  drop(r, d, m, true, "feed-forward dropout mask");
  r.backward_temp(2 * m * d.w, 1);
  add_norm(r, d, tokens);
}

}  // namespace

ModelActivations torch_transformer_activations(const ModelDescription& m, const Settings& s) {
  const Architecture& a = m.arch;
  if (a.norm_first)
    fail(code::kUnsupported, "model.config.norm_first", Message{"error.torch.normFirst", {}});
  if (s.precision != Precision::fp32 && s.precision != Precision::bf16 &&
      s.precision != Precision::fp16)
    fail(code::kUnsupported, "precision", Message{"error.torch.precision", {}});
  if (s.tensor_parallel != 1)
    fail(code::kUnsupported, "tensorParallel", Message{"error.torch.tensorParallel", {}});
  if (s.loss != Settings::Loss::cross_entropy)
    fail(code::kUnsupported, "loss", Message{"error.torch.loss", {}});
  Dims d{};
  d.n = s.micro_batch;
  d.s = s.seq_len;
  d.t = s.target_len ? s.target_len : s.seq_len;
  d.e = a.hidden;
  d.h = a.heads;
  d.f = a.intermediate;
  d.w = s.precision == Precision::fp32 ? 4 : 2;
  d.mask = s.runtime.dropout_mask_bytes ? s.runtime.dropout_mask_bytes : d.w;
  d.p = s.dropout ? a.hidden_dropout : 0.0;
  const bool relu = a.activation == "relu";
  ModelActivations out;
  out.recipe = "nn.Transformer";
  // src and tgt (the in-projections keep them); an additive causal mask is not kept
  out.input_bytes = d.n * (d.s + d.t) * d.e * d.w;
  auto finish = [&](LayerActivations& l, Rec& r, const char* name) {
    l.name = name;
    r.finish();
  };
  LayerActivations stem;
  stem.name = "inputs";
  stem.forward_flops = 1;
  out.layers.push_back(stem);
  const double e = static_cast<double>(d.e);
  for (uint64_t i = 0; i < a.encoder_layers; ++i) {
    LayerActivations l;
    Rec r(s, &l);
    mha(r, d, d.s, d.s);
    add_norm(r, d, d.s);
    feed_forward(r, d, d.s, relu);
    if (i + 1 == a.encoder_layers) {  // the encoder's final norm; its output is the memory
      r.save("the last layer's output (encoder.norm's input)", d.n * d.s * d.e * d.w,
             "NativeLayerNormBackward0 keeps its input");
      r.save("encoder.norm mean, rstd", 2 * d.n * d.s * 4, "NativeLayerNormBackward0", 2);
      r.save("memory (every decoder layer's k, v projection keeps it)", d.n * d.s * d.e * d.w,
             "AddmmBackward0 of each multihead_attn's in-projection: one storage");
    }
    r.output("layer output", i + 1 == a.encoder_layers ? 0 : d.n * d.s * d.e * d.w,
             "the next layer keeps it");
    finish(l, r, ("encoder layer " + std::to_string(i)).c_str());
    l.forward_flops = 2.0 * d.n * d.s * (4 * e * e + 2 * e * d.f) + 4.0 * d.n * d.s * d.s * e;
    out.layers.push_back(l);
  }
  for (uint64_t i = 0; i < a.layers; ++i) {
    LayerActivations l;
    Rec r(s, &l);
    if (i == 0) l.input_saved = false;  // the decoder starts from tgt (the batch)
    l.tokens = d.n * d.t;               // its linears' rows (LoRA)
    mha(r, d, d.t, d.t);
    add_norm(r, d, d.t);
    r.save("multihead_attn q projection input (norm1 output)", d.n * d.t * d.e * d.w, "Addmm");
    mha(r, d, d.t, d.s);
    add_norm(r, d, d.t);
    feed_forward(r, d, d.t, relu);
    r.output("layer output", d.n * d.t * d.e * d.w, "the next layer keeps it");
    finish(l, r, ("decoder layer " + std::to_string(i)).c_str());
    l.forward_flops =
        2.0 * d.n * d.t * (8 * e * e + 2 * e * d.f) + 4.0 * d.n * d.t * (d.t + d.s) * e;
    out.layers.push_back(l);
  }
  LayerActivations head;
  Rec r(s, &head);
  r.save("decoder.norm mean, rstd", 2 * d.n * d.t * 4, "NativeLayerNormBackward0", 2);
  r.save("output (the stand-in loss: mean of its square)", d.n * d.t * d.e * 4, "PowBackward0");
  r.output("loss (scalar)", 4, "the loss tensor");
  finish(head, r, "head");
  head.forward_flops = 1;
  out.layers.push_back(head);
  out.total_saved_bytes = dif::kept_total(out, "microBatch");
  out.assumptions.push_back(Text("fam.assume.nnTransformer", {}));
  add_lora_adapters(m, s, checked_mul(s.micro_batch, s.seq_len, "microBatch"), &out);
  return out;
}

}  // namespace activations
}  // namespace trainmem
