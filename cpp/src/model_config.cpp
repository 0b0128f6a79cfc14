// HuggingFace config.json -> exact parameter tensor list (names and shapes as the model's
// state_dict() holds them in current transformers), buffers, and the module tree size.
// Sources: transformers/models/{gpt2,bert,llama,mistral,mixtral,qwen2,gpt_neox,t5}/
// modeling_*.py and configuration_*.py (defaults of absent keys).
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/model.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxDim = 1ULL << 26;    // hidden, intermediate, heads, ...
constexpr uint64_t kMaxVocab = 1ULL << 32;  // vocabulary / positions
// Layers: the largest published models have ~130 (Llama-3.1-405B: 126); each layer becomes
// ~10 tensors, and 100,000 layers took 48 s and 600 MB of WASM heap (h6 stress test).
constexpr uint64_t kMaxLayers = 1000;

// Builds names with as few allocations as possible (a 70B preset is ~700 tensors and peak
// memory parses it on every call): each name is base + suffix, allocated once.
struct Builder {
  ModelDescription& m;
  void mod(const std::string& base, const char* sub = "") {
    ++m.module_count;
    m.module_name_bytes += base.size() + std::char_traits<char>::length(sub);
  }
  void mod(const char* base) {
    ++m.module_count;
    m.module_name_bytes += std::char_traits<char>::length(base);
  }
  TensorSpec& param(const std::string& base, const char* sub, std::initializer_list<uint64_t> shape,
                    const std::string& tied = std::string()) {
    m.tensors.emplace_back();
    TensorSpec& t = m.tensors.back();
    const size_t n = std::char_traits<char>::length(sub);
    t.name.reserve(base.size() + n);
    t.name.append(base).append(sub, n);
    t.shape.assign(shape);
    t.tied_to = tied;
    return t;
  }
  // nn.Linear: weight [out, in] (+ bias [out]); registers the module base + sub.
  void linear(const std::string& base, const char* sub, uint64_t in, uint64_t out, bool bias) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {out, in});
    if (bias) param(scratch, ".bias", {out});
  }
  // GPT-2's Conv1D(nf, nx): weight [nx, nf] (transposed against nn.Linear), bias [nf].
  void conv1d(const std::string& base, const char* sub, uint64_t nx, uint64_t nf) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {nx, nf});
    param(scratch, ".bias", {nf});
  }
  void layer_norm(const std::string& base, const char* sub, uint64_t n, bool bias = true) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {n});
    if (bias) param(scratch, ".bias", {n});
  }
  void embedding(const std::string& base, const char* sub, uint64_t rows, uint64_t dim) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {rows, dim});
  }
  void buffer(std::string name, std::vector<uint64_t> shape, DType dt, bool persistent) {
    BufferSpec b;
    b.name = std::move(name);
    b.shape = std::move(shape);
    b.dtype = dt;
    b.persistent = persistent;
    m.buffers.push_back(std::move(b));
  }
  // base + "." + sub (sub alone for an empty base) in a buffer of its own, so that a call
  // such as mod(join(p, "layers")) builds no temporary string.
  const std::string& join(const std::string& base, const char* sub) {
    joined.assign(base);
    if (!joined.empty()) joined += '.';
    joined += sub;
    return joined;
  }
  std::string scratch, joined;
};

std::string join(const std::string& a, std::string_view b) {
  std::string r = a;
  if (!r.empty()) r += '.';
  r += b;
  return r;
}

void check_heads(const Obj& c, const char* heads_key, uint64_t hidden, uint64_t heads,
                 bool explicit_head_dim) {
  if (!explicit_head_dim && hidden % heads != 0)
    fail(code::kInconsistent, c.field(heads_key),
         {c.field(heads_key), " (", std::to_string(heads), ") must divide the hidden size (",
          std::to_string(hidden), ")"});
}

// architectures[0] (or the override), restricted to the classes we model for this type.
std::string pick_arch(const Obj& c, const std::string& override_arch,
                      std::initializer_list<std::string_view> allowed, std::string_view fallback) {
  std::string arch(fallback);
  if (c.has("architectures")) {
    const json& a = c.array("architectures", 16);
    if (!a.empty() && a[0].is_string()) arch = a[0].get<std::string>();
  } else {
    c.mark_used("architectures");
  }
  if (!override_arch.empty()) arch = override_arch;
  for (std::string_view x : allowed)
    if (x == arch) return arch;
  std::string msg = "architecture \"" + arch.substr(0, 64) + "\" is not modelled; expected one of:";
  const char* sep = " ";
  for (std::string_view x : allowed) {
    msg += sep;
    msg += x;
    sep = ", ";
  }
  fail(code::kUnsupported, override_arch.empty() ? c.field("architectures") : "model.architecture",
       msg);
}

