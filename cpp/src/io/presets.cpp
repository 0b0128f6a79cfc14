// presets(): model presets (id, name, parameter count, source) and, generically, every data
// file under cpp/data/gpus/ and cpp/data/examples/ (added by other calculators).
// `parameterCounts: false` lists the models from their data files alone (id, name, modelType,
// source), without building each model: the page's model picker needs no more at start-up.
#include <string>

#include "io/calculators.hpp"
#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

json presets_json(const json& request) {
  Obj req(request, "");
  const bool counts = req.boolean_or("parameterCounts", true);
  req.finish();
  json models = json::array();
  if (!counts) {
    for (const auto& f : embedded_under("models/")) {
      const json& p = *f.second;
      if (!p.is_object() || !json_has(p, "id") || !json_at(p, "id").is_string()) continue;
      const std::string id = json_at(p, "id").get<std::string>();
      const json* cfg = json_has(p, "config") ? &json_at(p, "config") : nullptr;
      json e = json::object();
      put(e, "id", id);
      put(e, "name", json_value_or(p, "name", id));
      std::string type = cfg && cfg->is_object() ? json_value_or(*cfg, "model_type", "") : "";
      if (type.empty() && cfg && cfg->is_object())  // a diffusers config names its class instead
        type = diffusers_model_type(json_value_or(*cfg, "_class_name", ""));
      put(e, "modelType", type);
      put(e, "source", json_value_or(p, "source", ""));
      models.push_back(std::move(e));
    }
  } else {
    for (const auto& id : model_preset_ids()) {
      // Built once and kept (shared_preset): the page's later requests on a preset reuse it.
      const auto shared = shared_preset(id, "preset");
      const ModelDescription& m = *shared;
      json e = json::object();
      put(e, "id", id);
      put(e, "name", m.name);
      put(e, "params", m.params);
      put(e, "modelType", m.arch.model_type);
      put(e, "architecture", m.architecture);
      put(e, "layers", m.arch.layers);
      put(e, "hidden", m.arch.hidden);
      put(e, "source", m.source_note);
      if (m.published_params) put(e, "publishedParams", m.published_params);
      models.push_back(std::move(e));
    }
  }
  json out;
  put(out, "models", std::move(models));
  for (const char* kind : {"gpus", "examples"}) {
    json list = json::array();
    for (const auto& f : embedded_under(std::string(kind) + "/")) {
      json e = *f.second;
      if (e.is_object() && !json_has(e, "file")) put(e, "file", f.first);
      list.push_back(std::move(e));
    }
    out[kind] = std::move(list);
  }
  return out;
}

}  // namespace trainmem
