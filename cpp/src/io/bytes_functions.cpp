#include "io/bytes_functions.hpp"

#include <utility>

#include "io/calculators.hpp"

namespace trainmem {
namespace {
const std::pair<const char*, BytesHandler> kBytesHandlers[] = {
    {"readSnapshot", read_snapshot_json},
    {"compareSnapshot", compare_snapshot_json},
};
}  // namespace

BytesHandler find_bytes_function(const std::string& function) {
  for (const auto& h : kBytesHandlers)
    if (function == h.first) return h.second;
  return nullptr;
}

void append_bytes_function_names(std::vector<std::string>* names) {
  for (const auto& h : kBytesHandlers) names->emplace_back(h.first);
}

}  // namespace trainmem