uint64_t num_labels(const Obj& c) {
  if (c.has("num_labels")) return c.u64("num_labels", 1, kMaxDim);
  if (c.has("id2label") && c.raw("id2label").is_object() && !c.raw("id2label").empty())
    return c.raw("id2label").size();
  c.mark_used("id2label");
  return 2;  // PretrainedConfig default
}

// ---------------------------------------------------------------- gpt2 (modeling_gpt2.py)
void build_gpt2(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  a.hidden = c.u64("n_embd", 1, kMaxDim);
  a.layers = c.u64("n_layer", 1, kMaxLayers);
  a.heads = c.u64("n_head", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64("n_positions", 1, kMaxVocab);
  check_heads(c, "n_head", a.hidden, a.heads, false);
  a.kv_heads = a.heads;
  a.head_dim = a.hidden / a.heads;
  a.intermediate = c.u64_or("n_inner", 4 * a.hidden, 1, kMaxDim);  // None -> 4 * n_embd
  a.activation = c.str_or("activation_function", "gelu_new", 64);
  a.hidden_dropout = c.num_or("resid_pdrop", 0.1, 0, 1);
  a.attention_dropout = c.num_or("attn_pdrop", 0.1, 0, 1);
  c.num_or("embd_pdrop", 0.1, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  const bool cross = c.boolean_or("add_cross_attention", false);
  m.architecture = pick_arch(c, arch_override, {"GPT2LMHeadModel", "GPT2Model"}, "GPT2LMHeadModel");
  const bool head = m.architecture == "GPT2LMHeadModel";
  m.tensors.reserve(a.layers * (cross ? 20 : 12) + 6);
  const std::string t = head ? "transformer" : "";
  const uint64_t e = a.hidden, in = a.intermediate;
  b.mod("");
  if (head) b.mod(t);
  b.embedding(b.join(t, "wte"), "", a.vocab, e);
  b.embedding(b.join(t, "wpe"), "", a.max_positions, e);
  b.mod(b.join(t, "drop"));
  b.mod(b.join(t, "h"));
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string h = join(t, "h." + std::to_string(i));
    b.mod(h);
    b.layer_norm(h, ".ln_1", e);
    b.mod(h, ".attn");
    b.conv1d(h, ".attn.c_attn", e, 3 * e);
    b.conv1d(h, ".attn.c_proj", e, e);
    b.mod(h, ".attn.attn_dropout");
    b.mod(h, ".attn.resid_dropout");
    b.layer_norm(h, ".ln_2", e);
    if (cross) {
      b.mod(h, ".crossattention");
      b.conv1d(h, ".crossattention.c_attn", e, 2 * e);
      b.mod(h, ".crossattention.q_attn");
      b.scratch.assign(h).append(".crossattention.q_attn");
      b.param(b.scratch, ".weight", {e, e});
      b.param(b.scratch, ".bias", {e});
      b.conv1d(h, ".crossattention.c_proj", e, e);
      b.mod(h, ".crossattention.attn_dropout");
      b.mod(h, ".crossattention.resid_dropout");
      b.layer_norm(h, ".ln_cross_attn", e);
    }
    b.mod(h, ".mlp");
    b.conv1d(h, ".mlp.c_fc", e, in);
    b.conv1d(h, ".mlp.c_proj", in, e);
    b.mod(h, ".mlp.act");
    b.mod(h, ".mlp.dropout");
  }
  b.layer_norm(b.join(t, "ln_f"), "", e);
  if (head) {
    b.mod("lm_head");
    b.param(std::string("lm_head"), ".weight", {a.vocab, e},
            a.tied_embeddings ? b.join(t, "wte.weight") : std::string());
  }
  // transformers >= 4.x registers attn.bias / masked_bias with persistent=False (no longer in
  // state_dict; old hub .bin files still hold them).
}

// ---------------------------------------------------------------- bert (modeling_bert.py)
void build_bert(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  a.hidden = c.u64("hidden_size", 1, kMaxDim);
  a.layers = c.u64("num_hidden_layers", 1, kMaxLayers);
  a.heads = c.u64("num_attention_heads", 1, kMaxDim);
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64_or("max_position_embeddings", 512, 1, kMaxVocab);
  const uint64_t types = c.u64_or("type_vocab_size", 2, 1, kMaxVocab);
  check_heads(c, "num_attention_heads", a.hidden, a.heads, false);
  a.kv_heads = a.heads;
  a.head_dim = a.hidden / a.heads;
  a.activation = c.str_or("hidden_act", "gelu", 64);
  a.hidden_dropout = c.num_or("hidden_dropout_prob", 0.1, 0, 1);
  a.attention_dropout = c.num_or("attention_probs_dropout_prob", 0.1, 0, 1);
  a.encoder_only = true;
  const uint64_t labels = num_labels(c);
  const char* fallback = c.has("num_labels") ? "BertForSequenceClassification" : "BertModel";
  m.architecture = pick_arch(
      c, arch_override,
      {"BertModel", "BertForSequenceClassification", "BertForMaskedLM", "BertForPreTraining"},
      fallback);
  const bool bare = m.architecture == "BertModel";
  const bool mlm = m.architecture == "BertForMaskedLM";
  const bool pre = m.architecture == "BertForPreTraining";
  const bool seq = m.architecture == "BertForSequenceClassification";
  const bool pooler = !mlm;  // BertForMaskedLM builds BertModel(add_pooling_layer=False)
  a.tied_embeddings = (mlm || pre) && c.boolean_or("tie_word_embeddings", true);
  if (!(mlm || pre)) c.mark_used("tie_word_embeddings");
  const std::string p = bare ? "" : "bert";
  m.tensors.reserve(a.layers * 16 + 20);
  const uint64_t h = a.hidden;
  b.mod("");
  if (!bare) b.mod(p);
  const std::string emb = join(p, "embeddings");
  b.mod(emb);
  b.embedding(emb, ".word_embeddings", a.vocab, h);
  b.embedding(emb, ".position_embeddings", a.max_positions, h);
  b.embedding(emb, ".token_type_embeddings", types, h);
  b.layer_norm(emb, ".LayerNorm", h);
  b.mod(emb, ".dropout");
  // transformers >= 4.31: position_ids / token_type_ids are registered persistent=False.
  b.buffer(emb + ".position_ids", {1, a.max_positions}, DType::int64, false);
  b.buffer(emb + ".token_type_ids", {1, a.max_positions}, DType::int64, false);
  const std::string enc = join(p, "encoder");
  b.mod(enc);
  b.mod(enc, ".layer");
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = enc + ".layer." + std::to_string(i);
    b.mod(l);
    b.mod(l, ".attention");
    b.mod(l, ".attention.self");
    b.linear(l, ".attention.self.query", h, h, true);
    b.linear(l, ".attention.self.key", h, h, true);
    b.linear(l, ".attention.self.value", h, h, true);
    b.mod(l, ".attention.self.dropout");
    b.mod(l, ".attention.output");
    b.linear(l, ".attention.output.dense", h, h, true);
    b.layer_norm(l, ".attention.output.LayerNorm", h);
    b.mod(l, ".attention.output.dropout");
    b.mod(l, ".intermediate");
    b.linear(l, ".intermediate.dense", h, a.intermediate, true);
    b.mod(l, ".intermediate.intermediate_act_fn");
    b.mod(l, ".output");
    b.linear(l, ".output.dense", a.intermediate, h, true);
    b.layer_norm(l, ".output.LayerNorm", h);
    b.mod(l, ".output.dropout");
  }
  if (pooler) {
    b.mod(b.join(p, "pooler"));
    b.linear(b.join(p, "pooler.dense"), "", h, h, true);
    b.mod(b.join(p, "pooler.activation"));
  }
  if (mlm || pre) {
    // BertLMPredictionHead: bias [V] (own parameter), transform, decoder tied to embeddings.
    b.mod("cls");
    b.mod("cls.predictions");
    b.param(std::string("cls.predictions"), ".bias", {a.vocab});
    b.mod("cls.predictions.transform");
    b.linear("cls.predictions.transform.dense", "", h, h, true);
    b.mod("cls.predictions.transform.transform_act_fn");
    b.layer_norm("cls.predictions.transform.LayerNorm", "", h);
    b.mod("cls.predictions.decoder");
    b.param(std::string("cls.predictions.decoder"), ".weight", {a.vocab, h},
            a.tied_embeddings ? emb + ".word_embeddings.weight" : "");
    b.param(std::string("cls.predictions.decoder"), ".bias", {a.vocab},
            std::string("cls.predictions.bias"));
    if (pre) b.linear("cls.seq_relationship", "", h, 2, true);
  }
  if (seq) {
    a.num_labels = labels;
    b.mod("dropout");
    b.linear("classifier", "", h, labels, true);
  }
}

