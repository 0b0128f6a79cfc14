// HuggingFace SegFormer (transformers src/transformers/models/segformer/modeling_segformer.py
// @01ae98ae2414210efd0d9ac1ffe78ff21588f1f7: SegformerOverlapPatchEmbeddings,
// SegformerEfficientSelfAttention (keys and values from a sequence-reduction convolution and
// LayerNorm), SegformerMixFFN (dense, depth-wise conv, GELU, dense), SegformerLayer,
// SegformerEncoder (a LayerNorm and a contiguous [B, C, H, W] copy at each stage's end: the
// features the decode head reads), SegformerDecodeHead (a linear per stage, upsampled to 1/4,
// concatenated, 1x1 conv, batch norm, ReLU, dropout, classifier), SegformerForSemanticSegmentation
// (logits upsampled to the labels' size, cross-entropy over every pixel),
// SegformerForImageClassification). The model has no gradient checkpointing in transformers.
// Chain: stage 1's patch embedding, one layer per SegformerLayer (a stage's patch embedding
// runs in its first layer, its LayerNorm and copy in its last), the head. Each stage's output
// is the last layer's output, which the decode head keeps too: without checkpointing, or with
// every layer checkpointed, it is counted once where it is made (docs/models.md).
// NetSpec: stages (depth, width, heads, kernel = patch size, stride, expand = mlp ratio,
// extra = sr ratio), intermediate (decoder_hidden_size), dropout, attention_dropout,
// classifier_dropout, drop_path, act, num_classes, variant.
#include <algorithm>

#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

V overlap_embed(Graph& g, const std::string& p, V x, const NetStage& st) {
  g.module(p);
  x = conv2d(g, p + ".proj", x, st.width, st.kernel, st.stride, st.kernel / 2, 1, true);
  const uint64_t B = g.shape(x)[0], H = g.shape(x)[2], W = g.shape(x)[3];
  x = permute(g, view(g, x, {B, st.width, H * W}), {0, 2, 1});  // flatten(2).transpose(1, 2)
  return layer_norm(g, p + ".layer_norm", x);
}

V efficient_attention(Graph& g, const NetSpec& n, const std::string& a, V x, uint64_t H, uint64_t W,
                      const NetStage& st) {
  const uint64_t B = g.shape(x)[0], T = g.shape(x)[1], C = st.width, d = C / st.heads;
  g.module(a);
  g.module(a + ".self");
  V q = linear(g, a + ".self.query", x, C, true);
  g.module(a + ".self.dropout");
  V kv = x;
  if (st.extra > 1) {  // sequence reduction: permute + reshape (a copy), conv, LayerNorm
    kv = copy(g, permute(g, x, {0, 2, 1}), {B, C, H, W});
    kv = conv2d(g, a + ".self.sr", kv, C, st.extra, st.extra, 0, 1, true);
    const uint64_t S = g.shape(kv)[2] * g.shape(kv)[3];
    kv = permute(g, view(g, kv, {B, C, S}), {0, 2, 1});
    kv = layer_norm(g, a + ".self.layer_norm", kv);
  }
  const uint64_t S = g.shape(kv)[1];
  V k = linear(g, a + ".self.key", kv, C, true);
  V v = linear(g, a + ".self.value", kv, C, true);
  q = permute(g, view(g, q, {B, T, st.heads, d}), {0, 2, 1, 3});
  k = permute(g, view(g, k, {B, S, st.heads, d}), {0, 2, 1, 3});
  v = permute(g, view(g, v, {B, S, st.heads, d}), {0, 2, 1, 3});
  V probs = scale(g, matmul(g, q, permute(g, k, {0, 1, 3, 2}), {B, st.heads, T, S}));
  probs = dropout(g, softmax(g, probs), n.attention_dropout);
  V ctx = matmul(g, probs, v, {B, st.heads, T, d});
  ctx = view(g, contiguous(g, permute(g, ctx, {0, 2, 1, 3})), {B, T, C});
  g.module(a + ".output");
  ctx = linear(g, a + ".output.dense", ctx, C, true);
  g.module(a + ".output.dropout");
  return dropout(g, ctx, n.dropout);
}

V segformer_layer(Graph& g, const NetSpec& n, const std::string& l, V x, uint64_t H, uint64_t W,
                  const NetStage& st, double dp) {
  const uint64_t B = g.shape(x)[0], C = st.width, hid = C * st.expand;
  g.module(l);
  V h =
      efficient_attention(g, n, l + ".attention", layer_norm(g, l + ".layer_norm_1", x), H, W, st);
  g.module(l + ".drop_path");
  x = add(g, drop_path(g, h, dp, true), x);
  g.module(l + ".mlp");
  V y = linear(g, l + ".mlp.dense1", layer_norm(g, l + ".layer_norm_2", x), hid, true);
  g.module(l + ".mlp.dwconv");
  y = view(g, permute(g, y, {0, 2, 1}), {B, hid, H, W});  // transpose(1, 2).view
  y = conv2d(g, l + ".mlp.dwconv.dwconv", y, hid, 3, 1, 1, hid, true);
  y = permute(g, view(g, y, {B, hid, H * W}), {0, 2, 1});  // flatten(2).transpose(1, 2)
  g.module(l + ".mlp.intermediate_act_fn");
  y = dropout(g, act(g, act_named(n.act), y), n.dropout);
  y = linear(g, l + ".mlp.dense2", y, C, true);
  g.module(l + ".mlp.dropout");
  y = dropout(g, y, n.dropout);
  return add(g, drop_path(g, y, dp, true), x);
}

