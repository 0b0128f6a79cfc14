// Placeholder until its issue lands: reports "unsupported" as data, never a number.
#include "trainmem/calculators.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
nlohmann::json peak_memory_json(const nlohmann::json&) {
  throw RequestError(code::kUnsupported, "", "peak_memory is not available yet in this build");
}
}  // namespace trainmem
