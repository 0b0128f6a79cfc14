// HuggingFace wav2vec 2.0 (transformers src/transformers/models/wav2vec2/modeling_wav2vec2.py:
// Wav2Vec2FeatureEncoder (seven 1-D convolutions; the first with a GroupNorm ("group") or each
// with a LayerNorm over channels ("layer"), GELU), Wav2Vec2FeatureProjection (LayerNorm,
// projection, dropout), masked_spec_embed, Wav2Vec2PositionalConvEmbedding (a weight-normed
// grouped convolution, the last frame dropped, GELU), Wav2Vec2Encoder (post-LN layers) or
// Wav2Vec2EncoderStableLayerNorm (pre-LN), Wav2Vec2ForCTC (dropout, lm_head, log_softmax in
// fp32, ctc_loss: CtcLossBackward keeps the log-probabilities and log_alpha [B, T, 2L + 1])).
// All layers run (layerdrop skips some at random: not modelled, an upper bound); SpecAugment's
// masking writes in place. Chain: the feature encoder and projection, one layer per encoder
// layer (the positional convolution runs in the first), the head. NetSpec: stages (the conv
// layers: width = conv_dim, kernel, stride), hidden, layers, heads, intermediate, act, dropout
// (hidden_dropout), attention_dropout, classifier_dropout (activation_dropout), width_mult
// (final_dropout), extra_tokens (1: feat_proj_dropout is 0), vocab, pooler (the
// group norm form), layer_scale (do_stable_layer_norm), patch (num_conv_pos_embeddings),
// groups (num_conv_pos_embedding_groups), image_size (samples), variant.
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

V feature_encoder(Graph& g, const NetSpec& n, const std::string& p, V x) {
  g.module(p);
  g.module(p + ".conv_layers");
  for (size_t i = 0; i < n.stages.size(); ++i) {
    const NetStage& st = n.stages[i];
    const std::string l = p + ".conv_layers." + std::to_string(i);
    g.module(l);
    x = conv(g, l + ".conv", x, {st.width, {st.kernel}, {st.stride}, {0}, 1, n.qkv_bias});
    if (n.pooler && i == 0) {  // "group": GroupNorm(num_groups = channels) on the first layer
      x = group_norm(g, l + ".layer_norm", x, st.width);
    } else if (!n.pooler) {  // "layer": transpose, LayerNorm over channels, transpose back
      x = permute(g, layer_norm(g, l + ".layer_norm", permute(g, x, {0, 2, 1})), {0, 2, 1});
    }
    g.module(l + ".activation");
    x = act(g, act_named(n.act), x);
  }
  return x;
}

V encoder_layer(Graph& g, const NetSpec& n, const std::string& l, V x) {
  g.module(l);
  HfAttention a;
  a.q = l + ".attention.q_proj";
  a.k = l + ".attention.k_proj";
  a.v = l + ".attention.v_proj";
  a.o = l + ".attention.out_proj";
  a.heads = n.heads;
  a.dropout = n.attention_dropout;
  a.kv_first = false;
  auto ff = [&](V h) {
    g.module(l + ".feed_forward");
    g.module(l + ".feed_forward.intermediate_dropout");
    h = linear(g, l + ".feed_forward.intermediate_dense", h, n.intermediate, true);
    h = dropout(g, act(g, act_named(n.act), h), n.classifier_dropout);
    h = linear(g, l + ".feed_forward.output_dense", h, n.hidden, true);
    g.module(l + ".feed_forward.output_dropout");
    return dropout(g, h, n.dropout);
  };
  g.module(l + ".attention");
  g.module(l + ".dropout");
  if (n.layer_scale) {  // Wav2Vec2EncoderLayerStableLayerNorm: pre-LN
    V h = hf_attention(g, layer_norm(g, l + ".layer_norm", x), a);
    x = add(g, x, dropout(g, h, n.dropout));
    return add(g, x, ff(layer_norm(g, l + ".final_layer_norm", x)));
  }
  V h = hf_attention(g, x, a);
  x = layer_norm(g, l + ".layer_norm", add(g, x, dropout(g, h, n.dropout)));
  return layer_norm(g, l + ".final_layer_norm", add(g, x, ff(x)));
}

