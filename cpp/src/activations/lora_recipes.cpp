// LoRA / QLoRA blocks written op for op after HF transformers' eager modules (modeling_llama.py,
// modeling_gpt2.py, modeling_bert.py; rebuilt in tools/tm_torch_models.py) on the frozen-weight
// model of lora_flow.hpp. Each op is the module's; what it keeps follows from which of its
// inputs require grad. Measured: tests/fixtures/torch_lora.json (tools/measure_lora.py).
#include "activations/lora_recipes.hpp"

#include <algorithm>

namespace trainmem {
namespace activations {
namespace lora {

namespace {
constexpr uint32_t kCosId = 1, kSinId = 2;  // RoPE's cos and sin, shared by the blocks

// The eager attention scores (and their scaled / masked successor) live until the softmax has
// run; their gradients in the backward (attn_forward_temp / attn_backward_temp of the full
// recipe).
void score_temps(Flow& f, const Dims& d, uint32_t width) {
  const uint64_t piece = f.bytes(f.make(d.b * d.a * d.s * d.sk, width, false, true));
  f.forward_temp(2, piece);
  f.backward_temp(2, piece);
}

// rotate_half and the two products of apply_rotary_pos_emb (q * cos + rotate_half(q) * sin).
Val rope(Flow& f, const Val& x, const Val& cos, const Val& sin) {
  const Val a = f.mul(x, cos, "q or k", "RoPE cos");
  const Val r = f.make(x.elems, x.width, x.rg, true);  // rotate_half: cat(-x2, x1)
  return f.add(a, f.mul(r, sin, "rotate_half", "RoPE sin"));
}
}  // namespace

Linear lin(uint64_t in, uint64_t out, bool adapted, const Ctx& c, bool out_tp, bool bias) {
  Linear l;
  l.in = in;
  l.out = out;
  l.adapted = adapted;
  l.quantized = c.dt.qlora;
  l.bias = bias;
  l.out_tp = out_tp;
  return l;
}

// LlamaRMSNorm: x.to(fp32); pow(2).mean; rsqrt; x * rsqrt; weight * x.to(input dtype). The
// weight is frozen, so its product keeps nothing of the activation.
Val rms_norm(Flow& f, const Val& x, uint32_t weight_width, const char* what) {
  const std::string w(what);
  const Val x32 = f.cast(x, 4);
  const Val sq = f.input_saved(x32, 4, (w + " input in fp32").c_str(), "PowBackward0 keeps x");
  if (sq.rg && f.settings().runtime.mean_saves_input)
    f.save(sq, (w + " x^2").c_str(), "MeanBackward1 keeps its input (torch 1.13)");
  const Val var = f.make(f.tokens(), 4, sq.rg);
  const Val rs = f.keeps_result(var, 4, (w + " rsqrt").c_str(), "RsqrtBackward0 keeps its result");
  const Val xn = f.mul(x32, rs, (w + " input in fp32").c_str(), (w + " rsqrt").c_str());
  return f.mul(Flow::param(weight_width), f.cast(xn, x.width), "weight", "normalized");
}

// nn.LayerNorm: native_layer_norm keeps its input, mean and rstd when anything of it requires
// grad (one formula for input, weight and bias: no guard). CUDA autocast runs it in fp32.
Val layer_norm(Flow& f, const Val& x, const char* what) {
  const std::string w(what);
  const bool ac = f.dtypes().autocast;
  const Val in = ac ? f.cast(x, 4) : x;
  const uint32_t stats = in.width == 4 || f.settings().runtime.norm_stats_fp32 ? 4 : 2;
  if (x.rg) {
    // autocast's fp32 policy copies 16-bit weight and bias too; the node keeps the copies
    if (ac && f.dtypes().base != 4)
      for (int k = 0; k < 2; ++k) f.layer()->kept_weight_casts.push_back(x.elems / f.tokens() * 4);
    f.save(in, (w + " input").c_str(), "NativeLayerNormBackward0 keeps its input");
    for (const char* n : {" mean", " rstd"})
      f.save(f.make(f.tokens(), stats, false), (w + n).c_str(), "NativeLayerNormBackward0");
  }
  return f.make(x.elems, in.width, x.rg, x.tp);
}

// HF NewGELUActivation (gelu_new) as its Python ops, or the native GELU (GeluBackward0 keeps
// its input). CUDA autocast runs pow in fp32.
Val gelu(Flow& f, const Val& x, bool python_formula) {
  if (!python_formula) return f.input_saved(x, x.width, "GELU input", "GeluBackward0 keeps it");
  const Val half = f.make(x.elems, x.width, x.rg, x.tp);  // 0.5 * x
  const Val xp = f.dtypes().autocast ? f.cast(x, 4) : x;
  const Val cube = f.input_saved(xp, xp.width, "gelu_new x (pow)", "PowBackward0 keeps x");
  const Val inner = f.add(x, cube);  // x + 0.044715 x^3, times sqrt(2 / pi)
  const Val th = f.keeps_result(inner, inner.width, "gelu_new tanh", "TanhBackward0");
  const Val one = f.make(th.elems, th.width, th.rg, th.tp);  // 1 + tanh
  return f.mul(half, one, "gelu_new 0.5x", "gelu_new 1+tanh");
}

Val attention(Flow& f, const Ctx& c, const Dims& d, const Val& q, const Val& k, const Val& v,
              uint32_t sm_width, uint32_t cast_to, uint32_t mask_width) {
  const bool ac = c.dt.autocast;
  if (!c.eager) {
    // scaled_dot_product_attention (flash / memory-efficient): one backward formula for query,
    // key and value, so all of q, k, v, the output and the fp32 logsumexp are kept when any of
    // them requires grad (derivatives.yaml _scaled_dot_product_flash_attention)
    const Val q2 = f.ac16(q), k2 = f.ac16(k), v2 = f.ac16(v);
    const Val out = f.make(d.T * d.q, q2.width, q.rg || k.rg || v.rg, true);
    f.forward_temp(1, f.bytes(out));
    if (out.rg) {
      for (const Val* t : {&q2, &k2, &v2})
        f.save(*t, "q, k, v (kept by scaled_dot_product_attention)", "SDPA backward reads them");
      f.save(out, "SDPA output", "SDPA backward reads it");
      f.save(f.make(d.b * d.a * d.s, 4, false, true), "SDPA logsumexp (fp32)", "softmax_lse");
      f.backward_temp(1, f.bytes(f.make(d.T * d.q, out.width + 4, false, true)) +
                             2 * f.bytes(f.make(d.Tk * d.q, out.width, false, true)));
    }
    return f.make(d.T * d.q, out.width, out.rg, true);  // transpose(1, 2).contiguous()
  }
  const Val scores = f.bmm(q, k, d.b * d.a * d.s * d.sk, true, true, "q (bmm operand copy)",
                           "k^T (bmm operand copy)");
  score_temps(f, d, std::max<uint32_t>(scores.width, 4));
  const Val masked = f.add(scores, Flow::param(mask_width));  // scale, + mask: nothing kept
  const Val sm_in = ac && sm_width == 4 ? f.cast(masked, 4) : masked;
  Val p = f.keeps_result(sm_in, sm_width ? sm_width : sm_in.width, "softmax output",
                         "SoftmaxBackward0 keeps its result");
  if (cast_to) p = f.cast(p, cast_to);
  p = f.dropout(p, d.p_attn, "attention dropout mask");
  const Val o =
      f.bmm(p, v, d.T * d.q, false, true, "probabilities (PV operand)", "v (bmm operand copy)");
  return f.make(o.elems, o.width, o.rg, true);  // transpose(1, 2).contiguous()
}

// LlamaDecoderLayer (eager_attention_forward or SDPA, LlamaMLP; MoE blocks: the router's fp32
// softmax and the expert MLP once per routed or shared expert of each token, approximate).
void llama_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l,
                 bool* rope_kept) {
  Flow f(c.s, c.dt, d.T, l);
  const uint32_t bw = c.dt.base;
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  const Val xn = rms_norm(f, x, bw, "input_layernorm");
  const uint64_t kvq = d.kv * d.d;
  Val q, k, v;
  if (c.fused) {  // Phi3Attention: one qkv_proj (one adapter), split into views
    const Val qkv =
        f.linear(xn, lin(d.h, d.q + 2 * kvq, roles & (kQ | kK | kV), c, true), "qkv_proj");
    q = f.make(d.T * d.q, qkv.width, qkv.rg, true);
    k = f.make(d.T * kvq, qkv.width, qkv.rg, true);
    v = f.make(d.T * kvq, qkv.width, qkv.rg, true);
  } else {
    q = f.linear(xn, lin(d.h, d.q, roles & kQ, c, true), "q_proj");
    k = f.linear(xn, lin(d.h, kvq, roles & kK, c, true), "k_proj");
    v = f.linear(xn, lin(d.h, kvq, roles & kV, c, true), "v_proj");
  }
  const Val cos = f.shared(kCosId, d.b * d.s * d.d, bw),
            sin = f.shared(kSinId, d.b * d.s * d.d, bw);
  q = rope(f, q, cos, sin);
  k = rope(f, k, cos, sin);
  if (kvq != d.q) {  // repeat_kv: expand + reshape copies k and v to every head
    k = f.make(d.T * d.q, k.width, k.rg, true);
    v = f.make(d.T * d.q, v.width, v.rg, true);
  }
  const Val o = attention(f, c, d, q, k, v, 4, q.width, bw);
  const Val ao = f.linear(o, lin(d.q, d.h, roles & kO, c, false), "o_proj");
  const Val x1 = f.add(x, ao);
  const Val xn2 = rms_norm(f, x1, bw, "post_attention_layernorm");
  Val mlp_in = xn2;
  if (d.experts > 0) {
    // router: gate linear (frozen, not adapted), softmax over experts in fp32 (kept)
    const Val logits = f.linear(xn2, lin(d.h, d.experts, false, c, false), "router");
    f.keeps_result(logits, 4, "router softmax (fp32)", "SoftmaxBackward0 keeps its result");
    mlp_in = f.make(d.T * d.k * d.h, xn2.width, xn2.rg, false);  // tokens gathered per expert
  }
  // down_proj(act_fn(gate_proj(x)) * up_proj(x)): the activation runs before up_proj
  Val g, u;
  if (c.fused) {  // Phi3MLP: one gate_up_proj (one adapter), chunked
    const Val gu =
        f.linear(mlp_in, lin(d.h, 2 * d.i, roles & (kGate | kUp), c, true), "gate_up_proj");
    g = f.make(d.T * d.k * d.i, gu.width, gu.rg, true);
    u = f.make(d.T * d.k * d.i, gu.width, gu.rg, true);
  } else {
    g = f.linear(mlp_in, lin(d.h, d.i, roles & kGate, c, true), "gate_proj");
  }
  const Val sg = f.input_saved(g, g.width, "SiLU input (gate_proj output)", "SiluBackward0");
  f.forward_temp(1, f.bytes(g));
  if (!c.fused) u = f.linear(mlp_in, lin(d.h, d.i, roles & kUp, c, true), "up_proj");
  const Val p = f.mul(sg, u, "SiLU output", "up_proj output");
  f.backward_temp(2, f.bytes(g));
  Val dn = f.linear(p, lin(d.i, d.h, roles & kDown, c, false), "down_proj");
  if (d.experts > 0)  // the expert output times its routing weight, summed per token
    dn = f.make(d.T * d.h, dn.width, dn.rg, false);
  f.output(f.add(x1, dn), "block output (residual sum)", "read by the next block's norm");
  f.finish();
  *rope_kept = *rope_kept || f.shared_used(kCosId) || f.shared_used(kSinId);
}

// GPT2Block: ln_1, the fused c_attn (Conv1D: addmm), eager attention (the probabilities cast to
// v's dtype before dropout), c_proj, resid_dropout, ln_2, c_fc, gelu_new, c_proj, dropout.
void gpt2_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l) {
  Flow f(c.s, c.dt, d.T, l);
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  const Val a = layer_norm(f, x, "ln_1");
  const Val qkv = f.linear(a, lin(d.h, 3 * d.h, roles & (kQ | kK | kV), c, true, true), "c_attn");
  const Val q = f.make(d.T * d.q, qkv.width, qkv.rg, true);  // split: views of one storage
  const Val o = attention(f, c, d, q, q, q, c.dt.autocast ? 4 : 0, qkv.width, 1);
  Val ao = f.linear(o, lin(d.h, d.h, roles & kO, c, false, true), "attn.c_proj");
  ao = f.dropout(ao, d.p_hid, "attention residual dropout mask");
  const Val x1 = f.add(ao, x);
  const Val a2 = layer_norm(f, x1, "ln_2");
  const Val h1 = f.linear(a2, lin(d.h, d.i, roles & kUp, c, true, true), "mlp.c_fc");
  f.forward_temp(1, f.bytes(h1));
  const Val g = gelu(f, h1, c.ar.activation == "gelu_new");
  f.backward_temp(2, f.bytes(h1));
  Val h2 = f.linear(g, lin(d.i, d.h, roles & kDown, c, false, true), "mlp.c_proj");
  h2 = f.dropout(h2, d.p_hid, "mlp dropout mask");
  f.output(f.add(h2, x1), "block output (residual sum)", "read by the next block's ln_1");
  f.finish();
}

// BertLayer: query, key, value (addmm with bias), eager attention with an additive mask,
// dropout on the probabilities, output dense, dropout, LayerNorm over the residual sum;
// intermediate dense, GELU, output dense, dropout, LayerNorm.
void bert_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l) {
  Flow f(c.s, c.dt, d.T, l);
  const uint32_t bw = c.dt.base;
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  const Val q = f.linear(x, lin(d.h, d.h, roles & kQ, c, true, true), "query");
  const Val k = f.linear(x, lin(d.h, d.h, roles & kK, c, true, true), "key");
  const Val v = f.linear(x, lin(d.h, d.h, roles & kV, c, true, true), "value");
  const Val o = attention(f, c, d, q, k, v, c.dt.autocast ? 4 : 0, 0, bw);
  Val ao = f.linear(o, lin(d.h, d.h, roles & kO, c, false, true), "attention.output.dense");
  ao = f.dropout(ao, d.p_hid, "attention output dropout mask");
  const Val x1 = layer_norm(f, f.add(ao, x), "attention LayerNorm");
  const Val h1 = f.linear(x1, lin(d.h, d.i, roles & kUp, c, true, true), "intermediate.dense");
  f.forward_temp(1, f.bytes(h1));
  const Val g = gelu(f, h1, false);
  f.backward_temp(2, f.bytes(h1));
  Val h2 = f.linear(g, lin(d.i, d.h, roles & kDown, c, false, true), "output.dense");
  h2 = f.dropout(h2, d.p_hid, "output dropout mask");
  const Val out = layer_norm(f, f.add(h2, x1), "output LayerNorm");
  f.output(out, "layer output (LayerNorm output)", "read by the next layer");
  f.finish();
}

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
