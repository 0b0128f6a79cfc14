// HuggingFace CLIP and SigLIP (transformers src/transformers/models/clip/modeling_clip.py
// @000f1ffdbf1ce6190cc8863af9a2fff817590937: CLIPVisionEmbeddings, CLIPTextEmbeddings,
// CLIPAttention, CLIPMLP, CLIPEncoderLayer, CLIPVisionTransformer (pre_layrnorm,
// post_layernorm on the pooled [CLS]), CLIPTextTransformer (causal mask, final_layer_norm,
// pooling at the EOS token), CLIPModel (visual / text projections, logit_scale, clip_loss);
// siglip/modeling_siglip.py: no class token, a position per patch, post_layernorm and the
// attention-pooling head (probe, nn.MultiheadAttention, layernorm, MLP), a text head linear
// on the last token, logit_scale / logit_bias and the sigmoid loss). Chain: the vision
// embeddings, the vision encoder layers, the vision end with the text embeddings, the text
// encoder layers, the head (pooling, projections, the contrastive loss); a single tower
// (clip_vision_model, clip_text_model, *VisionModel, *TextModel) is its own chain. NetSpec:
// variant, vision (hidden, layers, heads, intermediate, patch, image_size, channels), text
// (text_hidden, text_layers, text_heads, text_intermediate, text_vocab, text_positions, seq),
// projection, act.
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

struct Tower {
  std::string p;  // "vision_model" / "text_model"
  uint64_t hidden, layers, heads, intermediate;
  std::string act;
};

V encoder_layer(Graph& g, const NetSpec& n, const std::string& l, V x, const Tower& t,
                bool masked) {
  g.module(l);
  const V residual = x;
  V h = layer_norm(g, l + ".layer_norm1", x);
  g.module(l + ".self_attn");
  HfAttention a;
  a.q = l + ".self_attn.q_proj";
  a.k = l + ".self_attn.k_proj";
  a.v = l + ".self_attn.v_proj";
  a.o = l + ".self_attn.out_proj";
  a.heads = t.heads;
  a.dropout = n.attention_dropout;
  a.mask = masked;
  a.kv_first = false;
  h = add(g, residual, hf_attention(g, h, a));
  V y = layer_norm(g, l + ".layer_norm2", h);
  g.module(l + ".mlp");
  y = linear(g, l + ".mlp.fc1", y, t.intermediate, true);
  g.module(l + ".mlp.activation_fn");
  y = act(g, act_named(t.act), y);
  y = linear(g, l + ".mlp.fc2", y, t.hidden, true);
  return add(g, h, y);
}

bool siglip(const NetSpec& n) { return n.family == "siglip"; }

// The vision embeddings (and CLIP's pre_layrnorm).
V vision_embeddings(Graph& g, const NetSpec& n, const Tower& t) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size, P = n.patch, h = t.hidden;
  const uint64_t np = (S / P) * (S / P), table = (n.config_image / P) * (n.config_image / P);
  const std::string e = t.p + ".embeddings";
  g.module(t.p);
  g.module(e);
  if (!siglip(n)) g.param(e + ".class_embedding", {h});
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  x = conv2d(g, e + ".patch_embedding", x, h, P, P, 0, 1, siglip(n));
  x = permute(g, view(g, x, {B, h, np}), {0, 2, 1});  // flatten(2).transpose(1, 2)
  if (!siglip(n)) x = cat(g, {expand(g, g.weight_value({h}), {B, 1, h}), x}, 1);
  const uint64_t tokens = siglip(n) ? np : np + 1;
  x = add(g, x,
          position_table(g, e + ".position_embedding", siglip(n) ? table : table + 1, tokens, h));
  if (siglip(n)) return x;
  return layer_norm(g, t.p + ".pre_layrnorm", x);
}

