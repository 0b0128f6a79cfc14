// presets(): model presets (id, name, parameter count, source) and, generically, every data
// file under cpp/data/gpus/ and cpp/data/examples/ (added by other calculators).
// `parameterCounts: false` lists the models from their data files alone (id, name, modelType,
// source), without building each model: the page's model picker needs no more at start-up.
#include <string>

#include "trainmem/calculators.hpp"
#include "trainmem/embedded_data.hpp"
#include "trainmem/model.hpp"
#include "trainmem/request.hpp"

namespace trainmem {

json presets_json(const json& request) {
  Obj req(request, "");
  const bool counts = req.boolean_or("parameterCounts", true);
  req.finish();
  json models = json::array();
  if (!counts) {
    for (const auto& f : embedded_under("models/")) {
      const json& p = *f.second;
      if (!p.is_object() || !p.contains("id") || !p["id"].is_string()) continue;
      const std::string id = p["id"].get<std::string>();
      const json* cfg = p.contains("config") ? &p["config"] : nullptr;
      models.push_back({{"id", id},
                        {"name", p.value("name", id)},
                        {"modelType", cfg && cfg->is_object() ? cfg->value("model_type", "") : ""},
                        {"source", p.value("source", "")}});
    }
  } else {
    for (const auto& id : model_preset_ids()) {
      // Built once and kept (shared_preset): the page's later requests on a preset reuse it.
      const auto shared = shared_preset(id, "preset");
      const ModelDescription& m = *shared;
      json e = {{"id", id},
                {"name", m.name},
                {"params", m.params},
                {"modelType", m.arch.model_type},
                {"architecture", m.architecture},
                {"layers", m.arch.layers},
                {"hidden", m.arch.hidden},
                {"source", m.source_note}};
      if (m.published_params) e["publishedParams"] = m.published_params;
      models.push_back(std::move(e));
    }
  }
  json out;
  out["models"] = std::move(models);
  for (const char* kind : {"gpus", "examples"}) {
    json list = json::array();
    for (const auto& f : embedded_under(std::string(kind) + "/")) {
      json e = *f.second;
      if (e.is_object() && !e.contains("file")) e["file"] = f.first;
      list.push_back(std::move(e));
    }
    out[kind] = std::move(list);
  }
  return out;
}

}  // namespace trainmem
