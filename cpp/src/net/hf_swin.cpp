// HuggingFace Swin Transformer (transformers src/transformers/models/swin/modeling_swin.py
// @0004a3c206a354820edc45954e80b6657f10a7c7: SwinEmbeddings, window_partition / window_reverse,
// SwinSelfAttention (matmul, / sqrt(d), + relative position bias, + shift mask, softmax,
// matmul), SwinLayer (pad, roll, partition, attention, reverse, roll back), SwinPatchMerging
// at the end of a stage, SwinEncoder (gradient checkpointing wraps a whole SwinStage),
// SwinModel (layernorm, AdaptiveAvgPool1d), SwinForImageClassification). Chain: the
// embeddings, one layer per stage (what gradient_checkpointing wraps: its blocks and its
// patch merging), the head. NetSpec: stem (embed_dim), stages (depth, heads), patch, window
// (patch field of the stages: extra), act, dropout, attention_dropout, drop_path, qkv_bias,
// num_classes, variant.
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

struct Window {
  uint64_t size, shift;
};

// SwinSelfAttention + SwinSelfOutput on windows [B * nW, N, C].
V window_attention(Graph& g, const NetSpec& n, const std::string& a, V x, uint64_t heads,
                   bool masked) {
  const Shape s = g.shape(x);
  const uint64_t BW = s[0], N = s[1], C = s[2], d = C / heads, w = n.patch;
  g.module(a);
  g.module(a + ".self");
  g.param(a + ".self.relative_position_bias_table", {(2 * w - 1) * (2 * w - 1), heads});
  g.buffer(a + ".self.relative_position_index", {N, N}, DType::int64);
  V q = linear(g, a + ".self.query", x, C, n.qkv_bias);
  V k = linear(g, a + ".self.key", x, C, n.qkv_bias);
  V v = linear(g, a + ".self.value", x, C, n.qkv_bias);
  g.module(a + ".self.dropout");
  q = permute(g, view(g, q, {BW, N, heads, d}), {0, 2, 1, 3});
  k = permute(g, view(g, k, {BW, N, heads, d}), {0, 2, 1, 3});
  v = permute(g, view(g, v, {BW, N, heads, d}), {0, 2, 1, 3});
  V scores = scale(g, matmul(g, q, permute(g, k, {0, 1, 3, 2}), {BW, heads, N, N}));
  const V bias = copy(g, g.weight_value({1, heads, N, N}), {1, heads, N, N});  // gather+permute
  scores = add(g, scores, bias);
  if (masked) scores = scale(g, scores);  // view(...) + attention_mask, view back
  V probs = dropout(g, softmax(g, scores), n.attention_dropout);
  V ctx = matmul(g, probs, v, {BW, heads, N, d});
  ctx = view(g, contiguous(g, permute(g, ctx, {0, 2, 1, 3})), {BW, N, C});
  g.module(a + ".output");
  ctx = linear(g, a + ".output.dense", ctx, C, true);
  g.module(a + ".output.dropout");
  return dropout(g, ctx,
                 n.attention_dropout);  // SwinSelfOutput drops at attention_probs_dropout_prob
}

V swin_layer(Graph& g, const NetSpec& n, const std::string& l, V x, uint64_t H, uint64_t W,
             uint64_t heads, Window win, double dp) {
  const uint64_t B = g.shape(x)[0], C = g.shape(x)[2];
  if (std::min(H, W) <= win.size) win = {std::min(H, W), 0};  // set_shift_and_window_size
  const uint64_t ws = win.size;
  const uint64_t pH = (H + ws - 1) / ws * ws, pW = (W + ws - 1) / ws * ws;
  g.module(l);
  const V shortcut = x;
  V h = layer_norm(g, l + ".layernorm_before", x);
  h = copy(g, view(g, h, {B, H, W, C}), {B, pH, pW, C});  // maybe_pad: F.pad makes a new tensor
  if (win.shift) h = copy(g, h, g.shape(h));              // torch.roll
  const uint64_t nW = (pH / ws) * (pW / ws);
  h = copy(g, h, {B * nW, ws * ws, C});  // window_partition: permute(...).contiguous()
  g.module(l + ".attention");
  h = window_attention(g, n, l + ".attention", h, heads, win.shift > 0);
  h = copy(g, h, {B, pH, pW, C});             // window_reverse: permute(...).contiguous()
  if (win.shift) h = copy(g, h, g.shape(h));  // roll back
  if (pH != H || pW != W) h = copy(g, h, {B, H, W, C});  // [:, :H, :W, :].contiguous()
  h = view(g, h, {B, H * W, C});
  g.module(l + ".drop_path");
  x = add(g, shortcut, drop_path(g, h, dp, true));
  V y = layer_norm(g, l + ".layernorm_after", x);
  g.module(l + ".intermediate");
  y = linear(g, l + ".intermediate.dense", y, static_cast<uint64_t>(n.width_mult * C), true);
  g.module(l + ".intermediate.intermediate_act_fn");
  y = act(g, act_named(n.act), y);
  g.module(l + ".output");
  y = linear(g, l + ".output.dense", y, C, true);
  g.module(l + ".output.dropout");
  return add(g, x, dropout(g, y, n.dropout));
}