// SiglipMultiheadAttentionPoolingHead: probe.repeat(B, 1, 1) attends to the states
// (nn.MultiheadAttention, need_weights=True: the math path), layernorm, residual MLP.
V siglip_pool(Graph& g, const NetSpec& /*n*/, const Tower& t, V x) {
  const uint64_t B = g.shape(x)[0], T = g.shape(x)[1], h = t.hidden, d = h / t.heads;
  const std::string p = t.p + ".head";
  g.module(p);
  g.param(p + ".probe", {1, 1, h});
  g.module(p + ".attention");
  g.param(p + ".attention.in_proj_weight", {3 * h, h}, LinearKind::linear);
  g.param(p + ".attention.in_proj_bias", {3 * h});
  const V probe = copy(g, g.weight_value({1, 1, h}), {B, 1, h});  // .repeat(B, 1, 1)
  V q = linear_op(g, permute(g, probe, {1, 0, 2}), h);            // w_q on the query
  V kv = linear_op(g, permute(g, x, {1, 0, 2}), 2 * h);           // w_kv on key = value
  auto kvs = split(g, kv, 2, {T, B, h});
  q = scale(g, permute(g, contiguous(g, q), {1, 0, 2}));
  const V k = permute(g, contiguous(g, kvs[0]), {1, 0, 2});
  const V v = permute(g, contiguous(g, kvs[1]), {1, 0, 2});
  V w = softmax(g, matmul(g, view(g, q, {B * t.heads, 1, d}),
                          view(g, permute(g, k, {0, 2, 1}), {B * t.heads, d, T}),
                          {B * t.heads, 1, T}, false));
  V ctx = matmul(g, w, view(g, v, {B * t.heads, T, d}), {B * t.heads, 1, d}, false);
  ctx = contiguous(g, permute(g, ctx, {1, 0, 2}));
  V y = linear(g, p + ".attention.out_proj", view(g, ctx, {B, h}), h, true);
  const V residual = y;
  y = layer_norm(g, p + ".layernorm", y);
  g.module(p + ".mlp");
  y = linear(g, p + ".mlp.fc1", y, t.intermediate, true);
  g.module(p + ".mlp.activation_fn");
  y = linear(g, p + ".mlp.fc2", act(g, act_named(t.act), y), h, true);
  return add(g, residual, y);
}

// The pooled vision output: CLIP post_layernorm on [CLS]; SigLIP post_layernorm + head.
V vision_pooled(Graph& g, const NetSpec& n, const Tower& t, V x) {
  const uint64_t B = g.shape(x)[0];
  if (siglip(n)) return siglip_pool(g, n, t, layer_norm(g, t.p + ".post_layernorm", x));
  return layer_norm(g, t.p + ".post_layernorm", slice(g, x, {B, t.hidden}));
}

V text_embeddings(Graph& g, const NetSpec& n, const Tower& t) {
  const uint64_t B = g.settings().micro_batch, T = n.seq;
  const std::string e = t.p + ".embeddings";
  g.module(t.p);
  g.module(e);
  const V ids = g.input({B, T}, 8, false);
  const V tok = embedding(g, e + ".token_embedding", ids, n.text_vocab, t.hidden);
  return add(g, tok, position_table(g, e + ".position_embedding", n.text_positions, T, t.hidden));
}

// The pooled text output: final_layer_norm, the EOS (CLIP) / last (SigLIP) token, SigLIP's head.
V text_pooled(Graph& g, const NetSpec& n, const Tower& t, V x) {
  const uint64_t B = g.shape(x)[0];
  x = layer_norm(g, t.p + ".final_layer_norm", x);
  x = slice(g, x, {B, t.hidden});  // last_hidden_state[arange(B), eos] / [:, -1, :]
  if (siglip(n)) x = linear(g, t.p + ".head", x, n.projection, true);
  return x;
}