// ------------------------------------------- llama, mistral, mixtral, qwen2 (modeling_*.py)
void build_llama_family(const Obj& c, const std::string& type, const std::string& arch_override,
                        ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  a.hidden = c.u64("hidden_size", 1, kMaxDim);
  a.layers = c.u64("num_hidden_layers", 1, kMaxLayers);
  a.heads = c.u64("num_attention_heads", 1, kMaxDim);
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64_or("max_position_embeddings", 0, 0, kMaxVocab);
  a.kv_heads = c.u64_or("num_key_value_heads", a.heads, 1, kMaxDim);
  const bool explicit_hd = c.has("head_dim");
  check_heads(c, "num_attention_heads", a.hidden, a.heads, explicit_hd);
  a.head_dim = explicit_hd ? c.u64("head_dim", 1, kMaxDim) : a.hidden / a.heads;
  if (!explicit_hd) c.mark_used("head_dim");
  if (a.heads % a.kv_heads != 0)
    fail(code::kInconsistent, c.field("num_key_value_heads"),
         {c.field("num_key_value_heads"), " (", std::to_string(a.kv_heads),
          ") must divide num_attention_heads (", std::to_string(a.heads), ")"});
  a.activation = c.str_or("hidden_act", "silu", 64);
  a.norm = "rmsnorm";
  a.gated_mlp = true;
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  const bool qwen = type == "qwen2", moe = type == "mixtral";
  // LlamaConfig.attention_bias / mlp_bias (default False); Qwen2 has q/k/v biases always.
  const bool attn_bias = c.boolean_or("attention_bias", false);
  const bool mlp_bias = c.boolean_or("mlp_bias", false);
  if (moe) {
    a.num_experts = c.u64("num_local_experts", 1, 1 << 16);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 2, 1, a.num_experts);
  }
  static const char* kPrefix[] = {"Llama", "Mistral", "Mixtral", "Qwen2"};
  const std::string cls = kPrefix[type == "llama" ? 0 : type == "mistral" ? 1 : moe ? 2 : 3];
  m.architecture =
      pick_arch(c, arch_override, {cls + "ForCausalLM", cls + "Model"}, cls + "ForCausalLM");
  const bool head = m.architecture == cls + "ForCausalLM";
  m.tensors.reserve(a.layers * (moe ? 7 + 3 * a.num_experts : 16) + 4);
  const std::string p = head ? "model" : "";
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
  b.mod("");
  if (head) b.mod(p);
  b.embedding(b.join(p, "embed_tokens"), "", a.vocab, h);
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = join(p, "layers." + std::to_string(i));
    b.mod(l);
    b.mod(l, ".self_attn");
    b.linear(l, ".self_attn.q_proj", h, q, attn_bias || qwen);
    b.linear(l, ".self_attn.k_proj", h, kv, attn_bias || qwen);
    b.linear(l, ".self_attn.v_proj", h, kv, attn_bias || qwen);
    b.linear(l, ".self_attn.o_proj", q, h, attn_bias);
    if (moe) {
      // Hub checkpoint naming (transformers 4.x MixtralSparseMoeBlock): gate + experts.N.w1..3
      const std::string s = l + ".block_sparse_moe";
      b.mod(s);
      b.linear(s, ".gate", h, a.num_experts, false);
      b.mod(s, ".experts");
      for (uint64_t x = 0; x < a.num_experts; ++x) {
        const std::string ex = s + ".experts." + std::to_string(x);
        b.mod(ex);
        b.linear(ex, ".w1", h, a.intermediate, false);
        b.linear(ex, ".w2", a.intermediate, h, false);
        b.linear(ex, ".w3", h, a.intermediate, false);
        b.mod(ex, ".act_fn");
      }
    } else {
      b.mod(l, ".mlp");
      b.linear(l, ".mlp.gate_proj", h, a.intermediate, mlp_bias);
      b.linear(l, ".mlp.up_proj", h, a.intermediate, mlp_bias);
      b.linear(l, ".mlp.down_proj", a.intermediate, h, mlp_bias);
      b.mod(l, ".mlp.act_fn");
    }
    b.layer_norm(l, ".input_layernorm", h, false);
    b.layer_norm(l, ".post_attention_layernorm", h, false);
  }
  b.layer_norm(b.join(p, "norm"), "", h, false);
  b.mod(b.join(p, "rotary_emb"));
  // Rotary inverse frequencies: registered persistent=False (not in state_dict).
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {a.head_dim / 2}, DType::fp32, false);
  if (head) {
    b.mod("lm_head");
    b.param(std::string("lm_head"), ".weight", {a.vocab, h},
            a.tied_embeddings ? b.join(p, "embed_tokens.weight") : "");
  }
}

