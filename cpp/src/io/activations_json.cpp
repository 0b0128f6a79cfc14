// The JSON of an activation model: its recipe, totals and one object per layer.
#include "io/activations_json.hpp"

#include "io/json_fields.hpp"
#include "io/json_rows.hpp"

namespace trainmem {
namespace activations {
namespace {

void saved_row(const Saved& t, nlohmann::json& e) {
  put(e, "name", t.name);
  put(e, "bytes", t.bytes);
  put(e, "source", t.source);
}

void layer_row(const LayerActivations& l, nlohmann::json& e) {
  put(e, "name", l.name);
  put(e, "savedBytes", l.saved_bytes);
  put(e, "saved", object_rows(l.saved, saved_row));
  put(e, "outputBytes", l.output_bytes);
  put(e, "forwardTempBytes", l.forward_temp_bytes);
  put(e, "backwardTempBytes", l.backward_temp_bytes);
  put(e, "forwardFlops", l.forward_flops);
}

}  // namespace

nlohmann::json to_json(const ModelActivations& a) {
  nlohmann::json j = nlohmann::json::object();
  put(j, "recipe", a.recipe);
  put(j, "assumptions", a.assumptions);
  put(j, "inputBytes", a.input_bytes);
  put(j, "layers", object_rows(a.layers, layer_row));
  put(j, "totalSavedBytes", a.total_saved_bytes);
  put(j, "korthikantiLayerBytes", a.korthikanti_layer_bytes);
  return j;
}

}  // namespace activations
}  // namespace trainmem
