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
// A model known only by its parameter count (no shapes): the result is a lower bound.
bool count_only(const Request& r);
// The request's "timeline" flag (absent or null: true), as peakMemory reads it.
bool wants_timeline(const nlohmann::json& request);
// peakMemory's result for a parsed request with pipeline stages (r.pipeline.stages > 1): the
// binding stage's figures with every stage in `pipelineParallel`; *judged gets the binding
// stage's Result (what a verdict judges). Throws RequestError.
nlohmann::json pipeline_answer(const Request& r, bool include_timeline, Result* judged);
// The figures a verdict judges: the binding stage's with pipeline stages, else evaluate(r).
Result judged_result(const Request& r);

}  // namespace peak
}  // namespace trainmem
