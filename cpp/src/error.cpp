#include "trainmem/error.hpp"

namespace trainmem {
namespace {

std::string concat(std::initializer_list<std::string_view> pieces) {
  std::string text;
  for (std::string_view piece : pieces) text.append(piece.data(), piece.size());
  return text;
}

}  // namespace

void fail(const char* code, std::string_view field, std::string_view message) {
  throw RequestError(code, std::string(field), std::string(message));
}

void fail(const char* code, std::string_view field,
          std::initializer_list<std::string_view> message) {
  throw RequestError(code, std::string(field), concat(message));
}

}  // namespace trainmem
