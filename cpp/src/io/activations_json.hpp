// The JSON of an activation model (per-layer saved, output and temporary bytes).
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/activations.hpp"

namespace trainmem {
namespace activations {

nlohmann::json to_json(const ModelActivations& acts);

}  // namespace activations
}  // namespace trainmem
