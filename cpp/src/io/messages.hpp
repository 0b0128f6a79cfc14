// The sentences the core writes into results, recognised against one catalog
// (cpp/data/messages.json) so that a page can show them in its own language: each recognised
// string gets a code and its parameters in result.messages (docs/i18n.md).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/message.hpp"

#include "io/json_fields.hpp"

namespace trainmem {
namespace messages {

struct Part {
  std::string code;
  std::vector<std::pair<std::string, std::string>> params;  // in template order
};

// The catalog's parts that spell `text` exactly: one template, or templates joined by "; ".
// Empty when the text is not in the catalog.
std::vector<Part> recognise(const std::string& text);

// Walks a result and returns {path: [{code, params}]} for every string the catalog spells
// (paths as in result.inexact: "breakdown.weights.source", "assumptions[0]"). Names (keys
// "name", "field", "id") are not sentences and are skipped.
nlohmann::json codes_of(const nlohmann::json& result);

// [{code, params}] of a list of messages.
nlohmann::json list_of(const std::vector<Message>& parts);

// The Texts written since begin_result() are known by their English: codes_of() takes their
// codes as the core gave them. A string of the result that no Text wrote is read against the
// catalog instead (recognise), and listed in fallback_strings() so that a test can list the
// producers still writing plain sentences.
void begin_result();
const std::vector<std::string>& fallback_strings();
void note_fallback(const std::string& text);  // an error's message read against the catalog

}  // namespace messages
}  // namespace trainmem