// ---------------------------------------------------------------- gpt_neox
void build_gpt_neox(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  a.hidden = c.u64("hidden_size", 1, kMaxDim);
  a.layers = c.u64("num_hidden_layers", 1, kMaxLayers);
  a.heads = c.u64("num_attention_heads", 1, kMaxDim);
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64_or("max_position_embeddings", 2048, 1, kMaxVocab);
  check_heads(c, "num_attention_heads", a.hidden, a.heads, false);
  a.kv_heads = a.heads;
  a.head_dim = a.hidden / a.heads;
  a.activation = c.str_or("hidden_act", "gelu", 64);
  a.hidden_dropout = c.num_or("hidden_dropout", 0.0, 0, 1);
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  const bool bias = c.boolean_or("attention_bias", true);
  m.architecture =
      pick_arch(c, arch_override, {"GPTNeoXForCausalLM", "GPTNeoXModel"}, "GPTNeoXForCausalLM");
  const bool head = m.architecture == "GPTNeoXForCausalLM";
  m.tensors.reserve(a.layers * 12 + 4);
  const std::string p = head ? "gpt_neox" : "";
  const uint64_t h = a.hidden;
  b.mod("");
  if (head) b.mod(p);
  b.embedding(b.join(p, "embed_in"), "", a.vocab, h);
  b.mod(b.join(p, "emb_dropout"));
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i) {
    const std::string l = join(p, "layers." + std::to_string(i));
    b.mod(l);
    b.layer_norm(l, ".input_layernorm", h);
    b.layer_norm(l, ".post_attention_layernorm", h);
    b.mod(l, ".post_attention_dropout");
    b.mod(l, ".post_mlp_dropout");
    b.mod(l, ".attention");
    b.linear(l, ".attention.query_key_value", h, 3 * h, bias);
    b.linear(l, ".attention.dense", h, h, bias);
    b.mod(l, ".attention.attention_dropout");
    b.mod(l, ".mlp");
    b.linear(l, ".mlp.dense_h_to_4h", h, a.intermediate, true);
    b.linear(l, ".mlp.dense_4h_to_h", a.intermediate, h, true);
    b.mod(l, ".mlp.act");
  }
  b.layer_norm(b.join(p, "final_layer_norm"), "", h);
  b.mod(b.join(p, "rotary_emb"));
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {a.head_dim / 2}, DType::fp32, false);
  if (head) {
    b.mod("embed_out");
    b.param(std::string("embed_out"), ".weight", {a.vocab, h},
            a.tied_embeddings ? b.join(p, "embed_in.weight") : std::string());
  }
}

