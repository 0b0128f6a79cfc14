// HuggingFace config.json -> exact parameter tensor list (names and shapes as the model's
// state_dict() holds them in current transformers), buffers, and the module tree size.
// Sources: transformers/models/{gpt2,bert,llama,mistral,mixtral,qwen2,gpt_neox,t5,mt5}/
// modeling_*.py and configuration_*.py (defaults of absent keys).
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_json.hpp"
#include "io/net_config.hpp"
#include "io/quantized_config.hpp"
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
    param(scratch, ".weight", {out, in}).linear = LinearKind::linear;
    if (bias) param(scratch, ".bias", {out});
  }
  // GPT-2's Conv1D(nf, nx): weight [nx, nf] (transposed against nn.Linear), bias [nf].
  void conv1d(const std::string& base, const char* sub, uint64_t nx, uint64_t nf) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {nx, nf}).linear = LinearKind::conv1d;
    param(scratch, ".bias", {nf});
  }
  // The output embedding (an nn.Linear without bias), possibly tied to the input embedding.
  void head(const std::string& base, std::initializer_list<uint64_t> shape,
            const std::string& tied) {
    TensorSpec& t = param(base, ".weight", shape, tied);
    t.linear = LinearKind::linear;
    t.output_head = true;
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
         Message{"error.config.headsDivide",
                 {{"field", c.field(heads_key)},
                  {"heads", std::to_string(heads)},
                  {"hidden", std::to_string(hidden)}}});
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
  std::string list;
  const char* sep = " ";
  for (std::string_view x : allowed) {
    list += sep;
    list += x;
    sep = ", ";
  }
  fail(code::kUnsupported, override_arch.empty() ? c.field("architectures") : "model.architecture",
       Message{"error.net.architecture", {{"arch", arch.substr(0, 64)}, {"list", list}}});
}

uint64_t num_labels(const Obj& c) {
  if (c.has("num_labels")) return c.u64("num_labels", 1, kMaxDim);
  if (c.has("id2label") && c.raw("id2label").is_object() && !c.raw("id2label").empty())
    return c.raw("id2label").size();
  c.mark_used("id2label");
  return 2;  // PretrainedConfig default
}

