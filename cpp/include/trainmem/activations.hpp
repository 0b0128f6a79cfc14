// Activation memory of training: what autograd saves for the backward pass, derived per block
// from the operations and shapes of the model (HF transformers' eager modules, as PyTorch
// runs them), and the placement::Chain that the placement engine and peak memory share.
// Calibrated against torch 1.13 (tests/fixtures/torch_activations.json); docs/peak-memory.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/placement.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace activations {

// fp32; torch.autocast with fp32 parameters (amp-*); parameters and activations in bf16/fp16.
using Precision = vocab::Precision;  // names: vocab::kPrecisions
using Attention = vocab::Attention;  // names: vocab::kAttention

bool parse_precision(const std::string& s, Precision* out);
const std::vector<std::string>& precision_names();
const char* precision_name(Precision p);

// Behaviour of the runtime that changes what is saved (cpp/data/runtime-*.json).
struct RuntimeTraits {
  std::string id = "pytorch-cuda";
  // Bytes per dropout-mask element: 1 on CUDA (native_dropout's bool mask); 0 = the masked
  // tensor's element size (torch 1.13 CPU: _dropout multiplies by a float noise tensor).
  uint32_t dropout_mask_bytes = 1;
  bool mean_saves_input = false;  // torch 1.13: MeanBackward1 keeps its input (x^2 in RMSNorm)
  // torch <= 1.10: SoftmaxBackward and LogSoftmaxBackward keep their input as well as their
  // result (derivatives.yaml: _softmax_backward_data(grad, result, dim, self); since 1.11 it
  // takes the input's dtype only, pytorch/pytorch pull request 65242)
  bool softmax_saves_input = false;
  bool norm_stats_fp32 = true;  // LayerNorm mean/rstd in fp32 for 16-bit inputs (CUDA)
  // Traced models: a convolution's backward holds a temporary of its output's size besides its
  // outputs (CPU: oneDNN reorders grad_output into the kernel's blocked layout); 0 = none.
  uint32_t conv_backward_temp_outputs = 0;
  // The weight gradient of an fp32 convolution with a kernel at least `conv_scratch_min_kernel`
  // wide (2-D, or 1-D with groups) allocates a scratch buffer of threads x (weight copies x the
  // weight's bytes + the per-group column buffer) + alignment (CPU oneDNN, measured:
  // cpp/data/runtime-pytorch-cpu.json convolutionWeightGradScratch); threads 0 = none.
  uint32_t conv_scratch_threads = 0;
  uint32_t conv_scratch_min_kernel = 0;
  uint32_t conv_scratch_weight_copies = 0;
  uint32_t conv_scratch_align_bytes = 0;
};

// LoRA / QLoRA (PEFT): the base frozen, low-rank adapters on some linears. Autograd then keeps
// less than in full fine-tuning: a frozen linear keeps no input (mm / addmm save an input only for
// the gradient that needs it), a frozen embedding nothing, and nothing before the first adapter
// of the first block keeps anything unless the embeddings' output requires grad. The adapters
// keep their input (cast to their dtype, after their dropout) and lora_A's output. Measured:
// tests/fixtures/torch_lora.json (tools/measure_lora.py); docs/peak-memory.md.
struct LoraSettings {
  bool enabled = false;
  // The adapted linears of each chain layer (embeddings, blocks..., head; the encoder's blocks
  // before the decoder's): module names as the model's tensors name them, e.g.
  // "model.layers.0.self_attn.q_proj" (a dotted suffix the recipe knows will do: "q_proj",
  // "attn.c_proj", "EncDecAttention.q", "lm_head"). Missing layers have none.
  std::vector<std::vector<std::string>> adapted;
  uint64_t rank = 8;
  double dropout = 0;                 // lora_dropout (0: nn.Identity, nothing kept)
  DType adapter_dtype = DType::fp32;  // PEFT autocast_adapter_dtype=True: fp32
  // The frozen base's dtype (its non-quantized parameters under QLoRA); unset: the precision's
  // parameter dtype (fp32 under fp32 and amp-*, else the 16-bit type).
  std::optional<DType> base_dtype;
  // bitsandbytes 4-bit blocks (QLoRA): every block linear is dequantized per call to the compute
  // dtype (16-bit under amp-* and bf16/fp16, else fp32); the head and embeddings stay unquantized.
  bool qlora = false;
  // The embeddings' output requires grad: transformers enable_input_require_grads, which PEFT
  // calls for reentrant gradient checkpointing and prepare_model_for_kbit_training by default.
  bool embeddings_require_grad = false;
};

