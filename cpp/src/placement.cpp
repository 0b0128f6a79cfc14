// Placeholder until its issue lands: reports "unsupported" as data, never a number.
#include "trainmem/calculators.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
nlohmann::json placement_json(const nlohmann::json&) {
  throw RequestError(code::kUnsupported, "", "placement is not available yet in this build");
}
}  // namespace trainmem
