// HuggingFace config.json -> exact tensor lists of the decoder families whose layout is not
// Llama's: falcon, phi (phi-1/1.5/2), gptj, starcoder2, olmo, olmo2; and PyTorch's own
// torch.nn.Transformer from its constructor's arguments. Sources (huggingface/transformers):
// models/falcon/modeling_falcon.py @00dcc6dd (FalconAttention, FalconMLP, FalconDecoderLayer:
// query_key_value of (num_kv_heads x 2 + heads) x head_dim with new_decoder_architecture,
// hidden + 2 x head_dim with multi_query; ln_attn and ln_mlp when num_ln_in_parallel_attn is 2),
// models/phi/modeling_phi.py, models/gptj/modeling_gptj.py, models/starcoder2/
// modeling_starcoder2.py, models/olmo/modeling_olmo.py (OlmoLayerNorm: no parameters),
// models/olmo2/modeling_olmo2.py (post-norms, q_norm / k_norm over all heads); the defaults of
// their configuration_*.py. torch.nn.Transformer: torch/nn/modules/transformer.py and
// activation.py MultiheadAttention (in_proj_weight [3d, d], in_proj_bias, out_proj).
#include <string>

#include "io/model_json.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxDim = 1ULL << 26;
constexpr uint64_t kMaxVocab = 1ULL << 32;
constexpr uint64_t kMaxLayers = 1000;

struct B {
  ModelDescription& m;
  void mod(const std::string& n) {
    ++m.module_count;
    m.module_name_bytes += n.size();
  }
  TensorSpec& param(const std::string& n, std::initializer_list<uint64_t> shape) {
    m.tensors.emplace_back();
    m.tensors.back().name = n;
    m.tensors.back().shape.assign(shape);
    return m.tensors.back();
  }
  void linear(const std::string& n, uint64_t in, uint64_t out, bool bias) {
    mod(n);
    param(n + ".weight", {out, in}).linear = LinearKind::linear;
    if (bias) param(n + ".bias", {out});
  }
  void norm(const std::string& n, uint64_t d, bool weight, bool bias) {
    mod(n);
    if (weight) param(n + ".weight", {d});
    if (bias) param(n + ".bias", {d});
  }
  // `<l>.self_attn` with its q, k, v and output projections, in the registration order of HF's
  // *Attention.__init__ (modeling_phi.py, modeling_olmo.py, modeling_starcoder2.py)
  void attention(const std::string& l, uint64_t h, uint64_t q, uint64_t kvd, const char* out,
                 bool bias) {
    mod(l + ".self_attn");
    linear(l + ".self_attn.q_proj", h, q, bias);
    linear(l + ".self_attn.k_proj", h, kvd, bias);
    linear(l + ".self_attn.v_proj", h, kvd, bias);
    linear(l + ".self_attn." + out, q, h, bias);
  }
  void embedding(const std::string& n, uint64_t rows, uint64_t d) {
    mod(n);
    param(n + ".weight", {rows, d});
  }
  // The output embedding (lm_head), tied to `tied` or its own, with an optional bias.
  void head(const std::string& tied, uint64_t vocab, uint64_t d, bool tie, bool bias) {
    mod("lm_head");
    TensorSpec& t = param("lm_head.weight", {vocab, d});
    t.linear = LinearKind::linear;
    t.output_head = true;
    if (tie) t.tied_to = tied;
    if (bias) param("lm_head.bias", {vocab});
  }
  void rotary(const std::string& base, uint64_t dim) {
    mod(base);
    BufferSpec b;
    b.name = base + ".inv_freq";
    b.shape = {dim / 2};
    b.persistent = false;
    m.buffers.push_back(b);
  }
};

std::string layer(const char* prefix, uint64_t i) {
  return std::string(prefix) + std::to_string(i);
}