struct Settings {
  uint64_t micro_batch = 1;
  uint64_t seq_len = 1;     // the (encoder's) input length; diffusion: the text tokens
  uint64_t target_len = 0;  // encoder-decoder: the decoder's length (0 = seq_len)
  // Diffusion networks: the image in pixels (0 = the model's sample_size x its VAE factor).
  uint64_t image_height = 0, image_width = 0;
  Precision precision = Precision::fp32;
  Attention attention = Attention::sdpa;
  uint64_t tensor_parallel = 1;
  bool sequence_parallel = false;
  bool dropout = true;  // training mode: dropout layers with p > 0 keep masks
  bool detail = true;   // list every saved tensor (false: byte totals only, for fast callers)
  RuntimeTraits runtime;
  // The language-model loss: cross_entropy over the full logits (HF); torchtune's
  // CEWithChunkedOutputLoss (the output projection and the loss per chunk); Liger's fused
  // linear cross-entropy (logits only per chunk, gradients computed in the forward).
  using Loss = vocab::Loss;  // names: vocab::kLosses
  Loss loss = Loss::cross_entropy;
  uint64_t loss_chunks = 8;        // chunked: torchtune num_output_chunks
  uint64_t head_weight_bytes = 4;  // liger: bytes per element of the output weight (grad_weight)
  // torch.compile (inductor, default mode, each block compiled: torchtune compile_model): the
  // min-cut partitioner recomputes casts, copies and pointwise duplicates in the backward and
  // keeps matmul, attention and reduction outputs (torch/_functorch/partitioners.py
  // min_cut_rematerialization_partition). Llama-family blocks checked against torchtune's
  // published rows; GPT-2, BERT and T5 blocks derived from the same rules.
  bool compiled = false;
  // torchao float8 training (convert_to_float8_training, dynamic tensorwise scaling): every
  // block Linear casts its input and weight to float8 for the forward matmul and grad_output,
  // weight and input again in the backward (float8_linear.py matmul_with_hp_or_float8_args);
  // the casts are transients, the saved tensors stay high precision. Llama-family blocks.
  bool float8 = false;
  // Context parallelism: seq_len is one rank's share; ring attention's K/V exchange and its
  // fp32 merge and gradient buffers are transients of each SDPA block (torch context_parallel,
  // rotate method all-gather or all-to-all).
  uint64_t context_parallel = 1;
  bool cp_all_gather = true;
  // Expert parallelism: the rank's routed experts run `expert_tokens` x (tokens x top-k) token
  // copies (the routing imbalance or the capacity factor), each expert's MLP split over
  // expert_tensor_parallel; the dispatch and combine all-to-all buffers are transients.
  uint64_t expert_parallel = 1, expert_tensor_parallel = 1;
  double expert_tokens = 1.0;
  LoraSettings lora;  // off: full fine-tuning
};

// One saved tensor (or a group of equal ones) of a layer.
struct Saved {
  std::string name;
  uint64_t bytes = 0;
  std::string source;  // the op that keeps it
};

