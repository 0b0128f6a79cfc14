// Vision and speech networks as model descriptions and activations: the recipe of a NetSpec run
// once for the parameter list (describe) and once per evaluation for the activations of a batch.
#include "net/net_model.hpp"

#include "net/recipes.hpp"
#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace net {

std::string dot(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

Shape with(Shape s, size_t dim, uint64_t v) {
  s.at(dim) = v;
  return s;
}

Recipe recipe_of(const std::string& family) {
  static const std::pair<const char*, Recipe> kRecipes[] = {
      {"tv_resnet", tv_resnet},
      {"tv_vit", tv_vit},
      {"tv_convnext", tv_convnext},
      {"tv_swin", tv_swin},
      {"tv_efficientnet", tv_efficientnet},
      {"tv_mobilenet_v3", tv_mobilenet_v3},
      {"tv_densenet", tv_densenet},
      {"vit", hf_vit},
      {"deit", hf_vit},
      {"dinov2", hf_vit},
      {"clip", hf_clip},
      {"siglip", hf_clip},
      {"convnext", hf_convnext},
      {"resnet", hf_resnet},
      {"swin", hf_swin},
      {"segformer", hf_segformer},
      {"whisper", hf_whisper},
      {"wav2vec2", hf_wav2vec2},
  };
  for (const auto& r : kRecipes)
    if (family == r.first) return r.second;
  return nullptr;
}

uint64_t sequence_tokens(const NetSpec& n) {
  const bool vit =
      n.family == "tv_vit" || n.family == "vit" || n.family == "deit" || n.family == "dinov2";
  if (vit && n.patch > 0)
    return (n.image_size / n.patch) * (n.image_size / n.patch) + 1 + n.extra_tokens;
  const bool tower = n.family == "clip" || n.family == "siglip";
  if (tower && n.vision && n.patch > 0)  // the vision tower's tokens (CLIP: + [CLS])
    return (n.image_size / n.patch) * (n.image_size / n.patch) + (n.family == "clip" ? 1 : 0);
  if (tower) return n.seq;
  if (n.family == "whisper") return n.image_size / 2;  // encoder tokens
  if (n.family == "wav2vec2") {  // frames after the feature encoder's convolutions
    uint64_t t = n.image_size;
    for (const auto& st : n.stages) t = t >= st.kernel ? (t - st.kernel) / st.stride + 1 : 0;
    return std::max<uint64_t>(t, 1);
  }
  return 1;
}

size_t describe(const NetSpec& spec, ModelDescription* m) {
  const Recipe r = recipe_of(spec.family);
  if (!r)
    fail(code::kInternal, "model", Message{"error.internal.recipe", {{"family", spec.family}}});
  activations::Settings s;
  s.detail = false;
  Graph g(s, m, false);
  r(g, spec);
  return g.chain_layers();
}

namespace {

// What a vision or speech network cannot take from the settings (field named).
void check_settings(const NetSpec& n, const activations::Settings& s) {
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
  if (s.tensor_parallel > 1 || s.sequence_parallel)
    fail(code::kUnsupported, "tensorParallel", Message{"error.net.tensorParallel", {}});
  if (s.loss != activations::Settings::Loss::cross_entropy)
    fail(code::kUnsupported, "loss", Message{"error.net.loss", {}});
  if (s.float8) fail(code::kUnsupported, "float8", Message{"error.net.float8", {}});
  if (s.target_len > 0 && n.decoder_layers == 0 && n.family != "wav2vec2")
    fail(code::kInconsistent, "targetLen", Message{"error.net.targetLenNone", {}});
}

}  // namespace

activations::ModelActivations activations(const ModelDescription& m,
                                          const activations::Settings& s) {
  const NetSpec& n = *m.arch.net;
  check_settings(n, s);
  activations::ModelActivations out;
  out.recipe = n.family;
  Graph g(s, nullptr, true);
  recipe_of(n.family)(g, n);
  g.finish(&out);
  // parameters per chain layer (TensorSpec.block b -> layer b + 1; the head's are after)
  const size_t nl = out.layers.size();
  for (const auto& t : m.tensors) {
    if (!t.tied_to.empty()) continue;
    const size_t L = t.block < 0 ? 0 : std::min<size_t>(static_cast<size_t>(t.block) + 1, nl - 1);
    out.layers[L].params += t.numel();
  }
  if (s.lora.enabled) out.assumptions.push_back(Text("net.assume.lora", {}));
  if (s.compiled) out.assumptions.push_back(Text("net.assume.compile", {}));
  return out;
}

}  // namespace net
}  // namespace trainmem
