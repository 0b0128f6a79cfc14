// The diffusers config readers' shared parts: the config fields they share, and the dispatch on
// `_class_name` (huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/
// models/). The tensor builder is the core's (model/diffusers_builder.cpp).
#include "io/diffusers_build.hpp"

namespace trainmem {
namespace diffusers {

std::vector<uint64_t> int_or_list(const Obj& c, const char* key, uint64_t fallback, size_t n,
                                  uint64_t min, uint64_t max) {
  std::vector<uint64_t> out;
  if (!c.has(key) || c.raw(key).is_null()) {
    c.mark_used(key);
    out.assign(n, fallback);
    return out;
  }
  const json& v = c.raw(key);
  if (!v.is_array()) {
    out.assign(n, c.u64(key, min, max));
    return out;
  }
  const json& a = c.array(key, kMaxUnits);
  if (a.size() != n)
    fail(code::kInconsistent, c.field(key),
         Message{"error.diffusers.blockCount",
                 {{"field", c.field(key)},
                  {"size", std::to_string(a.size())},
                  {"n", std::to_string(n)}}});
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(read_u64(a[i], index_path(c.field(key), i), min, max));
  return out;
}

void require_null(const Obj& c, const char* key, const char* what) {
  if (!c.has(key) || c.raw(key).is_null() || (c.raw(key).is_boolean() && !c.raw(key).get<bool>())) {
    c.mark_used(key);
    return;
  }
  fail(
      code::kUnsupported, c.field(key),
      Message{"error.diffusers.unsupported", {{"field", c.field(key)}}}.with(
          "what", {what ? Message{what, {}} : Message{"error.diffusers.setting", {{"key", key}}}}));
}

void require_value(const Obj& c, const char* key, const char* expected) {
  if (!c.has(key) || c.raw(key).is_null()) {
    c.mark_used(key);
    return;
  }
  const std::string v = c.str(key, 128);
  if (v != expected)
    fail(code::kUnsupported, c.field(key),
         Message{"error.diffusers.onlyValue",
                 {{"field", c.field(key)}, {"v", v.substr(0, 64)}, {"expected", expected}}}
             .with("what", {Message{"error.diffusers.setting", {{"key", key}}}}));
}

}  // namespace diffusers
}  // namespace trainmem

namespace trainmem {

const char* diffusers_model_type(const std::string& cls) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {"UNet2DConditionModel", "unet"},       {"SD3Transformer2DModel", "sd3"},
      {"FluxTransformer2DModel", "flux"},     {"DiTTransformer2DModel", "dit"},
      {"PixArtTransformer2DModel", "pixart"}, {"AutoencoderKL", "vae"}};
  for (const auto& t : kTypes)
    if (cls == t.first) return t.second;
  return "";
}

// A diffusers config.json (it names its class in `_class_name`, where transformers' configs have
// model_type): the tensor list and the chain of units of the classes trainmem models.
ModelDescription model_from_diffusers_config(const Obj& c) {
  const std::string cls = c.str("_class_name", 128);
  ModelDescription m;
  if (cls == "UNet2DConditionModel")
    m = diffusers::unet_from_config(c);
  else if (cls == "AutoencoderKL")
    m = diffusers::vae_from_config(c);
  else if (cls == "SD3Transformer2DModel")
    m = diffusers::sd3_from_config(c);
  else if (cls == "FluxTransformer2DModel")
    m = diffusers::flux_from_config(c);
  else if (cls == "DiTTransformer2DModel" || cls == "PixArtTransformer2DModel")
    m = diffusers::dit_from_config(c, cls == "PixArtTransformer2DModel");
  else if (cls == "Transformer2DModel" && c.has("patch_size") && !c.raw("patch_size").is_null())
    // the older hub configs of DiT and PixArt name the generic class; norm_type tells which
    m = diffusers::dit_from_config(c, c.str_or("norm_type", "", 32) == "ada_norm_single");
  else
    fail(code::kUnsupported, c.field("_class_name"),
         Message{"error.diffusers.class",
                 {{"field", c.field("_class_name")}, {"cls", cls.substr(0, 64)}}});
  m.source = "config";
  m.name = c.str_or("_name_or_path", cls.c_str(), 200);
  return m;
}

}  // namespace trainmem
