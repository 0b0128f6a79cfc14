#include "trainmem/embedded_data.hpp"

#include <map>
#include <mutex>
#include <stdexcept>

#include "trainmem/request.hpp"

namespace trainmem {
namespace {
const std::map<std::string, nlohmann::json>& parsed() {
  static const std::map<std::string, nlohmann::json> all = [] {
    std::map<std::string, nlohmann::json> m;
    // parse_request: the parser the requests use (one copy of nlohmann's parser in the module).
    for (const auto& f : embedded_files()) m.emplace(f.path, parse_request(f.contents));
    return m;
  }();
  return all;
}
}  // namespace

const nlohmann::json& embedded_json(const std::string& path) { return parsed().at(path); }

std::vector<std::pair<std::string, const nlohmann::json*>> embedded_under(
    const std::string& prefix) {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  for (const auto& kv : parsed())
    if (kv.first.compare(0, prefix.size(), prefix) == 0) out.emplace_back(kv.first, &kv.second);
  return out;
}

}  // namespace trainmem
