// Saved-for-backward bytes of diffusers' diffusion transformers, op by op from their source
// (huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951): attention.py
// JointTransformerBlock (SD3 / SD3.5), transformers/transformer_flux.py FluxTransformerBlock,
// FluxSingleTransformerBlock, FluxAttnProcessor, apply_rotary_emb (embeddings.py),
// attention.py BasicTransformerBlock with adaLN-Zero (DiT) and adaLN-single (PixArt),
// normalization.py AdaLayerNormZero / SD35AdaLayerNormZeroX / AdaLayerNormZeroSingle /
// AdaLayerNormContinuous, attention_processor.py JointAttnProcessor2_0; torch.nn.RMSNorm as
// PyTorch 2.4-2.5 composes it (x.to(fp32), pow, mean, rsqrt, mul, type_as, mul by the weight).
// The loss: diffusers' SD3 / Flux scripts, mean(weighting * (pred.float() - target.float())^2)
// (pow keeps the fp32 difference). Measured counterpart: tools/measure_diffusion.py.
#include <algorithm>

#include "activations/diffusion_recipe.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace activations {
namespace dif {
namespace {

using diffusion::Net;
using diffusion::Unit;
using diffusion::UnitKind;

// Tokens per sample: the image's (H x W patches or packed latents) and the text's.
struct Tokens {
  uint64_t img, txt, d;
};

Tokens tokens(const Ctx& c, const Unit& u) { return {c.H * c.W, c.text, u.cout}; }

// An adaptive norm's modulation: silu(temb) kept by its linear, the linear's output (kept through
// the gates, views of it) and each `1 + scale` (a new tensor the product keeps).
void modulation(Rec& r, const Ctx& c, uint64_t k, uint64_t scales, bool gates) {
  const uint64_t bd = r.mul({c.b, c.net.units[0].cout, c.w.act});
  r.save("adaptive norm: SiLU of the conditioning (linear input)", bd, "AddmmBackward0");
  if (gates)
    r.save("adaptive norm: modulation (the gates are views of it)", k * bd, "MulBackward0");
  r.save("adaptive norm: 1 + scale", scales * bd, "MulBackward0 keeps it", scales);
}

// LayerNorm (no affine) times (1 + scale) plus shift over `n` elements of `rows` rows: the norm
// keeps its input (`input_here`: a tensor this unit made) and statistics; the product its output.
void modulated_norm(Rec& r, const Ctx& c, uint64_t n, uint64_t rows, bool input_here,
                    const char* what) {
  layer_norm(r, c, n, rows, input_here, what);
  r.save("normalized (kept by the modulation's product)", n * c.w.norm,
         "MulBackward0 keeps norm(x) for the gradient of scale");
}

// torch.nn.RMSNorm(head_dim) on q or k (Flux; SD3.5's diffusers RMSNorm keeps the same):
// the input in fp32 (the linear's output itself in fp32), rsqrt per head and token, the result.
void rms_norm(Rec& r, const Ctx& c, uint64_t n, uint64_t rows_heads, bool input_here) {
  if (c.w.act != 4 || input_here)
    r.save("RMSNorm input in fp32", n * 4, "PowBackward0 / MulBackward0 keep x.to(float32)");
  if (c.s.runtime.mean_saves_input)
    r.save("RMSNorm x^2", n * 4, "MeanBackward1 keeps its input (torch 1.13)");
  r.save("RMSNorm rsqrt", r.mul({rows_heads, 4}), "RsqrtBackward0 keeps its result");
  r.save("RMSNorm output (before the weight)", n * c.w.act, "MulBackward0 keeps it");
}

// Attention of the joint (or one) stream over T = tokens per sample: q, k (after qk-norm and
// RoPE when present) and v, the core, the merged-heads copy its output projections keep.
void joint_core(Rec& r, const Ctx& c, const Unit& u, uint64_t t, bool rope) {
  const bool qk_norm = u.qk_norm;
  const uint64_t n = r.mul({c.b, t, u.cout});
  if (qk_norm) {
    rms_norm(r, c, n, c.b * t * u.heads, true);  // q (its input: the linear's output)
    rms_norm(r, c, n, c.b * t * u.heads, true);  // k
  }
  (void)rope;  // q * cos + rotate(q) * sin keeps cos and sin (the stem's tables), not q
  const uint64_t q = n * c.w.act;
  if (c.eager) {
    r.save("q, k scaled, v (math-path operands)", 3 * q, "MulBackward0 / BmmBackward0", 3);
    r.save("sqrt(scale) (two float64 scalars)", 16, "q * s, k * s: MulBackward0 keeps each", 2);
    const uint64_t scores = r.mul({c.b, u.heads, t, t});
    r.forward_temp(scores * c.w.act, 2);
    r.save("softmax output", scores * c.w.sm, "SoftmaxBackward0 keeps its result");
    if (c.w.sm != c.w.act) r.save("probabilities cast", scores * c.w.act, "BmmBackward0");
    r.backward_temp(scores * std::max(c.w.act, c.w.sm), 2);
  } else {
    r.save("q, k, v (kept by scaled_dot_product_attention)", 3 * q, "SDPA backward reads them", 3);
    r.save("SDPA output", q, "the SDPA backward reads its output");
    r.save("SDPA logsumexp (fp32)", r.mul({c.b, u.heads, t, 4}), "softmax_lse");
    r.backward_temp(r.mul({c.b, t, u.cout, c.w.act + 4}) + 2 * q);
  }
}

// One stream of a joint block after the attention: gate * attention output, the residual,
// norm2 modulated, the GELU(tanh) feed-forward, gate * its output, the residual.
void stream_tail(Rec& r, const Ctx& c, uint64_t tokens, uint64_t d, bool gated_out) {
  const uint64_t n = r.mul({c.b, tokens, d});
  r.save("attention projection output (kept by the gate's product)", n * c.w.act, "MulBackward0");
  modulated_norm(r, c, n, c.b * tokens, true, "norm2 input (residual sum)");
  matmul_input(r, c, n, "ff proj input (modulated norm2 output)");
  r.save("GELU input (ff proj output)", 4 * n * c.w.act, "GeluBackward0 keeps its input");
  // the feed-forward's backward: net.2's input gradient, then GELU's, beside the saved tensors
  // up to the GELU input
  r.backward_temp(4 * n * c.w.act, 2);
  r.save("ff output linear input (GELU output)", 4 * n * c.w.act, "AddmmBackward0");
  if (gated_out) r.save("ff output (kept by the gate's product)", n * c.w.act, "MulBackward0");
  r.forward_temp(n * c.w.act);
}

// SD3's JointTransformerBlock and Flux's FluxTransformerBlock: image and text streams, each
// adaLN-Zero modulated, one attention over both.
void joint_block(Rec& r, const Ctx& c, const Unit& u, bool flux) {
  const Tokens tk = tokens(c, u);
  const uint64_t ni = r.mul({c.b, tk.img, tk.d}), nt = r.mul({c.b, tk.txt, tk.d});
  const bool last = u.context_pre_only, dual = !flux && u.cross != 0;
  r.layer().input_saved = !c.w.amp;
  modulation(r, c, dual ? 9 : 6, dual ? 3 : 2, true);  // norm1 (image)
  modulated_norm(r, c, ni, c.b * tk.img, false, "norm1 input in fp32");
  modulation(r, c, last ? 2 : 6, last ? 1 : 2, !last);  // norm1_context
  modulated_norm(r, c, nt, c.b * tk.txt, false, "norm1_context input in fp32");
  matmul_input(r, c, ni, "to_q, to_k, to_v input (modulated image tokens)", 3);
  matmul_input(r, c, nt, "add_q/k/v_proj input (modulated text tokens)", 3);
  joint_core(r, c, u, tk.img + tk.txt, flux);
  r.save("merged heads (the image's to_out input, the text's to_add_out input)",
         (last ? ni : ni + nt) * c.w.act, "AddmmBackward0 keeps its input");
  if (dual) {  // SD3.5's second self-attention of the image stream, its own modulated input
    matmul_input(r, c, ni, "attn2 to_q, to_k, to_v input", 3);
    joint_core(r, c, u, tk.img, false);
    r.save("attn2 merged heads", ni * c.w.act, "AddmmBackward0");
    r.save("attn2 projection output (kept by the gate's product)", ni * c.w.act, "MulBackward0");
  }
  stream_tail(r, c, tk.img, tk.d, true);
  if (!last) stream_tail(r, c, tk.txt, tk.d, true);
  r.output("block output (image and text streams)", (last ? ni : ni + nt) * c.w.act,
           "the next block's norms keep them");
}

// FluxSingleTransformerBlock: text and image concatenated, one modulated norm, the MLP and the
// attention side by side (their outputs concatenated into proj_out), the gate, the residual.
void single_block(Rec& r, const Ctx& c, const Unit& u) {
  const Tokens tk = tokens(c, u);
  const uint64_t t = tk.img + tk.txt, n = r.mul({c.b, t, tk.d});
  LayerActivations& l = r.layer();
  l.input_saved = false;  // torch.cat([encoder_hidden_states, hidden_states]) is the first op
  modulation(r, c, 3, 1, true);
  modulated_norm(r, c, n, c.b * t, true, "norm input (the concatenation)");
  matmul_input(r, c, n, "proj_mlp, to_q, to_k, to_v input (modulated tokens)", 4);
  r.save("GELU input (proj_mlp output)", 4 * n * c.w.act, "GeluBackward0 keeps its input");
  joint_core(r, c, u, t, true);
  // proj_out's input gradient (5 d) split into the attention's and the MLP's (views)
  r.backward_temp(5 * n * c.w.act, 1);
  r.save("proj_out input (attention and MLP outputs concatenated)", 5 * n * c.w.act,
         "AddmmBackward0 keeps its input");
  r.save("proj_out output (kept by the gate's product)", n * c.w.act, "MulBackward0");
  r.forward_temp(n * c.w.act);
  r.output("block output (text and image tokens: views of one tensor)", n * c.w.act,
           "the next block concatenates the views: a checkpoint keeps them");
}

// DiT (adaLN-Zero with each block's own timestep and label embedders) and PixArt (adaLN-single:
// the stem's modulation plus the block's scale_shift_table; cross-attention over the captions).
void dit_block(Rec& r, const Ctx& c, const Unit& u) {
  const bool pixart = c.net.cls == "PixArtTransformer2DModel";
  const uint64_t t = c.H * c.W, d = u.cout, n = r.mul({c.b, t, d});
  r.layer().input_saved = !c.w.amp;
  const uint64_t bd = r.mul({c.b, d, c.w.act});
  if (!pixart) {  // CombinedTimestepLabelEmbeddings, then silu, linear (6 d)
    r.save("timestep embedder linear_1 input", r.mul({c.b, 256, c.w.act}), "AddmmBackward0");
    r.save("timestep embedder SiLU, linear_2 inputs", 2 * bd, "SiluBackward0, AddmmBackward0", 2);
    r.save("class labels (int64)", c.b * 8, "EmbeddingBackward0 keeps its indices");
    r.save("conditioning (SiLU input)", bd, "SiluBackward0");
    modulation(r, c, 6, 2, true);
  } else {  // scale_shift_table + timestep: a new tensor, the gates are views of it
    r.save("modulation (scale_shift_table + timestep)", 6 * bd, "MulBackward0 (gates)");
    r.save("1 + scale", 2 * bd, "MulBackward0", 2);
  }
  modulated_norm(r, c, n, c.b * t, false, "norm1 input in fp32");
  matmul_input(r, c, n, "to_q, to_k, to_v input (modulated norm1 output)", 3);
  dif::attention_core(r, c.w, c.eager, c.b, u.heads, d, t, t);
  r.save("attention output (kept by the gate's product)", n * c.w.act, "MulBackward0");
  if (pixart) {  // attn2 on the residual sum itself (no norm), keys and values: the captions
    matmul_input(r, c, n, "attn2 to_q input (residual sum)");
    dif::attention_core(r, c.w, c.eager, c.b, u.heads, d, t, c.text);
  }
  modulated_norm(r, c, n, c.b * t, true, pixart ? "norm2 input" : "norm3 input");
  matmul_input(r, c, n, "ff proj input");
  r.save("GELU input (ff proj output)", 4 * n * c.w.act, "GeluBackward0 keeps its input");
  r.backward_temp(4 * n * c.w.act, 2);
  r.save("ff output linear input (GELU output)", 4 * n * c.w.act, "AddmmBackward0");
  r.save("ff output (kept by the gate's product)", n * c.w.act, "MulBackward0");
  r.forward_temp(n * c.w.act);
  r.output("block output (residual sum)", n * c.w.act, "the next block's norm1 keeps it");
}

void stem(Rec& r, const Ctx& c, const Unit& u) {
  const Net& net = c.net;
  const uint64_t b = c.b, d = u.cout, a = c.w.act, bd = b * d * a;
  const uint64_t img = r.mul({b, c.H * c.W, d, a}), txt = r.mul({b, c.text, d, a});
  const bool flux = net.cls == "FluxTransformer2DModel";
  const bool pixart = net.cls == "PixArtTransformer2DModel";
  if (net.cls != "DiTTransformer2DModel") {  // time (+ guidance) embedding, pooled text
    const uint64_t embedders = flux && net.guidance ? 2 : 1;
    r.save("timestep embedder linear_1 inputs", embedders * b * 256 * a, "AddmmBackward0",
           embedders);
    r.save("timestep embedder SiLU, linear_2 inputs", 2 * embedders * bd, "SiluBackward0", 2);
    if (!pixart) {
      r.save("pooled text projection: SiLU, linear_2 inputs", 2 * bd, "SiluBackward0", 2);
      r.save("conditioning (every block's adaptive norm keeps it)", bd, "SiluBackward0");
    }
  }
  if (pixart) {  // adaln_single: silu(embedded timestep), its linear (6 d: each block adds it)
    r.save("adaln_single SiLU input (the head keeps it too), linear input", 2 * bd,
           "SiluBackward0, AddmmBackward0", 2);
    if (net.caption_dim) {
      r.save("caption projection: GELU input, linear_2 input", 2 * txt, "GeluBackward0", 2);
      r.save("projected captions (every block's to_k, to_v keep them)", txt, "AddmmBackward0");
    }
  }
  if (flux)  // FluxPosEmbed's cos and sin (fp32, per token of text and image), kept by every RoPE
    r.save("RoPE cos, sin (fp32)", r.mul({2, c.H * c.W + c.text, net.units[1].head_dim, 4}),
           "MulBackward0 keeps cos and sin", 2);
  const bool stream = net.cls == "SD3Transformer2DModel" || flux;
  r.output(stream ? "image and text tokens" : "patch tokens (plus position embedding)",
           stream ? img + txt : img, "the first block's norms keep them");
}

void head(Rec& r, const Ctx& c, const Unit& u) {
  const uint64_t d = u.cin, n = r.mul({c.b, c.H * c.W, d});
  const uint64_t px = c.net.patch * c.net.patch;  // latent pixels per token (Flux: 2 x 2 packed)
  const uint64_t pred = r.mul({c.b, c.H * c.W, px, c.net.latent_channels, 4});
  r.layer().input_saved = !c.w.amp;
  const uint64_t bd = r.mul({c.b, d, c.w.act});
  if (c.net.cls == "DiTTransformer2DModel") {
    // the head recomputes block 0's CombinedTimestepLabelEmbeddings, then proj_out_1(silu(.))
    r.save("block 0 timestep embedder again: linear_1, SiLU, linear_2 inputs",
           r.mul({c.b, 256, c.w.act}) + 2 * bd, "AddmmBackward0, SiluBackward0", 3);
    r.save("class labels again (int64)", c.b * 8, "EmbeddingBackward0 keeps its indices");
    r.save("conditioning, its SiLU (proj_out_1 input)", 2 * bd, "SiluBackward0, AddmmBackward0", 2);
    r.save("1 + scale", bd, "MulBackward0");
  } else if (c.net.cls == "PixArtTransformer2DModel") {
    r.save("1 + scale (scale_shift_table + the embedded timestep)", bd, "MulBackward0");
  } else {
    r.save("norm_out: SiLU of the conditioning, 1 + scale", 2 * bd, "AddmmBackward0, MulBackward0",
           2);
  }
  modulated_norm(r, c, n, c.b * c.H * c.W, false, "norm_out input in fp32");
  matmul_input(r, c, n, "proj_out input (modulated)");
  // MSE in fp32 of the prediction against its target; SD3 / Flux weight it per sample
  r.save("prediction - target in fp32 (the squared difference keeps it)", pred,
         "PowBackward0 keeps its base");
  r.output("loss (scalar)", 4, "the loss tensor");
  r.backward_temp(n * std::max(c.w.norm, c.w.act), 2);
}

}  // namespace

void transformer_unit(Rec& r, const Ctx& c, size_t index) {
  const Unit& u = c.net.units[index];
  switch (u.kind) {
    case UnitKind::stem:
      return stem(r, c, u);
    case UnitKind::joint:
      return joint_block(r, c, u, false);
    case UnitKind::flux_double:
      return joint_block(r, c, u, true);
    case UnitKind::flux_single:
      return single_block(r, c, u);
    case UnitKind::dit_block:
      return dit_block(r, c, u);
    case UnitKind::head:
      return head(r, c, u);
    default:
      fail(code::kInternal, "model", Message{"error.internal.transformerUnit", {}});
  }
}

double transformer_flops(const Ctx& c, const Unit& u) {
  const double b = static_cast<double>(c.b), ti = c.H * c.W, tt = c.text, d = u.cout;
  switch (u.kind) {
    case UnitKind::joint:
    case UnitKind::flux_double:  // per stream: q, k, v, out, ff (4d, 4d); attention over both
      return 2 * b * (ti + tt) * d * d * 12 + 4 * b * (ti + tt) * (ti + tt) * d;
    case UnitKind::flux_single:  // q, k, v, proj_mlp (4d), proj_out (5d -> d)
      return 2 * b * (ti + tt) * d * d * 12 + 4 * b * (ti + tt) * (ti + tt) * d;
    case UnitKind::dit_block:
      return 2 * b * ti * d * d * 12 + 4 * b * ti * (ti + tt) * d;
    default:
      return 2 * b * (ti + tt) * d * d;
  }
}

}  // namespace dif
}  // namespace activations
}  // namespace trainmem