// SegformerDecodeHead on the stage outputs, then the loss over the upsampled logits.
V decode_head(Graph& g, const NetSpec& n, const std::vector<V>& feats) {
  const uint64_t B = g.shape(feats[0])[0], D = n.intermediate;
  const uint64_t H1 = g.shape(feats[0])[2], W1 = g.shape(feats[0])[3];
  g.module("decode_head");
  g.module("decode_head.linear_c");
  std::vector<V> ups;
  for (size_t i = 0; i < feats.size(); ++i) {
    const Shape s = g.shape(feats[i]);
    const std::string m = "decode_head.linear_c." + std::to_string(i);
    g.module(m);
    V e = permute(g, view(g, feats[i], {B, s[1], s[2] * s[3]}), {0, 2, 1});
    e = linear(g, m + ".proj", e, D, true);
    e = copy(g, permute(g, e, {0, 2, 1}), {B, D, s[2], s[3]});  // permute + reshape: a copy
    ups.push_back(interpolate(g, e, {B, D, H1, W1}));
  }
  std::reverse(ups.begin(), ups.end());
  V x = conv2d(g, "decode_head.linear_fuse", cat(g, ups, 1), D, 1, 1, 0);
  x = batch_norm(g, "decode_head.batch_norm", x);
  g.module("decode_head.activation");
  x = act(g, Act::relu, x);
  g.module("decode_head.dropout");
  x = dropout(g, x, n.classifier_dropout);
  x = conv2d(g, "decode_head.classifier", x, n.num_classes, 1, 1, 0, 1, true);
  // upsampled to the labels' size, CrossEntropyLoss(ignore_index) over every pixel
  const uint64_t S = n.image_size;
  x = interpolate(g, x, {B, n.num_classes, S, S});
  V logits = view(g, permute(g, x, {0, 2, 3, 1}), {B * S * S, n.num_classes});
  return cross_entropy(g, logits);
}

}  // namespace

void hf_segformer(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  const std::string p = n.variant == "SegformerModel" ? "" : "segformer.";
  g.module("");
  if (!p.empty()) g.module("segformer");
  g.module(p + "encoder");
  g.module(p + "encoder.patch_embeddings");
  g.module(p + "encoder.block");
  g.module(p + "encoder.layer_norm");
  g.layer("stage 1 patch embedding", -1);
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  x = overlap_embed(g, p + "encoder.patch_embeddings.0", x, n.stages[0]);
  uint64_t H = (S + 2 * (n.stages[0].kernel / 2) - n.stages[0].kernel) / n.stages[0].stride + 1;
  uint64_t W = H;
  g.output(x);
  uint64_t total = 0, k = 0;
  for (const auto& st : n.stages) total += st.depth;
  std::vector<V> feats;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const NetStage& st = n.stages[s];
    const std::string blk = p + "encoder.block." + std::to_string(s);
    g.module(blk);
    for (uint64_t j = 0; j < st.depth; ++j, ++k) {
      g.layer("layer " + std::to_string(k) + " (stage " + std::to_string(s + 1) + ")",
              static_cast<int64_t>(k));
      if (j == 0 && s > 0) {
        x = overlap_embed(g, p + "encoder.patch_embeddings." + std::to_string(s), x, st);
        H = (H + 2 * (st.kernel / 2) - st.kernel) / st.stride + 1;
        W = H;
      }
      g.tokens(B * H * W);
      const double dp = total > 1 ? n.drop_path * static_cast<double>(k) / (total - 1.0) : 0;
      x = segformer_layer(g, n, blk + "." + std::to_string(j), x, H, W, st, dp);
      if (j + 1 == st.depth) {  // the stage's LayerNorm, then [B, C, H, W] contiguous
        x = layer_norm(g, p + "encoder.layer_norm." + std::to_string(s), x);
        x = copy(g, permute(g, view(g, x, {B, H, W, st.width}), {0, 3, 1, 2}), {B, st.width, H, W});
        feats.push_back(x);
      }
      g.output(x);
    }
  }
  g.layer("head", static_cast<int64_t>(k));
  if (n.variant == "SegformerForSemanticSegmentation") {
    g.output(decode_head(g, n, feats));
    return;
  }
  const uint64_t c = n.stages.back().width;
  // SegformerForImageClassification: permute, reshape, mean over the tokens
  V pooled = mean_dim(g, copy(g, permute(g, x, {0, 2, 3, 1}), {B, H * W, c}), 1);
  if (n.num_classes > 0) {
    g.output(classify(g, "classifier", pooled, n.num_classes));
    return;
  }
  g.assume(Text("net.assume.bare.pooled", {{"model", "SegformerModel"}})
               .then({"net.assume.head.decode",
                      {{"architecture", "SegformerForSemanticSegmentation"}}}));
  g.output(mean_dim(g, view(g, pooled, {B * c}), 0));
}

}  // namespace net
}  // namespace trainmem
