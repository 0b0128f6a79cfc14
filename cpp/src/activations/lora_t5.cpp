// T5 under LoRA / QLoRA, op for op after huggingface/transformers src/transformers/models/t5/
// modeling_t5.py at 6b8b757d (rebuilt in tools/tm_torch_models.py): T5LayerNorm, T5Attention
// (scores += position_bias in place, softmax(scores.float()).type_as(scores), dropout),
// T5LayerCrossAttention (k, v from the encoder output), T5DenseActDense / T5DenseGatedActDense,
// T5Stack's final_layer_norm and dropout, the tied head's rescale and a loss on the logits as
// they are. The relative position bias is a frozen embedding: nothing is kept for it.
#include "activations/lora_recipes.hpp"

namespace trainmem {
namespace activations {
namespace lora {

namespace {
constexpr uint32_t kEncOutId = 3;  // the encoder output every decoder layer reads

// T5LayerNorm: x.to(fp32).pow(2).mean; x * rsqrt (the original x: kept in its own dtype);
// .to(the weight's dtype) when 16-bit; weight * x (frozen: nothing kept).
Val t5_norm(Flow& f, const Val& x, uint64_t tokens, uint32_t ww, const char* what) {
  const std::string w(what);
  const Val x32 = f.cast(x, 4);
  const Val sq = f.input_saved(x32, 4, (w + " input in fp32").c_str(), "PowBackward0 keeps it");
  if (sq.rg && f.settings().runtime.mean_saves_input)
    f.save(sq, (w + " x^2").c_str(), "MeanBackward1 keeps its input (torch 1.13)");
  const Val rs = f.keeps_result(f.make(tokens, 4, sq.rg), 4, (w + " rsqrt").c_str(),
                                "RsqrtBackward0 keeps its result");
  const Val xn = f.mul(x, rs, (w + " input").c_str(), (w + " rsqrt").c_str());
  return f.mul(Flow::param(ww), ww != 4 ? f.cast(xn, ww) : xn, "weight", "normalized");
}

// T5Attention on x (queries) and kv (keys and values: x, or the encoder output), then o.
Val t5_attention(Flow& f, const Ctx& c, const Dims& d, const Val& x, const Val& kv, uint32_t roles,
                 bool cross) {
  const uint32_t rq = cross ? kXQ : kQ, rk = cross ? kXK : kK, rv = cross ? kXV : kV;
  const uint32_t ro = cross ? kXO : kO;
  const Val q = f.linear(x, lin(d.h, d.q, roles & rq, c, true), cross ? "EncDecAttention.q" : "q");
  const Val k = f.linear(kv, lin(d.h, d.q, roles & rk, c, true), cross ? "EncDecAttention.k" : "k");
  const Val v = f.linear(kv, lin(d.h, d.q, roles & rv, c, true), cross ? "EncDecAttention.v" : "v");
  // scores += position_bias keeps the scores' dtype (width 1: no promotion)
  const Val o = attention(f, c, d, q, k, v, 4, c.dt.autocast ? 2 : q.width, 1);
  return f.linear(o, lin(d.q, d.h, roles & ro, c, false), cross ? "EncDecAttention.o" : "o");
}

// T5LayerFF: norm, wi (relu) or act(wi_0) * wi_1 (gelu_new), dropout, wo, dropout, residual.
Val t5_ff(Flow& f, const Ctx& c, const Dims& d, const Val& x, uint32_t roles) {
  const Val y = t5_norm(f, x, d.T, c.dt.base, "feed-forward layer_norm");
  Val inner;
  if (c.ar.gated_mlp) {
    // act(wi_0(y)) * wi_1(y): the activation runs before wi_1
    const Val g = gelu(f, f.linear(y, lin(d.h, d.i, roles & kGate, c, true), "wi_0"),
                       c.ar.activation == "gelu_new");
    const Val u = f.linear(y, lin(d.h, d.i, roles & kUp, c, true), "wi_1");
    inner = f.mul(g, u, "activation output", "wi_1 output");
  } else {
    const Val h = f.linear(y, lin(d.h, d.i, roles & kUp, c, true), "wi");
    inner = f.keeps_result(h, h.width, "ReLU output", "ReluBackward0 keeps its result");
  }
  f.forward_temp(1, f.bytes(inner));
  f.backward_temp(2, f.bytes(inner));
  inner = f.dropout(inner, d.p_hid, "inner dropout mask");
  const Val o = f.dropout(f.linear(inner, lin(d.i, d.h, roles & kDown, c, false), "wo"), d.p_hid,
                          "feed-forward dropout mask");
  return f.add(x, o);
}
}  // namespace

void t5_block(const Ctx& c, const Dims& d, const Dims* cross, const EncoderOutput& enc,
              uint32_t roles, bool in_rg, LayerActivations* l) {
  Flow f(c.s, c.dt, d.T, l);
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  const Val y = t5_norm(f, x, d.T, c.dt.base, "self-attention layer_norm");
  const Val a = f.dropout(t5_attention(f, c, d, y, y, roles, false), d.p_hid,
                          "attention output dropout mask");
  Val x1 = f.add(x, a);
  if (cross) {
    const Val y2 = t5_norm(f, x1, d.T, c.dt.base, "cross-attention layer_norm");
    const Val kv = f.shared(kEncOutId, cross->Tk * d.h, enc.width, enc.rg);
    const Val a2 = f.dropout(t5_attention(f, c, *cross, y2, kv, roles, true), d.p_hid,
                             "cross-attention output dropout mask");
    x1 = f.add(x1, a2);
  }
  f.output(t5_ff(f, c, d, x1, roles), "block output (residual sum)", "read by the next block");
  f.finish();
}

EncoderOutput t5_encoder_end(const Ctx& c, const Dims& d, const Dims& dec, bool in_rg,
                             LayerActivations* l) {
  // a second flow on the last encoder block: its input is that block's output (counted there)
  Flow f(c.s, c.dt, d.T, l);
  const bool keeps = l->input_saved;
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  const Val e = f.dropout(t5_norm(f, x, d.T, c.dt.base, "encoder final_layer_norm"), d.p_hid,
                          "encoder final dropout mask");
  f.save(e, "encoder output (read by every decoder layer's cross-attention)",
         "alive for the decoder's forward; kept when a k / v adapter reads it");
  Val y = f.make(dec.T * d.h, c.dt.base, c.s.lora.embeddings_require_grad);  // frozen embedding
  y = f.dropout(y, d.p_hid, "decoder embedding dropout mask");
  f.output(y, "decoder embedding output", "read by the first decoder layer");
  l->output_bytes += f.bytes(e);  // the encoder output lives on beside the decoder's input
  l->input_saved = keeps;
  return EncoderOutput{e.width, e.rg};
}

void t5_head(const Ctx& c, const Dims& dec, uint32_t roles, bool in_rg, LayerActivations* h) {
  Flow f(c.s, c.dt, dec.T, h);
  const Val x = f.input(dec.T * dec.h, c.res, in_rg);
  Val y = f.dropout(t5_norm(f, x, dec.T, c.dt.base, "decoder final_layer_norm"), dec.p_hid,
                    "decoder final dropout mask");
  if (c.ar.tied_embeddings) y = f.make(y.elems, y.width, y.rg);  // y * d_model^-0.5
  f.linear(y, lin(dec.h, dec.V / c.s.tensor_parallel, roles & kHead, c, true), "lm_head");
  f.finish();
}

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
