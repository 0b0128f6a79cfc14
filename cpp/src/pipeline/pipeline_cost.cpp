// What a diffusion pipeline's frozen parts add to a training step (trainmem/pipeline.hpp).
// Sources: diffusers@58eb52c0 models/resnet.py ResnetBlock2D.forward (norm1, SiLU, conv1, norm2,
// SiLU, conv2, conv_shortcut, (input + h) / output_scale_factor: each op a new tensor),
// models/downsampling.py Downsample2D (padding 0: F.pad then a stride-2 conv),
// models/attention_processor.py AttnProcessor / AttnProcessor2_0 (the VAE mid block's
// single-head attention with group_norm and the residual; get_attention_scores: baddbmm on an
// empty tensor, softmax), models/autoencoders/vae.py Encoder.forward; transformers
// models/clip/modeling_clip.py (CLIPEncoderLayer: pre-LN, eager attention, quick_gelu MLP;
// output_hidden_states keeps every layer's output), models/t5/modeling_t5.py (T5LayerNorm in
// fp32, the position bias of the first layer reused by all, softmax in fp32).
#include <algorithm>

#include "trainmem/error.hpp"
#include "trainmem/pipeline.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace diffusion {
namespace {

// The built-in text encoders: their configs' sizes and parameter counts (each checked by
// summing its modules: tests/cpp/test_pipeline.cpp).
const TextEncoder kEncoders[] = {
    {"clip-vit-large-patch14",
     "CLIP ViT-L/14 text encoder (CLIPTextModel; SD 1.x, SDXL, SD3, Flux)", 123060480, 768, 12, 12,
     3072, 77, false},
    {"clip-vit-h-14", "OpenCLIP ViT-H/14 text encoder (CLIPTextModel; SD 2.x)", 340387840, 1024, 23,
     16, 4096, 77, false},
    {"clip-vit-bigG-14",
     "OpenCLIP ViT-bigG/14 text encoder (CLIPTextModelWithProjection; SDXL, SD3)", 694659840, 1280,
     32, 20, 5120, 77, false},
    {"t5-v1_1-xxl-encoder", "T5 v1.1 XXL encoder (T5EncoderModel; SD3, Flux)", 4762310656ull, 4096,
     24, 64, 10240, 256, true},
};

struct Walk {
  uint64_t b, w;
  bool cpu;
  uint64_t peak = 0;
  uint64_t n(uint64_t c, uint64_t h, uint64_t wd) const {
    return checked_mul(checked_mul(b * c, h, "imageSize"), wd * w, "imageSize");
  }
  void at(uint64_t live) { peak = std::max(peak, live); }
  // oneDNN's forward convolution on the CPU: max(input, output) + the weight (measured by
  // tools/measure_pipeline.py); CUDA's cuDNN workspace is left out
  uint64_t ws(uint64_t in, uint64_t out, uint64_t weight) const {
    return cpu ? std::max(in, out) + weight * w : 0;
  }
};

// `held`: what the callers hold meanwhile (Encoder.forward keeps a block's input while the
// block runs; DownEncoderBlock2D its current input).
void resnet(Walk& k, uint64_t cin, uint64_t cout, uint64_t h, uint64_t wd, uint64_t held) {
  const uint64_t in = k.n(cin, h, wd), out = k.n(cout, h, wd);
  k.at(held + 3 * in);                                          // norm1, SiLU
  k.at(held + 2 * in + out + k.ws(in, out, 9 * cin * cout));    // conv1
  k.at(held + in + 2 * out + k.ws(out, out, 9 * cout * cout));  // norm2, SiLU, conv2
  const bool shortcut = cin != cout;
  if (shortcut) k.at(held + in + 2 * out + k.ws(in, out, cin * cout));  // conv_shortcut
  k.at(held + in + (shortcut ? 4 : 3) * out);  // (input + h) / output_scale_factor
}

// The mid block's single-head attention on `n` bytes: its input (the residual), group_norm's
// output, q, k, v; eager: baddbmm's empty input and the scores, then the softmax (the empty
// tensor and the scores freed as read); SDPA: its output.
void mid_attention(Walk& k, uint64_t c, uint64_t h, uint64_t wd, bool eager, uint64_t held) {
  const uint64_t n = k.n(c, h, wd);
  const uint64_t tokens = h * wd;
  const uint64_t s =
      eager ? checked_mul(checked_mul(k.b, tokens, "imageSize"), tokens * k.w, "imageSize") : 0;
  k.at(held + 5 * n + (eager ? 2 * s : n));
}

}  // namespace

const TextEncoder* text_encoder_preset(const std::string& id) {
  for (const auto& e : kEncoders)
    if (e.id == id) return &e;
  return nullptr;
}

std::vector<std::string> text_encoder_ids() {
  std::vector<std::string> ids;
  for (const auto& e : kEncoders) ids.push_back(e.id);
  return ids;
}

