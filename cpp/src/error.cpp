#include "trainmem/error.hpp"

namespace trainmem {
namespace {

std::string concat(std::initializer_list<std::string_view> pieces) {
  std::string text;
  for (std::string_view piece : pieces) text.append(piece.data(), piece.size());
  return text;
}

}  // namespace

Text RequestError::text() const {
  if (messages_.empty()) return Text(std::string(what()));
  Text t;
  for (const Message& m : messages_) t.then(m);
  return t;
}

void fail(const char* code, std::string_view field, std::string_view message) {
  throw RequestError(code, std::string(field), std::string(message));
}

void fail(const char* code, std::string_view field,
          std::initializer_list<std::string_view> message) {
  throw RequestError(code, std::string(field), concat(message));
}

void fail_text(const char* code, std::string_view field, const Text& message) {
  throw RequestError(code, std::string(field), message.str()).with_messages(message.parts());
}

void fail(const char* code, std::string_view field, Message message) {
  fail_text(code, field, Text(std::move(message)));
}

}  // namespace trainmem
