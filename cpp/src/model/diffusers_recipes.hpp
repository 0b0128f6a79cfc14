// diffusers' transformer denoisers as tensor recipes: from a typed recipe (the sizes read from
// config.json, with the chain's diffusion::Net whose config fields the reader set), the exact
// parameter tensor list (state_dict() order: a module's own parameters, then its buffers, then
// its children in registration order) and the chain of units (stem, one unit per transformer
// block, head). Reading config.json is io/diffusers_transformers.cpp's. Sources:
// huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/
// transformers/transformer_sd3.py, transformer_flux.py, dit_transformer_2d.py,
// pixart_transformer_2d.py.
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

}  // namespace diffusers
}  // namespace trainmem
