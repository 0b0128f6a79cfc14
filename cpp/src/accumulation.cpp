// Placeholder until its issue lands: reports "unsupported" as data, never a number.
#include "trainmem/calculators.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
nlohmann::json accumulation_json(const nlohmann::json&) {
  throw RequestError(code::kUnsupported, "", "accumulation is not available yet in this build");
}
}  // namespace trainmem