// Reads hidden_size (or its alias), layers, heads, vocabulary.
void dims(const Obj& c, Architecture& a, const char* h, const char* l, const char* n) {
  a.hidden = c.u64(h, 1, kMaxDim);
  a.layers = c.u64(l, 1, kMaxLayers);
  a.heads = c.u64(n, 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  if (a.hidden % a.heads != 0 && !c.has("head_dim"))
    fail(code::kInconsistent, c.field(n),
         Message{"error.config.headsDivideNamed",
                 {{"field", c.field(n)},
                  {"heads", std::to_string(a.heads)},
                  {"hiddenKey", c.field(h)},
                  {"hidden", std::to_string(a.hidden)}}});
  a.head_dim = a.hidden / a.heads;
  a.kv_heads = a.heads;
}

std::string arch(const Obj& c, const std::string& ov, const std::string& cls) {
  c.mark_used("architectures");
  const std::string want = ov.empty() ? cls + "ForCausalLM" : ov;
  if (want != cls + "ForCausalLM")
    fail(code::kUnsupported, ov.empty() ? c.field("architectures") : "model.architecture",
         Message{"error.config.causalLm", {{"want", want.substr(0, 64)}, {"cls", cls}}});
  return want;
}

void build_falcon(const Obj& c, const std::string& ov, ModelDescription& m) {
  Architecture& a = m.arch;
  // FalconConfig attribute_map: n_embed -> hidden_size, n_layer, n_head
  dims(c, a, c.has("n_embed") ? "n_embed" : "hidden_size",
       c.has("n_layer") ? "n_layer" : "num_hidden_layers",
       c.has("n_head") ? "n_head" : "num_attention_heads");
  const bool nda = c.boolean_or("new_decoder_architecture", false);
  const bool mq = c.boolean_or("multi_query", true);
  const bool parallel = c.boolean_or("parallel_attn", true);
  const bool bias = c.boolean_or("bias", false);
  if (c.boolean_or("alibi", false))
    fail(code::kUnsupported, c.field("alibi"),
         Message{"error.config.falconAlibi", {{"field", c.field("alibi")}}});
  const uint64_t kv = c.u64_or("num_kv_heads", a.heads, 1, kMaxDim);
  uint64_t nln = c.u64_or("num_ln_in_parallel_attn", nda ? 2 : 1, 1, 2);
  a.kv_heads = nda ? kv : (mq ? 1 : a.heads);
  a.intermediate = c.u64_or("ffn_hidden_size", 4 * a.hidden, 1, kMaxDim);
  a.activation = c.str_or("activation", "gelu", 32);
  a.hidden_dropout = c.num_or("hidden_dropout", 0.0, 0, 1);
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  a.parallel_block = parallel;
  a.norm_count = !parallel ? 2 : nln;
  m.architecture = arch(c, ov, "Falcon");
  const uint64_t h = a.hidden, hd = a.head_dim;
  const uint64_t qkv = nda ? (a.kv_heads * 2 + a.heads) * hd : (mq ? h + 2 * hd : 3 * h);
  B b{m};
  b.mod("");
  b.mod("transformer");
  b.embedding("transformer.word_embeddings", a.vocab, h);
  b.mod("transformer.h");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = layer("transformer.h.", i);
    b.mod(l);
    b.mod(l + ".self_attention");
    b.linear(l + ".self_attention.query_key_value", h, qkv, bias);
    b.linear(l + ".self_attention.dense", h, h, bias);
    b.mod(l + ".self_attention.attention_dropout");
    b.mod(l + ".mlp");
    b.linear(l + ".mlp.dense_h_to_4h", h, a.intermediate, bias);
    b.mod(l + ".mlp.act");
    b.linear(l + ".mlp.dense_4h_to_h", a.intermediate, h, bias);
    if (!parallel) {
      b.norm(l + ".post_attention_layernorm", h, true, true);
      b.norm(l + ".input_layernorm", h, true, true);
    } else if (nln == 2) {
      b.norm(l + ".ln_attn", h, true, true);
      b.norm(l + ".ln_mlp", h, true, true);
    } else {
      b.norm(l + ".input_layernorm", h, true, true);
    }
  }
  b.norm("transformer.ln_f", h, true, true);
  b.rotary("transformer.rotary_emb", hd);
  b.head("transformer.word_embeddings.weight", a.vocab, h, a.tied_embeddings, false);
}

