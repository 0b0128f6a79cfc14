#include "trainmem/error.hpp"

namespace trainmem {

Text RequestError::text() const {
  if (messages_.empty()) return Text(std::string(what()));  // (none: the checks above forbid it)
  Text t;
  for (const Message& m : messages_) t.then(m);
  return t;
}

void fail_text(const char* code, std::string_view field, const Text& message) {
  throw RequestError(code, std::string(field), message);
}

void fail(const char* code, std::string_view field, Message message) {
  fail_text(code, field, Text(std::move(message)));
}

}  // namespace trainmem
