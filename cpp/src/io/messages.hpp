// The sentences the core writes into results as codes of one catalog (cpp/data/messages.json):
// each Text written into a result gives its codes and parameters in result.messages, so that a
// page can show it in its own language (docs/i18n.md).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/message.hpp"

#include "io/json_fields.hpp"

namespace trainmem {
namespace messages {

// The Texts written since begin_result() are known by their English: codes_of() walks a result
// and returns {path: [{code, params}]} for every string a Text wrote (paths as in
// result.inexact: "breakdown.weights.source", "assumptions[0]"). Names (keys "name", "field",
// "id") are not sentences and are skipped; a string no Text wrote has no codes.
void begin_result();
nlohmann::json codes_of(const nlohmann::json& result);

// [{code, params}] of a list of messages.
nlohmann::json list_of(const std::vector<Message>& parts);

}  // namespace messages
}  // namespace trainmem
