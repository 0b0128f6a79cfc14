// HuggingFace ViT, DeiT and DINOv2 (transformers src/transformers/models/vit/modeling_vit.py
// @005db8208dee358fe8fe63ae3cc49dd054aad48d: ViTEmbeddings, ViTLayer, ViTModel, ViTPooler,
// ViTForImageClassification; deit/modeling_deit.py: the distillation token and
// DeiTForImageClassificationWithTeacher's two heads; dinov2/modeling_dinov2.py
// @015e68769f9823df27f5f7372dc155277e6ff7e6: Dinov2Embeddings with the interpolated position
// table, Dinov2Layer with layer scale and drop path, Dinov2ForImageClassification on
// [CLS, mean of the patch tokens]). Chain: the embeddings, one layer per encoder layer (what
// gradient_checkpointing wraps), the head (final layernorm, pooler / classifier, loss).
// NetSpec: variant (the HF class), hidden, layers, heads, intermediate, patch, image_size,
// config_image, channels, num_classes, dropout, attention_dropout, qkv_bias, act, drop_path,
// layer_scale, swiglu, mask_token, extra_tokens (DeiT's distillation token), pooler.
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

std::string prefix_of(const NetSpec& n) {
  if (n.family == "dinov2") return n.variant == "Dinov2Model" ? "" : "dinov2.";
  if (n.family == "deit") return n.variant == "DeiTModel" ? "" : "deit.";
  return n.variant == "ViTModel" ? "" : "vit.";
}

V embeddings(Graph& g, const NetSpec& n, const std::string& p) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size, P = n.patch, h = n.hidden;
  const uint64_t tokens = 1 + n.extra_tokens;  // [CLS] (+ DeiT's distillation token)
  const uint64_t table = (n.config_image / P) * (n.config_image / P) + tokens;
  const std::string e = p + "embeddings";
  g.module(e);
  g.param(e + ".cls_token", {1, 1, h});
  if (n.extra_tokens) g.param(e + ".distillation_token", {1, 1, h});
  if (n.mask_token) g.param(e + ".mask_token", {1, h});
  g.param(e + ".position_embeddings", {1, table, h});
  g.module(e + ".patch_embeddings");
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  x = conv2d(g, e + ".patch_embeddings.projection", x, h, P, P, 0, 1, true);
  const uint64_t np = (S / P) * (S / P);
  x = permute(g, view(g, x, {B, h, np}), {0, 2, 1});  // flatten(2).transpose(1, 2)
  std::vector<V> parts{expand(g, g.weight_value({1, 1, h}), {B, 1, h})};
  if (n.extra_tokens) parts.push_back(expand(g, g.weight_value({1, 1, h}), {B, 1, h}));
  parts.push_back(x);
  x = cat(g, parts, 1);
  // + position_embeddings (interpolated when the image is not the configured size)
  x = add(g, x, g.weight_value({1, np + tokens, h}));
  g.module(e + ".dropout");
  return dropout(g, x, n.dropout);
}

V vit_layer(Graph& g, const NetSpec& n, const std::string& l, V x, double drop_path_p) {
  const bool dino = n.family == "dinov2";
  g.module(l);
  const V residual = x;
  V h = layer_norm(g, l + (dino ? ".norm1" : ".layernorm_before"), x);
  g.module(l + ".attention");
  g.module(l + ".attention.attention");
  if (!dino) g.module(l + ".attention.attention.dropout");
  g.module(l + ".attention.output");
  HfAttention a;
  const std::string sa = l + ".attention.attention";
  a.q = sa + ".query";
  a.k = sa + ".key";
  a.v = sa + ".value";
  a.o = l + ".attention.output.dense";
  a.q_bias = a.k_bias = a.v_bias = n.qkv_bias;
  a.heads = n.heads;
  a.dropout = n.attention_dropout;
  h = hf_attention(g, h, a);
  g.module(l + ".attention.output.dropout");
  h = dropout(g, h, n.dropout);
  if (dino) {
    g.module(l + ".layer_scale1");
    g.param(l + ".layer_scale1.lambda1", {n.hidden});
    h = mul_param(g, h);
    g.module(l + ".drop_path");
    h = drop_path(g, h, drop_path_p, true);
  }
  x = add(g, h, residual);
  V y = layer_norm(g, l + (dino ? ".norm2" : ".layernorm_after"), x);
  if (dino) {
    g.module(l + ".mlp");
    if (n.swiglu) {  // Dinov2SwiGLUFFN: weights_in -> chunk -> silu(x1) * x2 -> weights_out
      const uint64_t hid = (n.intermediate * 2 / 3 + 7) / 8 * 8;
      y = linear(g, l + ".mlp.weights_in", y, 2 * hid, true);
      const Shape half = with(g.shape(y), g.shape(y).size() - 1, hid);
      auto parts = split(g, y, 2, half);
      y = mul(g, act(g, Act::silu, parts[0]), parts[1]);
      y = linear(g, l + ".mlp.weights_out", y, n.hidden, true);
    } else {
      y = linear(g, l + ".mlp.fc1", y, n.intermediate, true);
      g.module(l + ".mlp.activation");
      y = act(g, act_named(n.act), y);
      y = linear(g, l + ".mlp.fc2", y, n.hidden, true);
    }
    g.module(l + ".layer_scale2");
    g.param(l + ".layer_scale2.lambda1", {n.hidden});
    y = drop_path(g, mul_param(g, y), drop_path_p, true);
    return add(g, y, x);
  }
  g.module(l + ".intermediate");
  y = linear(g, l + ".intermediate.dense", y, n.intermediate, true);
  g.module(l + ".intermediate.intermediate_act_fn");
  y = act(g, act_named(n.act), y);
  g.module(l + ".output");
  y = linear(g, l + ".output.dense", y, n.hidden, true);
  g.module(l + ".output.dropout");
  return add(g, dropout(g, y, n.dropout), x);  // ViTOutput: hidden_states + input_tensor
}