struct LayerActivations {
  std::string name;                   // "embeddings", "block 0", ..., "head"
  std::vector<Saved> saved;           // internal saves (input excluded) + the output
  uint64_t saved_bytes = 0;           // sum of saved (output included: placement::Layer semantics)
  uint64_t attention_core_bytes = 0;  // the s^2 terms (what selective recompute drops)
  // The eager attention core's s^2 tensors: entries [core_first, core_end) of `tensors` (their
  // sum is attention_core_bytes; empty for SDPA and recipes that do not mark them).
  uint32_t core_first = 0, core_end = 0;
  // Marks the tensors saved since entry `first` as the attention core's s^2 tensors.
  void mark_core(size_t first) {
    core_first = static_cast<uint32_t>(first);
    core_end = static_cast<uint32_t>(tensors.size());
    for (size_t k = first; k < tensors.size(); ++k) attention_core_bytes += tensors[k];
  }
  uint64_t output_bytes = 0;         // the tensor passed to the next layer
  uint64_t forward_temp_bytes = 0;   // transient beyond saved during the forward
  uint64_t backward_temp_bytes = 0;  // transient during the backward (incl. the input gradient)
  double forward_flops = 0;
  uint64_t params = 0;  // parameters of this layer (gradients appear at its backward)
  // Rows (micro-batch included) that the layer's linear modules process; 0 = micro-batch x
  // seqLen (targetLen in a decoder). Set by the vision and speech recipes, whose stages differ.
  uint64_t tokens = 0;
  // For peak memory's allocation trace: the saved tensors one by one (a group of n equal
  // tensors as n entries) in the order the ops create them, the output last; and the
  // transients as groups of equal pieces that live while tensor `at` is created (forward) or
  // while the backward walks back to tensor `at` (backward).
  struct TempGroup {
    uint32_t at = 0;
    uint32_t pieces = 1;
    uint64_t bytes = 0;  // each piece
  };
  std::vector<uint64_t> tensors;
  std::vector<TempGroup> forward_temps, backward_temps;
  // Op-level selective checkpointing: the output of every op a save policy can name, in
  // forward order (one entry per op call), with the forward FLOPs the op costs. Filled for
  // Llama-family blocks (dense MLP); empty elsewhere.
  struct OpOutput {
    const char* op = "";  // a name of sac_op_names()
    uint64_t bytes = 0;   // the op's output(s)
    double flops = 0;     // its forward FLOPs (0 for pointwise ops)
  };
  std::vector<OpOutput> op_outputs;
  // LoRA under autocast: the copies of this layer's frozen weights that its graph keeps to the
  // layer's backward: the 16-bit copy of an fp32 linear weight (autocast caches a cast only for
  // a leaf that requires grad, autocast_mode.cpp cached_cast; a linear whose input requires grad
  // keeps it for that gradient) and the fp32 copies of a 16-bit LayerNorm's weight and bias
  // (CUDA runs layer_norm in fp32). One entry per weight; not in `tensors` or `saved_bytes`.
  // The adapters' own casts are cached ones (trainable leaves) and are not listed.
  std::vector<uint64_t> kept_weight_casts;
  // Whether an op of this layer keeps its input (the previous layer's output) or a wider copy of
  // it to the backward. The chain counts that output with the previous layer either way; when
  // false (LoRA: the first block with frozen embeddings, BERT blocks whose adapters drop out their
  // input, BERT's frozen pooler) autograd frees it once this layer has run with autograd. (The
  // same field and meaning as the diffusion recipes' `input_saved`.)
  bool input_saved = true;
  // Skip connections and what the layer keeps of its input (placement::Layer::skips,
  // concat_input: the same meaning; input_saved below): diffusion UNets' concatenated down-block
  // outputs and Transformer2DModel's residual.
  std::vector<placement::Layer::Skip> skips;
  bool concat_input = false;
  // false: the framework's gradient checkpointing leaves this layer outside every checkpointed
  // segment (diffusers wraps ResnetBlock2D and transformer blocks, not the glue between them)
  bool checkpointable = true;
  // The diffusion recipes set `tokens` too (image tokens at the unit's resolution) and list the
  // linear modules whose rows differ: a module whose name ends with `suffix` processes `rows`
  // (the cross-attention's attn2.to_k reads the text tokens, time_emb_proj one row per sample).
  // LoRA's activations per adapted module follow these rows.
  struct ModuleRows {
    const char* suffix = "";
    uint64_t rows = 0;
  };
  std::vector<ModuleRows> module_rows;
};

