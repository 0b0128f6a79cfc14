#include "util/checked.hpp"

#include <string_view>

#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {

std::string index_path(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

namespace {
[[noreturn]] void exceeds_2_63(std::string_view field) {
  fail(code::kTooLarge, field, Message{"error.checked.over63", {{"field", std::string(field)}}});
}
}  // namespace

// (Two overloads each: a literal field name would otherwise be built as a std::string at every
// call, even when nothing overflows.)
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& field) {
  if (a != 0 && b > kMaxCount / a) exceeds_2_63(field);
  return a * b;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& field) {
  if (a > kMaxCount || b > kMaxCount - a) exceeds_2_63(field);
  return a + b;
}

uint64_t checked_mul(uint64_t a, uint64_t b, const char* field) {
  if (a != 0 && b > kMaxCount / a) exceeds_2_63(field);
  return a * b;
}

uint64_t checked_add(uint64_t a, uint64_t b, const char* field) {
  if (a > kMaxCount || b > kMaxCount - a) exceeds_2_63(field);
  return a + b;
}

}  // namespace trainmem