// ---------------------------------------------------------------- t5 (modeling_t5.py)
void build_t5(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  a.hidden = c.u64("d_model", 1, kMaxDim);
  a.head_dim = c.u64("d_kv", 1, kMaxDim);
  a.intermediate = c.u64("d_ff", 1, kMaxDim);
  a.heads = c.u64("num_heads", 1, kMaxDim);
  a.kv_heads = a.heads;
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.encoder_layers = c.u64("num_layers", 1, kMaxLayers);
  a.layers = c.u64_or("num_decoder_layers", a.encoder_layers, 1, kMaxLayers);
  const uint64_t buckets = c.u64_or("relative_attention_num_buckets", 32, 1, kMaxDim);
  c.u64_or("relative_attention_max_distance", 128, 1, kMaxVocab);
  const std::string ff = c.str_or("feed_forward_proj", "relu", 64);
  a.gated_mlp = ff.rfind("gated-", 0) == 0;
  a.activation = a.gated_mlp ? ff.substr(6) : ff;
  a.norm = "rmsnorm";
  a.hidden_dropout = c.num_or("dropout_rate", 0.1, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  m.architecture = pick_arch(c, arch_override, {"T5ForConditionalGeneration", "T5Model"},
                             "T5ForConditionalGeneration");
  const uint64_t d = a.hidden, inner = a.heads * a.head_dim;
  m.tensors.reserve((a.layers + a.encoder_layers) * 16 + 8);
  b.mod("");
  b.embedding("shared", "", a.vocab, d);
  auto stack = [&](const std::string& s, uint64_t blocks, bool decoder) {
    b.mod(s);
    b.mod(s, ".embed_tokens");  // the same module as `shared`: its weight repeats
    b.param(s, ".embed_tokens.weight", {a.vocab, d}, std::string("shared.weight"));
    b.mod(s, ".block");
    for (uint64_t i = 0; i < blocks; ++i) {
      const std::string blk = s + ".block." + std::to_string(i);
      b.mod(blk);
      b.mod(blk, ".layer");
      auto attention = [&](const std::string& l, const char* kind, bool rel) {
        b.mod(l);
        const std::string at = l + "." + kind;
        b.mod(at);
        b.linear(at, ".q", d, inner, false);
        b.linear(at, ".k", d, inner, false);
        b.linear(at, ".v", d, inner, false);
        b.linear(at, ".o", inner, d, false);
        if (rel) b.embedding(at, ".relative_attention_bias", buckets, a.heads);
        b.layer_norm(l, ".layer_norm", d, false);
        b.mod(l, ".dropout");
      };
      attention(blk + ".layer.0", "SelfAttention", i == 0);
      uint64_t next = 1;
      if (decoder) attention(blk + ".layer." + std::to_string(next++), "EncDecAttention", false);
      const std::string l = blk + ".layer." + std::to_string(next);
      b.mod(l);
      const std::string f = l + ".DenseReluDense";
      b.mod(f);
      if (a.gated_mlp) {
        b.linear(f, ".wi_0", d, a.intermediate, false);
        b.linear(f, ".wi_1", d, a.intermediate, false);
      } else {
        b.linear(f, ".wi", d, a.intermediate, false);
      }
      b.linear(f, ".wo", a.intermediate, d, false);
      b.mod(f, ".dropout");
      b.mod(f, ".act");
      b.layer_norm(l, ".layer_norm", d, false);
      b.mod(l, ".dropout");
    }
    b.layer_norm(s, ".final_layer_norm", d, false);
    b.mod(s, ".dropout");
  };
  stack("encoder", a.encoder_layers, false);
  stack("decoder", a.layers, true);
  if (m.architecture == "T5ForConditionalGeneration") {
    b.mod("lm_head");
    b.param(std::string("lm_head"), ".weight", {a.vocab, d},
            a.tied_embeddings ? std::string("shared.weight") : std::string());
  }
}

}  // namespace