// The rows the linear module `module` (its full name) of this layer processes: module_rows by
// suffix (PEFT's rule: the name equals it or ends with "." + it), else tokens, else `fallback`.
uint64_t linear_rows(const LayerActivations& l, const std::string& module, uint64_t fallback);

struct ModelActivations {
  std::string recipe;        // "gpt2" | "bert" | "llama" | "t5" | "mlp"
  uint64_t input_bytes = 0;  // the batch (int64 token ids)
  std::vector<LayerActivations> layers;
  // Tensors the step's code holds, not autograd: made as the forward ends, kept through the
  // backward and the optimizer step (a traced model's outputs besides the loss's input, which
  // the training loop keeps in a variable; step_trace.hpp StepSpec::held)
  std::vector<uint64_t> held;
  uint64_t total_saved_bytes = 0;        // input + sum of saved_bytes (no checkpointing)
  uint64_t korthikanti_layer_bytes = 0;  // sbh(34 + 5as/h) (tensor-parallel forms with t > 1)
  std::vector<Text> assumptions;
};

// Throws RequestError(unsupported, "model") when the model has no architecture. Diffusion
// networks (model.net) go to their own recipes (diffusion_activations.cpp).
ModelActivations transformer_activations(const ModelDescription& model, const Settings& s);

// Korthikanti et al. 2022 (arXiv 2205.05198) eq. 1-2 / section 4.2: per transformer layer, 16-bit
// activations, 1-byte dropout masks: sbh(34 + 5as/h); with tensor parallel t: sbh(10 + 24/t +
// 5as/(ht)); with sequence parallel too: sbh(34 + 5as/h)/t; selective recompute drops 5as/h.
double korthikanti_layer_bytes(uint64_t s, uint64_t b, uint64_t h, uint64_t a, uint64_t t,
                               bool sequence_parallel, bool selective);

// A plain MLP chain: Linear(sizes[i], sizes[i+1]) + activation for each i (input batch x
// sizes[0]); the calibration's MLP (tools/tm_torch_models.py mlp()).
struct MlpSpec {
  std::vector<uint64_t> sizes;
  std::string activation = "relu";  // relu | gelu | none
  bool bias = true;
  bool input_requires_grad = false;
};
ModelActivations mlp_activations(const MlpSpec& mlp, const Settings& s);
uint64_t mlp_params(const MlpSpec& mlp);

// The chain the placement engine plans on (one placement::Layer per LayerActivations, costs in
// FLOPs: forward, backward = 2 x forward).
placement::Chain to_chain(const ModelActivations& acts);

// Convenience: transformer_activations + to_chain (h2's `{model, microBatch, seqLen}` form).
placement::Chain build_chain(const ModelDescription& model, const Settings& s);

// ---- Op-level selective activation checkpointing (PyTorch >= 2.4
// torch.utils.checkpoint.create_selective_checkpoint_contexts; torchtitan
// activation_checkpoint.mode = "selective", selective_ac_option = "op").

// The op names a save policy may list: mm (aten.mm: a linear without bias), sdpa (the
// aten._scaled_dot_product_{flash,efficient,cudnn}_attention kernels), bmm and softmax (eager
// attention's aten.bmm and aten._softmax), silu (aten.silu of the gated MLP).
const std::vector<std::string>& sac_op_names();

struct SavePolicy {
  std::vector<std::string> ops;  // outputs of these ops are kept (CheckpointPolicy.MUST_SAVE)
  // torchtitan's rule: every second aten.mm of a block is recomputed although mm is listed
  // (torchtitan/distributed/activation_checkpoint.py at cfb93265, _get_custom_policy)
  bool every_other_mm = false;
};

// What one checkpointed block keeps under a policy from its forward to its recomputation.
struct SelectiveKeep {
  std::vector<uint64_t> tensors;    // the kept op outputs, in forward order
  uint64_t bytes = 0;               // their sum
  double saved_flops = 0;           // forward FLOPs not recomputed (the kept ops')
  std::vector<std::string> absent;  // listed ops this block never calls
};
SelectiveKeep selective_keep(const LayerActivations& layer, const SavePolicy& policy);

}  // namespace activations
}  // namespace trainmem
