// imageSize and seqLen for diffusion networks: the image sets the latent (VAE factor 8) and,
// through it, every unit's shape; the text tokens set the cross-attention's keys.
#include "io/diffusion_request.hpp"

#include <algorithm>

#include "io/image_size.hpp"
#include "trainmem/diffusion.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {

namespace {
constexpr uint64_t kMaxImage = 1u << 15;  // pixels per side
}

bool read_diffusion_fields(const Obj& req, std::shared_ptr<const ModelDescription>* model,
                           uint64_t* seq_len) {
  const ModelDescription& m = **model;
  if (!m.diffusion) return false;
  const diffusion::Net& net = *m.diffusion;
  if (!req.has("seqLen")) {
    // the pipeline's text tokens: CLIP's 77 (SD 1.x/2.x/XL), 77 + T5's 256 (SD3), T5's 512
    // (Flux dev), 120 (PixArt-alpha); none for DiT (class labels)
    *seq_len = std::max<uint64_t>(1, net.default_text_len);
  } else if (net.text_dim == 0) {
    fail(code::kInconsistent, "seqLen", Message{"error.diffusion.seqLen", {{"cls", net.cls}}});
  } else {
    *seq_len = req.u64("seqLen", 1, limits::kMaxSeqLen);
  }
  if (!req.has("imageSize")) return true;
  const ImageSize px = read_image_size(req, 8, kMaxImage);
  auto copy = std::make_shared<ModelDescription>(m);
  auto n = std::make_shared<diffusion::Net>(net);
  n->image_height = px.height;
  n->image_width = px.width;
  copy->diffusion = n;
  *model = std::move(copy);
  return true;
}

// diffusers@58eb52c0 examples/dreambooth: train_dreambooth_lora_sdxl.py (unet_target_modules),
// train_dreambooth_lora_sd3.py and train_dreambooth_lora_flux.py (their target_modules when
// --lora_layers is absent). DiT and PixArt have no DreamBooth script: their attention
// projections, as for the UNet.
std::vector<std::string> diffusion_lora_targets(const ModelDescription& m) {
  // PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING (peft src/peft/utils/constants.py
  // @5d602fdb) for the decoder families added here (peak's own table predates them)
  const std::string& type = m.arch.model_type;
  if (type == "gptj") return {"q_proj", "v_proj"};
  if (type == "falcon") return {"query_key_value"};
  if (type == "phi") return {"q_proj", "v_proj", "fc1", "fc2"};
  if (!m.diffusion) return {};
  const std::string& cls = m.diffusion->cls;
  if (cls == "SD3Transformer2DModel")
    return {"attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_add_out",
            "attn.to_k",       "attn.to_out.0",   "attn.to_q",       "attn.to_v"};
  if (cls == "FluxTransformer2DModel")
    return {"attn.to_k",
            "attn.to_q",
            "attn.to_v",
            "attn.to_out.0",
            "attn.add_k_proj",
            "attn.add_q_proj",
            "attn.add_v_proj",
            "attn.to_add_out",
            "ff.net.0.proj",
            "ff.net.2",
            "ff_context.net.0.proj",
            "ff_context.net.2"};
  return {"to_k", "to_q", "to_v", "to_out.0"};
}

}  // namespace trainmem
