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

void fail_in(const std::string& field, const RequestError& inner) {
  const std::string at = inner.field().empty() ? field : field + "." + inner.field();
  Message m{"error.in", {{"field", field}}};
  // (an inner error always has its codes: a plain sentence cannot be thrown)
  if (inner.messages().empty())
    m.params.emplace_back("message", inner.what());
  else
    m = std::move(m).with("message", inner.messages());
  fail(inner.code().c_str(), at, std::move(m));
}

}  // namespace trainmem
