// Diffusion networks (diffusers' UNet2DConditionModel, SD3Transformer2DModel,
// FluxTransformer2DModel, DiTTransformer2DModel, PixArtTransformer2DModel, AutoencoderKL) as the
// chain of units trainmem plans on: each unit is one chain layer (what diffusers' gradient
// checkpointing wraps, or the glue between such modules), in forward order. The config reader
// (io/diffusers_config.cpp) builds it with the tensor list; the activation recipe
// (activations/diffusion_activations.cpp) reads it. Design: docs/models.md "Diffusion".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainmem {
namespace diffusion {

enum class UnitKind : uint8_t {
  stem,         // UNet: time (+ added) embedding and conv_in; transformers: patch/x embedding,
                // time-text embedding, context embedder
  resnet,       // ResnetBlock2D (an up block's: the concat with its skip is its first op)
  attn_in,      // Transformer2DModel: GroupNorm, proj_in (and the token reshape)
  block,        // BasicTransformerBlock (self-attention, cross-attention, GEGLU feed-forward)
  attn_out,     // Transformer2DModel: proj_out, the reshape back, the residual
  downsample,   // Downsample2D (a strided conv)
  upsample,     // Upsample2D (nearest x2, conv)
  joint,        // SD3 JointTransformerBlock (MMDiT)
  flux_double,  // FluxTransformerBlock
  flux_single,  // FluxSingleTransformerBlock
  dit_block,    // BasicTransformerBlock with adaLN-Zero (DiT) or adaLN-single (PixArt)
  head,         // the output norm and projection, and the MSE loss
};

struct Unit {
  UnitKind kind = UnitKind::resnet;
  uint64_t cin = 0, cout = 0;  // channels (or token width for transformer units)
  uint32_t level = 0;          // UNet: the latent side is divided by 2^level here
  uint64_t heads = 0, head_dim = 0;
  uint64_t cross = 0;             // cross-attention context width (0: none)
  int32_t skip_from = -1;         // up resnet: the unit whose output it concatenates (chain index)
  bool checkpointable = false;    // diffusers' gradient_checkpointing wraps this unit
  bool linear_proj = false;       // Transformer2DModel use_linear_projection
  bool temb = true;               // ResnetBlock2D has a time_emb_proj
  bool context_pre_only = false;  // SD3's last block (no context output)
  bool plain_mid = false;         // UNetMidBlock2DCrossAttn resnets[0]
  bool qk_norm = false;           // RMSNorm on q and k per head (Flux; SD3.5's qk_norm)
};

struct Net {
  std::string cls;           // diffusers _class_name
  std::vector<Unit> units;   // chain layers in order: stem first, head last
  uint64_t in_channels = 4;  // the model input's channels (latents; Flux: packed 2x2)
  uint64_t out_channels = 4;
  uint64_t latent_channels = 4;   // the VAE's latent channels
  uint64_t vae_scale = 8;         // image pixels per latent pixel (AutoencoderKL: 2^(levels-1))
  uint64_t patch = 1;             // transformer patch side (SD3, DiT, PixArt: 2; Flux packs 2x2)
  uint64_t sample_size = 64;      // latent side of the training resolution (config sample_size)
  uint64_t groups = 32;           // GroupNorm groups
  uint64_t temb = 0;              // time embedding width
  uint64_t text_dim = 0;          // encoder_hidden_states width (0: no text: DiT)
  uint64_t default_text_len = 0;  // tokens of encoder_hidden_states by default
  uint64_t pooled_dim = 0;        // pooled text embedding (SDXL text_embeds, SD3/Flux pooled)
  uint64_t add_time_dim = 0;      // SDXL: addition_time_embed_dim (6 time ids)
  uint64_t add_in = 0;            // SDXL: projection_class_embeddings_input_dim
  uint64_t caption_dim = 0;       // PixArt caption_channels; SD3 caption_projection_dim
  uint64_t ff_mult = 4;           // feed-forward width / model width
  bool guidance = false;          // Flux guidance_embeds
  bool vae = false;               // AutoencoderKL (no training recipe: frozen part of a pipeline)
  std::vector<uint64_t> vae_channels;  // AutoencoderKL: block_out_channels (its encoder's levels)
  uint64_t vae_layers = 1;             // AutoencoderKL: layers_per_block
  // The request's imageSize (pixels; 0: sample_size x vae_scale): a request with its own image
  // gets its own copy of the description (io/diffusion_request.cpp).
  uint64_t image_height = 0, image_width = 0;
};

// The latent (or token grid) side for an image side in pixels, and whether it divides evenly.
inline uint64_t latent_side(const Net& n, uint64_t pixels) { return pixels / n.vae_scale; }

}  // namespace diffusion
}  // namespace trainmem
