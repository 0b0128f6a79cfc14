// The JSON of placement results (placement_request.cpp writes them; peak memory embeds a plan).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/placement.hpp"

namespace trainmem {
namespace placement {

// The result object of a plan; include_timeline = false leaves the event timeline out.
nlohmann::json to_json(const PlanResult& r, bool include_timeline = true);
nlohmann::json to_json(const FrontierPoint& p);
// Op sequence as JSON ([{"op": "forward-check", "layer": 0}, ...]).
nlohmann::json schedule_json(const std::vector<Op>& ops);
// Facts as one object ({"k": 4, "slotBytes": 1.5, "exactGrid": true}).
nlohmann::json facts_json(const std::vector<Fact>& facts);

}  // namespace placement
}  // namespace trainmem
