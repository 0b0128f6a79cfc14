// The accumulation results as JSON (the forward arithmetic and the planner).
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/accumulation.hpp"

namespace trainmem {
namespace accumulation {

nlohmann::json to_json(const ForwardResult& r, const ForwardInputs& in);
nlohmann::json to_json(const PlannerResult& r, const PlannerInputs& in);

}  // namespace accumulation
}  // namespace trainmem
