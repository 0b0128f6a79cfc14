// JSON-level entry points of the calculators (one per public API function). Each parses and
// validates its request (throwing RequestError), computes, and returns the result object.
// Each comment names the io/ file that defines it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace trainmem {

nlohmann::json checkpoint_size_json(const nlohmann::json& request);  // checkpoint_json.cpp
nlohmann::json describe_model_json(const nlohmann::json& request);   // model_json.cpp
nlohmann::json peak_memory_json(const nlohmann::json& request);      // peak_json.cpp
nlohmann::json accumulation_json(const nlohmann::json& request);     // accumulation_request.cpp
nlohmann::json placement_json(const nlohmann::json& request);        // placement_request.cpp
nlohmann::json presets_json(const nlohmann::json& request);          // presets.cpp
nlohmann::json advise_json(const nlohmann::json& request);           // advise_json.cpp
nlohmann::json vocabulary_json(const nlohmann::json& request);       // vocabulary_json.cpp
nlohmann::json plan_layout_json(const nlohmann::json& request);      // layout_request.cpp
// The two that read a file's bytes beside their request (snapshot_json.cpp).
nlohmann::json read_snapshot_json(const nlohmann::json& request, const std::string& bytes);
nlohmann::json compare_snapshot_json(const nlohmann::json& request, const std::string& bytes);

}  // namespace trainmem
