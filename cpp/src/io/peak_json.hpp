// peakMemory at the edge: the request reader (JSON to peak::Request) and the result writer.
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// Parses and validates a peakMemory request (throws RequestError naming the field).
Request parse_request(const nlohmann::json& request);

nlohmann::json to_json(const Result& r, bool include_timeline = true);

}  // namespace peak
}  // namespace trainmem
