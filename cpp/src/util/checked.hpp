// Checked arithmetic on byte and element counts, and element paths for error fields: plain C++
// for the core (no JSON). Implemented in util/checked.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace trainmem {

// Checked arithmetic on byte and element counts: throws too_large naming `field` when the
// result would exceed kMaxCount (2^63).
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& field);
uint64_t checked_add(uint64_t a, uint64_t b, const std::string& field);
uint64_t checked_mul(uint64_t a, uint64_t b, const char* field);
uint64_t checked_add(uint64_t a, uint64_t b, const char* field);

// Element path helpers: "layers[3]".
std::string index_path(const std::string& path, size_t index);

}  // namespace trainmem
