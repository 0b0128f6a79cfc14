// Saved-for-backward bytes of diffusers' UNet2DConditionModel, derived op by op from its source
// (huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951: resnet.py ResnetBlock2D,
// transformers/transformer_2d.py Transformer2DModel, attention.py BasicTransformerBlock and
// FeedForward, activations.py GEGLU, attention_processor.py AttnProcessor (eager) and
// AttnProcessor2_0 (SDPA), unets/unet_2d_blocks.py, unets/unet_2d_condition.py) and PyTorch's
// autograd formulas (tools/autograd/derivatives.yaml: GroupNorm and LayerNorm keep their input,
// mean and rstd; SiLU, GELU its input; convolutions and linears their input; baddbmm and bmm both
// operands; softmax its result; cat and add nothing). One chain layer per unit of model.net.
// Measured counterpart: tools/measure_diffusion.py -> tests/fixtures/torch_diffusion.json.
#include <algorithm>

#include "activations/diffusion_recipe.hpp"
#include "activations/llm_families.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace activations {
namespace dif {

Widths widths(const Settings& s) {
  Widths w;
  switch (s.precision) {
    case Precision::fp32:
      break;
    case Precision::amp_fp16:
    case Precision::amp_bf16:
      w.act = 2;  // conv / linear outputs 16-bit; norms, softmax, stats stay fp32
      w.amp = true;
      break;
    case Precision::bf16:
    case Precision::fp16:
      w.act = w.norm = w.sm = w.gn_stats = 2;
      w.ln_stats = s.runtime.norm_stats_fp32 ? 4 : 2;  // layer_norm's CUDA stats: fp32
      break;
  }
  return w;
}

void Rec::save(const char* name, uint64_t bytes, const char* source, uint64_t n) {
  if (bytes == 0) return;
  if (s_.detail) l_->saved.push_back({name, bytes, source});
  l_->saved_bytes = checked_add(l_->saved_bytes, bytes, "imageSize");
  for (uint64_t k = 0; k < n; ++k) l_->tensors.push_back(bytes / n);
}

uint64_t kept_total(const ModelActivations& a, const char* field) {
  std::vector<bool> read(a.layers.size(), false);
  for (size_t i = 0; i < a.layers.size(); ++i) {
    if (i > 0 && a.layers[i].input_saved) read[i - 1] = true;
    for (const auto& sk : a.layers[i].skips) read[sk.from] = true;
  }
  uint64_t total = a.input_bytes;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerActivations& l = a.layers[i];
    const bool last = i + 1 == a.layers.size();
    total = checked_add(total, l.saved_bytes - (read[i] || last ? 0 : l.output_bytes), field);
  }
  return total;
}

void Rec::output(const char* name, uint64_t bytes, const char* source) {
  save(name, bytes, source);
  l_->output_bytes = bytes;
}

void Rec::forward_temp(uint64_t bytes, uint64_t pieces) {
  if (bytes == 0) return;
  l_->forward_temps.push_back(
      {static_cast<uint32_t>(l_->tensors.size()), static_cast<uint32_t>(pieces), bytes});
}

void Rec::backward_temp(uint64_t bytes, uint64_t pieces) {
  if (bytes == 0) return;
  l_->backward_temps.push_back(
      {static_cast<uint32_t>(l_->tensors.size()), static_cast<uint32_t>(pieces), bytes});
}

