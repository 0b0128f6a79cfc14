// The JSON of the step-time model: the time of one optimizer step and the FLOPs per token.
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/time_model.hpp"

namespace trainmem {
namespace time_model {

nlohmann::json to_json(const StepTime& t);
nlohmann::json to_json(const ForwardFlops& f);

}  // namespace time_model
}  // namespace trainmem
