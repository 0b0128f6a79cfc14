// Data files (cpp/data/**/*.json) compiled into the library by cpp/embed_data.cmake.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainmem {

struct EmbeddedFile {
  const char* path;  // relative to cpp/data, e.g. "models/gpt2.json"
  std::string contents;
};

const std::vector<EmbeddedFile>& embedded_files();
// Parsed contents of one embedded file (cached); throws std::out_of_range if absent.
const nlohmann::json& embedded_json(const std::string& path);
// Every embedded file whose path starts with `prefix` (e.g. "models/"), parsed.
std::vector<std::pair<std::string, const nlohmann::json*>> embedded_under(
    const std::string& prefix);

}  // namespace trainmem