// clip_loss / SigLIP's sigmoid loss over normalized embeddings [B, proj] (small tensors).
V contrastive_loss(Graph& g, const NetSpec& n, V image, V text) {
  const uint64_t B = g.shape(image)[0];
  auto normalize = [&](V e) { return mul(g, e, mean_dim(g, mul(g, e, e), 1)); };  // e / ||e||
  image = normalize(image);
  text = normalize(text);
  V logits = scale(g, matmul(g, text, permute(g, image, {1, 0}), {B, B}, false));
  if (siglip(n)) {  // logsigmoid(labels * logits): LogSigmoidBackward keeps its input, buffer
    const V ls = mul(g, logits, logits);
    return mean_dim(g, view(g, ls, {B * B}), 0);
  }
  const V a = cross_entropy(g, logits);
  const V b = cross_entropy(g, contiguous(g, permute(g, logits, {1, 0})));
  return add(g, a, b);
}

}  // namespace

void hf_clip(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch;
  const Tower vis{"vision_model", n.hidden, n.layers, n.heads, n.intermediate, n.act};
  const Tower txt{"text_model", n.text_hidden,       n.text_layers,
                  n.text_heads, n.text_intermediate, n.text_act};
  const bool both = n.vision && n.text;
  const uint64_t vt = (n.image_size / n.patch) * (n.image_size / n.patch) + (siglip(n) ? 0 : 1);
  g.module("");
  int64_t block = 0;
  V image;
  V x;
  if (n.vision) {
    g.layer("vision embeddings", -1);
    g.tokens(B * vt);
    x = vision_embeddings(g, n, vis);
    g.output(x);
    g.module(vis.p + ".encoder");
    g.module(vis.p + ".encoder.layers");
    for (uint64_t i = 0; i < vis.layers; ++i, ++block) {
      g.layer("vision layer " + std::to_string(i), block);
      g.tokens(B * vt);
      x = encoder_layer(g, n, vis.p + ".encoder.layers." + std::to_string(i), x, vis, false);
      g.output(x);
    }
  }
  if (both) {  // the vision end and the text embeddings form one chain layer
    g.layer("vision end, text embeddings", block++);
    g.tokens(B * n.seq);
    image = vision_pooled(g, n, vis, x);
    if (!siglip(n)) image = linear(g, "visual_projection", image, n.projection, false);
  }
  if (n.text) {
    if (!both) g.layer("text embeddings", -1);
    if (!both) g.tokens(B * n.seq);
    x = text_embeddings(g, n, txt);
    g.output(x);
    g.module(txt.p + ".encoder");
    g.module(txt.p + ".encoder.layers");
    for (uint64_t i = 0; i < txt.layers; ++i, ++block) {
      g.layer("text layer " + std::to_string(i), block);
      g.tokens(B * n.seq);
      x = encoder_layer(g, n, txt.p + ".encoder.layers." + std::to_string(i), x, txt, !siglip(n));
      g.output(x);
    }
  }
  g.layer("head", block);
  g.tokens(B);
  if (both) {
    V text = text_pooled(g, n, txt, x);
    if (!siglip(n)) text = linear(g, "text_projection", text, n.projection, false);
    g.param("logit_scale", siglip(n) ? Shape{1} : Shape{});
    if (siglip(n)) g.param("logit_bias", {1});
    g.output(contrastive_loss(g, n, image, text));
    return;
  }
  V pooled = n.vision ? vision_pooled(g, n, vis, x) : text_pooled(g, n, txt, x);
  if (n.variant == "CLIPVisionModelWithProjection")
    pooled = linear(g, "visual_projection", pooled, n.projection, false);
  if (n.variant == "CLIPTextModelWithProjection")
    pooled = linear(g, "text_projection", pooled, n.projection, false);
  g.assume(
      Text("net.assume.tower", {{"tower", n.vision ? "vision" : "text"}, {"variant", n.variant}}));
  const uint64_t w = g.shape(pooled)[1];
  g.output(mean_dim(g, view(g, pooled, {B * w}), 0));
}

}  // namespace net
}  // namespace trainmem
