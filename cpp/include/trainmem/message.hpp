// The sentences of results and errors as data: a code of the message catalog
// (cpp/data/messages.json) and its parameters. The core builds them; English is rendered from
// the catalog (the one English table), and a page renders its own language from the code
// (web/app/i18n/<lang>.json, keys core.<code>; docs/i18n.md).
#pragma once
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace trainmem {

using MessageParams = std::vector<std::pair<std::string, std::string>>;

struct Message {
  std::string code;      // a key of cpp/data/messages.json
  MessageParams params;  // {name, value}: the template's holes, values as the core writes them
  // {name, clauses}: holes whose value is a sentence of the catalog itself (a phrase, an inner
  // error), so that a page renders it in its own language too; English joins them by "; ".
  std::vector<std::pair<std::string, std::vector<Message>>> nested = {};

  // This message with the hole `name` filled by the catalog's clauses.
  Message with(std::string name, std::vector<Message> clauses) && {
    nested.emplace_back(std::move(name), std::move(clauses));
    return std::move(*this);
  }
};

// m's English: the catalog's template with each {name} replaced by its value (a nested value
// by its clauses' English, joined by "; ").
std::string english(const Message& m);

// One sentence of a result: clauses (each a Message) joined by "; " in English. A Text made
// from a plain string has no clauses and gets no codes in result.messages (the messages tests
// fail on such a sentence in a result).
class Text {
 public:
  Text() = default;
  Text(std::string english) : english_(std::move(english)) {}  // NOLINT: plain sentences
  Text(const char* english) : english_(english) {}             // NOLINT
  Text(Message m);                                             // NOLINT: one clause
  Text(std::string code, MessageParams params)
      : Text(Message{std::move(code), std::move(params)}) {}

  // Appends a clause ("; " between clauses in English).
  Text& then(Message m);
  Text& then_all(const Text& t);  // every clause of t

  const std::string& str() const noexcept { return english_; }
  operator const std::string&() const noexcept { return english_; }  // NOLINT
  const std::vector<Message>& parts() const noexcept { return parts_; }
  bool empty() const noexcept { return english_.empty(); }
  bool coded() const noexcept { return !parts_.empty(); }

 private:
  std::string english_;
  std::vector<Message> parts_;
};

inline bool operator==(const Text& a, const Text& b) { return a.str() == b.str(); }
inline bool operator==(const Text& a, const std::string& b) { return a.str() == b; }
inline bool operator==(const std::string& a, const Text& b) { return a == b.str(); }
inline bool operator==(const Text& a, const char* b) { return a.str() == b; }
inline bool operator!=(const Text& a, const std::string& b) { return !(a == b); }

}  // namespace trainmem