// The sizes BERT, GPT-NeoX and the Llama-style configs share (configuration_bert.py,
// configuration_gpt_neox.py, configuration_llama.py), max_position_embeddings defaulting to
// `positions`.
void read_dims(const Obj& c, Architecture& a, uint64_t positions, uint64_t min_positions) {
  a.hidden = c.u64("hidden_size", 1, kMaxDim);
  a.layers = c.u64("num_hidden_layers", 1, kMaxLayers);
  a.heads = c.u64("num_attention_heads", 1, kMaxDim);
  a.intermediate = c.u64("intermediate_size", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64_or("max_position_embeddings", positions, min_positions, kMaxVocab);
}

// Multi-head attention: `heads_key` heads that split the hidden size, each with its own k, v.
void read_mha(const Obj& c, const char* heads_key, Architecture& a) {
  check_heads(c, heads_key, a.hidden, a.heads, false);
  a.kv_heads = a.heads;
  a.head_dim = a.hidden / a.heads;
}

// The dropout probabilities after the attention / MLP output and on the attention weights.
void read_dropouts(const Obj& c, const char* hidden_key, const char* attention_key, double fallback,
                   Architecture& a) {
  a.hidden_dropout = c.num_or(hidden_key, fallback, 0, 1);
  a.attention_dropout = c.num_or(attention_key, fallback, 0, 1);
}

// The root module, and the base model's under `p` when it is not the root.
void root_modules(Builder& b, const std::string& p) {
  b.mod("");
  if (!p.empty()) b.mod(p);
}

// The output embedding `name` [vocab, h], tied to `tied` when the config ties embeddings.
void output_head(Builder& b, const char* name, const Architecture& a, uint64_t h,
                 const std::string& tied) {
  b.mod(name);
  b.head(std::string(name), {a.vocab, h}, a.tied_embeddings ? tied : std::string());
}

// ---------------------------------------------------------------- gpt2 (modeling_gpt2.py)
// One GPT2Block under `h` (with cross-attention when the config adds it).
void gpt2_block(Builder& b, const std::string& h, uint64_t e, uint64_t in, bool cross) {
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
    b.param(b.scratch, ".weight", {e, e}).linear = LinearKind::conv1d;
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

void build_gpt2(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Architecture& a = m.arch;
  a.hidden = c.u64("n_embd", 1, kMaxDim);
  a.layers = c.u64("n_layer", 1, kMaxLayers);
  a.heads = c.u64("n_head", 1, kMaxDim);
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.max_positions = c.u64("n_positions", 1, kMaxVocab);
  read_mha(c, "n_head", a);
  a.intermediate = c.u64_or("n_inner", 4 * a.hidden, 1, kMaxDim);  // None -> 4 * n_embd
  a.activation = c.str_or("activation_function", "gelu_new", 64);
  read_dropouts(c, "resid_pdrop", "attn_pdrop", 0.1, a);
  c.num_or("embd_pdrop", 0.1, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  const bool cross = c.boolean_or("add_cross_attention", false);
  m.architecture = pick_arch(c, arch_override, {"GPT2LMHeadModel", "GPT2Model"}, "GPT2LMHeadModel");
  const bool head = m.architecture == "GPT2LMHeadModel";
  m.tensors.reserve(a.layers * (cross ? 20 : 12) + 6);
  const std::string t = head ? "transformer" : "";
  const uint64_t e = a.hidden, in = a.intermediate;
  Builder b{m};
  root_modules(b, t);
  b.embedding(b.join(t, "wte"), "", a.vocab, e);
  b.embedding(b.join(t, "wpe"), "", a.max_positions, e);
  b.mod(b.join(t, "drop"));
  b.mod(b.join(t, "h"));
  for (uint64_t i = 0; i < a.layers; ++i)
    gpt2_block(b, join(t, "h." + std::to_string(i)), e, in, cross);
  b.layer_norm(b.join(t, "ln_f"), "", e);
  if (head) output_head(b, "lm_head", a, e, b.join(t, "wte.weight"));
  // transformers >= 4.x registers attn.bias / masked_bias with persistent=False (no longer in
  // state_dict; old hub .bin files still hold them).
}

// ---------------------------------------------------------------- bert (modeling_bert.py)
// BertSelfOutput / BertOutput under `base`: dense, LayerNorm (after the residual), dropout.
void bert_output(Builder& b, const std::string& base, uint64_t in, uint64_t h) {
  b.mod(base);
  b.linear(base, ".dense", in, h, true);
  b.layer_norm(base, ".LayerNorm", h);
  b.mod(base, ".dropout");
}

// One BertLayer under `l`.
void bert_layer(Builder& b, const std::string& l, uint64_t h, uint64_t inner) {
  b.mod(l);
  b.mod(l, ".attention");
  b.mod(l, ".attention.self");
  b.linear(l, ".attention.self.query", h, h, true);
  b.linear(l, ".attention.self.key", h, h, true);
  b.linear(l, ".attention.self.value", h, h, true);
  b.mod(l, ".attention.self.dropout");
  bert_output(b, l + ".attention.output", h, h);
  b.mod(l, ".intermediate");
  b.linear(l, ".intermediate.dense", h, inner, true);
  b.mod(l, ".intermediate.intermediate_act_fn");
  bert_output(b, l + ".output", inner, h);
}

void build_bert(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  read_dims(c, a, 512, 1);
  const uint64_t types = c.u64_or("type_vocab_size", 2, 1, kMaxVocab);
  read_mha(c, "num_attention_heads", a);
  a.activation = c.str_or("hidden_act", "gelu", 64);
  read_dropouts(c, "hidden_dropout_prob", "attention_probs_dropout_prob", 0.1, a);
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
  root_modules(b, p);
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
  for (uint64_t i = 0; i < a.layers; ++i)
    bert_layer(b, enc + ".layer." + std::to_string(i), h, a.intermediate);
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
    b.head(std::string("cls.predictions.decoder"), {a.vocab, h},
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

// ------------------------------------------------------------ Llama-style decoders
// One builder for the decoders that share Llama's layout (embed_tokens, layers.N.{self_attn,
// mlp, norms}, norm, lm_head); DecoderSpec holds what each modeling_*.py changes. Sources (the
// versions read): llama, mistral, mixtral, qwen2: modeling_*.py; qwen3 modeling_qwen3.py
// @9ee3f43; qwen3_moe modeling_qwen3_moe.py @16b6c53; gemma2 modeling_gemma2.py @006e869;
// gemma3_text modeling_gemma3.py @f14d0cb; phi3 modeling_phi3.py @00d4b3d; deepseek_v3
// modeling_deepseek_v3.py @00b676f (all huggingface/transformers).
enum class Moe { none, mixtral, qwen3, deepseek };

struct DecoderSpec {
  std::string cls;             // HF class prefix ("Llama", "Gemma2", ...)
  bool qkv_bias = false;       // q/k/v biases (Qwen2 always; attention_bias elsewhere)
  bool o_bias = false;         // o_proj bias (attention_bias: Llama, Qwen3, Gemma2/3, MLA)
  bool mlp_bias = false;       // LlamaConfig.mlp_bias
  bool fused_qkv = false;      // Phi3Attention.qkv_proj
  bool fused_gate_up = false;  // Phi3MLP.gate_up_proj
  bool qk_norm = false;        // q_norm / k_norm RMSNorm(head_dim): Qwen3, Gemma3
  bool sandwich_norm = false;  // pre/post_feedforward_layernorm: Gemma2, Gemma3
  bool local_rope = false;     // Gemma3TextModel.rotary_emb_local
  Moe moe = Moe::none;
  uint64_t dense_intermediate = 0;  // MoE models: the dense MLP's size (intermediate_size)
  uint64_t first_dense = 0;         // deepseek first_k_dense_replace
  uint64_t sparse_step = 1;         // qwen3_moe decoder_sparse_step
  std::vector<uint64_t> mlp_only;   // qwen3_moe mlp_only_layers
  uint64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0, v_head = 0;  // MLA
};

const char* decoder_class(const std::string& type) {
  static const std::pair<const char*, const char*> kCls[] = {
      {"llama", "Llama"}, {"mistral", "Mistral"},       {"mixtral", "Mixtral"},
      {"qwen2", "Qwen2"}, {"qwen3", "Qwen3"},           {"qwen3_moe", "Qwen3Moe"},
      {"gemma", "Gemma"}, {"gemma2", "Gemma2"},         {"gemma3_text", "Gemma3"},
      {"phi3", "Phi3"},   {"deepseek_v3", "DeepseekV3"}};
  for (const auto& p : kCls)
    if (type == p.first) return p.second;
  return "";
}

// The fields every Llama-style config has (configuration_llama.py), with the head size.
void read_decoder_dims(const Obj& c, const std::string& type, Architecture& a) {
  read_dims(c, a, 0, 0);
  a.kv_heads = c.u64_or("num_key_value_heads", a.heads, 1, kMaxDim);
  // Absent head_dim: Gemma2Config / Gemma3TextConfig default 256, Qwen3Config 128; the others
  // use hidden_size // num_attention_heads (getattr fallback in their attention modules).
  const uint64_t fixed = (type == "gemma" || type == "gemma2" || type == "gemma3_text") ? 256
                         : type == "qwen3"                                              ? 128
                                                                                        : 0;
  const bool explicit_hd = c.has("head_dim") || fixed != 0;
  check_heads(c, "num_attention_heads", a.hidden, a.heads, explicit_hd);
  a.head_dim = c.has("head_dim") ? c.u64("head_dim", 1, kMaxDim)
               : fixed           ? fixed
                                 : a.hidden / a.heads;
  c.mark_used("head_dim");
  if (a.heads % a.kv_heads != 0)
    fail(code::kInconsistent, c.field("num_key_value_heads"),
         Message{"error.config.kvHeads",
                 {{"field", c.field("num_key_value_heads")},
                  {"kvHeads", std::to_string(a.kv_heads)},
                  {"heads", std::to_string(a.heads)}}});
  // Gemma2/3 name the activation hidden_activation (default gelu_pytorch_tanh); Gemma (1)
  // GemmaConfig: hidden_act "gelu_pytorch_tanh", head_dim 256, tied embeddings.
  const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
  a.activation = type == "gemma" ? c.str_or("hidden_act", "gelu_pytorch_tanh", 64)
                 : gemma         ? c.str_or("hidden_activation", "gelu_pytorch_tanh", 64)
                                 : c.str_or("hidden_act", "silu", 64);
  a.norm = "rmsnorm";
  a.gated_mlp = true;
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  // Gemma2Config / Gemma3TextConfig tie by default; the others do not.
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", gemma);
}

std::vector<uint64_t> read_layer_list(const Obj& c, const char* key, uint64_t layers) {
  std::vector<uint64_t> out;
  if (!c.has(key)) {
    c.mark_used(key);
    return out;
  }
  const json& arr = c.array(key, kMaxLayers);
  for (size_t i = 0; i < arr.size(); ++i)
    out.push_back(read_u64(arr[i], index_path(c.field(key), i), 0, layers - 1));
  return out;
}

// MoE fields: Mixtral (num_local_experts), Qwen3-MoE (num_experts, moe_intermediate_size,
// decoder_sparse_step, mlp_only_layers), DeepSeek-V3 (n_routed_experts, n_shared_experts,
// first_k_dense_replace); absent keys take the configuration_*.py defaults.
// Expert MLPs of a model (experts x layers) that peak memory follows tensor by tensor within
// its time bound: a 128-layer model of 256 experts takes about 0.35 s natively per evaluation
// (bench/RESULTS.md, "Bounded work"); Kimi K2 (384 x 61) and DeepSeek-V3 (256 x 61) are within.
constexpr uint64_t kMaxExpertMlps = uint64_t{1} << 15;

void check_experts(const Obj& c, const char* key, const Architecture& a) {
  if (a.num_experts * a.layers <= kMaxExpertMlps) return;
  fail(code::kTooLarge, c.field(key),
       Message{"error.config.experts",
               {{"field", c.field(key)},
                {"numExperts", std::to_string(a.num_experts)},
                {"layers", std::to_string(a.layers)},
                {"max", std::to_string(kMaxExpertMlps)}}});
}

void read_moe(const Obj& c, const std::string& type, Architecture& a, DecoderSpec& s) {
  if (type == "mixtral") {
    s.moe = Moe::mixtral;
    a.num_experts = c.u64("num_local_experts", 1, 1 << 16);
    check_experts(c, "num_local_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 2, 1, a.num_experts);
    return;
  }
  s.dense_intermediate = a.intermediate;
  if (type == "qwen3_moe") {
    s.moe = Moe::qwen3;
    a.num_experts = c.u64("num_experts", 1, 1 << 16);
    check_experts(c, "num_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 8, 1, a.num_experts);
    a.intermediate = c.u64("moe_intermediate_size", 1, kMaxDim);
    s.sparse_step = c.u64_or("decoder_sparse_step", 1, 1, kMaxLayers);
    s.mlp_only = read_layer_list(c, "mlp_only_layers", a.layers);
  } else if (type == "deepseek_v3") {
    s.moe = Moe::deepseek;
    a.num_experts = c.u64_or("n_routed_experts", 256, 1, 1 << 16);
    check_experts(c, "n_routed_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 8, 1, a.num_experts);
    a.shared_experts = c.u64_or("n_shared_experts", 1, 0, 1 << 16);
    a.intermediate = c.u64_or("moe_intermediate_size", 2048, 1, kMaxDim);
    s.first_dense = c.u64_or("first_k_dense_replace", 3, 0, kMaxLayers);
  }
}

// DeepSeek-V3 multi-head latent attention (DeepseekV3Attention); q_lora_rank null = q_proj.
void read_mla(const Obj& c, Architecture& a, DecoderSpec& s) {
  const json& v = c.json_value();
  const bool q_null = v.contains("q_lora_rank") && v["q_lora_rank"].is_null();
  s.q_lora_rank = q_null ? 0 : c.u64_or("q_lora_rank", 1536, 1, kMaxDim);
  c.mark_used("q_lora_rank");
  s.kv_lora_rank = c.u64_or("kv_lora_rank", 512, 1, kMaxDim);
  s.qk_nope = c.u64_or("qk_nope_head_dim", 128, 0, kMaxDim);
  s.qk_rope = c.u64_or("qk_rope_head_dim", 64, 1, kMaxDim);
  s.v_head = c.u64_or("v_head_dim", 128, 1, kMaxDim);
  a.mla = true;
  a.head_dim = s.qk_nope + s.qk_rope;  // qk_head_dim
  a.kv_heads = a.heads;                // every head gets its own k and v from the latent
}

DecoderSpec decoder_spec(const Obj& c, const std::string& type, Architecture& a) {
  DecoderSpec s;
  s.cls = decoder_class(type);
  const bool attn_bias = c.boolean_or("attention_bias", false);  // default False everywhere
  s.mlp_bias = type == "llama" && c.boolean_or("mlp_bias", false);
  if (type != "llama") c.mark_used("mlp_bias");
  s.qkv_bias = type == "qwen2" || (attn_bias && type != "phi3");
  s.o_bias = attn_bias && type != "qwen2" && type != "phi3";
  s.fused_qkv = s.fused_gate_up = type == "phi3";
  s.qk_norm = type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text";
  s.sandwich_norm = type == "gemma2" || type == "gemma3_text";
  s.local_rope = type == "gemma3_text";
  // query_pre_attn_scalar (Gemma2/3) only scales the scores: no tensor.
  read_moe(c, type, a, s);
  if (type == "deepseek_v3") read_mla(c, a, s);
  return s;
}

void build_attention(Builder& b, const std::string& l, const Architecture& a,
                     const DecoderSpec& s) {
  const uint64_t h = a.hidden, q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
  const std::string at = l + ".self_attn";
  b.mod(at);
  if (a.mla) {
    if (s.q_lora_rank) {
      b.linear(at, ".q_a_proj", h, s.q_lora_rank, s.o_bias);
      b.layer_norm(at, ".q_a_layernorm", s.q_lora_rank, false);
      b.linear(at, ".q_b_proj", s.q_lora_rank, q, false);
    } else {
      b.linear(at, ".q_proj", h, q, false);
    }
    b.linear(at, ".kv_a_proj_with_mqa", h, s.kv_lora_rank + s.qk_rope, s.o_bias);
    b.layer_norm(at, ".kv_a_layernorm", s.kv_lora_rank, false);
    b.linear(at, ".kv_b_proj", s.kv_lora_rank, a.heads * (s.qk_nope + s.v_head), false);
    b.linear(at, ".o_proj", a.heads * s.v_head, h, s.o_bias);
    return;
  }
  if (s.fused_qkv) {  // Phi3Attention registers o_proj before qkv_proj
    b.linear(at, ".o_proj", q, h, false);
    b.linear(at, ".qkv_proj", h, q + 2 * kv, false);
  } else {
    b.linear(at, ".q_proj", h, q, s.qkv_bias);
    b.linear(at, ".k_proj", h, kv, s.qkv_bias);
    b.linear(at, ".v_proj", h, kv, s.qkv_bias);
    b.linear(at, ".o_proj", q, h, s.o_bias);
  }
  if (s.qk_norm) {
    b.layer_norm(at, ".q_norm", a.head_dim, false);
    b.layer_norm(at, ".k_norm", a.head_dim, false);
  }
}

// gate_proj, up_proj, down_proj (or Phi3's gate_up_proj, down_proj) under `base`.
void gated_mlp(Builder& b, const std::string& base, uint64_t h, uint64_t inner, bool fused,
               bool bias) {
  b.mod(base);
  if (fused) {
    b.linear(base, ".gate_up_proj", h, 2 * inner, false);
  } else {
    b.linear(base, ".gate_proj", h, inner, bias);
    b.linear(base, ".up_proj", h, inner, bias);
  }
  b.linear(base, ".down_proj", inner, h, bias);
  b.mod(base, fused ? ".activation_fn" : ".act_fn");
}

void routed_experts(Builder& b, const std::string& base, const Architecture& a) {
  b.mod(base);
  for (uint64_t x = 0; x < a.num_experts; ++x)
    gated_mlp(b, base + "." + std::to_string(x), a.hidden, a.intermediate, false, false);
}

bool sparse_layer(const DecoderSpec& s, uint64_t i) {
  if (s.moe == Moe::deepseek) return i >= s.first_dense;  // DeepseekV3DecoderLayer
  if (s.moe == Moe::qwen3)                                // Qwen3MoeDecoderLayer
    return std::find(s.mlp_only.begin(), s.mlp_only.end(), i) == s.mlp_only.end() &&
           (i + 1) % s.sparse_step == 0;
  return s.moe == Moe::mixtral;
}

void build_mlp(Builder& b, const std::string& l, uint64_t i, const Architecture& a,
               const DecoderSpec& s) {
  const uint64_t h = a.hidden;
  if (!sparse_layer(s, i)) {
    const uint64_t inner = s.moe == Moe::none ? a.intermediate : s.dense_intermediate;
    gated_mlp(b, l + ".mlp", h, inner, s.fused_gate_up, s.mlp_bias);
  } else if (s.moe == Moe::mixtral) {
    // Hub checkpoint naming (transformers 4.x MixtralSparseMoeBlock): gate + experts.N.w1..3
    const std::string m = l + ".block_sparse_moe";
    b.mod(m);
    b.linear(m, ".gate", h, a.num_experts, false);
    b.mod(m, ".experts");
    for (uint64_t x = 0; x < a.num_experts; ++x) {
      const std::string ex = m + ".experts." + std::to_string(x);
      b.mod(ex);
      b.linear(ex, ".w1", h, a.intermediate, false);
      b.linear(ex, ".w2", a.intermediate, h, false);
      b.linear(ex, ".w3", h, a.intermediate, false);
      b.mod(ex, ".act_fn");
    }
  } else if (s.moe == Moe::qwen3) {  // Qwen3MoeSparseMoeBlock: gate, then experts
    b.mod(l + ".mlp");
    b.linear(l, ".mlp.gate", h, a.num_experts, false);
    routed_experts(b, l + ".mlp.experts", a);
  } else {  // DeepseekV3MoE: experts, gate (TopkRouter), shared_experts
    b.mod(l + ".mlp");
    routed_experts(b, l + ".mlp.experts", a);
    b.mod(l, ".mlp.gate");
    b.param(l, ".mlp.gate.weight", {a.num_experts, h});
    // register_buffer (persistent): in state_dict and the checkpoint, not a parameter
    b.buffer(l + ".mlp.gate.e_score_correction_bias", {a.num_experts}, DType::fp32, true);
    gated_mlp(b, l + ".mlp.shared_experts", h, a.intermediate * a.shared_experts, false, false);
  }
}

void build_decoder_layer(Builder& b, const std::string& l, uint64_t i, const Architecture& a,
                         const DecoderSpec& s) {
  b.mod(l);
  build_attention(b, l, a, s);
  build_mlp(b, l, i, a, s);
  b.layer_norm(l, ".input_layernorm", a.hidden, false);
  b.layer_norm(l, ".post_attention_layernorm", a.hidden, false);
  if (s.sandwich_norm) {
    b.layer_norm(l, ".pre_feedforward_layernorm", a.hidden, false);
    b.layer_norm(l, ".post_feedforward_layernorm", a.hidden, false);
  }
  if (s.fused_qkv) {
    b.mod(l, ".resid_attn_dropout");
    b.mod(l, ".resid_mlp_dropout");
  }
}

// The architecture class: the type's own (<Cls>ForCausalLM / <Cls>Model; Gemma3's bare text
// model is Gemma3TextModel), or, for the generic recipe, whatever config.architectures says.
std::string decoder_architecture(const Obj& c, const std::string& cls, const std::string& ov,
                                 bool generic, bool* head) {
  if (generic) {
    std::string arch = "GenericForCausalLM";
    if (c.has("architectures")) {
      const json& v = c.array("architectures", 16);
      if (!v.empty() && v[0].is_string()) arch = v[0].get<std::string>().substr(0, 128);
    }
    c.mark_used("architectures");
    if (!ov.empty()) arch = ov;
    const size_t n = arch.size();
    *head = !(n >= 5 && arch.compare(n - 5, 5, "Model") == 0);
    return arch;
  }
  const std::string bare = cls == "Gemma3" ? "Gemma3TextModel" : cls + "Model";
  const std::string arch = pick_arch(c, ov, {cls + "ForCausalLM", bare}, cls + "ForCausalLM");
  *head = arch == cls + "ForCausalLM";
  return arch;
}

void build_llama_family(const Obj& c, const std::string& type, const std::string& arch_override,
                        ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  read_decoder_dims(c, type, a);
  a.generic = decoder_class(type)[0] == '\0';
  const DecoderSpec s = decoder_spec(c, type, a);
  bool head = true;
  m.architecture = decoder_architecture(c, s.cls, arch_override, a.generic, &head);
  m.tensors.reserve(a.layers * (a.num_experts ? 9 + 3 * a.num_experts : 16) + 4);
  const std::string p = head ? "model" : "";
  root_modules(b, p);
  b.embedding(b.join(p, "embed_tokens"), "", a.vocab, a.hidden);
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i)
    build_decoder_layer(b, join(p, "layers." + std::to_string(i)), i, a, s);
  b.layer_norm(b.join(p, "norm"), "", a.hidden, false);
  // Rotary inverse frequencies: registered persistent=False (not in state_dict).
  const uint64_t rope_dim = a.mla ? s.qk_rope : a.head_dim;
  b.mod(b.join(p, "rotary_emb"));
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {rope_dim / 2}, DType::fp32, false);
  if (s.local_rope) {
    b.mod(b.join(p, "rotary_emb_local"));
    b.buffer(b.join(p, "rotary_emb_local.inv_freq"), {rope_dim / 2}, DType::fp32, false);
  }
  if (head) output_head(b, "lm_head", a, a.hidden, b.join(p, "embed_tokens.weight"));
  if (a.generic)
    m.assumptions.push_back(Text("model.generic", {{"modelType", type.substr(0, 64)}}));
}

// ---------------------------------------------------------------- gpt_neox
// One GPTNeoXLayer under `l`.
void neox_layer(Builder& b, const std::string& l, uint64_t h, uint64_t inner, bool bias) {
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
  b.linear(l, ".mlp.dense_h_to_4h", h, inner, true);
  b.linear(l, ".mlp.dense_4h_to_h", inner, h, true);
  b.mod(l, ".mlp.act");
}

void build_gpt_neox(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Builder b{m};
  Architecture& a = m.arch;
  read_dims(c, a, 2048, 1);
  read_mha(c, "num_attention_heads", a);
  a.activation = c.str_or("hidden_act", "gelu", 64);
  read_dropouts(c, "hidden_dropout", "attention_dropout", 0.0, a);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  const bool bias = c.boolean_or("attention_bias", true);
  m.architecture =
      pick_arch(c, arch_override, {"GPTNeoXForCausalLM", "GPTNeoXModel"}, "GPTNeoXForCausalLM");
  const bool head = m.architecture == "GPTNeoXForCausalLM";
  m.tensors.reserve(a.layers * 12 + 4);
  const std::string p = head ? "gpt_neox" : "";
  const uint64_t h = a.hidden;
  root_modules(b, p);
  b.embedding(b.join(p, "embed_in"), "", a.vocab, h);
  b.mod(b.join(p, "emb_dropout"));
  b.mod(b.join(p, "layers"));
  for (uint64_t i = 0; i < a.layers; ++i)
    neox_layer(b, join(p, "layers." + std::to_string(i)), h, a.intermediate, bias);
  b.layer_norm(b.join(p, "final_layer_norm"), "", h);
  b.mod(b.join(p, "rotary_emb"));
  b.buffer(b.join(p, "rotary_emb.inv_freq"), {a.head_dim / 2}, DType::fp32, false);
  if (head) output_head(b, "embed_out", a, h, b.join(p, "embed_in.weight"));
}

// ------------------------------------------------ t5, mt5 (modeling_t5.py, modeling_mt5.py)
// MT5 is T5's layout with MT5Config's defaults: gated-gelu, untied embeddings.
void build_t5(const Obj& c, const std::string& arch_override, bool mt5, ModelDescription& m) {
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
  const std::string ff = c.str_or("feed_forward_proj", mt5 ? "gated-gelu" : "relu", 64);
  a.gated_mlp = ff.rfind("gated-", 0) == 0;
  a.activation = a.gated_mlp ? ff.substr(6) : ff;
  a.norm = "rmsnorm";
  a.hidden_dropout = c.num_or("dropout_rate", 0.1, 0, 1);
  a.attention_dropout = a.hidden_dropout;  // T5Attention drops probabilities at dropout_rate
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", !mt5);
  const std::string cls = mt5 ? "MT5" : "T5";
  m.architecture = pick_arch(c, arch_override, {cls + "ForConditionalGeneration", cls + "Model"},
                             cls + "ForConditionalGeneration");
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
  if (m.architecture == cls + "ForConditionalGeneration")
    output_head(b, "lm_head", a, d, std::string("shared.weight"));
}

}  // namespace

// An unknown model_type builds the generic decoder, which needs the standard fields: name the
// first one missing, and why.
void require_generic_fields(const Obj& c, const std::string& type) {
  for (const char* k : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                        "intermediate_size", "vocab_size"})
    if (!c.has(k))
      fail(code::kMissingField, c.field(k),
           Message{"error.config.generic",
                   {{"field", c.field(k)}, {"modelType", type.substr(0, 64)}}});
}

ModelDescription model_from_config(const Obj& c, const std::string& arch_override) {
  if (c.has("_class_name") &&
      !c.has("model_type")) {  // a diffusers config (io/diffusers_build.cpp)
    ModelDescription m = model_from_diffusers_config(c);
    for (auto it = c.json_value().begin(); it != c.json_value().end(); ++it) c.mark_used(it.key());
    c.finish();
    finalize_tensors(&m);
    return m;
  }
  const std::string type = c.str("model_type", 64);
  if (type.empty())
    fail(code::kOutOfRange, c.field("model_type"),
         Message{"error.field.empty", {{"field", c.field("model_type")}}});
  ModelDescription m;
  m.source = "config";
  m.arch.model_type = type;
  if (type == "gpt2") {
    build_gpt2(c, arch_override, m);
  } else if (type == "bert") {
    build_bert(c, arch_override, m);
  } else if (type == "gpt_neox") {
    build_gpt_neox(c, arch_override, m);
  } else if (type == "t5" || type == "mt5") {
    build_t5(c, arch_override, type == "mt5", m);
  } else if (model_from_llm_family(c, type, arch_override, m)) {
    // falcon, phi, gptj, starcoder2, olmo, olmo2, nn.Transformer (io/llm_families.cpp)
  } else if (is_net_model_type(type)) {
    build_net_config(c, type, arch_override, m);  // vision and speech (io/net_config.cpp)
  } else {
    if (decoder_class(type)[0] == '\0') require_generic_fields(c, type);
    build_llama_family(c, type, arch_override, m);
  }
  if (m.arch.kv_heads == 0) m.arch.kv_heads = m.arch.heads;
  m.name = c.str_or("_name_or_path", m.architecture.c_str(), 200);
  // A config.json holds many keys that do not change the tensor list (token ids, rope
  // settings, ...): accept them, as transformers does.
  for (auto it = c.json_value().begin(); it != c.json_value().end(); ++it) c.mark_used(it.key());
  c.finish();
  // Modules were counted while building; keep them (finalize infers only when absent).
  finalize_tensors(&m);
  if (c.has("quantization_config") && !c.raw("quantization_config").is_null())
    apply_quantization(c, &m);  // GPTQ / AWQ (io/quantized_config.cpp)
  return m;
}

}  // namespace trainmem