void Rec::finish() {
  // A transient placed at tensor k lives while the tensors from k on do not exist (forward) or
  // are freed already (backward): the chain, which adds a layer's transient on top of all its
  // saved tensors, takes only its excess over them.
  LayerActivations& l = *l_;
  std::vector<uint64_t> prefix(l.tensors.size() + 1, 0);
  for (size_t k = 0; k < l.tensors.size(); ++k) prefix[k + 1] = prefix[k] + l.tensors[k];
  const uint64_t total = prefix.back();
  auto excess = [&](const std::vector<LayerActivations::TempGroup>& groups) {
    uint64_t most = 0;
    for (const auto& g : groups) {
      const uint64_t b = uint64_t{g.pieces} * g.bytes;
      const uint64_t after = total - prefix[std::min<size_t>(g.at, l.tensors.size())];
      most = std::max(most, b > after ? b - after : 0);
    }
    return most;
  };
  l.forward_temp_bytes = excess(l.forward_temps);
  l.backward_temp_bytes = excess(l.backward_temps);
  // The allocation trace (step_trace.cpp) makes a backward group at `at` = a when its walk
  // enters the region [a, next group) with all of it alive: a group recorded here at k (alive
  // with the tensors before k only) goes to k - 1, bounded by an empty group at k.
  std::vector<LayerActivations::TempGroup> bt;
  for (const auto& g : l.backward_temps) {
    if (g.at == 0 || g.at > l.tensors.size()) {
      bt.push_back(g);
      continue;
    }
    bt.push_back({g.at - 1, g.pieces, g.bytes});
    bt.push_back({g.at, 1, 0});
  }
  l.backward_temps = std::move(bt);
}

void attention_core(Rec& r, const Widths& w, bool eager, uint64_t b, uint64_t heads, uint64_t inner,
                    uint64_t tq, uint64_t tk) {
  const uint64_t q = r.mul({b, tq, inner, w.act}), k = r.mul({b, tk, inner, w.act});
  const uint64_t scores = r.mul({b, heads, tq, tk});
  if (eager) {
    // head_to_batch_dim: reshape, permute, reshape -> copies; baddbmm keeps q and k^T, bmm v
    r.save("q, k, v (head_to_batch_dim copies: baddbmm and bmm operands)", q + 2 * k,
           "BaddbmmBackward0 keeps both batches; BmmBackward0 keeps v", 3);
    // baddbmm's output and its empty beta=0 input, then the softmax beside the scores
    r.forward_temp(scores * w.act, 2);
    r.save("softmax output", scores * w.sm, "SoftmaxBackward0 keeps its result");
    if (w.sm != w.act)
      r.save("probabilities cast to the query's dtype (bmm operand)", scores * w.act,
             "attention_probs.to(dtype): BmmBackward0 keeps it");
    r.backward_temp(scores * std::max(w.act, w.sm), 2);
  } else {
    r.save("q, k, v (kept by scaled_dot_product_attention)", q + 2 * k,
           "flash / memory-efficient SDPA backward reads q, k, v", 3);
    r.save("SDPA output", q, "the SDPA backward reads its output");
    r.save("SDPA logsumexp (fp32)", r.mul({b, heads, tq, 4}), "softmax_lse");
    r.backward_temp(r.mul({b, tq, inner, w.act + 4}) + 2 * k);
  }
  r.save("to_out input (heads merged: a copy)", q,
         "batch_to_head_dim / transpose().reshape(): AddmmBackward0 keeps the copy");
  r.save("divisor (rescale_output_factor, a float64 scalar)", 8,
         "hidden_states / attn.rescale_output_factor: DivBackward0 keeps the scalar");
}

void matmul_input(Rec& r, const Ctx& c, uint64_t n, const char* what, uint64_t readers) {
  if (c.w.amp)
    r.save(what, r.mul({readers, n, 2}),
           "autocast casts the fp32 input to 16-bit per conv / linear; each keeps its copy",
           readers);
  else
    r.save(what, n * c.w.act, "ConvolutionBackward0 / AddmmBackward0 keeps its input");
}

void layer_norm(Rec& r, const Ctx& c, uint64_t n, uint64_t rows, bool input_here,
                const char* what) {
  if (c.w.amp || input_here)
    r.save(what, n * c.w.norm,
           c.w.amp ? "autocast runs layer_norm in fp32: NativeLayerNormBackward0 keeps the copy"
                   : "NativeLayerNormBackward0 keeps its input");
  r.save("LayerNorm mean, rstd", r.mul({2, rows, c.w.ln_stats}), "NativeLayerNormBackward0", 2);
}

}  // namespace dif

