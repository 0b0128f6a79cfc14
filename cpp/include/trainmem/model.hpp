// Model descriptions: from a parameter count, a preset, a HuggingFace config.json, or an
// explicit tensor list — to one structure every calculator shares.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmem/dtype.hpp"
#include "trainmem/message.hpp"

namespace trainmem {

namespace diffusion {
struct Net;       // trainmem/diffusion.hpp
struct Pipeline;  // trainmem/pipeline.hpp
}  // namespace diffusion
struct Quantization;  // trainmem/quantization.hpp
namespace traced {
struct Trace;  // traced_model.hpp
}

// How a weight is used: nn.Linear stores [out, in], transformers' Conv1D (GPT-2) [in, out].
// LoRA adapts these (PEFT tuners/lora/layer.py: Linear and Conv1D).
enum class LinearKind : uint8_t { none, linear, conv1d };

struct TensorSpec {
  std::string name;             // state_dict key, e.g. "h.0.attn.c_attn.weight"
  std::vector<uint64_t> shape;  // PyTorch shape
  DType dtype = DType::fp32;    // dtype as stored in the model (before a precision override)
  std::string tied_to;          // non-empty: shares storage with that tensor (stored once)
  bool trainable = true;
  LinearKind linear = LinearKind::none;  // set for the weight of a linear module
  bool output_head = false;              // the output embedding (PEFT's all-linear leaves it out)
  // Filled by finalize_tensors from the name: the transformer block the tensor belongs to
  // ("h.3.", "layers.3.", "layer.3.", "block.3."; -1 = outside the blocks), and whether it is an
  // embedding ("emb", "wte", "wpe"). Peak memory assigns parameters to chain layers with them.
  int64_t block = -1;
  bool embedding = false;
  // `block` (and `embedding`) set by the recipe (diffusion units, vision, speech): finalize_tensors
  // keeps them instead of reading them from the name.
  bool block_set = false;
  uint64_t numel() const;
};

struct BufferSpec {
  std::string name;
  std::vector<uint64_t> shape;
  DType dtype = DType::fp32;
  bool persistent = true;  // non-persistent buffers are not in state_dict()
  uint64_t numel() const;
};

struct NetSpec;  // trainmem/net.hpp

// Architecture facts the activation and time models need; 0 / "" when unknown (e.g. a model
// given only as a parameter count).
struct Architecture {
  std::string model_type;  // HF model_type: "gpt2", "bert", "llama", "mistral", "mixtral", ...
  uint64_t layers = 0;     // transformer blocks (decoder blocks for encoder-decoder: see below)
  uint64_t encoder_layers = 0;  // t5: encoder blocks (layers = decoder blocks)
  uint64_t hidden = 0;          // d_model
  uint64_t heads = 0;
  uint64_t kv_heads = 0;  // grouped-query attention; == heads when absent
  uint64_t head_dim = 0;
  uint64_t intermediate = 0;  // MLP inner size (per expert for MoE)
  uint64_t vocab = 0;
  uint64_t max_positions = 0;  // 0 = unlimited (rotary / relative)
  uint64_t num_experts = 0;    // MoE: experts per layer (0 = dense)
  uint64_t experts_per_token = 0;
  bool gated_mlp = false;          // SwiGLU / GeGLU (three MLP matrices)
  std::string activation;          // "gelu", "gelu_new", "silu", "relu", ...
  std::string norm = "layernorm";  // "layernorm" | "rmsnorm"
  bool tied_embeddings = false;
  bool encoder_only = false;    // bert-like (no causal mask, no LM head unless a head is set)
  double hidden_dropout = 0.0;  // dropout probabilities (masks are saved when > 0 in training)
  double attention_dropout = 0.0;
  uint64_t num_labels = 0;      // classification head, when present
  uint64_t shared_experts = 0;  // MoE: always-active shared experts (DeepSeek), per token
  bool mla = false;             // multi-head latent attention (DeepSeek-V3)
  bool generic = false;         // no exact recipe: a Llama-style decoder stands in
  // Decoders whose attention and MLP read one norm's output side by side (GPT-J, Phi, Falcon):
  // the block output is attention + MLP + residual. norm_count: their norms per block (Falcon's
  // new decoder architecture: ln_attn and ln_mlp).
  bool parallel_block = false;
  uint64_t norm_count = 0;
  double partial_rotary = 1.0;  // share of head_dim that RoPE rotates (Phi, GPT-J)
  bool norm_first = false;      // torch.nn.Transformer(norm_first=...)
  // Vision and speech networks (trainmem/net.hpp): the recipe and its hyperparameters; null for
  // the transformer families above.
  std::shared_ptr<const NetSpec> net;
};

struct ModelDescription {
  std::string source;  // "params" | "preset" | "config" | "tensors" | "trace"
  std::string preset_id;
  std::string name;     // display name
  uint64_t params = 0;  // total distinct parameters (tied weights counted once)
  uint64_t trainable_params = 0;
  DType dtype = DType::fp32;        // default parameter dtype (config torch_dtype or fp32)
  std::vector<TensorSpec> tensors;  // empty when only a count is known
  std::vector<BufferSpec> buffers;
  Architecture arch;
  std::string architecture;       // HF class the tensor list follows, e.g. "LlamaForCausalLM"
  std::string source_note;        // presets: where the config and the published count come from
  uint64_t published_params = 0;  // presets: the published parameter count (0 = none)
  // What the description assumes (a generic recipe, approximations); every result built on
  // the model repeats these.
  std::vector<Text> assumptions;
  // Modules that Module.state_dict() visits (its `_metadata` keys, root "" included): their
  // number and total name length. Estimated from tensor-name prefixes when not known.
  uint64_t module_count = 0;
  // The modules were inferred from the tensor names (a tensor list without `modules`): those
  // without parameters (activations, dropout, containers) are missing.
  bool modules_inferred = false;
  uint64_t module_name_bytes = 0;
  // Diffusion networks (diffusers configs): the chain of units the activation recipe walks.
  std::shared_ptr<const diffusion::Net> diffusion;
  // peakMemory's model.pipeline: the frozen parts around this (diffusion) network
  std::shared_ptr<const diffusion::Pipeline> pipeline;
  // config.json quantization_config (GPTQ, AWQ): the packed block linears
  std::shared_ptr<const Quantization> quantization;
  // A model read from a trace of its training step (source "trace"): its activations come from
  // the trace (traced_model.hpp), not from a recipe of the architecture.
  std::shared_ptr<const traced::Trace> trace;
  bool has_tensors() const { return !tensors.empty(); }
  bool has_architecture() const { return arch.layers > 0 && arch.hidden > 0; }
};

// Model presets (cpp/data/models/*.json): ids, and one preset's description.
std::vector<std::string> model_preset_ids();
ModelDescription model_from_preset(const std::string& id, const std::string& field);
std::shared_ptr<const ModelDescription> shared_preset(const std::string& id,
                                                      const std::string& field);

// Fills params / trainable_params / module counts from `tensors` (tied tensors once).
void finalize_tensors(ModelDescription* m);

}  // namespace trainmem