ModelDescription model_from_config(const Obj& c, const std::string& arch_override) {
  static const std::vector<std::string> kTypes = {"gpt2",    "bert",  "llama",    "mistral",
                                                  "mixtral", "qwen2", "gpt_neox", "t5"};
  const std::string type = c.one_of("model_type", kTypes);
  ModelDescription m;
  m.source = "config";
  m.arch.model_type = type;
  if (type == "gpt2")
    build_gpt2(c, arch_override, m);
  else if (type == "bert")
    build_bert(c, arch_override, m);
  else if (type == "gpt_neox")
    build_gpt_neox(c, arch_override, m);
  else if (type == "t5")
    build_t5(c, arch_override, m);
  else
    build_llama_family(c, type, arch_override, m);
  if (m.arch.kv_heads == 0) m.arch.kv_heads = m.arch.heads;
  m.name = c.str_or("_name_or_path", m.architecture.c_str(), 200);
  // A config.json holds many keys that do not change the tensor list (token ids, rope
  // settings, ...): accept them, as transformers does.
  for (auto it = c.json_value().begin(); it != c.json_value().end(); ++it) c.mark_used(it.key());
  c.finish();
  // Modules were counted while building; keep them (finalize infers only when absent).
  finalize_tensors(&m);
  return m;
}

}  // namespace trainmem
