// diffusers' denoisers (UNet2DConditionModel and the transformers) and AutoencoderKL as tensor
// recipes: from a typed recipe (the sizes read from
// config.json, with the chain's diffusion::Net whose config fields the reader set), the exact
// parameter tensor list (state_dict() order: a module's own parameters, then its buffers, then
// its children in registration order) and the chain of units (stem, one unit per transformer
// block, head). Reading config.json is io/diffusers_transformers.cpp's and io/diffusers_unet.cpp's.
// Sources: huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/
// transformers/transformer_sd3.py, transformer_flux.py, dit_transformer_2d.py,
// pixart_transformer_2d.py; unets/unet_2d_condition.py; autoencoders/autoencoder_kl.py.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "trainmem/diffusion.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace diffusers {

// SD3Transformer2DModel. `net` holds cls, the channels, patch, text_dim and pooled_dim.
struct Sd3Recipe {
  uint64_t heads = 18, head_dim = 64, layers = 18, patch = 2, in = 16, out = 16;
  uint64_t caption = 1152;           // caption_projection_dim (== heads x head_dim)
  uint64_t pos_embed_max = 96;       // pos_embed_max_size: the sin-cos table's side
  bool qk_norm = false;              // qk_norm "rms_norm"
  std::vector<bool> dual_attention;  // per layer: dual_attention_layers (SD3.5's attn2)
};
ModelDescription build_sd3(const Sd3Recipe& r, std::shared_ptr<diffusion::Net> net);

// FluxTransformer2DModel. `net` holds cls, guidance, text_dim and pooled_dim.
struct FluxRecipe {
  uint64_t heads = 24, head_dim = 128;
  uint64_t double_layers = 19, single_layers = 38;  // num_layers, num_single_layers
  uint64_t in = 64, out = 64;
};
ModelDescription build_flux(const FluxRecipe& r, std::shared_ptr<diffusion::Net> net);

// DiTTransformer2DModel / PixArtTransformer2DModel.
struct DitRecipe {
  bool pixart = false;
  uint64_t heads = 16, head_dim = 72, layers = 28, patch = 2, in = 4, out = 4, sample = 32;
  bool affine = false;                 // norm_elementwise_affine
  uint64_t classes = 1000;             // DiT: num_embeds_ada_norm
  uint64_t cross = 0;                  // PixArt: cross_attention_dim
  uint64_t caption = 0;                // PixArt: caption_channels (0: no caption_projection)
  bool additional_conditions = false;  // PixArt: use_additional_conditions
};
ModelDescription build_dit(const DitRecipe& r, std::shared_ptr<diffusion::Net> net);

// UNet2DConditionModel: per down block i (the up blocks mirror them), with the defaults of
// UNet2DConditionModel.__init__. `net` holds cls, channels, temb, text and added-time sizes.
struct UNetRecipe {
  std::vector<uint64_t> boc;      // block_out_channels
  std::vector<uint64_t> lpb;      // layers_per_block
  std::vector<uint64_t> heads;    // num_attention_heads (or attention_head_dim, the config's name)
  std::vector<uint64_t> cross;    // cross_attention_dim
  std::vector<uint64_t> tlayers;  // transformer_layers_per_block
  std::vector<bool> down_attn, up_attn;  // CrossAttn*Block2D (else the plain block)
  bool linear = false;                   // use_linear_projection
  bool text_time = false;                // addition_embed_type "text_time" (SDXL)
  uint64_t in = 4, out = 4, groups = 32;
  uint64_t temb = 0;           // time_embedding_dim
  uint64_t cond = 0;           // time_cond_proj_dim (LCM-distilled UNets)
  uint64_t kin = 3, kout = 3;  // conv_in_kernel, conv_out_kernel
};
ModelDescription build_unet(const UNetRecipe& u, std::shared_ptr<diffusion::Net> net);

// AutoencoderKL. `net` holds cls, vae and the channels the reader set.
struct VaeRecipe {
  std::vector<uint64_t> block_out_channels;
  uint64_t layers = 1;  // layers_per_block
  uint64_t in = 3, out = 3, latent = 4;
  bool quant_conv = true, post_quant_conv = true;  // use_quant_conv, use_post_quant_conv
};
ModelDescription build_vae(const VaeRecipe& r, std::shared_ptr<diffusion::Net> net);

}  // namespace diffusers
}  // namespace trainmem