// SwinPatchMerging on [B, H * W, C]: view, pad, four strided slices, cat, LayerNorm, Linear.
V patch_merging(Graph& g, const std::string& p, V x, uint64_t H, uint64_t W) {
  const uint64_t B = g.shape(x)[0], C = g.shape(x)[2];
  g.module(p);
  x = view(g, x, {B, H, W, C});
  if (H % 2 || W % 2) x = copy(g, x, {B, H + H % 2, W + W % 2, C});
  const Shape q{B, (H + 1) / 2, (W + 1) / 2, C};
  x = cat(g, {slice(g, x, q), slice(g, x, q), slice(g, x, q), slice(g, x, q)}, 3);
  x = view(g, x, {B, q[1] * q[2], 4 * C});
  g.module(p + ".reduction");
  g.param(p + ".reduction.weight", {2 * C, 4 * C}, LinearKind::linear);
  x = layer_norm(g, p + ".norm", x);
  return linear_op(g, x, 2 * C);
}

}  // namespace

void hf_swin(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size, C0 = n.stem;
  const std::string p = n.variant == "SwinModel" ? "" : "swin.";
  g.module("");
  if (!p.empty()) g.module("swin");
  g.layer("embeddings", -1);
  g.module(p + "embeddings");
  g.module(p + "embeddings.patch_embeddings");
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  const uint64_t P = n.stages[0].kernel;  // patch size
  if (S % P) x = copy(g, x, {B, n.channels, (S + P - 1) / P * P, (S + P - 1) / P * P});
  x = conv2d(g, p + "embeddings.patch_embeddings.projection", x, C0, P, P, 0, 1, true);
  uint64_t H = g.shape(x)[2], W = g.shape(x)[3];
  x = permute(g, view(g, x, {B, C0, H * W}), {0, 2, 1});  // flatten(2).transpose(1, 2)
  x = layer_norm(g, p + "embeddings.norm", x);
  g.module(p + "embeddings.dropout");
  x = dropout(g, x, n.dropout);
  g.output(x);
  g.module(p + "encoder");
  g.module(p + "encoder.layers");
  uint64_t total = 0, k = 0;
  for (const auto& st : n.stages) total += st.depth;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const std::string stage = p + "encoder.layers." + std::to_string(s);
    g.layer("stage " + std::to_string(s), static_cast<int64_t>(s));
    g.tokens(B * H * W);
    g.module(stage);
    g.module(stage + ".blocks");
    for (uint64_t j = 0; j < n.stages[s].depth; ++j, ++k) {
      const double dp = total > 1 ? n.drop_path * static_cast<double>(k) / (total - 1.0) : 0;
      const Window win{n.patch, j % 2 ? n.patch / 2 : 0};
      x = swin_layer(g, n, stage + ".blocks." + std::to_string(j), x, H, W, n.stages[s].heads, win,
                     dp);
    }
    if (s + 1 < n.stages.size()) {
      x = patch_merging(g, stage + ".downsample", x, H, W);
      H = (H + 1) / 2;
      W = (W + 1) / 2;
    }
    g.output(x);
  }
  g.layer("head", static_cast<int64_t>(n.stages.size()));
  g.tokens(B);
  const uint64_t c = g.shape(x)[2];
  x = layer_norm(g, p + "layernorm", x);
  g.module(p + "pooler");  // AdaptiveAvgPool1d(1) over the tokens of the transposed output
  x = view(g, mean_dim(g, permute(g, x, {0, 2, 1}), 2), {B, c});
  if (n.num_classes > 0) {
    g.output(classify(g, "classifier", x, n.num_classes));
    return;
  }
  g.assume(
      Text("net.assume.bare.pooled", {{"model", "SwinModel"}})
          .then({"net.assume.head.classifier", {{"architecture", "SwinForImageClassification"}}}));
  g.output(mean_dim(g, view(g, x, {B * c}), 0));
}

}  // namespace net
}  // namespace trainmem
