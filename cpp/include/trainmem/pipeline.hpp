// A diffusion training pipeline around the network that trains (peakMemory's
// model.pipeline): the frozen parts held on the device (VAE, text encoders) in their dtypes,
// what encoding the batch costs before the forward (the VAE's encoder and the text encoders
// under no_grad), text encoders trained with LoRA, DreamBooth's prior preservation. The
// denoiser itself is the request's model (ModelDescription::pipeline points here).
// Sources: diffusers@58eb52c0 examples/dreambooth/train_dreambooth_lora{,_sdxl,_sd3,_flux}.py.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmem/diffusion.hpp"
#include "trainmem/message.hpp"

namespace trainmem {
namespace diffusion {

// A CLIP or T5 text encoder, as far as its memory goes.
struct TextEncoder {
  std::string id;     // a built-in id, or "" when given by its parameter count alone
  std::string title;  // "CLIP ViT-L/14 text encoder (CLIPTextModel)"
  uint64_t params = 0;
  uint64_t hidden = 0, layers = 0, heads = 0, ff = 0;  // 0 when only params is known
  uint64_t tokens = 77;                                // the tokenizer's max_length
  bool t5 = false;                                     // T5EncoderModel (gated-GELU, rel. bias)
};

struct FrozenPart {
  std::string role;  // "vae", "text_encoder", "text_encoder_2", ...
  std::string title;
  uint64_t params = 0;
  uint64_t dtype_bytes = 4;
  std::string dtype;     // "fp32" | "bf16" | "fp16"
  bool resident = true;  // held on the device through the step (false: freed after caching)
  bool encodes = true;   // runs every step (false: its outputs were precomputed)
  // text encoders: LoRA on q, k, v and the output projection (the scripts' text_lora_config)
  uint64_t lora_rank = 0;
  TextEncoder text;
  std::shared_ptr<const Net> vae;  // the AutoencoderKL (role "vae")
};

struct Pipeline {
  std::vector<FrozenPart> parts;
  bool prior_preservation = false;  // instance and class images in one batch: 2 x microBatch
  std::vector<Text> assumptions;
};

// A built-in text encoder by id (clip-vit-large-patch14, clip-vit-h-14, clip-vit-bigG-14,
// t5-v1_1-xxl-encoder); nullptr when unknown.
const TextEncoder* text_encoder_preset(const std::string& id);
std::vector<std::string> text_encoder_ids();

// What the pipeline adds to a step, for `batch` samples (the denoiser's micro-batch, doubled
// by prior preservation), at the denoiser's image size in pixels.
struct PipelineCost {
  uint64_t resident_bytes = 0;         // frozen weights held through the step
  uint64_t lora_state_bytes = 0;       // text encoders' LoRA: fp32 adapters, grads, AdamW states
  uint64_t lora_params = 0;            // their trainable parameters
  uint64_t text_activation_bytes = 0;  // text encoders under LoRA: kept for their backward
  uint64_t encode_peak_bytes = 0;      // beyond the resident: the largest encode's working set
  std::string encode_peak_part;        // which part's encode that is
  uint64_t pixel_bytes = 0;            // the images the VAE reads (when latents are not cached)
  std::vector<Text> assumptions;
};
struct CostSettings {
  uint64_t batch = 1;
  uint64_t image_height = 0, image_width = 0;  // pixels
  bool eager = false;                          // attention: eager (else SDPA, no scores kept)
  bool cpu = false;                            // runtime pytorch-cpu (oneDNN conv workspaces)
  uint64_t adapter_bytes = 4;                  // LoRA adapters' dtype (PEFT: fp32)
  double lora_dropout = 0;
};
PipelineCost pipeline_cost(const Pipeline& p, const CostSettings& s);

// The AutoencoderKL encoder's working set under no_grad for `batch` images of h x w pixels in
// `dtype_bytes` (op by op from diffusers' ResnetBlock2D, Downsample2D, the mid block's
// Attention): the largest set of tensors alive at once, the batch's pixels excluded.
uint64_t vae_encode_bytes(const Net& vae, uint64_t batch, uint64_t h, uint64_t w,
                          uint64_t dtype_bytes, bool eager, bool cpu);

}  // namespace diffusion
}  // namespace trainmem