// phi-1 / phi-1.5 / phi-2 (PhiForCausalLM): LayerNorm, q/k/v/dense with biases, fc1/fc2, one
// norm feeding attention and MLP in parallel, lm_head with a bias.
void build_phi(const Obj& c, const std::string& ov, ModelDescription& m) {
  Architecture& a = m.arch;
  dims(c, a, "hidden_size", "num_hidden_layers", "num_attention_heads");
  a.kv_heads = c.u64_or("num_key_value_heads", a.heads, 1, kMaxDim);
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  a.activation = c.str_or("hidden_act", "gelu_new", 32);
  a.partial_rotary = c.num_or("partial_rotary_factor", 0.5, 0, 1);
  a.hidden_dropout = c.num_or("resid_pdrop", 0.0, 0, 1);
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  c.num_or("embd_pdrop", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  const bool qk_ln = c.boolean_or("qk_layernorm", false);
  a.parallel_block = true;
  a.norm_count = 1;
  m.architecture = arch(c, ov, "Phi");
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kvd = a.kv_heads * a.head_dim;
  B b{m};
  b.mod("");
  b.mod("model");
  b.embedding("model.embed_tokens", a.vocab, h);
  b.mod("model.layers");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = layer("model.layers.", i);
    b.mod(l);
    b.attention(l, h, q, kvd, "dense", true);
    if (qk_ln) {
      b.norm(l + ".self_attn.q_layernorm", a.head_dim, true, true);
      b.norm(l + ".self_attn.k_layernorm", a.head_dim, true, true);
    }
    b.mod(l + ".mlp");
    b.mod(l + ".mlp.activation_fn");
    b.linear(l + ".mlp.fc1", h, a.intermediate, true);
    b.linear(l + ".mlp.fc2", a.intermediate, h, true);
    b.norm(l + ".input_layernorm", h, true, true);
    b.mod(l + ".resid_dropout");
  }
  b.rotary("model.rotary_emb", static_cast<uint64_t>(a.head_dim * a.partial_rotary));
  b.mod("model.embed_dropout");
  b.norm("model.final_layernorm", h, true, true);
  b.head("model.embed_tokens.weight", a.vocab, h, a.tied_embeddings, true);
}

// GPT-J (GPTJForCausalLM): ln_1, k/v/q/out projections without bias, fc_in/fc_out, parallel.
void build_gptj(const Obj& c, const std::string& ov, ModelDescription& m) {
  Architecture& a = m.arch;
  dims(c, a, "n_embd", "n_layer", "n_head");
  a.intermediate = c.u64_or("n_inner", 4 * a.hidden, 1, kMaxDim);
  a.activation = c.str_or("activation_function", "gelu_new", 32);
  a.max_positions = c.u64_or("n_positions", 2048, 1, kMaxVocab);
  const uint64_t rot = c.u64_or("rotary_dim", a.head_dim, 1, a.head_dim);
  a.partial_rotary = static_cast<double>(rot) / static_cast<double>(a.head_dim);
  a.hidden_dropout = c.num_or("resid_pdrop", 0.0, 0, 1);
  a.attention_dropout = c.num_or("attn_pdrop", 0.0, 0, 1);
  c.num_or("embd_pdrop", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  a.parallel_block = true;
  a.norm_count = 1;
  m.architecture = arch(c, ov, "GPTJ");
  const uint64_t h = a.hidden;
  B b{m};
  b.mod("");
  b.mod("transformer");
  b.embedding("transformer.wte", a.vocab, h);
  b.mod("transformer.drop");
  b.mod("transformer.h");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = layer("transformer.h.", i);
    b.mod(l);
    b.norm(l + ".ln_1", h, true, true);
    b.mod(l + ".attn");
    b.mod(l + ".attn.attn_dropout");
    b.mod(l + ".attn.resid_dropout");
    b.linear(l + ".attn.k_proj", h, h, false);
    b.linear(l + ".attn.v_proj", h, h, false);
    b.linear(l + ".attn.q_proj", h, h, false);
    b.linear(l + ".attn.out_proj", h, h, false);
    b.mod(l + ".mlp");
    b.linear(l + ".mlp.fc_in", h, a.intermediate, true);
    b.linear(l + ".mlp.fc_out", a.intermediate, h, true);
    b.mod(l + ".mlp.act");
    b.mod(l + ".mlp.dropout");
  }
  b.norm("transformer.ln_f", h, true, true);
  b.head("transformer.wte.weight", a.vocab, h, a.tied_embeddings, true);
}

