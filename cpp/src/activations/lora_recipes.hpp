// Internal to the activation recipes: LoRA / QLoRA blocks, embeddings and heads written op for op
// after HF transformers' eager modules (as tools/tm_torch_models.py rebuilds them) on the frozen-
// weight model of lora_flow.hpp. transformer_activations calls lora_activations when
// Settings::lora is enabled; full fine-tuning never reaches this code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "activations/lora_flow.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace activations {

// The language-model loss after the head's matmul (activations.cpp lm_loss, the recipe of full
// fine-tuning): HF cross-entropy, torchtune's chunked loss or Liger's fused one over `tokens`
// rows. `upcast`: HF's logits.float() (T5 passes the logits as they are). `p`: the precision the
// logits are made in. `head_trainable`: Liger keeps grad_weight only for a weight that requires
// grad (fused_linear_cross_entropy.py: zeros_like(weight) if weight.requires_grad else None).
void append_lm_loss(const ModelDescription& m, const Settings& s, Precision p, uint64_t tokens,
                    bool upcast, bool head_trainable, LayerActivations* head);

namespace lora {

// What a recipe's linears are, whatever the model calls them.
enum Role : uint32_t {
  kQ = 1u << 0,
  kK = 1u << 1,
  kV = 1u << 2,
  kO = 1u << 3,
  kGate = 1u << 4,  // SwiGLU's gate / T5's wi_0
  kUp = 1u << 5,    // SwiGLU's up, a GELU MLP's first linear, T5's wi / wi_1
  kDown = 1u << 6,  // the MLP's last linear
  kXQ = 1u << 7,    // T5's cross-attention (EncDecAttention)
  kXK = 1u << 8,
  kXV = 1u << 9,
  kXO = 1u << 10,
  kHead = 1u << 11,        // the output projection (lm_head)
  kPooler = 1u << 12,      // BERT's pooler.dense
  kClassifier = 1u << 13,  // BERT's classifier
};

// The shapes one block runs on (T5's decoder: its own length; cross-attention keys: the
// encoder's tokens).
struct Dims {
  uint64_t b = 1, s = 1, T = 1, h = 1, a = 1, kv = 1, d = 1, q = 1, i = 1, V = 1;
  uint64_t sk = 1, Tk = 1;  // keys' length and tokens
  uint64_t experts = 0;     // MoE: experts per layer (router width)
  uint64_t k = 1;           // MoE: experts each token runs (routed + shared)
  double p_attn = 0, p_hid = 0;
};

// What every block recipe reads.
struct Ctx {
  const Settings& s;
  const Architecture& ar;
  const Dtypes& dt;
  bool eager;
  uint32_t res;  // the width of what passes between blocks (BERT under autocast: fp32 LayerNorm)
  bool fused;    // Phi-3: one qkv_proj and one gate_up_proj (one adapter each)
};

// The blocks of each family: `roles`, the adapted linears; `in_rg`, whether the block's input
// requires grad (false for the first block of a model whose embeddings are frozen and whose
// embedding output does not require grad). The block's saved tensors go to *l. Llama:
// *rope_kept is set when the block keeps RoPE's cos and sin (counted with the embeddings).
void llama_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l,
                 bool* rope_kept);
void gpt2_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l);
void bert_block(const Ctx& c, const Dims& d, uint32_t roles, bool in_rg, LayerActivations* l);

// T5 (lora_t5.cpp). `cross`: a decoder block's cross-attention shapes (keys: the encoder's
// tokens), null for an encoder block; `enc`: the encoder output it reads (width, requires grad).
struct EncoderOutput {
  uint32_t width = 4;
  bool rg = false;
};
void t5_block(const Ctx& c, const Dims& d, const Dims* cross, const EncoderOutput& enc,
              uint32_t roles, bool in_rg, LayerActivations* l);
// Where the encoder ends (appended to its last block): final_layer_norm, dropout, the encoder
// output (counted here for every decoder layer), the decoder's embedding and dropout.
EncoderOutput t5_encoder_end(const Ctx& c, const Dims& d, const Dims& dec, bool in_rg,
                             LayerActivations* l);
// The decoder's final_layer_norm, dropout, the tied head's d_model^-0.5 and lm_head (the loss
// follows: append_lm_loss on the logits as they are).
void t5_head(const Ctx& c, const Dims& dec, uint32_t roles, bool in_rg, LayerActivations* h);

// Shared pieces of the recipes (lora_recipes.cpp).
Val rms_norm(Flow& f, const Val& x, uint32_t weight_width, const char* what);
Linear lin(uint64_t in, uint64_t out, bool adapted, const Ctx& c, bool out_tp, bool bias = false);
Val layer_norm(Flow& f, const Val& x, const char* what);
Val gelu(Flow& f, const Val& x, bool python_formula);
// The attention core on q, k, v of one block (eager or SDPA); returns the heads' output (b, s,
// heads x head_dim) made contiguous for the output projection. `sm_width`: the softmax's output
// width (Llama: fp32; GPT-2 / BERT: its input's, fp32 under CUDA autocast); `cast_to`: the
// probabilities' width before PV (0: as they are).
Val attention(Flow& f, const Ctx& c, const Dims& d, const Val& q, const Val& k, const Val& v,
              uint32_t sm_width, uint32_t cast_to, uint32_t mask_width);

// The whole model under LoRA (activations.cpp calls it for the recipe it chose).
ModelActivations lora_activations(const ModelDescription& m, const Settings& s,
                                  const std::string& recipe);

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
