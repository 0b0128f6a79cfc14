// torchvision Swin Transformer (pytorch/vision v0.14.0 torchvision/models/swin_transformer.py:
// _patch_merging_pad, PatchMerging, shifted_window_attention, ShiftedWindowAttention,
// SwinTransformerBlock, SwinTransformer). Its attention is written with matmul and softmax
// (no SDPA in any torch version). Chain: the stem (features.0: 4x4 convolution, Permute,
// LayerNorm), one layer per SwinTransformerBlock (PatchMerging runs in the first block of the
// stage it feeds), the head (norm, permute, avgpool, flatten, head; cross-entropy). NetSpec:
// stem (embed_dim), stages (depth, heads), patch 4, window 7, drop_path, num_classes.
#include "net/recipes.hpp"

namespace trainmem {
namespace net {

V tv_mlp(Graph& g, const std::string& p, V x, uint64_t inner, double p_drop);

namespace {

constexpr uint64_t kWindow = 7;

// shifted_window_attention on x [B, H, W, C] (a LayerNorm output).
V window_attention(Graph& g, const std::string& p, V x, uint64_t heads, bool shift) {
  const Shape s = g.shape(x);
  const uint64_t B = s[0], H = s[1], W = s[2], C = s[3], d = C / heads, N = kWindow * kWindow;
  g.module(p);
  g.param(p + ".relative_position_bias_table", {(2 * kWindow - 1) * (2 * kWindow - 1), heads});
  g.buffer(p + ".relative_position_index", {N * N}, DType::int64);
  // the bias: table[index] gathered, permuted, made contiguous (transients)
  const V bias = copy(g, g.weight_value({1, heads, N, N}), {1, heads, N, N});
  const uint64_t pH = (H + kWindow - 1) / kWindow * kWindow,
                 pW = (W + kWindow - 1) / kWindow * kWindow;
  x = copy(g, x, {B, pH, pW, C});  // F.pad (a new tensor even when nothing is padded)
  // a window as large as the map: no shift (shift_size set to 0)
  const bool shifted = shift && pH > kWindow && pW > kWindow;
  if (shifted) x = copy(g, x, g.shape(x));  // torch.roll
  const uint64_t nW = (pH / kWindow) * (pW / kWindow);
  x = copy(g, x, {B * nW, N, C});  // view(...).permute(0, 1, 3, 2, 4, 5).reshape: a copy
  g.module(p + ".qkv");
  g.param(p + ".qkv.weight", {3 * C, C}, LinearKind::linear);
  g.param(p + ".qkv.bias", {3 * C});
  // qkv.reshape(B * nW, N, 3, heads, d).permute(2, 0, 3, 1, 4)
  const V qv =
      permute(g, view(g, linear_op(g, x, 3 * C), {B * nW, N, 3, heads, d}), {2, 0, 3, 1, 4});
  const Shape part{B * nW, heads, N, d};
  V q = slice(g, qv, part), k = slice(g, qv, part), v = slice(g, qv, part);  // qkv[0], [1], [2]
  q = scale(g, q);  // q * (C // heads) ** -0.5: keeps the permuted layout
  V attn = matmul(g, q, permute(g, k, {0, 1, 3, 2}), {B * nW, heads, N, N});
  attn = add(g, attn, bias);           // + relative_position_bias
  if (shifted) attn = scale(g, attn);  // view(...) + attn_mask (a new tensor)
  attn = softmax(g, attn);
  x = matmul(g, attn, v, {B * nW, heads, N, d});
  x = reshape(g, permute(g, x, {0, 2, 1, 3}), {B * nW, N, C});  // transpose(1, 2).reshape
  g.module(p + ".proj");
  g.param(p + ".proj.weight", {C, C}, LinearKind::linear);
  g.param(p + ".proj.bias", {C});
  x = linear_op(g, x, C);
  // view(...).permute(0, 1, 3, 2, 4, 5).reshape(B, pH, pW, C): a copy
  x = copy(g, x, {B, pH, pW, C});
  if (shifted) x = copy(g, x, g.shape(x));               // torch.roll back
  if (pH != H || pW != W) x = copy(g, x, {B, H, W, C});  // x[:, :H, :W, :].contiguous()
  return x;
}

V swin_block(Graph& g, const std::string& p, V x, uint64_t heads, bool shift, double sd) {
  const uint64_t C = g.shape(x).back();
  g.module(p);
  V h = layer_norm(g, p + ".norm1", x);
  h = window_attention(g, p + ".attn", h, heads, shift);
  g.module(p + ".stochastic_depth");
  x = add(g, x, drop_path(g, h, sd, false));
  V y = layer_norm(g, p + ".norm2", x);
  y = tv_mlp(g, p + ".mlp", y, 4 * C, 0.0);
  return add(g, x, drop_path(g, y, sd, false));
}

// PatchMerging: pad, four strided slices concatenated, LayerNorm(4C), Linear(4C, 2C, no bias).
V patch_merging(Graph& g, const std::string& p, V x) {
  const Shape s = g.shape(x);
  const uint64_t B = s[0], H = s[1], W = s[2], C = s[3];
  g.module(p);
  g.module(p + ".reduction");
  g.param(p + ".reduction.weight", {2 * C, 4 * C}, LinearKind::linear);
  g.module(p + ".norm");
  g.param(p + ".norm.weight", {4 * C});
  g.param(p + ".norm.bias", {4 * C});
  x = copy(g, x, {B, H + H % 2, W + W % 2, C});  // F.pad
  const Shape q{B, (H + 1) / 2, (W + 1) / 2, C};
  x = cat(g, {slice(g, x, q), slice(g, x, q), slice(g, x, q), slice(g, x, q)}, 3);
  // the norm and reduction parameters were registered above (module order: reduction, norm)
  x = layer_norm_op(g, x);
  return linear_op(g, x, 2 * C);
}

}  // namespace

void tv_swin(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size, C0 = n.stem;
  g.module("");
  g.module("features");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  g.module("features.0");
  x = conv2d(g, "features.0.0", x, C0, n.patch, n.patch, 0, 1, true);
  g.module("features.0.1");  // Permute([0, 2, 3, 1])
  x = layer_norm(g, "features.0.2", permute(g, x, {0, 2, 3, 1}));
  g.output(x);
  uint64_t total = 0;
  for (const auto& st : n.stages) total += st.depth;
  int64_t block = 0;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const std::string stage = "features." + std::to_string(2 * s + 1);
    for (uint64_t j = 0; j < n.stages[s].depth; ++j, ++block) {
      g.layer("block " + std::to_string(block) + " (" + stage + "." + std::to_string(j) + ")",
              block);
      if (j == 0 && s > 0) x = patch_merging(g, "features." + std::to_string(2 * s), x);
      const Shape sh = g.shape(x);
      g.tokens(sh[0] * sh[1] * sh[2]);
      if (j == 0) g.module(stage);
      const double sd = total > 1 ? n.drop_path * static_cast<double>(block) / (total - 1.0) : 0;
      x = swin_block(g, stage + "." + std::to_string(j), x, n.stages[s].heads, j % 2 == 1, sd);
      g.output(x);
    }
  }
  g.layer("head", block);
  g.tokens(B);
  x = layer_norm(g, "norm", x);
  g.module("permute");
  x = permute(g, x, {0, 3, 1, 2});
  g.module("avgpool");
  x = global_avg_pool(g, x);
  g.module("flatten");
  x = view(g, x, {B, n.hidden});
  g.output(classify(g, "head", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