namespace {

using dif::Rec;
using dif::Shape;
using dif::Widths;
using diffusion::Net;
using diffusion::Unit;
using diffusion::UnitKind;

using dif::Ctx;

Shape shape_at(const Ctx& c, uint32_t level) {
  Shape s;
  s.b = c.b;
  s.h = c.H >> level;
  s.w = c.W >> level;
  s.text = c.text;
  return s;
}

// A GroupNorm over `n` elements: under autocast (fp32 list) it keeps an fp32 copy of its input;
// otherwise the input itself (the previous tensor, counted where it was made).
void group_norm(Rec& r, const Ctx& c, uint64_t n, const char* what) {
  if (c.w.amp)
    r.save(what, n * 4,
           "autocast runs group_norm in fp32: NativeGroupNormBackward0 keeps the copy");
  r.save("GroupNorm mean, rstd", r.mul({2, c.b, c.net.groups, c.w.gn_stats}),
         "NativeGroupNormBackward0", 2);
}

using dif::matmul_input;

void resnet(Rec& r, const Ctx& c, const Unit& u, const Shape& sh) {
  const uint64_t nin = r.mul({sh.b, u.cin, sh.hw()}), nout = r.mul({sh.b, u.cout, sh.hw()});
  LayerActivations& l = r.layer();
  if (u.skip_from >= 0) {
    // CrossAttnUpBlock2D / UpBlock2D: torch.cat([hidden_states, res_hidden_states]) first;
    // norm1 and conv_shortcut read the concatenation
    r.save("concatenated input (torch.cat of the input and the skip)", nin * c.w.act,
           "NativeGroupNormBackward0 and conv_shortcut keep it; CatBackward0 keeps nothing");
    l.concat_input = true;
    l.input_saved = false;
  } else {
    // the input is norm1's (fp32, 16-bit) or, under autocast, conv_shortcut's when it exists
    l.input_saved = !c.w.amp || u.cin != u.cout;
  }
  group_norm(r, c, nin, "norm1 input in fp32");
  r.save("SiLU input (norm1 output)", nin * c.w.norm, "SiluBackward0 keeps its input");
  matmul_input(r, c, nin, "conv1 input (SiLU output)");
  if (u.temb)
    r.save("time_emb_proj input (SiLU of the time embedding)", r.mul({sh.b, c.net.temb, c.w.act}),
           "AddmmBackward0 keeps its input");
  // conv1's output plus the time embedding, before norm2 (under autocast cast to fp32)
  r.forward_temp(nout * c.w.act);
  r.save("norm2 input (conv1 output + time embedding)", nout * c.w.norm,
         "NativeGroupNormBackward0 keeps its input");
  r.save("GroupNorm mean, rstd", r.mul({2, c.b, c.net.groups, c.w.gn_stats}),
         "NativeGroupNormBackward0", 2);
  r.save("SiLU input (norm2 output)", nout * c.w.norm, "SiluBackward0 keeps its input");
  matmul_input(r, c, nout, "conv2 input (SiLU output; dropout p=0 returns it)");
  r.save("divisor (output_scale_factor, a float64 scalar)", 8,
         "(input + hidden) / output_scale_factor: DivBackward0 keeps the scalar");
  r.forward_temp(nout * c.w.act);  // the residual sum before the division
  r.output("resnet output", nout * c.w.act, "the next unit's norm or conv keeps it");
  // backward: the output's gradient through the division, conv2, SiLU, norm2 (one at a time,
  // in the norms' width), the residual branch's and the input's gradient
  r.backward_temp(std::max(nin, nout) * std::max(c.w.norm, c.w.act), 2);
}

// Transformer2DModel's GroupNorm and proj_in (and the tokens' reshape), up to the first block.
void attn_in(Rec& r, const Ctx& c, const Unit& u, const Shape& sh) {
  const uint64_t n = r.mul({sh.b, u.cin, sh.hw()});
  r.layer().input_saved = !c.w.amp;  // the residual is read again by attn_out (a skip)
  group_norm(r, c, n, "norm input in fp32");
  if (!u.linear_proj) {
    matmul_input(r, c, n, "proj_in input (norm output; a 1x1 conv)");
    r.forward_temp(n * c.w.act);  // proj_in's output before the token reshape copies it
    r.output("tokens (proj_in output reshaped: a copy)", n * c.w.act,
             "the first block's norm1 keeps it");
  } else {
    r.forward_temp(n * c.w.norm);  // the norm's output before the token reshape copies it
    matmul_input(r, c, n, "proj_in input (norm output reshaped to tokens: a copy)");
    r.output("proj_in output (tokens)", n * c.w.act, "the first block's norm1 keeps it");
  }
  r.backward_temp(n * std::max(c.w.norm, c.w.act), 2);
}

void basic_block(Rec& r, const Ctx& c, const Unit& u, const Shape& sh) {
  const uint64_t t = sh.hw(), d = u.cout, i = 4 * d;  // FeedForward mult 4, GEGLU proj 2i
  const uint64_t T = r.mul({sh.b, t, d}), rows = sh.b * t;
  r.layer().input_saved = !c.w.amp;
  dif::layer_norm(r, c, T, rows, false, "norm1 input in fp32");
  matmul_input(r, c, T, "to_q, to_k, to_v input (norm1 output)", 3);
  dif::attention_core(r, c.w, c.eager, sh.b, u.heads, d, t, t);
  dif::layer_norm(r, c, T, rows, true, "norm2 input (residual sum)");
  matmul_input(r, c, T, "attn2 to_q input (norm2 output)");
  // attn2's to_k and to_v keep encoder_hidden_states (the batch's text embeddings)
  dif::attention_core(r, c.w, c.eager, sh.b, u.heads, d, t, sh.text);
  dif::layer_norm(r, c, T, rows, true, "norm3 input (residual sum)");
  matmul_input(r, c, T, "ff proj input (norm3 output)");
  r.save("GEGLU proj output (hidden and gate halves)", r.mul({sh.b, t, 2 * i, c.w.act}),
         "GeluBackward0 keeps the gate, MulBackward0 the hidden half: views of one output");
  // the GEGLU backward: the two halves' gradients (one 2i tensor) beside the saved tensors
  r.backward_temp(r.mul({sh.b, t, 2 * i, c.w.act}) + T * c.w.norm);
  r.save("gelu(gate)", r.mul({sh.b, t, i, c.w.act}), "MulBackward0 keeps it");
  r.save("ff output linear input (hidden * gelu(gate))", r.mul({sh.b, t, i, c.w.act}),
         "AddmmBackward0 keeps its input");
  r.forward_temp(T * c.w.act);  // the feed-forward's output before the residual sum
  r.output("block output (residual sum)", T * c.w.act,
           "the next block's norm1 or proj_out keeps it");
}

// Transformer2DModel's proj_out, the reshape back to channels first, the residual.
void attn_out(Rec& r, const Ctx& c, const Unit& u, const Shape& sh, uint32_t residual_from) {
  const uint64_t n = r.mul({sh.b, u.cout, sh.hw(), c.w.act});
  LayerActivations& l = r.layer();
  if (!u.linear_proj) {
    l.input_saved = false;  // the contiguous copy, not the block output, is what proj_out keeps
    r.save("proj_out input (tokens back to channels first: a contiguous copy)", n,
           "ConvolutionBackward0 keeps its input");
  } else {
    r.forward_temp(n);  // proj_out's output reshaped back: a contiguous copy
  }
  r.forward_temp(n);  // proj_out's output before the residual sum
  // the residual is Transformer2DModel's input: read here, kept until now; its gradient is this
  // unit's output gradient (AddBackward0 passes one tensor to both), held until the norm's
  // backward adds to it
  l.skips.push_back({residual_from, n});
  r.output("output (proj_out + residual)", n, "the next unit keeps it");
  r.backward_temp(n, 2);
}

void sampler(Rec& r, const Ctx& c, const Unit& u, const Shape& sh, bool up) {
  const uint64_t n = r.mul({sh.b, u.cout, sh.hw(), c.w.act});
  if (!up) {
    // Downsample2D: a 3x3 conv with stride 2 keeps its input (the previous output)
    r.output("downsampled output", n / 4, "the next unit keeps it");
    r.backward_temp(n, 1);
    return;
  }
  // Upsample2D: F.interpolate(nearest, x2) keeps only sizes; the conv keeps the upsampled copy
  r.layer().input_saved = false;
  r.save("conv input (nearest x2 upsampled)", 4 * n, "ConvolutionBackward0 keeps its input");
  r.output("upsampled output", 4 * n, "the next unit keeps it");
  r.backward_temp(4 * n, 1);
}

void unet_stem(Rec& r, const Ctx& c, const Unit& u) {
  const uint64_t b = c.b, a = c.w.act, temb = c.net.temb;
  // Timesteps (no parameters, fp32) cast to the sample's dtype, TimestepEmbedding
  r.save("time_embedding linear_1 input (sinusoidal embedding)", r.mul({b, u.cout, a}),
         "AddmmBackward0 keeps its input");
  r.save("time_embedding SiLU input, linear_2 input", r.mul({2, b, temb, a}),
         "SiluBackward0, AddmmBackward0", 2);
  if (c.net.add_in) {  // SDXL: add_embedding over concat(text_embeds, time_ids embedding)
    r.save("add_embedding linear_1 input (text_embeds and time ids)", r.mul({b, c.net.add_in, a}),
           "AddmmBackward0 keeps its input");
    r.save("add_embedding SiLU input, linear_2 input", r.mul({2, b, temb, a}),
           "SiluBackward0, AddmmBackward0", 2);
  }
  r.save("time embedding (every resnet's SiLU keeps it)", r.mul({b, temb, a}),
         "SiluBackward0 of each time_emb_proj branch: one storage");
  r.output("conv_in output", r.mul({b, u.cout, c.H, c.W, a}), "the first resnet keeps it");
}

// conv_norm_out, SiLU, conv_out and diffusers' loss: F.mse_loss(pred.float(), target.float()).
void unet_head(Rec& r, const Ctx& c, const Unit& u) {
  const uint64_t n = r.mul({c.b, u.cin, c.H, c.W}), pred = r.mul({c.b, u.cout, c.H, c.W, 4});
  r.layer().input_saved = !c.w.amp;
  group_norm(r, c, n, "conv_norm_out input in fp32");
  r.save("SiLU input (norm output)", n * c.w.norm, "SiluBackward0 keeps its input");
  matmul_input(r, c, n, "conv_out input (SiLU output)");
  r.save("model output in fp32 (mse_loss input)", pred, "MseLossBackward0 keeps its input");
  if (c.w.act != 4)
    r.save("target in fp32 (target.float(): a copy)", pred, "MseLossBackward0 keeps its target");
  r.output("loss (scalar)", 4, "the loss tensor");
  r.backward_temp(n * std::max(c.w.norm, c.w.act), 2);
}

double unit_flops(const Ctx& c, const Unit& u, const Shape& sh) {
  const double bhw = static_cast<double>(sh.b) * sh.hw(), ci = u.cin, co = u.cout;
  switch (u.kind) {
    case UnitKind::resnet:  // conv1, conv2 (3x3), conv_shortcut (1x1)
      return 2 * bhw * 9 * (ci * co + co * co) + (ci != co ? 2 * bhw * ci * co : 0);
    case UnitKind::attn_in:
    case UnitKind::attn_out:
      return 2 * bhw * co * co;
    case UnitKind::block:  // q, k, v, out, attn2 q and out, ff (GEGLU 2 x 4d, then 4d); QK^T, PV
      return 2 * bhw * co * co * (4 + 2 + 8 + 4) + 4.0 * c.text * sh.b * u.cross * co +
             4 * bhw * (static_cast<double>(sh.hw()) + c.text) * co;
    case UnitKind::downsample:
      return 2 * bhw / 4 * 9 * co * co;
    case UnitKind::upsample:
      return 2 * bhw * 4 * 9 * co * co;
    default:
      return 2 * static_cast<double>(c.b) * c.H * c.W * 9 * ci * co;
  }
}

void unet_unit(Rec& r, const Ctx& c, size_t idx) {
  const Unit& u = c.net.units[idx];
  const Shape sh = shape_at(c, u.level);
  switch (u.kind) {
    case UnitKind::stem:
      return unet_stem(r, c, u);
    case UnitKind::resnet:
      if (u.skip_from >= 0)
        r.layer().skips.push_back({static_cast<uint32_t>(u.skip_from),
                                   r.mul({sh.b, c.net.units[u.skip_from].cout, sh.hw(), c.w.act})});
      return resnet(r, c, u, sh);
    case UnitKind::attn_in:
      return attn_in(r, c, u, sh);
    case UnitKind::block:
      return basic_block(r, c, u, sh);
    case UnitKind::attn_out: {
      size_t k = idx;  // the Transformer2DModel's attn_in: its input is the residual
      while (k > 0 && c.net.units[k].kind != UnitKind::attn_in) --k;
      return attn_out(r, c, u, sh, static_cast<uint32_t>(k - 1));
    }
    case UnitKind::downsample:
      return sampler(r, c, u, sh, false);
    case UnitKind::upsample:
      return sampler(r, c, u, sh, true);
    case UnitKind::head:
      return unet_head(r, c, u);
    default:
      fail(code::kInternal, "model", Message{"error.internal.unetUnit", {}});
  }
}

const char* unit_name(UnitKind k) {
  static const char* const kNames[] = {
      "stem",          "resnet",       "attention in",      "transformer block",
      "attention out", "downsample",   "upsample",          "joint block",
      "double block",  "single block", "transformer block", "head"};
  return kNames[static_cast<size_t>(k)];
}

}  // namespace

