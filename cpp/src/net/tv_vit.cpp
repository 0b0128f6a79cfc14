// torchvision VisionTransformer (pytorch/vision v0.14.0 torchvision/models/vision_transformer.py:
// _process_input, EncoderBlock, Encoder, MLPBlock) with nn.MultiheadAttention(batch_first=True,
// need_weights=False): torch/nn/functional.py multi_head_attention_forward. torch 1.13 (the
// `eager` attention): the packed in-projection's q, k, v chunks copied by .contiguous(), q
// scaled, bmm, softmax, bmm. torch >= 2.0 (`sdpa`): one contiguous copy of the packed q, k, v
// (_in_projection_packed: unflatten ... .contiguous()) read by scaled_dot_product_attention.
// Chain: the stem (patch convolution, class token, position embedding), one layer per encoder
// block, the head (encoder.ln, the class token, heads.head, cross-entropy).
#include "net/recipes.hpp"

namespace trainmem {
namespace net {

V tv_mlp(Graph& g, const std::string& p, V x, uint64_t inner, double p_drop) {
  const uint64_t h = g.shape(x).back();
  g.module(p);
  x = linear(g, p + ".0", x, inner, true);
  g.module(p + ".1");
  x = act(g, Act::gelu, x);
  g.module(p + ".2");
  x = dropout(g, x, p_drop);
  x = linear(g, p + ".3", x, h, true);
  g.module(p + ".4");
  return dropout(g, x, p_drop);
}

namespace {

// nn.MultiheadAttention(E, heads, batch_first=True) on x [B, T, E] (query = key = value).
V multi_head_attention(Graph& g, const std::string& p, V x, uint64_t heads, double p_drop) {
  const Shape s = g.shape(x);
  const uint64_t B = s[0], T = s[1], E = s[2], d = E / heads;
  g.module(p);
  g.param(p + ".in_proj_weight", {3 * E, E}, LinearKind::linear);
  g.param(p + ".in_proj_bias", {3 * E});
  const V xt = permute(g, x, {1, 0, 2});  // batch_first: query.transpose(1, 0)
  const bool sdpa = g.settings().attention == activations::Attention::sdpa;
  V proj = linear_op(g, xt, 3 * E);  // F.linear(q, in_proj_weight, in_proj_bias)
  V ctx;
  if (sdpa) {
    proj = copy(g, proj, {3, T, B, E});  // unflatten(-1, (3, E))...contiguous()
    auto qkv = split(g, proj, 3, {B, heads, T, d});
    ctx = attention(g, qkv[0], qkv[1], qkv[2], {p_drop, false, false, false});
  } else {
    auto qkv = split(g, proj, 3, {T, B, E});  // .chunk(3, dim=-1)
    const V q = contiguous(g, qkv[0]), k = contiguous(g, qkv[1]), v = contiguous(g, qkv[2]);
    const V qs = scale(g, permute(g, q, {1, 0, 2}));  // q / sqrt(E), [B * heads, T, d]
    const V kt = permute(g, permute(g, k, {1, 0, 2}), {0, 2, 1});
    V w = softmax(g, matmul(g, qs, kt, {B * heads, T, T}, false));
    w = dropout(g, w, p_drop);
    ctx = matmul(g, w, permute(g, v, {1, 0, 2}), {B * heads, T, d}, false);
  }
  ctx = contiguous(g, permute(g, ctx, {1, 0, 2}));  // transpose(0, 1).contiguous().view(T*B, E)
  ctx = reshape(g, ctx, {T * B, E});
  const V out = linear(g, p + ".out_proj", ctx, E, true);  // NonDynamicallyQuantizableLinear
  return permute(g, reshape(g, out, {T, B, E}), {1, 0, 2});
}

}  // namespace

void tv_vit(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size, P = n.patch, E = n.hidden;
  if (S % P != 0)
    fail(
        code::kInconsistent, "imageSize",
        Message{"error.imageSize.patchSize", {{"S", std::to_string(S)}, {"P", std::to_string(P)}}});
  const uint64_t np = (S / P) * (S / P), T = np + 1;
  g.module("");
  g.layer("stem (patch embedding)", -1);
  g.param("class_token", {1, 1, E});
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  x = conv2d(g, "conv_proj", x, E, P, P, 0, 1, true);
  x = permute(g, reshape(g, x, {B, E, np}), {0, 2, 1});
  const V cls = expand(g, g.weight_value({1, 1, E}), {B, 1, E});
  x = cat(g, {cls, x}, 1);
  g.module("encoder");
  g.param("encoder.pos_embedding", {1, T, E});
  x = add(g, x, g.weight_value({1, T, E}));
  g.module("encoder.dropout");
  x = dropout(g, x, n.dropout);
  g.output(x);
  g.tokens(B * T);
  g.module("encoder.layers");
  for (uint64_t i = 0; i < n.layers; ++i) {
    const std::string p = "encoder.layers.encoder_layer_" + std::to_string(i);
    g.layer("block " + std::to_string(i), static_cast<int64_t>(i));
    g.tokens(B * T);
    g.module(p);
    const V input = x;
    V h = layer_norm(g, p + ".ln_1", x);
    h = multi_head_attention(g, p + ".self_attention", h, n.heads, n.attention_dropout);
    g.module(p + ".dropout");
    h = add(g, dropout(g, h, n.dropout), input);
    V y = layer_norm(g, p + ".ln_2", h);
    y = tv_mlp(g, p + ".mlp", y, n.intermediate, n.dropout);
    x = add(g, h, y);
    g.output(x);
  }
  g.layer("head", static_cast<int64_t>(n.layers));
  g.tokens(B);
  x = layer_norm(g, "encoder.ln", x);
  x = slice(g, x, {B, E});  // x[:, 0]
  g.module("heads");
  g.output(classify(g, "heads.head", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
