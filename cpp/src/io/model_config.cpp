// HuggingFace config.json -> the typed recipe of the model's architecture (model/hf_recipes.hpp),
// then the exact parameter tensor list (names and shapes as the model's state_dict() holds them
// in current transformers), buffers, and the module tree size that the core builds from it.
// This file reads the keys: their defaults when absent (configuration_*.py of
// transformers/models/{gpt2,bert,llama,mistral,mixtral,qwen2,gpt_neox,t5,mt5} and the versions
// named in model/hf_decoder.cpp), limits and errors; the recipes (modeling_*.py) are the core's.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_json.hpp"
#include "io/net_config.hpp"
#include "io/quantized_config.hpp"
#include "model/hf_recipes.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxDim = 1ULL << 26;    // hidden, intermediate, heads, ...
constexpr uint64_t kMaxVocab = 1ULL << 32;  // vocabulary / positions
// Layers: the largest published models have ~130 (Llama-3.1-405B: 126); each layer becomes
// ~10 tensors, and 100,000 layers took 48 s and 600 MB of WASM heap (h6 stress test).
constexpr uint64_t kMaxLayers = 1000;

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

// ---------------------------------------------------------------- gpt2 (configuration_gpt2.py)
void read_gpt2(const Obj& c, const std::string& arch_override, ModelDescription& m) {
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
  hf::Gpt2Recipe r;
  r.cross_attention = c.boolean_or("add_cross_attention", false);
  m.architecture = pick_arch(c, arch_override, {"GPT2LMHeadModel", "GPT2Model"}, "GPT2LMHeadModel");
  r.lm_head = m.architecture == "GPT2LMHeadModel";
  hf::build_gpt2(r, &m);
}

// ---------------------------------------------------------------- bert (configuration_bert.py)
void read_bert(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Architecture& a = m.arch;
  read_dims(c, a, 512, 1);
  hf::BertRecipe r;
  r.type_vocab = c.u64_or("type_vocab_size", 2, 1, kMaxVocab);
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
  r.cls = m.architecture == "BertForSequenceClassification" ? hf::BertClass::sequence_classification
          : m.architecture == "BertForMaskedLM"             ? hf::BertClass::masked_lm
          : m.architecture == "BertForPreTraining"          ? hf::BertClass::pretraining
                                                            : hf::BertClass::model;
  const bool lm = r.cls == hf::BertClass::masked_lm || r.cls == hf::BertClass::pretraining;
  a.tied_embeddings = lm && c.boolean_or("tie_word_embeddings", true);
  if (!lm) c.mark_used("tie_word_embeddings");
  if (r.cls == hf::BertClass::sequence_classification) a.num_labels = labels;
  hf::build_bert(r, &m);
}

// ------------------------------------------------------------ Llama-style decoders
// configuration_*.py of each type (the versions model/hf_decoder.cpp names).
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

