// model.pipeline: a diffusion training pipeline (trainmem/pipeline.hpp). Defaults follow
// diffusers@58eb52c0 examples/dreambooth/train_dreambooth_lora{,_sdxl,_sd3,_flux}.py: the VAE
// in fp32 for SDXL and SD3 (vae.to(dtype=torch.float32)), in the weight dtype for SD 1.x/2.x,
// Flux, DiT and PixArt; text encoders in the weight dtype; SDXL, SD3 and Flux precompute the
// prompt embeddings when no text encoder trains (compute_text_embeddings), SD3 and Flux then
// delete the text encoders (del text_encoder_one, ...; free_memory()), the UNet scripts keep
// them; --cache_latents encodes every image once and deletes the VAE.
#include "io/pipeline_request.hpp"

#include "io/model_json.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace {

using diffusion::FrozenPart;
using diffusion::Net;

struct Defaults {
  bool unet = false, sdxl = false, sd3 = false, flux = false;
  const char* vae = "sd-vae";
  const char* vae_dtype = "";  // "" = the precision's weight dtype
  bool precompute_text = false;
  std::vector<std::string> encoders;
};

Defaults defaults_of(const Net& n) {
  Defaults d;
  d.unet = n.cls == "UNet2DConditionModel";
  d.sdxl = d.unet && n.add_time_dim > 0;
  d.sd3 = n.cls == "SD3Transformer2DModel";
  d.flux = n.cls == "FluxTransformer2DModel";
  if (d.sd3 || d.flux) d.vae = "flux-vae";  // SD3's AutoencoderKL has Flux's layout (16 latents)
  if (d.sdxl || d.sd3) d.vae_dtype = "fp32";
  d.precompute_text = d.sdxl || d.sd3 || d.flux;
  if (d.unet && n.text_dim == 768) d.encoders = {"clip-vit-large-patch14"};
  if (d.unet && n.text_dim == 1024) d.encoders = {"clip-vit-h-14"};
  if (d.sdxl) d.encoders = {"clip-vit-large-patch14", "clip-vit-bigG-14"};
  if (d.sd3) d.encoders = {"clip-vit-large-patch14", "clip-vit-bigG-14", "t5-v1_1-xxl-encoder"};
  if (d.flux) d.encoders = {"clip-vit-large-patch14", "t5-v1_1-xxl-encoder"};
  if (n.cls == "PixArtTransformer2DModel") d.encoders = {"t5-v1_1-xxl-encoder"};
  return d;
}

uint64_t dtype_bytes(const std::string& d) { return d == "fp32" ? 4 : 2; }

std::string read_dtype(const Obj& o, const char* fallback) {
  if (!o.has("dtype")) return fallback;
  return o.one_of("dtype", {"fp32", "bf16", "fp16"});
}

FrozenPart read_vae(const Obj& p, const Net& den, const Defaults& d, bool cache) {
  FrozenPart part;
  part.role = "vae";
  std::shared_ptr<const ModelDescription> vm;
  if (p.has("vae")) {
    const Obj v = p.obj("vae");
    part.dtype = read_dtype(v, d.vae_dtype);
    vm = parse_model_shared(v);
  } else {
    part.dtype = d.vae_dtype;
    const json preset = {{"preset", d.vae}};
    vm = parse_model_shared(Obj(preset, p.field("vae")));
  }
  if (!vm->diffusion || !vm->diffusion->vae)
    fail(code::kInconsistent, p.field("vae"),
         Message{"error.pipe.vaeKind", {{"field", p.field("vae")}}});
  const Net& vae = *vm->diffusion;
  const uint64_t reads = d.flux ? den.in_channels / 4 : den.in_channels;
  if (vae.latent_channels != reads || vae.vae_scale != den.vae_scale)
    fail(code::kInconsistent, p.field("vae"),
         Message{"error.pipe.latents",
                 {{"field", p.field("vae")},
                  {"latentChannels", std::to_string(vae.latent_channels)},
                  {"vaeScale", std::to_string(vae.vae_scale)},
                  {"cls", den.cls},
                  {"reads", std::to_string(reads)},
                  {"vaeScale2", std::to_string(den.vae_scale)}}});
  part.title = vm->architecture + (vm->architecture == "AutoencoderKL" ? "" : " (AutoencoderKL)");
  part.params = vm->params;
  part.dtype_bytes = dtype_bytes(part.dtype);
  part.resident = part.encodes = !cache;
  part.vae = vm->diffusion;
  return part;
}

// One entry of textEncoders: {preset | params, dtype, tokens, train: false | "lora", rank}.
FrozenPart read_encoder(const Obj& e, const Net& den, const Defaults& d, bool precompute) {
  FrozenPart part;
  if (e.has("preset")) {
    const std::string id = e.one_of("preset", diffusion::text_encoder_ids());
    part.text = *diffusion::text_encoder_preset(id);
  } else if (e.has("params")) {
    part.text.params = e.u64("params", 1, 1ull << 44);
    part.text.title = "a text encoder of " + std::to_string(part.text.params) + " parameters";
  } else {
    fail(code::kMissingField, e.path(), Message{"error.pipe.encoder", {{"field", e.path()}}});
  }
  if (part.text.t5 && den.default_text_len)  // SD3: 77 CLIP tokens, then T5's
    part.text.tokens = den.default_text_len - (d.sd3 ? 77 : 0);
  part.text.tokens = e.u64_or("tokens", part.text.tokens, 1, 1 << 16);
  part.title = part.text.title;
  part.params = part.text.params;
  part.dtype = read_dtype(e, "");
  part.dtype_bytes = part.dtype.empty() ? 2 : dtype_bytes(part.dtype);
  std::string train = "none";
  if (e.has("train"))
    train = e.raw("train").is_boolean() ? (e.boolean("train") ? "lora" : "none")
                                        : e.one_of("train", {"none", "lora"});
  if (train == "lora") {
    if (part.text.t5 || !part.text.hidden)
      fail(code::kUnsupported, e.field("train"),
           Message{"error.pipe.encoderLora", {{"field", e.field("train")}}});
    part.lora_rank = e.has("rank") ? e.u64("rank", 1, 65536) : ~uint64_t{0};
  } else if (e.has("rank")) {
    fail(code::kInconsistent, e.field("rank"),
         Message{"error.pipe.rank", {{"field", e.field("rank")}}});
  }
  part.encodes = train == "lora" || !precompute;
  part.resident = part.encodes || d.unet;  // SD3 and Flux delete them after precomputing
  e.finish();
  return part;
}