uint64_t vae_encode_bytes(const Net& vae, uint64_t batch, uint64_t h, uint64_t w,
                          uint64_t dtype_bytes, bool eager, bool cpu) {
  Walk k{batch, dtype_bytes, cpu};
  const std::vector<uint64_t>& boc = vae.vae_channels;
  if (boc.empty()) return 0;
  const uint64_t img = k.n(vae.in_channels, h, w);
  k.at(k.n(boc[0], h, w) + k.ws(img, k.n(boc[0], h, w), 9 * vae.in_channels * boc[0]));
  uint64_t ch = boc[0];
  for (size_t i = 0; i < boc.size(); ++i) {
    const uint64_t block_in = k.n(ch, h, w);  // held by Encoder.forward while the block runs
    for (uint64_t j = 0; j < vae.vae_layers; ++j)
      resnet(k, j == 0 ? ch : boc[i], boc[i], h, w, j == 0 ? 0 : block_in);
    ch = boc[i];
    if (i + 1 < boc.size()) {  // F.pad (0, 1, 0, 1), then the stride-2 conv
      const uint64_t in = k.n(ch, h, w), pad = k.n(ch, h + 1, w + 1), out = k.n(ch, h / 2, w / 2);
      k.at(block_in + in + pad + out + k.ws(pad, out, 9 * ch * ch));
      h /= 2;
      w /= 2;
    }
  }
  const uint64_t mid_in = k.n(ch, h, w);
  resnet(k, ch, ch, h, w, 0);
  mid_attention(k, ch, h, w, eager, mid_in);
  resnet(k, ch, ch, h, w, mid_in);
  k.at(2 * mid_in);  // conv_norm_out, SiLU (conv_out's 2 x latent channels are small)
  return k.peak;
}

}  // namespace diffusion
}  // namespace trainmem

namespace trainmem {
namespace diffusion {
namespace {

// A text encoder's forward under no_grad, per sample: CLIP's largest working set (attention:
// the residual, the norm's output, q, k, v, the scores and their softmax; MLP: fc1's output,
// quick_gelu's 1.702 x, sigmoid and product) and every layer's output (output_hidden_states);
// T5's position bias (made once, read by every layer), scores, their fp32 softmax and its cast.
uint64_t text_encode_bytes(const TextEncoder& t, uint64_t w) {
  const uint64_t s = t.tokens, h = t.hidden, sc = t.heads * s * s;
  if (!h) return 0;
  if (t.t5)
    return sc * w + std::max(sc * (2 * w + 4) + 5 * h * s * w, 2 * h * s * w + 4 * t.ff * s * w);
  return std::max(5 * h * s * w + 2 * sc * w, 2 * h * s * w + 4 * t.ff * s * w) +
         (t.layers + 1) * s * h * w;
}

// A CLIP text encoder trained with LoRA on q, k, v and out_proj, per sample: per layer and
// token the residual, the norms' outputs, q, k, v, the attention output, the MLP's fc1 output,
// sigmoid and product (8 h + 3 ff), the softmax (heads x tokens); each adapter's fp32 input
// and its rank-wide output (PEFT casts x to the adapters' dtype); with dropout its mask.
uint64_t text_lora_activation_bytes(const TextEncoder& t, uint64_t w, uint64_t rank,
                                    double dropout) {
  const uint64_t s = t.tokens, h = t.hidden;
  uint64_t per_token = (8 * h + 3 * t.ff) * w + t.heads * s * w + 4 * (h * 4 + rank * 4);
  if (dropout > 0) per_token += 4 * h * 4;
  return t.layers * s * per_token + (t.layers + 1) * s * h * w;
}

}  // namespace

PipelineCost pipeline_cost(const Pipeline& p, const CostSettings& s) {
  PipelineCost c;
  const uint64_t b = s.batch;
  auto encode = [&](uint64_t bytes, const std::string& who) {
    if (bytes > c.encode_peak_bytes) {
      c.encode_peak_bytes = bytes;
      c.encode_peak_part = who;
    }
  };
  for (const FrozenPart& part : p.parts) {
    const uint64_t weights = checked_mul(part.params, part.dtype_bytes, "model.pipeline");
    if (part.resident) c.resident_bytes = checked_add(c.resident_bytes, weights, "model.pipeline");
    if (part.role == "vae") {
      if (!part.encodes || !part.vae) continue;
      const uint64_t px =
          checked_mul(b * part.vae->in_channels, s.image_height * s.image_width, "imageSize");
      // the dataloader's fp32 pixels, and their copy in the VAE's dtype
      c.pixel_bytes = px * 4 + (part.dtype_bytes != 4 ? px * part.dtype_bytes : 0);
      encode(vae_encode_bytes(*part.vae, b, s.image_height, s.image_width, part.dtype_bytes,
                              s.eager, s.cpu),
             part.role);
    } else if (part.lora_rank) {
      const uint64_t lp = part.lora_rank * 2 * part.text.hidden * 4 * part.text.layers;
      c.lora_params += lp;
      c.lora_state_bytes += lp * 16;  // fp32 adapter, its gradient, AdamW's two states
      c.text_activation_bytes += b * text_lora_activation_bytes(part.text, part.dtype_bytes,
                                                                part.lora_rank, s.lora_dropout);
    } else if (part.encodes) {
      encode(b * text_encode_bytes(part.text, part.dtype_bytes), part.role);
    }
  }
  return c;
}

}  // namespace diffusion
}  // namespace trainmem