void read_moe(const Obj& c, const std::string& type, Architecture& a, hf::DecoderSpec& s) {
  if (type == "mixtral") {
    s.moe = hf::Moe::mixtral;
    a.num_experts = c.u64("num_local_experts", 1, 1 << 16);
    check_experts(c, "num_local_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 2, 1, a.num_experts);
    return;
  }
  s.dense_intermediate = a.intermediate;
  if (type == "qwen3_moe") {
    s.moe = hf::Moe::qwen3;
    a.num_experts = c.u64("num_experts", 1, 1 << 16);
    check_experts(c, "num_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 8, 1, a.num_experts);
    a.intermediate = c.u64("moe_intermediate_size", 1, kMaxDim);
    s.sparse_step = c.u64_or("decoder_sparse_step", 1, 1, kMaxLayers);
    s.mlp_only = read_layer_list(c, "mlp_only_layers", a.layers);
  } else if (type == "deepseek_v3") {
    s.moe = hf::Moe::deepseek;
    a.num_experts = c.u64_or("n_routed_experts", 256, 1, 1 << 16);
    check_experts(c, "n_routed_experts", a);
    a.experts_per_token = c.u64_or("num_experts_per_tok", 8, 1, a.num_experts);
    a.shared_experts = c.u64_or("n_shared_experts", 1, 0, 1 << 16);
    a.intermediate = c.u64_or("moe_intermediate_size", 2048, 1, kMaxDim);
    s.first_dense = c.u64_or("first_k_dense_replace", 3, 0, kMaxLayers);
  }
}

// DeepSeek-V3 multi-head latent attention (DeepseekV3Attention); q_lora_rank null = q_proj.
void read_mla(const Obj& c, Architecture& a, hf::DecoderSpec& s) {
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

hf::DecoderSpec decoder_spec(const Obj& c, const std::string& type, Architecture& a) {
  hf::DecoderSpec s;
  s.cls = hf::decoder_class(type);
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

void read_llama_family(const Obj& c, const std::string& type, const std::string& arch_override,
                       ModelDescription& m) {
  Architecture& a = m.arch;
  read_decoder_dims(c, type, a);
  a.generic = hf::decoder_class(type)[0] == '\0';
  hf::DecoderRecipe r;
  r.spec = decoder_spec(c, type, a);
  m.architecture = decoder_architecture(c, r.spec.cls, arch_override, a.generic, &r.lm_head);
  hf::build_decoder(r, &m);
}

// ---------------------------------------------------------------- gpt_neox
// configuration_gpt_neox.py
void read_gpt_neox(const Obj& c, const std::string& arch_override, ModelDescription& m) {
  Architecture& a = m.arch;
  read_dims(c, a, 2048, 1);
  read_mha(c, "num_attention_heads", a);
  a.activation = c.str_or("hidden_act", "gelu", 64);
  read_dropouts(c, "hidden_dropout", "attention_dropout", 0.0, a);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  hf::GptNeoxRecipe r;
  r.attention_bias = c.boolean_or("attention_bias", true);
  m.architecture =
      pick_arch(c, arch_override, {"GPTNeoXForCausalLM", "GPTNeoXModel"}, "GPTNeoXForCausalLM");
  r.lm_head = m.architecture == "GPTNeoXForCausalLM";
  hf::build_gpt_neox(r, &m);
}

// ------------------------------------- t5, mt5 (configuration_t5.py, configuration_mt5.py)
// MT5 is T5's layout with MT5Config's defaults: gated-gelu, untied embeddings.
void read_t5(const Obj& c, const std::string& arch_override, bool mt5, ModelDescription& m) {
  Architecture& a = m.arch;
  a.hidden = c.u64("d_model", 1, kMaxDim);
  a.head_dim = c.u64("d_kv", 1, kMaxDim);
  a.intermediate = c.u64("d_ff", 1, kMaxDim);
  a.heads = c.u64("num_heads", 1, kMaxDim);
  a.kv_heads = a.heads;
  a.vocab = c.u64("vocab_size", 1, kMaxVocab);
  a.encoder_layers = c.u64("num_layers", 1, kMaxLayers);
  a.layers = c.u64_or("num_decoder_layers", a.encoder_layers, 1, kMaxLayers);
  hf::T5Recipe r;
  r.relative_attention_buckets = c.u64_or("relative_attention_num_buckets", 32, 1, kMaxDim);
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
  r.lm_head = m.architecture == cls + "ForConditionalGeneration";
  hf::build_t5(r, &m);
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
    read_gpt2(c, arch_override, m);
  } else if (type == "bert") {
    read_bert(c, arch_override, m);
  } else if (type == "gpt_neox") {
    read_gpt_neox(c, arch_override, m);
  } else if (type == "t5" || type == "mt5") {
    read_t5(c, arch_override, type == "mt5", m);
  } else if (model_from_llm_family(c, type, arch_override, m)) {
    // falcon, phi, gptj, starcoder2, olmo, olmo2, nn.Transformer (io/llm_families.cpp)
  } else if (is_net_model_type(type)) {
    build_net_config(c, type, arch_override, m);  // vision and speech (io/net_config.cpp)
  } else {
    if (hf::decoder_class(type)[0] == '\0') require_generic_fields(c, type);
    read_llama_family(c, type, arch_override, m);
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