void read_encoders(const Obj& p, const Net& den, const Defaults& d, bool precompute,
                   diffusion::Pipeline* out) {
  std::vector<FrozenPart> parts;
  if (p.has("textEncoders")) {
    const json& a = p.array("textEncoders", 4);
    for (size_t i = 0; i < a.size(); ++i)
      parts.push_back(
          read_encoder(Obj(a[i], index_path(p.field("textEncoders"), i)), den, d, precompute));
  } else {
    for (const auto& id : d.encoders) {
      const json e = {{"preset", id}};
      parts.push_back(read_encoder(Obj(e, p.field("textEncoders")), den, d, precompute));
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].role = i == 0 ? "text_encoder" : "text_encoder_" + std::to_string(i + 1);
    out->parts.push_back(parts[i]);
  }
}

}  // namespace

std::shared_ptr<const ModelDescription> read_pipeline(const Obj& model) {
  const Obj p = model.obj("pipeline");
  model.finish();
  const std::shared_ptr<const ModelDescription> den = parse_model_shared(p.obj("denoiser"));
  if (!den->diffusion || den->diffusion->vae)
    fail(code::kInconsistent, p.field("denoiser"),
         Message{"error.pipe.denoiser", {{"field", p.field("denoiser")}, {"vae", p.field("vae")}}});
  const Net& net = *den->diffusion;
  const Defaults d = defaults_of(net);
  auto pipe = std::make_shared<diffusion::Pipeline>();
  bool cache_latents = false, precompute = d.precompute_text;
  if (p.has("precomputed")) {
    const Obj pc = p.obj("precomputed");
    cache_latents = pc.boolean_or("latents", false);
    precompute = pc.boolean_or("textEmbeddings", precompute);
    pc.finish();
  }
  pipe->prior_preservation = p.boolean_or("priorPreservation", false);
  // vae: false leaves the VAE off the device (cached latents)
  const auto v = p.json_value().find("vae");
  const bool no_vae = v != p.json_value().end() && v->is_boolean();
  if (no_vae && v->get<bool>())
    fail(code::kOutOfRange, p.field("vae"), Message{"error.pipe.vae", {{"field", p.field("vae")}}});
  if (!no_vae) {
    pipe->parts.push_back(read_vae(p, net, d, cache_latents));
  } else if (!cache_latents) {
    fail(code::kInconsistent, p.field("vae"),
         Message{"error.pipe.noVae",
                 {{"field", p.field("vae")}, {"precomputed", p.field("precomputed")}}});
  } else {
    p.mark_used("vae");
  }
  read_encoders(p, net, d, precompute, pipe.get());
  p.finish();
  pipe->assumptions.push_back(Text("pipe.assume.derived", {}));
  auto m = std::make_shared<ModelDescription>(*den);
  m->pipeline = pipe;
  return m;
}

}  // namespace trainmem

#include "io/json_fields.hpp"
#include "pipeline/pipeline_peak.hpp"

namespace trainmem {

nlohmann::json pipeline_json(const peak::Request& rq) {
  const diffusion::Pipeline& p = *rq.model.description().pipeline;
  const diffusion::PipelineCost c = pipeline::cost(rq);
  const bool fp16 = rq.training.precision == vocab::Precision::amp_fp16 ||
                    rq.training.precision == vocab::Precision::fp16;
  const std::string weight = rq.training.precision == vocab::Precision::fp32 ? "fp32"
                             : fp16                                          ? "fp16"
                                                                             : "bf16";
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& part : p.parts) {
    const std::string dtype = part.dtype.empty() ? weight : part.dtype;
    nlohmann::json j = nlohmann::json::object();
    put(j, "role", part.role);
    put(j, "name", part.title);
    put(j, "params", part.params);
    put(j, "dtype", dtype);
    put(j, "bytes", part.params * (dtype == "fp32" ? 4u : 2u));
    put(j, "resident", part.resident);
    put(j, "encodes", part.encodes);
    if (part.lora_rank)
      put(j, "loraRank",
          part.lora_rank != ~uint64_t{0} ? part.lora_rank
          : rq.model.lora.enabled        ? rq.model.lora.rank
                                         : uint64_t{4});
    parts.push_back(std::move(j));
  }
  nlohmann::json out = nlohmann::json::object();
  put(out, "parts", std::move(parts));
  put(out, "residentBytes", c.resident_bytes);
  put(out, "textEncoderLoraParams", c.lora_params);
  put(out, "textEncoderActivationBytes", c.text_activation_bytes);
  put(out, "encodeBytes", c.encode_peak_bytes);
  put(out, "encodePart", c.encode_peak_part);
  put(out, "pixelBytes", c.pixel_bytes);
  put(out, "priorPreservation", p.prior_preservation);
  put(out, "samplesPerStep", rq.training.micro_batch * (p.prior_preservation ? 2 : 1));
  return out;
}

}  // namespace trainmem
