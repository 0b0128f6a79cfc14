// planLayout's result as JSON (io/layout_json.cpp).
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/layout_planner.hpp"

namespace trainmem {

// One layout (a `layouts` entry).
nlohmann::json verdict_to_json(const layout::Verdict& v, vocab::Precision precision);
nlohmann::json layout_json(const layout::Inputs& in, const layout::Result& r);

}  // namespace trainmem