// Wav2Vec2PositionalConvEmbedding on [B, T, h]: conv over time (weight norm: weight_g,
// weight_v), the last frame removed, GELU; added to the states.
V positional_conv(Graph& g, const NetSpec& n, const std::string& p, V x) {
  const uint64_t B = g.shape(x)[0], T = g.shape(x)[1], h = n.hidden, k = n.patch;
  g.module(p);
  g.module(p + ".conv");
  g.param(p + ".conv.bias", {h});
  g.param(p + ".conv.weight_g", {1, 1, k});
  g.param(p + ".conv.weight_v", {h, h / n.groups, k});
  // weight_norm(dim=2)'s pre-forward hook: torch._weight_norm(weight_v, weight_g, 2) makes the
  // weight anew each forward (torch/nn/utils/weight_norm.py; ATen WeightNorm.cpp), a tensor of
  // weight_v's size that the convolution keeps, with the [1, 1, k] norms (measured, torch 1.13)
  const V wv = g.weight_value({h, h / n.groups, k});
  g.begin_op({wv});
  V w = g.make({h, h / n.groups, k}, g.width(wv));
  g.save(g.make({1, 1, k}, 4), "weight_norm norms", "WeightNormInterfaceBackward0 keeps the norms");
  if (g.widths().autocast && g.width(w) == 4) w = cast(g, w, 2);  // autocast casts it
  V y = permute(g, x, {0, 2, 1});
  g.begin_op({y, w});
  V c = g.make({B, h, T + 1 - (k % 2 == 0 ? 0 : 1)}, g.widths().autocast ? 2 : g.width(y));
  g.save(y, "convolution input", "ConvolutionBackward0 keeps its input");
  g.save(w, "convolution weight (weight-normed)", "ConvolutionBackward0 keeps the weight");
  g.flops(2.0 * static_cast<double>(B * h * T) * static_cast<double>(h / n.groups * k));
  // its weight gradient's scratch on CPU (oneDNN, kernel 128 and 16 groups in wav2vec2)
  g.backward_extra(conv_weight_grad_scratch(g.settings().runtime, h, h, n.groups, {k},
                                            {g.shape(c)[2]}, g.width(y)));
  g.module(p + ".padding");
  if (k % 2 == 0) c = slice(g, c, {B, h, T});  // Wav2Vec2SamePadLayer drops the last frame
  g.module(p + ".activation");
  c = act(g, act_named(n.act), c);
  return add(g, x, permute(g, c, {0, 2, 1}));
}

}  // namespace

void hf_wav2vec2(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch;
  const bool ctc = n.variant == "Wav2Vec2ForCTC";
  const std::string p = ctc ? "wav2vec2." : "";
  // tests/fixtures/hf_speech.json: step peaks measured with torch 1.13 on CPU, none on a GPU
  if (g.settings().runtime.id != "pytorch-cpu")
    g.assume(Text("net.assume.speech.gpu", {{"model", "wav2vec2"}}));
  g.module("");
  if (ctc) g.module("wav2vec2");
  g.layer("feature encoder", -1);
  V x = g.input({B, 1, n.image_size}, g.widths().act, false);  // input_values[:, None]
  x = feature_encoder(g, n, p + "feature_extractor", x);
  const uint64_t T = g.shape(x)[2], c = g.shape(x)[1];
  g.tokens(B * T);
  x = permute(g, x, {0, 2, 1});  // extract_features.transpose(1, 2)
  g.module(p + "feature_projection");
  x = linear(g, p + "feature_projection.projection",
             layer_norm(g, p + "feature_projection.layer_norm", x), n.hidden, true);
  g.module(p + "feature_projection.dropout");
  x = dropout(g, x, n.extra_tokens ? 0.0 : n.dropout);
  if (n.mask_token) g.param(p + "masked_spec_embed", {n.hidden});
  (void)c;
  g.output(x);
  g.module(p + "encoder");
  g.module(p + "encoder.layers");
  for (uint64_t i = 0; i < n.layers; ++i) {
    g.layer("encoder layer " + std::to_string(i), static_cast<int64_t>(i));
    g.tokens(B * T);
    if (i == 0) {  // positional convolution, then LayerNorm (post-LN form) and dropout
      x = positional_conv(g, n, p + "encoder.pos_conv_embed", x);
      if (!n.layer_scale) x = layer_norm(g, p + "encoder.layer_norm", x);
      g.module(p + "encoder.dropout");
      x = dropout(g, x, n.dropout);
    }
    x = encoder_layer(g, n, p + "encoder.layers." + std::to_string(i), x);
    g.output(x);
  }
  g.layer("head", static_cast<int64_t>(n.layers));
  g.tokens(B * T);
  if (n.layer_scale) x = layer_norm(g, p + "encoder.layer_norm", x);
  if (!ctc) {
    g.assume(Text("net.assume.bare.output", {{"model", "Wav2Vec2Model"}})
                 .then({"net.assume.head.ctc", {{"architecture", "Wav2Vec2ForCTC"}}}));
    g.output(mean_dim(g, view(g, x, {B * T * n.hidden}), 0));
    return;
  }
  g.module("dropout");
  x = linear(g, "lm_head", dropout(g, x, n.width_mult), n.vocab, true);  // final_dropout
  // log_softmax(logits, dtype=float32).transpose(0, 1); ctc_loss keeps log_probs and log_alpha
  V lp = x;
  if (g.width(lp) == 2) lp = cast(g, lp, 4);
  g.begin_op({lp});
  const V logp = g.make(g.shape(lp), 4);
  g.save(logp, "log_softmax output (fp32)", "LogSoftmaxBackward0 keeps its result");
  const uint64_t L =
      g.settings().target_len ? g.settings().target_len : std::max<uint64_t>(1, T / 4);
  if (g.settings().target_len == 0)
    g.assume(Text("net.assume.ctc.target", {{"labels", std::to_string(L)}}));
  g.begin_op({logp});
  const V alpha = g.make({B, T, 2 * L + 1}, 4);
  const V targets = g.make({B * L}, 8);
  const V loss = g.make({}, 4);
  g.save(logp, "ctc_loss log_probs", "CtcLossBackward0 keeps log_probs");
  g.save(alpha, "ctc_loss log_alpha (fp32)", "CtcLossBackward0 keeps log_alpha");
  g.save(targets, "ctc_loss targets (int64)", "CtcLossBackward0 keeps the targets");
  g.output(loss);
}

}  // namespace net
}  // namespace trainmem
