// The GPU presets and runtime profiles, read from the embedded data files (cpp/data/gpus/,
// cpp/data/runtime-*.json) at the edge; the core takes the typed peak::Gpu and peak::Runtime
// (trainmem/peak_memory.hpp). Implemented in io/peak_memory_request.cpp.
#pragma once
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// Runtime profile from cpp/data/runtime-<id>.json; throws RequestError naming `field`.
Runtime runtime_profile(const std::string& id, const std::string& field);
std::vector<std::string> runtime_ids();

// GPU preset from cpp/data/gpus/<id>.json; throws RequestError(unknown_preset, field).
Gpu gpu_preset(const std::string& id, const std::string& field);
std::vector<std::string> gpu_ids();

}  // namespace peak
}  // namespace trainmem
