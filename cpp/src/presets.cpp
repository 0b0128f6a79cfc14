// Placeholder until its issue lands: reports "unsupported" as data, never a number.
#include "trainmem/calculators.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
nlohmann::json presets_json(const nlohmann::json&) {
  throw RequestError(code::kUnsupported, "", "presets is not available yet in this build");
}
}  // namespace trainmem
