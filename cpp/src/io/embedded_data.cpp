#include "io/embedded_data.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "io/request.hpp"

namespace trainmem {
namespace {
// Parsed on first use, one file at a time: a request on one preset parses that preset's file
// only (about 1 KB) instead of every data file (about 20 KB). At page start-up the whole-set
// parse made V8 tier the JSON parser up to TurboFan in the background, competing with the
// first result for the CPU (bench/RESULTS.md, session 4). Not thread-safe: the core is called
// from one thread (WASM has one; the native tests and tools call it from one).
std::map<std::string, nlohmann::json>& cache() {
  static std::map<std::string, nlohmann::json> parsed;
  return parsed;
}

const nlohmann::json& parsed(const EmbeddedFile& f) {
  auto& c = cache();
  auto it = c.find(f.path);
  if (it != c.end()) return it->second;
  // parse_request: the parser the requests use (one copy of nlohmann's parser in the module).
  return c.emplace(f.path, parse_request(f.contents)).first->second;
}
}  // namespace

const nlohmann::json* embedded_find(const std::string& path) {
  const EmbeddedFiles files = embedded_files();
  const EmbeddedFile* it = std::lower_bound(files.begin(), files.end(), path,
                                            [](const EmbeddedFile& f, const std::string& p) {
                                              return std::strcmp(f.path, p.c_str()) < 0;
                                            });
  if (it == files.end() || path != it->path) return nullptr;
  return &parsed(*it);
}

const nlohmann::json& embedded_json(const std::string& path) {
  const nlohmann::json* j = embedded_find(path);
  if (!j) throw std::out_of_range("no embedded data file " + path);
  return *j;
}

std::vector<std::pair<std::string, const nlohmann::json*>> embedded_under(
    const std::string& prefix) {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  for (const auto& f : embedded_files())
    if (std::strncmp(f.path, prefix.c_str(), prefix.size()) == 0)
      out.emplace_back(f.path, &parsed(f));
  return out;
}

}  // namespace trainmem