namespace {

// The settings a diffusion network cannot take, and the image it runs at.
void check_diffusion(const Net& net, const Settings& s, uint64_t* H, uint64_t* W) {
  if (net.vae) fail(code::kUnsupported, "model", Message{"error.diffusion.vae", {}});
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
  if (s.tensor_parallel != 1 || s.sequence_parallel)
    fail(code::kUnsupported, "tensorParallel",
         Message{"error.diffusion.tensorParallel", {{"cls", net.cls}}});
  if (s.float8)
    fail(code::kUnsupported, "float8", Message{"error.diffusion.float8", {{"cls", net.cls}}});
  if (s.loss != Settings::Loss::cross_entropy)
    fail(code::kUnsupported, "loss", Message{"error.diffusion.loss", {}});
  const uint64_t fallback = net.sample_size * net.vae_scale;
  const uint64_t px_h = s.image_height     ? s.image_height
                        : net.image_height ? net.image_height
                                           : fallback;
  const uint64_t px_w = s.image_width ? s.image_width : net.image_width ? net.image_width : px_h;
  // the UNet halves its latent at every level but the last; the transformers take patches
  uint64_t levels = 0;
  for (const Unit& u : net.units) levels = std::max<uint64_t>(levels, u.level);
  const uint64_t unit =
      net.vae_scale * (net.cls == "UNet2DConditionModel" ? (1ull << levels) : net.patch);
  if (px_h % unit != 0 || px_w % unit != 0 || px_h == 0 || px_w == 0)
    fail(code::kInconsistent, "imageSize",
         Message{net.cls == "UNet2DConditionModel" ? "error.diffusion.imageUnet"
                                                   : "error.diffusion.imagePatch",
                 {{"height", std::to_string(px_h)},
                  {"width", std::to_string(px_w)},
                  {"unit", std::to_string(unit)},
                  {"cls", net.cls},
                  {"vae", std::to_string(net.vae_scale)}}});
  *H = px_h / net.vae_scale;
  *W = px_w / net.vae_scale;
  if (net.cls != "UNet2DConditionModel") {
    *H /= net.patch;
    *W /= net.patch;
  }
}

// What the result states about the recipe.
void diffusion_assumptions(const Net& net, const Settings& s, const Widths& w, bool eager,
                           std::vector<Text>* out) {
  out->push_back(Text("dif.assume.recipe", {{"cls", net.cls}}));
  if (w.amp) out->push_back(Text("dif.assume.autocast", {}));
  if (s.compiled) out->push_back(Text("dif.assume.compile", {}));
  if (!eager)
    out->push_back(Text("dif.assume.sdpa", {}));
  else if (net.cls != "UNet2DConditionModel")
    out->push_back(Text("dif.assume.eager", {}));
}

}  // namespace

