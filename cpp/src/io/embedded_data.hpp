// Data files (cpp/data/**/*.json) compiled into the library by cpp/embed_data.cmake.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainmem {

struct EmbeddedFile {
  const char* path;      // relative to cpp/data, e.g. "models/gpt2.json"
  const char* contents;  // the JSON text (whitespace outside strings removed)
};
struct EmbeddedFiles {  // a constant array, sorted by path
  const EmbeddedFile* data;
  size_t size;
  const EmbeddedFile* begin() const { return data; }
  const EmbeddedFile* end() const { return data + size; }
};

EmbeddedFiles embedded_files();
// Parsed contents of one embedded file (parsed on first use, then cached), or nullptr.
const nlohmann::json* embedded_find(const std::string& path);
// Parsed contents of one embedded file (cached); throws std::out_of_range if absent.
const nlohmann::json& embedded_json(const std::string& path);
// Every embedded file whose path starts with `prefix` (e.g. "models/"), parsed.
std::vector<std::pair<std::string, const nlohmann::json*>> embedded_under(
    const std::string& prefix);

}  // namespace trainmem
