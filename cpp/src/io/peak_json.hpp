// peakMemory at the edge: the request reader (JSON to peak::Request) and the result writer.
#pragma once
#include <nlohmann/json.hpp>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// Parses and validates a peakMemory request (throws RequestError naming the field).
Request parse_request(const nlohmann::json& request);

nlohmann::json to_json(const Result& r, bool include_timeline = true);
// peakMemory's whole result for request r: to_json, and what samples did to the lengths.
nlohmann::json result_json(const Request& r, const Result& res, bool include_timeline);
// The request's "timeline" flag (absent or null: true), as peakMemory reads it.
bool wants_timeline(const nlohmann::json& request);

}  // namespace peak
}  // namespace trainmem
