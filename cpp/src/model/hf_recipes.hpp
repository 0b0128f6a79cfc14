// HuggingFace transformers architectures as tensor recipes: from a typed recipe (the model's
// Architecture, already read from config.json, plus the few family flags), the exact parameter
// tensor list (names and shapes as the model's state_dict() holds them in current transformers),
// buffers and module count. Reading config.json (keys, defaults of absent keys, limits, errors)
// is io/model_config.cpp's and io/llm_families.cpp's; these functions read no JSON and validate
// nothing the reader checks. Sources: transformers/models/{gpt2,bert,llama,mistral,mixtral,qwen2,
// gpt_neox,t5,mt5}/modeling_*.py (and the versions named in hf_decoder.cpp and
// hf_llm_families.cpp for the other families).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/model.hpp"

namespace trainmem {
namespace hf {

// Each build_* appends to *m the parameters, buffers and modules of the model, from m->arch
// (hidden, layers, heads, head_dim, intermediate, vocab, max_positions, tied_embeddings, ...,
// as the reader set them) and the recipe. m->architecture is the reader's.

// GPT2LMHeadModel / GPT2Model (modeling_gpt2.py).
struct Gpt2Recipe {
  bool lm_head = true;           // GPT2LMHeadModel: base model under "transformer", lm_head
  bool cross_attention = false;  // GPT2Config.add_cross_attention: crossattention, ln_cross_attn
};
void build_gpt2(const Gpt2Recipe& r, ModelDescription* m);

// The BERT classes modelled (modeling_bert.py).
enum class BertClass { model, sequence_classification, masked_lm, pretraining };
struct BertRecipe {
  BertClass cls = BertClass::model;
  uint64_t type_vocab = 2;  // BertConfig.type_vocab_size
  // The classifier's outputs (arch.num_labels) come from m->arch for sequence classification.
};
void build_bert(const BertRecipe& r, ModelDescription* m);

// GPTNeoXForCausalLM / GPTNeoXModel (modeling_gpt_neox.py).
struct GptNeoxRecipe {
  bool lm_head = true;         // GPTNeoXForCausalLM: base model under "gpt_neox", embed_out
  bool attention_bias = true;  // GPTNeoXConfig.attention_bias: query_key_value and dense biases
};
void build_gpt_neox(const GptNeoxRecipe& r, ModelDescription* m);

// T5 / MT5 ForConditionalGeneration or Model (modeling_t5.py, modeling_mt5.py): encoder blocks
// m->arch.encoder_layers, decoder blocks m->arch.layers, gated MLP when m->arch.gated_mlp.
struct T5Recipe {
  bool lm_head = true;                       // *ForConditionalGeneration
  uint64_t relative_attention_buckets = 32;  // relative_attention_num_buckets
};
void build_t5(const T5Recipe& r, ModelDescription* m);

// ------------------------------------------------------------ Llama-style decoders
// One recipe for the decoders that share Llama's layout (embed_tokens, layers.N.{self_attn,
// mlp, norms}, norm, lm_head); DecoderSpec holds what each modeling_*.py changes.
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

struct DecoderRecipe {
  DecoderSpec spec;
  bool lm_head = true;  // *ForCausalLM: base model under "model", lm_head
};
// m->arch.generic (a model_type without a recipe of its own) adds the "model.generic"
// assumption naming m->arch.model_type.
void build_decoder(const DecoderRecipe& r, ModelDescription* m);

// ------------------------------------------------------------ hf_llm_families.cpp
// The decoder families whose layout is not Llama's (all *ForCausalLM, with lm_head), and
// torch.nn.Transformer.

// FalconForCausalLM (modeling_falcon.py): m->arch.kv_heads as the reader derived it from
// new_decoder_architecture / multi_query / num_kv_heads; m->arch.parallel_block (parallel_attn).
struct FalconRecipe {
  bool new_decoder_architecture = false;  // query_key_value of (kv_heads x 2 + heads) x head_dim
  bool multi_query = true;                // (old architecture) one k and v head
  bool bias = false;                      // FalconConfig.bias: the linear layers' biases
  uint64_t ln_in_parallel_attn = 1;       // num_ln_in_parallel_attn: 2 = ln_attn and ln_mlp
};
void build_falcon(const FalconRecipe& r, ModelDescription* m);

// PhiForCausalLM (phi-1 / phi-1.5 / phi-2, modeling_phi.py).
struct PhiRecipe {
  bool qk_layernorm = false;  // PhiConfig.qk_layernorm: q_layernorm, k_layernorm
};
void build_phi(const PhiRecipe& r, ModelDescription* m);

// GPTJForCausalLM (modeling_gptj.py): everything it needs is in m->arch.
void build_gptj(ModelDescription* m);

// Starcoder2, OLMo, OLMo 2 (modeling_starcoder2.py, modeling_olmo.py, modeling_olmo2.py):
// Llama's layout with their norms and MLPs.
enum class LlamaLikeFamily { starcoder2, olmo, olmo2 };
struct LlamaLikeRecipe {
  LlamaLikeFamily family = LlamaLikeFamily::olmo;
  bool bias = false;  // Starcoder2Config.use_bias, OlmoConfig / Olmo2Config.attention_bias
};
void build_llama_like(const LlamaLikeRecipe& r, ModelDescription* m);

// torch.nn.Transformer (torch/nn/modules/transformer.py): m->arch.encoder_layers, layers
// (decoder), hidden (d_model), intermediate (dim_feedforward).
struct TorchTransformerRecipe {
  bool bias = true;  // the constructor's bias: linear and LayerNorm biases
};
void build_torch_transformer(const TorchTransformerRecipe& r, ModelDescription* m);

// The HF class prefix of a model_type the Llama-style recipe covers exactly ("llama" ->
// "Llama", "gemma3_text" -> "Gemma3", ...); "" for any other type (the generic recipe).
const char* decoder_class(const std::string& model_type);

}  // namespace hf
}  // namespace trainmem
