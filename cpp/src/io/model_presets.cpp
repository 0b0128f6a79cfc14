// Model presets: cpp/data/models/<id>.json, each a copied HuggingFace config.json with the
// source named and the published parameter count it must reproduce.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

std::vector<std::string> model_preset_ids() {
  std::vector<std::string> ids;
  for (const auto& f : embedded_under("models/")) {
    const json& j = *f.second;
    if (j.is_object() && json_has(j, "id") && json_at(j, "id").is_string())
      ids.push_back(json_at(j, "id").get<std::string>());
  }
  return ids;
}

ModelDescription model_from_preset(const std::string& id, const std::string& field) {
  // A preset lives in models/<id>.json: look there first, so that a request parses one data
  // file; scan them all only if it is not there.
  const json* found = embedded_find("models/" + id + ".json");
  if (found && !(found->is_object() && json_value_or(*found, "id", "") == id)) found = nullptr;
  if (!found)
    for (const auto& f : embedded_under("models/"))
      if (f.second->is_object() && json_value_or(*f.second, "id", "") == id) found = f.second;
  if (!found) {
    const std::string near = closest_match(id, model_preset_ids());
    if (near.empty())
      fail(code::kUnknownPreset, field,
           Message{"error.preset.unknown", {{"field", field}, {"id", id.substr(0, 64)}}});
    fail(code::kUnknownPreset, field,
         Message{"error.preset.unknownNear",
                 {{"field", field}, {"id", id.substr(0, 64)}, {"near", near}}});
  }
  const json& p = *found;
  Obj cfg(json_at(p, "config"), "preset:" + id + ".config");
  cfg.null_as_absent();  // HF config.json: null is unset
  ModelDescription m = model_from_config(cfg, json_value_or(p, "architecture", ""));
  m.source = "preset";
  m.preset_id = id;
  m.name = json_value_or(p, "name", id);
  m.published_params = json_value_or(p, "publishedParams", uint64_t{0});
  m.source_note = json_value_or(p, "source", "");
  return m;
}

std::shared_ptr<const ModelDescription> shared_preset(const std::string& id,
                                                      const std::string& field) {
  // Bounded: one entry per preset id that exists (unknown ids throw before insertion).
  static std::map<std::string, std::shared_ptr<const ModelDescription>> cache;
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  auto m = std::make_shared<const ModelDescription>(model_from_preset(id, field));
  cache.emplace(id, m);
  return m;
}

}  // namespace trainmem
