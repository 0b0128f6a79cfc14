// The rows every linear module of a diffusion unit processes, for LoRA's activations
// (LayerActivations::tokens and module_rows). Module names as diffusers names them
// (diffusers@58eb52c0: models/unets/unet_2d_blocks.py, models/attention.py BasicTransformerBlock
// attn1 / attn2 / ff, models/transformers/transformer_sd3.py, transformer_flux.py,
// dit_transformer_2d.py, pixart_transformer_2d.py, models/embeddings.py): image tokens at the
// unit's resolution, the text tokens for what reads encoder_hidden_states, one row per sample for
// the time / pooled-text embeddings and the adaLN modulations.
#include "activations/diffusion_recipe.hpp"

namespace trainmem {
namespace activations {

uint64_t linear_rows(const LayerActivations& l, const std::string& module, uint64_t fallback) {
  for (const auto& m : l.module_rows) {
    const std::string suffix = m.suffix;
    const size_t n = module.size(), k = suffix.size();
    if (module == suffix ||
        (n > k && module.compare(n - k, k, suffix) == 0 && module[n - k - 1] == '.'))
      return m.rows;
  }
  return l.tokens ? l.tokens : fallback;
}

namespace dif {

void set_rows(const Ctx& c, const diffusion::Unit& u, LayerActivations* l) {
  using diffusion::UnitKind;
  const uint64_t b = c.b, text = c.b * c.text;
  const bool unet = c.net.cls == "UNet2DConditionModel";
  const uint64_t image = unet ? b * (c.H >> u.level) * (c.W >> u.level) : b * c.H * c.W;
  auto rows = [&](const char* suffix, uint64_t n) { l->module_rows.push_back({suffix, n}); };
  l->tokens = image;
  switch (u.kind) {
    case UnitKind::stem:  // time (+ text, guidance, SDXL's added) embedding MLPs: per sample
      l->tokens = b;
      rows("context_embedder", text);             // SD3, Flux
      rows("x_embedder", image);                  // Flux (a linear over the packed latents)
      rows("caption_projection.linear_1", text);  // PixArt
      rows("caption_projection.linear_2", text);
      break;
    case UnitKind::resnet:
      rows("time_emb_proj", b);
      break;
    case UnitKind::block:  // BasicTransformerBlock: attn2's k and v read the text
      rows("attn2.to_k", text);
      rows("attn2.to_v", text);
      break;
    case UnitKind::joint:  // the context stream's projections and feed-forward; the AdaLN linears
    case UnitKind::flux_double:
      for (const char* s : {"attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj",
                            "attn.to_add_out", "ff_context.net.0.proj", "ff_context.net.2"})
        rows(s, text);
      rows("norm1.linear", b);
      rows("norm1_context.linear", b);
      break;
    case UnitKind::flux_single:  // image and text tokens concatenated
      l->tokens = image + text;
      rows("norm.linear", b);
      break;
    case UnitKind::dit_block:  // DiT: the AdaLayerNormZero's own embedding; PixArt: attn2
      rows("norm1.linear", b);
      rows("linear_1", b);
      rows("linear_2", b);
      rows("attn2.to_k", text);
      rows("attn2.to_v", text);
      break;
    case UnitKind::head:  // the AdaLN output norm's linear (DiT: proj_out_1) per sample
      rows("norm_out.linear", b);
      rows("proj_out_1", b);
      break;
    default:
      break;
  }
}

}  // namespace dif
}  // namespace activations
}  // namespace trainmem