// Starcoder2, OLMo, OLMo 2: Llama's layout (model.layers.N.self_attn.{q,k,v,o}_proj) with their
// norms and MLPs.
void build_llama_like(const Obj& c, const std::string& type, const std::string& ov,
                      ModelDescription& m) {
  Architecture& a = m.arch;
  dims(c, a, "hidden_size", "num_hidden_layers", "num_attention_heads");
  a.kv_heads = c.u64_or("num_key_value_heads", a.heads, 1, kMaxDim);
  if (a.heads % a.kv_heads != 0)
    fail(code::kInconsistent, c.field("num_key_value_heads"),
         Message{"error.config.divideHeads", {{"field", c.field("num_key_value_heads")}}});
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  const bool sc2 = type == "starcoder2", olmo2 = type == "olmo2";
  a.activation = c.str_or("hidden_act", sc2 ? "gelu_pytorch_tanh" : "silu", 32);
  const bool bias = sc2 ? c.boolean_or("use_bias", true) : c.boolean_or("attention_bias", false);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", sc2);
  a.gated_mlp = !sc2;
  a.norm = sc2 ? "layernorm" : (olmo2 ? "rmsnorm" : "layernorm_no_affine");
  a.hidden_dropout = sc2 ? c.num_or("residual_dropout", 0.0, 0, 1) : 0.0;
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  if (sc2) c.num_or("embedding_dropout", 0.0, 0, 1);
  if (type == "olmo" && c.has("clip_qkv") && !c.raw("clip_qkv").is_null())
    fail(code::kUnsupported, c.field("clip_qkv"),
         Message{"error.config.olmoClip", {{"field", c.field("clip_qkv")}}});
  c.mark_used("clip_qkv");
  m.architecture = arch(c, ov, sc2 ? "Starcoder2" : (olmo2 ? "Olmo2" : "Olmo"));
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kvd = a.kv_heads * a.head_dim;
  const bool nw = type == "olmo";  // OlmoLayerNorm: no parameters
  B b{m};
  b.mod("");
  b.mod("model");
  b.embedding("model.embed_tokens", a.vocab, h);
  b.mod("model.layers");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = layer("model.layers.", i);
    b.mod(l);
    b.attention(l, h, q, kvd, "o_proj", bias);
    if (olmo2) {
      b.norm(l + ".self_attn.q_norm", q, true, false);
      b.norm(l + ".self_attn.k_norm", kvd, true, false);
    }
    b.mod(l + ".mlp");
    if (sc2) {
      b.linear(l + ".mlp.c_fc", h, a.intermediate, bias);
      b.linear(l + ".mlp.c_proj", a.intermediate, h, bias);
      b.mod(l + ".mlp.act");
    } else {
      b.linear(l + ".mlp.gate_proj", h, a.intermediate, false);
      b.linear(l + ".mlp.up_proj", h, a.intermediate, false);
      b.linear(l + ".mlp.down_proj", a.intermediate, h, false);
      b.mod(l + ".mlp.act_fn");
    }
    if (olmo2) {
      b.norm(l + ".post_attention_layernorm", h, true, false);
      b.norm(l + ".post_feedforward_layernorm", h, true, false);
    } else {
      b.norm(l + ".input_layernorm", h, !nw, sc2);
      b.norm(l + ".post_attention_layernorm", h, !nw, sc2);
    }
  }
  b.norm("model.norm", h, !nw, sc2);
  b.rotary("model.rotary_emb", a.head_dim);
  b.head("model.embed_tokens.weight", a.vocab, h, a.tied_embeddings, false);
}

// torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
// dim_feedforward, dropout, activation, custom_encoder, custom_decoder, layer_norm_eps,
// batch_first, norm_first, bias): encoder and decoder stacks with their final LayerNorms.
void mha(B& b, const std::string& n, uint64_t d, bool bias) {
  b.mod(n);
  b.param(n + ".in_proj_weight", {3 * d, d}).linear = LinearKind::linear;
  if (bias) b.param(n + ".in_proj_bias", {3 * d});
  b.linear(n + ".out_proj", d, d, bias);
}

void build_torch_transformer(const Obj& c, ModelDescription& m) {
  Architecture& a = m.arch;
  a.hidden = c.u64_or("d_model", 512, 1, kMaxDim);
  a.heads = c.u64_or("nhead", 8, 1, kMaxDim);
  a.encoder_layers = c.u64_or("num_encoder_layers", 6, 1, kMaxLayers);
  a.layers = c.u64_or("num_decoder_layers", 6, 1, kMaxLayers);
  a.intermediate = c.u64_or("dim_feedforward", 2048, 1, kMaxDim);
  a.hidden_dropout = a.attention_dropout = c.num_or("dropout", 0.1, 0, 1);
  a.activation = c.one_of_or("activation", {"relu", "gelu"}, "relu");
  c.num_or("layer_norm_eps", 1e-5, 0, 1);
  c.boolean_or("batch_first", false);
  a.norm_first = c.boolean_or("norm_first", false);
  const bool bias = c.boolean_or("bias", true);
  if (a.hidden % a.heads != 0)
    fail(code::kInconsistent, c.field("nhead"),
         Message{"error.config.divideDModel", {{"field", c.field("nhead")}}});
  a.head_dim = a.hidden / a.heads;
  a.kv_heads = a.heads;
  m.architecture = "torch.nn.Transformer";
  const uint64_t d = a.hidden, ff = a.intermediate;
  B b{m};
  b.mod("");
  auto stack = [&](const char* s, uint64_t n, bool dec) {
    b.mod(s);
    b.mod(std::string(s) + ".layers");
    for (uint64_t i = 0; i < n; ++i) {
      const std::string l = std::string(s) + ".layers." + std::to_string(i);
      b.mod(l);
      mha(b, l + ".self_attn", d, bias);
      if (dec) mha(b, l + ".multihead_attn", d, bias);
      b.linear(l + ".linear1", d, ff, bias);
      b.mod(l + ".dropout");
      b.linear(l + ".linear2", ff, d, bias);
      for (int k = 1; k <= (dec ? 3 : 2); ++k)
        b.norm(l + ".norm" + std::to_string(k), d, true, bias);
      for (int k = 1; k <= (dec ? 3 : 2); ++k) b.mod(l + ".dropout" + std::to_string(k));
    }
    b.norm(std::string(s) + ".norm", d, true, bias);
  };
  stack("encoder", a.encoder_layers, false);
  stack("decoder", a.layers, true);
}

}  // namespace

bool model_from_llm_family(const Obj& c, const std::string& type, const std::string& ov,
                           ModelDescription& m) {
  if (type == "falcon")
    build_falcon(c, ov, m);
  else if (type == "phi")
    build_phi(c, ov, m);
  else if (type == "gptj")
    build_gptj(c, ov, m);
  else if (type == "starcoder2" || type == "olmo" || type == "olmo2")
    build_llama_like(c, type, ov, m);
  else if (type == "nn.Transformer")
    build_torch_transformer(c, m);
  else
    return false;
  return true;
}

}  // namespace trainmem
