// HuggingFace Whisper (transformers src/transformers/models/whisper/modeling_whisper.py:
// WhisperEncoder (conv1, GELU, conv2 with stride 2, GELU, + the frozen embed_positions,
// dropout, layers, layer_norm), WhisperEncoderLayer / WhisperDecoderLayer (pre-LN, k_proj
// without bias, cross-attention on the encoder output, fc1, activation, fc2, dropouts),
// WhisperDecoder (embed_tokens, learned positions, causal self-attention, layer_norm),
// WhisperForConditionalGeneration (proj_out tied to embed_tokens, CrossEntropyLoss on the
// logits as they are). The encoder reads exactly 2 x max_source_positions mel frames.
// Chain: the encoder's convolutions, one layer per encoder layer (the last one also holds the
// encoder's layer_norm and the decoder's embeddings, and carries the encoder output every
// decoder layer reads), one layer per decoder layer, the head. NetSpec: hidden (d_model),
// layers / heads / intermediate (encoder), decoder_layers, text_heads / text_intermediate
// (decoder), channels (num_mel_bins), image_size (mel frames), vocab, target_positions, act,
// dropout, attention_dropout, classifier_dropout (activation_dropout), variant.
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

struct WLayer {
  uint64_t heads, ffn;
};

// Self-attention (and cross-attention when `enc` is given) + feed-forward, pre-LN.
V whisper_layer(Graph& g, const NetSpec& n, const std::string& l, V x, const WLayer& w, V enc,
                bool causal) {
  g.module(l);
  auto attention = [&](const std::string& name, V h, V kv, bool masked) {
    g.module(l + "." + name);
    HfAttention a;
    const std::string p = l + "." + name;
    a.q = p + ".q_proj";
    a.k = p + ".k_proj";
    a.v = p + ".v_proj";
    a.o = p + ".out_proj";
    a.k_bias = false;
    a.heads = w.heads;
    a.dropout = n.attention_dropout;
    a.mask = masked;
    a.kv_first = false;
    return hf_attention(g, h, a, kv);
  };
  V h = attention("self_attn", layer_norm(g, l + ".self_attn_layer_norm", x), V{}, causal);
  x = add(g, x, dropout(g, h, n.dropout));
  if (enc) {
    h = attention("encoder_attn", layer_norm(g, l + ".encoder_attn_layer_norm", x), enc, false);
    x = add(g, x, dropout(g, h, n.dropout));
  }
  const uint64_t d = g.shape(x)[2];
  V y = linear(g, l + ".fc1", layer_norm(g, l + ".final_layer_norm", x), w.ffn, true);
  y = dropout(g, act(g, act_named(n.act), y), n.classifier_dropout);  // activation_dropout
  y = linear(g, l + ".fc2", y, d, true);
  x = add(g, x, dropout(g, y, n.dropout));
  if (g.width(x) == 2 && g.settings().precision == activations::Precision::fp16 && !enc) {
    // fp16: torch.clamp(hidden_states, min, max) keeps its input (ClampBackward1)
    g.begin_op({x});
    const V c = g.make(g.shape(x), 2);
    g.save(x, "clamp input (fp16)", "ClampBackward1 keeps its input");
    x = c;
  }
  return x;
}

}  // namespace

void hf_whisper(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, F = n.image_size, d = n.hidden;
  const uint64_t T = g.settings().target_len ? g.settings().target_len : n.target_positions;
  if (T > n.target_positions)
    fail(code::kOutOfRange, "targetLen",
         Message{
             "error.whisper.targetLen",
             {{"T", std::to_string(T)}, {"targetPositions", std::to_string(n.target_positions)}}});
  // tests/fixtures/hf_speech.json: step peaks measured with torch 1.13 on CPU, none on a GPU
  if (g.settings().runtime.id != "pytorch-cpu")
    g.assume(Text("net.assume.speech.gpu", {{"model", "Whisper"}}));
  if (g.settings().target_len == 0)
    g.assume(Text("net.assume.whisper.target", {{"tokens", std::to_string(n.target_positions)}}));
  const bool lm = n.variant == "WhisperForConditionalGeneration";
  const std::string p = lm ? "model." : "";
  const std::string e = p + "encoder", dc = p + "decoder";
  g.module("");
  if (lm) g.module("model");
  g.module(e);
  g.layer("encoder convolutions", -1);
  g.tokens(B * F / 2);
  V x = g.input({B, n.channels, F}, g.widths().act, false);
  x = act(g, Act::gelu, conv(g, e + ".conv1", x, {d, {3}, {1}, {1}, 1, true}));
  x = act(g, Act::gelu, conv(g, e + ".conv2", x, {d, {3}, {2}, {1}, 1, true}));
  const uint64_t S = g.shape(x)[2];
  x = permute(g, x, {0, 2, 1});
  g.module(e + ".embed_positions");  // requires_grad_(False) in WhisperEncoder.__init__
  g.param(e + ".embed_positions.weight", {S, d}, LinearKind::none, false);
  x = dropout(g, add(g, x, g.weight_value({S, d})), n.dropout);
  g.output(x);
  g.module(e + ".layers");
  const int64_t E = static_cast<int64_t>(n.layers);
  for (int64_t i = 0; i < E; ++i) {
    g.layer("encoder layer " + std::to_string(i), i);
    g.tokens(B * S);
    x = whisper_layer(g, n, e + ".layers." + std::to_string(i), x, {n.heads, n.intermediate}, V{},
                      false);
    if (i + 1 < E) {
      g.output(x);
      continue;
    }
    const V enc = layer_norm(g, e + ".layer_norm", x);
    g.module(dc);
    const V ids = g.input({B, T}, 8, false);  // decoder_input_ids (labels shifted right)
    const uint64_t V_ = n.vocab;
    x = embedding(g, dc + ".embed_tokens", ids, V_, d);
    x = add(g, x, position_table(g, dc + ".embed_positions", n.target_positions, T, d));
    x = dropout(g, x, n.dropout);
    g.output(x);
    g.carry(enc);  // read by every decoder layer's cross-attention
    g.module(dc + ".layers");
    for (uint64_t j = 0; j < n.decoder_layers; ++j) {
      g.layer("decoder layer " + std::to_string(j), E + static_cast<int64_t>(j));
      g.tokens(B * T);
      x = whisper_layer(g, n, dc + ".layers." + std::to_string(j), x,
                        {n.text_heads, n.text_intermediate}, enc, true);
      g.output(x);
    }
  }
  g.layer("head", E + static_cast<int64_t>(n.decoder_layers));
  g.tokens(B * T);
  x = layer_norm(g, dc + ".layer_norm", x);
  if (lm) {
    g.module("proj_out");
    g.param("proj_out.weight", {n.vocab, d}, LinearKind::linear, true,
            n.tied_head ? dc + ".embed_tokens.weight" : std::string());
    g.mark_output_head();
    g.output(cross_entropy(g, view(g, linear_op(g, x, n.vocab), {B * T, n.vocab})));
    return;
  }
  g.assume(
      Text("net.assume.bare.decoder", {{"model", "WhisperModel"}})
          .then({"net.assume.head.lm", {{"architecture", "WhisperForConditionalGeneration"}}}));
  g.output(mean_dim(g, view(g, x, {B * T * d}), 0));
}

}  // namespace net
}  // namespace trainmem
