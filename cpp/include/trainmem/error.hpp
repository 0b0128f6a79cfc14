// Errors of the core. Inside C++ a bad request throws RequestError; api.cpp turns it into
// data ({code, field, message}) so that no exception ever crosses into JavaScript.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/message.hpp"

namespace trainmem {

// Stable error codes (listed with their meaning in README.md, "Errors"; the one table of them,
// with meanings, is vocab::kErrorCodes, which every other list is checked against).
namespace code {
inline constexpr const char* kInvalidJson = "invalid_json";          // request is not JSON
inline constexpr const char* kUnknownFunction = "unknown_function";  // no such calculator
inline constexpr const char* kMissingField = "missing_field";        // required key absent
inline constexpr const char* kInvalidType = "invalid_type";          // wrong JSON type
inline constexpr const char* kInvalidNumber = "invalid_number";      // NaN or Infinity (JS wrapper)
inline constexpr const char* kOutOfRange = "out_of_range";           // number outside its range
inline constexpr const char* kNotInteger = "not_integer";        // fractional where whole needed
inline constexpr const char* kUnknownKey = "unknown_key";        // key not part of the request
inline constexpr const char* kUnknownValue = "unknown_value";    // enum value not known
inline constexpr const char* kUnknownPreset = "unknown_preset";  // preset id not in data
inline constexpr const char* kInconsistent = "inconsistent";     // fields disagree
inline constexpr const char* kInfeasible = "infeasible";         // no plan fits the budget
inline constexpr const char* kTooLarge = "too_large";            // input exceeds a documented limit
inline constexpr const char* kUnsupported = "unsupported";       // valid but not modelled
inline constexpr const char* kInternal = "internal";             // a bug: please report
}  // namespace code

class RequestError : public std::runtime_error {
 public:
  // The message is catalog codes (a Message or a Text of them): its English is what(). A plain
  // sentence does not compile (below), so that every error reaches the page as codes.
  RequestError(std::string error_code, std::string field, const Text& message)
      : std::runtime_error(message.str()),
        code_(std::move(error_code)),
        field_(std::move(field)),
        messages_(message.parts()) {}
  RequestError(std::string, std::string, const char*) = delete;
  RequestError(std::string, std::string, const std::string&) = delete;
  const std::string& code() const noexcept { return code_; }
  const std::string& field() const noexcept { return field_; }
  // Code "infeasible": the smallest budget that admits a plan (the error's minimumBudgetBytes).
  RequestError& with_minimum_budget(uint64_t bytes) {
    minimum_budget_ = bytes;
    has_minimum_budget_ = true;
    return *this;
  }
  bool has_minimum_budget() const noexcept { return has_minimum_budget_; }
  // The message as codes of the catalog.
  const std::vector<Message>& messages() const noexcept { return messages_; }
  // The message as a Text of those codes.
  Text text() const;
  uint64_t minimum_budget() const noexcept { return minimum_budget_; }

 private:
  std::string code_;
  std::string field_;
  std::vector<Message> messages_;
  uint64_t minimum_budget_ = 0;
  bool has_minimum_budget_ = false;
};

// Throw RequestError(code, field, message). Out of line: a throw expression, with the strings
// it builds and their cleanup on unwinding, took a few hundred bytes of WebAssembly at each of
// ~150 sites. The message is a catalog code and its parameters (docs/i18n.md): its English is
// the catalog's, and the error envelope carries the codes for a page's own language.
[[noreturn]] void fail(const char* code, std::string_view field, Message message);
// A Text of several coded clauses (joined by "; " in English).
[[noreturn]] void fail_text(const char* code, std::string_view field, const Text& message);
// An error inside a JSON text given as the string `field` (a pasted config.json, a trace
// file): inner's code, at its field under `field`, as error.in ("{field}: {message}") with
// inner's own clauses as the message, so that a page says the inner sentence in its language.
[[noreturn]] void fail_in(const std::string& field, const RequestError& inner);
// No plain English sentence: it would reach the Arabic page untranslated. Write the sentence
// into cpp/data/messages.json and web/app/i18n/ar.json, and throw its code.
void fail(const char*, std::string_view, const char*) = delete;
void fail(const char*, std::string_view, const std::string&) = delete;
void fail(const char*, std::string_view, std::string_view) = delete;
void fail(const char*, std::string_view, std::initializer_list<std::string_view>) = delete;
void fail_text(const char*, std::string_view, const char*) = delete;
void fail_text(const char*, std::string_view, const std::string&) = delete;

}  // namespace trainmem
