// diffusers SD3Transformer2DModel, FluxTransformer2DModel, DiTTransformer2DModel and
// PixArtTransformer2DModel config.json -> the typed recipes of model/diffusers_recipes.hpp (the
// core builds the tensor list and the chain of units from them). This file reads the keys: the
// defaults of the classes' __init__ arguments (huggingface/diffusers@
// 58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/transformers/
// transformer_sd3.py, transformer_flux.py, dit_transformer_2d.py, pixart_transformer_2d.py), the
// pipelines' text lengths, limits and errors.
#include <memory>
#include <string>
#include <vector>

#include "io/diffusers_build.hpp"
#include "model/diffusers_recipes.hpp"

namespace trainmem {
namespace diffusers {

ModelDescription sd3_from_config(const Obj& c) {
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "SD3Transformer2DModel";
  Sd3Recipe r;
  r.heads = c.u64_or("num_attention_heads", 18, 1, kMaxWidth);
  r.head_dim = c.u64_or("attention_head_dim", 64, 1, kMaxWidth);
  const uint64_t dim = r.heads * r.head_dim;
  r.layers = c.u64_or("num_layers", 18, 1, kMaxUnits);
  r.patch = c.u64_or("patch_size", 2, 1, 64);
  r.in = c.u64_or("in_channels", 16, 1, kMaxWidth);
  r.out = c.u64_or("out_channels", r.in, 1, kMaxWidth);
  r.caption = c.u64_or("caption_projection_dim", 1152, 1, kMaxWidth);
  if (r.caption != dim)
    fail(code::kInconsistent, c.field("caption_projection_dim"),
         Message{"error.diffusers.caption",
                 {{"field", c.field("caption_projection_dim")},
                  {"caption", std::to_string(r.caption)},
                  {"dim", std::to_string(dim)}}});
  r.pos_embed_max = c.u64_or("pos_embed_max_size", 96, 1, 1 << 14);
  std::string qk = c.str_or("qk_norm", "", 32);
  if (c.has("qk_norm") && c.raw("qk_norm").is_null()) qk.clear();
  if (!qk.empty() && qk != "rms_norm")
    fail(code::kUnsupported, c.field("qk_norm"),
         Message{"error.diffusers.qkNorm",
                 {{"field", c.field("qk_norm")}, {"qk", qk.substr(0, 32)}}});
  r.qk_norm = !qk.empty();
  r.dual_attention.assign(r.layers, false);
  if (c.has("dual_attention_layers")) {
    const json& a = c.array("dual_attention_layers", kMaxUnits);
    for (size_t i = 0; i < a.size(); ++i)
      r.dual_attention[read_u64(a[i], index_path(c.field("dual_attention_layers"), i), 0,
                                r.layers - 1)] = true;
  }
  net->in_channels = net->latent_channels = r.in;
  net->out_channels = r.out;
  net->patch = r.patch;
  net->sample_size = c.u64_or("sample_size", 128, 1, kMaxWidth);
  net->text_dim = c.u64_or("joint_attention_dim", 4096, 1, kMaxWidth);
  net->pooled_dim = c.u64_or("pooled_projection_dim", 2048, 1, kMaxWidth);
  net->default_text_len = 333;  // CLIP-L/G's 77 tokens + T5's 256 (StableDiffusion3Pipeline)
  net->caption_dim = r.caption;
  return build_sd3(r, net);
}

ModelDescription flux_from_config(const Obj& c) {
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "FluxTransformer2DModel";
  FluxRecipe r;
  r.heads = c.u64_or("num_attention_heads", 24, 1, kMaxWidth);
  r.head_dim = c.u64_or("attention_head_dim", 128, 1, kMaxWidth);
  r.double_layers = c.u64_or("num_layers", 19, 0, kMaxUnits);
  r.single_layers = c.u64_or("num_single_layers", 38, 0, kMaxUnits);
  const uint64_t patch = c.u64_or("patch_size", 1, 1, 64);
  r.in = c.u64_or("in_channels", 64, 1, kMaxWidth);
  r.out = c.u64_or("out_channels", r.in, 1, kMaxWidth);
  if (patch != 1)
    fail(code::kUnsupported, c.field("patch_size"),
         Message{"error.diffusers.fluxPatch",
                 {{"field", c.field("patch_size")}, {"patch", std::to_string(patch)}}});
  if (r.in % 4 != 0)
    fail(code::kInconsistent, c.field("in_channels"),
         Message{"error.diffusers.inChannels", {{"field", c.field("in_channels")}}});
  net->guidance = c.boolean_or("guidance_embeds", false);
  net->in_channels = r.in;
  net->out_channels = r.out;
  net->latent_channels = r.in / 4;
  net->patch = 2;  // FluxPipeline._pack_latents: 2x2 latent pixels per token
  net->sample_size = 128;
  net->text_dim = c.u64_or("joint_attention_dim", 4096, 1, kMaxWidth);
  net->pooled_dim = c.u64_or("pooled_projection_dim", 768, 1, kMaxWidth);
  net->default_text_len = 512;  // FluxPipeline max_sequence_length (T5)
  c.mark_used("axes_dims_rope");
  return build_flux(r, net);
}

ModelDescription dit_from_config(const Obj& c, bool pixart) {
  auto net = std::make_shared<diffusion::Net>();
  net->cls = pixart ? "PixArtTransformer2DModel" : "DiTTransformer2DModel";
  DitRecipe r;
  r.pixart = pixart;
  r.heads = c.u64_or("num_attention_heads", 16, 1, kMaxWidth);
  r.head_dim = c.u64_or("attention_head_dim", 72, 1, kMaxWidth);
  r.layers = c.u64_or("num_layers", 28, 1, kMaxUnits);
  r.patch = c.u64_or("patch_size", 2, 1, 64);
  r.in = c.u64_or("in_channels", 4, 1, kMaxWidth);
  r.out = c.u64_or("out_channels", pixart ? 8 : r.in, 1, kMaxWidth);
  r.sample = c.u64_or("sample_size", pixart ? 128 : 32, 1, kMaxWidth);
  r.affine = c.boolean_or("norm_elementwise_affine", false);
  r.classes = pixart ? 0 : c.u64_or("num_embeds_ada_norm", 1000, 1, 1 << 24);
  if (pixart) c.mark_used("num_embeds_ada_norm");
  require_value(c, "norm_type", pixart ? "ada_norm_single" : "ada_norm_zero");
  require_value(c, "activation_fn", "gelu-approximate");
  if (!c.boolean_or("attention_bias", true))
    fail(code::kUnsupported, c.field("attention_bias"),
         Message{"error.diffusers.bias", {{"field", c.field("attention_bias")}}});
  r.cross = pixart ? c.u64_or("cross_attention_dim", 1152, 1, kMaxWidth) : 0;
  r.caption = pixart ? c.u64_or("caption_channels", 0, 0, kMaxWidth) : 0;
  // PixArt: use_additional_conditions defaults to sample_size == 128
  r.additional_conditions = r.sample == 128;
  if (c.has("use_additional_conditions") && !c.raw("use_additional_conditions").is_null())
    r.additional_conditions = c.boolean("use_additional_conditions");
  c.mark_used("use_additional_conditions");
  net->in_channels = net->latent_channels = r.in;
  net->out_channels = r.out;
  net->patch = r.patch;
  net->sample_size = r.sample;
  net->text_dim = r.caption ? r.caption : r.cross;
  net->caption_dim = r.caption;
  net->default_text_len = pixart ? 120 : 0;  // PixArtAlphaPipeline max_sequence_length (T5)
  return build_dit(r, net);
}

}  // namespace diffusers
}  // namespace trainmem