ModelActivations diffusion_activations(const ModelDescription& m, const Settings& s) {
  const Net& net = *m.diffusion;
  uint64_t H = 0, W = 0;
  check_diffusion(net, s, &H, &W);
  const Widths w = dif::widths(s);
  const bool eager = s.attention == Attention::eager;
  const uint64_t text = net.text_dim ? s.seq_len : 0;
  const Ctx c{net, s, w, eager, s.micro_batch, H, W, text};
  const bool unet = net.cls == "UNet2DConditionModel";
  ModelActivations out;
  out.recipe = unet ? "unet" : m.arch.model_type;
  // the batch: latents, the noise target, text embeddings (+ SDXL's pooled embeddings and time
  // ids), timesteps (int64)
  // (Flux's tokens carry 2x2 latent pixels each: in_channels is 4 x the latent's)
  const bool flux = net.cls == "FluxTransformer2DModel";
  const uint64_t px = unet || flux ? H * W : H * W * net.patch * net.patch;
  const uint64_t latents = checked_mul(checked_mul(s.micro_batch, px, "imageSize"),
                                       net.in_channels * w.act, "imageSize");
  const uint64_t texts =
      checked_mul(checked_mul(s.micro_batch, text, "seqLen"), net.text_dim * w.act, "seqLen");
  out.input_bytes = checked_add(2 * latents, texts, "imageSize") +
                    s.micro_batch * ((net.pooled_dim + (net.add_time_dim ? 6 : 0)) * w.act + 8);
  for (size_t i = 0; i < net.units.size(); ++i) {
    const Unit& u = net.units[i];
    LayerActivations l;
    l.name = unit_name(u.kind) + std::string(" ") + std::to_string(i);
    if (i == 0) l.name = "stem";
    if (i + 1 == net.units.size()) l.name = "head";
    Rec r(s, &l);
    if (unet) {
      unet_unit(r, c, i);
      l.forward_flops = unit_flops(c, u, shape_at(c, u.level));
    } else {
      dif::transformer_unit(r, c, i);
      l.forward_flops = dif::transformer_flops(c, u);
    }
    r.finish();
    if (l.forward_flops <= 0) l.forward_flops = 1;
    l.checkpointable = u.checkpointable;
    dif::set_rows(c, u, &l);
    out.layers.push_back(std::move(l));
  }
  out.total_saved_bytes = dif::kept_total(out, "imageSize");
  diffusion_assumptions(net, s, w, eager, &out.assumptions);
  add_lora_adapters(m, s, checked_mul(s.micro_batch, s.seq_len, "seqLen"), &out);
  return out;
}

}  // namespace activations
}  // namespace trainmem