// The head: final layernorm, then the class's pooler / classifier and a loss.
V vit_head(Graph& g, const NetSpec& n, const std::string& p, V x) {
  const uint64_t B = g.shape(x)[0], T = g.shape(x)[1], h = n.hidden;
  x = layer_norm(g, p + "layernorm", x);
  const std::string& c = n.variant;
  if (c == "Dinov2ForImageClassification") {
    const V cls = slice(g, x, {B, h});
    const V patches = mean_dim(g, slice(g, x, {B, T - 1, h}), 1);
    return classify(g, "classifier", cat(g, {cls, patches}, 1), n.num_classes);
  }
  if (c == "DeiTForImageClassificationWithTeacher") {
    const V a = linear(g, "cls_classifier", slice(g, x, {B, h}), n.num_classes, true);
    const V b = linear(g, "distillation_classifier", slice(g, x, {B, h}), n.num_classes, true);
    return cross_entropy(g, scale(g, add(g, a, b)));  // (cls_logits + distillation_logits) / 2
  }
  if (n.num_classes > 0) return classify(g, "classifier", slice(g, x, {B, h}), n.num_classes);
  V pooled = slice(g, x, {B, h});
  if (n.pooler) {  // ViTPooler / DeiTPooler: dense on the first token, tanh
    g.module(p + "pooler");
    pooled = linear(g, p + "pooler.dense", pooled, h, true);
    g.module(p + "pooler.activation");
    pooled = act(g, Act::tanh, pooled);
  }
  g.assume(Text("net.assume.bare.pooled", {{"model", c}})
               .then({"net.assume.head.classes", {{"architecture", "*ForImageClassification"}}}));
  return mean_dim(g, view(g, pooled, {B * h}), 0);
}

}  // namespace

void hf_vit(Graph& g, const NetSpec& n) {
  const std::string p = prefix_of(n);
  const uint64_t B = g.settings().micro_batch;
  const uint64_t T = (n.image_size / n.patch) * (n.image_size / n.patch) + 1 + n.extra_tokens;
  if (n.image_size % n.patch != 0)
    fail(
        code::kInconsistent, "imageSize",
        Message{"error.imageSize.patch",
                {{"imageSize", std::to_string(n.image_size)}, {"patch", std::to_string(n.patch)}}});
  if (n.image_size != n.config_image && n.family != "dinov2")
    g.assume(Text("net.assume.interpolate", {}));
  g.module("");
  if (!p.empty()) g.module(p.substr(0, p.size() - 1));
  g.layer("embeddings", -1);
  g.tokens(B * T);
  V x = embeddings(g, n, p);
  g.output(x);
  g.module(p + "encoder");
  g.module(p + "encoder.layer");
  for (uint64_t i = 0; i < n.layers; ++i) {
    g.layer("layer " + std::to_string(i), static_cast<int64_t>(i));
    g.tokens(B * T);
    x = vit_layer(g, n, p + "encoder.layer." + std::to_string(i), x, n.drop_path);
    g.output(x);
  }
  g.layer("head", static_cast<int64_t>(n.layers));
  g.tokens(B);
  g.output(vit_head(g, n, p, x));
}

}  // namespace net
}  // namespace trainmem
