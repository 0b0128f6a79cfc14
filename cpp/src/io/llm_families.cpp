// HuggingFace config.json of the decoder families whose layout is not Llama's: falcon, phi
// (phi-1/1.5/2), gptj, starcoder2, olmo, olmo2; and torch.nn.Transformer from its constructor's
// arguments. This file reads the keys (the defaults of their configuration_*.py in
// huggingface/transformers, limits, errors) into the typed recipes of model/hf_recipes.hpp; the
// tensor lists are built by the core (model/hf_llm_families.cpp, which names the modeling files).
#include <string>

#include "io/model_json.hpp"
#include "model/hf_recipes.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxDim = 1ULL << 26;
constexpr uint64_t kMaxVocab = 1ULL << 32;
constexpr uint64_t kMaxLayers = 1000;

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

// configuration_falcon.py
void read_falcon(const Obj& c, const std::string& ov, ModelDescription& m) {
  Architecture& a = m.arch;
  // FalconConfig attribute_map: n_embed -> hidden_size, n_layer, n_head
  dims(c, a, c.has("n_embed") ? "n_embed" : "hidden_size",
       c.has("n_layer") ? "n_layer" : "num_hidden_layers",
       c.has("n_head") ? "n_head" : "num_attention_heads");
  hf::FalconRecipe r;
  r.new_decoder_architecture = c.boolean_or("new_decoder_architecture", false);
  r.multi_query = c.boolean_or("multi_query", true);
  const bool parallel = c.boolean_or("parallel_attn", true);
  r.bias = c.boolean_or("bias", false);
  if (c.boolean_or("alibi", false))
    fail(code::kUnsupported, c.field("alibi"),
         Message{"error.config.falconAlibi", {{"field", c.field("alibi")}}});
  const uint64_t kv = c.u64_or("num_kv_heads", a.heads, 1, kMaxDim);
  r.ln_in_parallel_attn =
      c.u64_or("num_ln_in_parallel_attn", r.new_decoder_architecture ? 2 : 1, 1, 2);
  a.kv_heads = r.new_decoder_architecture ? kv : (r.multi_query ? 1 : a.heads);
  a.intermediate = c.u64_or("ffn_hidden_size", 4 * a.hidden, 1, kMaxDim);
  a.activation = c.str_or("activation", "gelu", 32);
  a.hidden_dropout = c.num_or("hidden_dropout", 0.0, 0, 1);
  a.attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  a.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  a.parallel_block = parallel;
  a.norm_count = !parallel ? 2 : r.ln_in_parallel_attn;
  m.architecture = arch(c, ov, "Falcon");
  hf::build_falcon(r, &m);
}

// phi-1 / phi-1.5 / phi-2 (configuration_phi.py).
void read_phi(const Obj& c, const std::string& ov, ModelDescription& m) {
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
  hf::PhiRecipe r;
  r.qk_layernorm = c.boolean_or("qk_layernorm", false);
  a.parallel_block = true;
  a.norm_count = 1;
  m.architecture = arch(c, ov, "Phi");
  hf::build_phi(r, &m);
}

// GPT-J (configuration_gptj.py).
void read_gptj(const Obj& c, const std::string& ov, ModelDescription& m) {
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
  hf::build_gptj(&m);
}

// Starcoder2, OLMo, OLMo 2 (configuration_starcoder2.py, configuration_olmo.py,
// configuration_olmo2.py).
void read_llama_like(const Obj& c, const std::string& type, const std::string& ov,
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
  hf::LlamaLikeRecipe r;
  r.family = sc2 ? hf::LlamaLikeFamily::starcoder2
                 : (olmo2 ? hf::LlamaLikeFamily::olmo2 : hf::LlamaLikeFamily::olmo);
  r.bias = sc2 ? c.boolean_or("use_bias", true) : c.boolean_or("attention_bias", false);
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
  hf::build_llama_like(r, &m);
}

// torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
// dim_feedforward, dropout, activation, custom_encoder, custom_decoder, layer_norm_eps,
// batch_first, norm_first, bias): its defaults (torch/nn/modules/transformer.py).
void read_torch_transformer(const Obj& c, ModelDescription& m) {
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
  hf::TorchTransformerRecipe r;
  r.bias = c.boolean_or("bias", true);
  if (a.hidden % a.heads != 0)
    fail(code::kInconsistent, c.field("nhead"),
         Message{"error.config.divideDModel", {{"field", c.field("nhead")}}});
  a.head_dim = a.hidden / a.heads;
  a.kv_heads = a.heads;
  m.architecture = "torch.nn.Transformer";
  hf::build_torch_transformer(r, &m);
}

}  // namespace

bool model_from_llm_family(const Obj& c, const std::string& type, const std::string& ov,
                           ModelDescription& m) {
  if (type == "falcon")
    read_falcon(c, ov, m);
  else if (type == "phi")
    read_phi(c, ov, m);
  else if (type == "gptj")
    read_gptj(c, ov, m);
  else if (type == "starcoder2" || type == "olmo" || type == "olmo2")
    read_llama_like(c, type, ov, m);
  else if (type == "nn.Transformer")
    read_torch_transformer(c, m);
  else
    return false;
  return true;
}

}  // namespace trainmem
