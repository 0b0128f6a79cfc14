// Messages as data (docs/i18n.md): the core gives each sentence of a result or an error as codes
// of the catalog (cpp/data/messages.json), and the io edge writes result.messages from those
// codes; nothing reads English back. This file runs the requests of
// tests/fixtures/message_requests.json, the golden cases and the page's planLayout and advise
// requests, and fails when a sentence of a result has no codes, a code is not in the catalog,
// or the codes do not spell the sentence.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "trainmem/api.hpp"
#include "trainmem/message.hpp"
#include "util/message_table.hpp"

using nlohmann::json;

namespace {

json load(const char* file) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + file);
  REQUIRE(in.good());
  return json::parse(in);
}

std::vector<std::pair<std::string, json>> all_requests() {
  std::vector<std::pair<std::string, json>> out;
  const json fixture = load("message_requests.json"), golden = load("golden.json");
  for (const json& r : fixture.at("requests"))
    out.emplace_back(r.at(0).get<std::string>(), r.at(1));
  for (const json& c : golden.at("cases"))
    out.emplace_back(c.at("function").get<std::string>(), c.at("request"));
  // the page's layout planner and advice (tests/js/messages.test.js has them too)
  out.emplace_back("planLayout", json::parse(R"({"model":{"preset":"llama-3-70b"},
      "gpu":"a100-80gb","gpus":64,"globalBatch":64,"seqLen":8192,"precision":"amp-bf16"})"));
  out.emplace_back("accumulation", json::parse(R"({"model":{"preset":"t5-small"},
      "gpu":"a100-80gb","targetGlobalBatch":32,"seqLen":512,"optimizer":"adamw"})"));
  out.emplace_back("advise", json::parse(R"({"model":{"preset":"llama-2-7b"},"microBatch":1,
      "seqLen":512,"optimizer":"adamw","gpuMemoryBytes":80e9,"timeline":false,"changes":false})"));
  out.emplace_back("advise", json::parse(R"({"model":{"preset":"llama-2-7b"},"microBatch":1,
      "seqLen":512,"optimizer":"adamw","gpu":"a100-80gb","tensorParallel":2,"timeline":false,
      "changes":false})"));
  return out;
}

// Text from data files, not the core's sentences (as in tests/js/messages.test.js): preset
// names and citations, the interconnects' sources.
bool is_data(const std::string& function, const std::string& path) {
  static const std::regex data(
      "^(presets:.*|describeModel:(sourceNote|name)|planLayout:timeModel\\.(intra|inter)NodeSource)"
      "$");
  const std::string generic = std::regex_replace(path, std::regex("\\[\\d+\\]"), "[]");
  return std::regex_match(function + ":" + generic, data);
}

// Every string of a result that reads as a sentence, with its path (as result.messages keys).
void sentences(const json& v, const std::string& path, const std::string& key,
               std::vector<std::pair<std::string, std::string>>* out) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find(' ') != std::string::npos && key != "name" && key != "field" && key != "id")
      out->emplace_back(path, s);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      sentences(v[i], path + "[" + std::to_string(i) + "]", key, out);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!(path.empty() && it.key() == "messages"))
        sentences(*it, path.empty() ? it.key() : path + "." + it.key(), it.key(), out);
  }
}

// A clause of result.messages as a Message: a parameter given as a list is a nested sentence
// (its own clauses).
trainmem::Message message_of(const json& part) {
  trainmem::Message m{part.at("code").get<std::string>(), {}};
  for (auto it = part.at("params").begin(); it != part.at("params").end(); ++it) {
    if (!it->is_array()) {
      m.params.emplace_back(it.key(), it->get<std::string>());
      continue;
    }
    std::vector<trainmem::Message> clauses;
    for (const json& c : *it) clauses.push_back(message_of(c));
    m = std::move(m).with(it.key(), std::move(clauses));
  }
  return m;
}

}  // namespace

TEST_CASE("a message renders its catalog template with its parameters", "[messages]") {
  // the template, from cpp/data/messages.json: "ZeRO-3 partitions them over {ranks} ranks"
  CHECK(trainmem::english({"peak.weights.zero3", {{"ranks", "8"}}}) ==
        "ZeRO-3 partitions them over 8 ranks");
  trainmem::Text t("peak.weights.fp32", {});
  t.then({"peak.weights.zero3", {{"ranks", "8"}}});
  CHECK(t.str() == "fp32 parameters: 4 B/param; ZeRO-3 partitions them over 8 ranks");
  REQUIRE(t.parts().size() == 2);
  CHECK(t.parts()[1].code == "peak.weights.zero3");
  // a plain sentence joined to a coded clause is plain: no codes that would not spell it
  trainmem::Text plain("something else");
  plain.then({"peak.weights.zero3", {{"ranks", "8"}}});
  CHECK_FALSE(plain.coded());
  CHECK(trainmem::messages::find_template("no.such.code") == nullptr);
}

TEST_CASE("a parameter can be a sentence of the catalog, rendered in place", "[messages]") {
  // cpp/data/messages.json: "{field} must be {what}" and "between 0 and 1 (exclusive)"
  const trainmem::Message m = trainmem::Message{"error.field.mustBe", {{"field", "x"}}}.with(
      "what", {trainmem::Message{"error.mustBe.fraction", {}}});
  CHECK(trainmem::english(m) == "x must be between 0 and 1 (exclusive)");
  // several clauses: joined by "; " as a Text joins them
  const trainmem::Message two = trainmem::Message{"error.in", {{"field", "f"}}}.with(
      "message", {{"peak.weights.fp32", {}}, {"peak.weights.zero3", {{"ranks", "8"}}}});
  CHECK(trainmem::english(two) ==
        "f: fp32 parameters: 4 B/param; ZeRO-3 partitions them over 8 ranks");
}

TEST_CASE("an error inside a pasted file carries the inner error's codes", "[messages]") {
  const json out = json::parse(trainmem::call("peakMemory", R"({"model":{"config":
      "{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_layer\":3}"},"microBatch":1,"seqLen":8})"));
  const json& e = out.at("error");
  // the sentence as it was: "{field}: {message}" around the JSON reader's "{field} appears
  // twice in one object"
  CHECK(e.at("message") == "model.config: n_layer appears twice in one object");
  CHECK(e.at("field") == "model.config.n_layer");
  CHECK(e.at("messages") == json::parse(R"([{"code":"error.in","params":{"field":"model.config",
      "message":[{"code":"error.json.duplicate","params":{"field":"n_layer"}}]}}])"));
}

TEST_CASE("a trace's notes: codes of the catalog, or an older file's own text", "[messages]") {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/traces/tinylm.trace.json");
  json trace = json::parse(in);
  const auto describe = [&](const json& notes) {
    trace["notes"] = notes;
    json request = json::object();
    request["model"]["trace"] = trace;
    return json::parse(trainmem::call("describeModel", request.dump()));
  };
  // as python/trainmem_trace writes a note, and as an older tracer wrote it (its English)
  const std::string kept =
      "3 tensors made in the step were still referenced after it (the model "
      "keeps them)";
  const std::string old =
      "ops without a meta kernel ran on CPU tensors of the same shapes: "
      "aten.add (2)";
  const json ok = describe(json::parse(R"([{"code":"trace.note.keptAfter","params":{"count":"3"}},
      ")" + old + R"("])"));
  REQUIRE(ok.at("ok") == true);
  const json& r = ok.at("result");
  CHECK(r.at("trace").at("notes") == json::array({kept, old}));
  CHECK(r.at("messages").at("trace.notes[0]") ==
        json::parse(R"([{"code":"trace.note.keptAfter","params":{"count":"3"}}])"));
  CHECK(r.at("messages").at("trace.notes[1]") ==
        json::parse(R"([{"code":"trace.note.file","params":{"note":")" + old + R"("}}])"));
  // not a note of the catalog; a parameter missing
  const json bad = describe(json::parse(R"([{"code":"error.in","params":{}}])"));
  CHECK(bad.at("error").at("code") == "unknown_value");
  CHECK(bad.at("error").at("field") == "model.trace.notes[0].code");
  const json missing = describe(json::parse(R"([{"code":"trace.note.keptAfter","params":{}}])"));
  CHECK(missing.at("error").at("code") == "missing_field");
  CHECK(missing.at("error").at("field") == "model.trace.notes[0].params.count");
  // neither a note nor a sentence: the error says both forms it takes
  const json number = describe(json::parse("[7]"));
  CHECK(number.at("error").at("code") == "invalid_type");
  CHECK(number.at("error").at("field") == "model.trace.notes[0]");
  CHECK(number.at("error").at("messages").at(0).at("code") == "error.trace.noteType");
}

TEST_CASE("errors thrown with codes carry them in the envelope", "[messages]") {
  const std::string out = trainmem::call(
      "peakMemory", R"({"model":{"preset":"gpt2"},"microBatch":1,"seqLen":512,"optimizer":"adamw",
                       "offload":{"optimizer":true}})");
  CHECK(out.find(R"("messages":[{"code":"error.offload.optimizer","params":{}}])") !=
        std::string::npos);
  // an error outside any calculator (no such function) carries its codes too; its sentence is
  // cpp/data/messages.json's error.function.unknown with the name given
  const json unknown = json::parse(trainmem::call("zzzzzzzzzzzzzzzzzzzzzzzz", "{}"));
  CHECK(unknown.at("error").at("code") == "unknown_function");
  CHECK(unknown.at("error").at("message") == "unknown function \"zzzzzzzzzzzzzzzzzzzzzzzz\"");
  CHECK(unknown.at("error").at("messages") == json::parse(R"([{"code":"error.function.unknown",
                         "params":{"function":"zzzzzzzzzzzzzzzzzzzzzzzz"}}])"));
}

TEST_CASE("results carry their sentences as codes", "[messages]") {
  // the sentence of cpp/data/messages.json's size.formula.sum, written by checkpoint_json.cpp
  const json out = json::parse(trainmem::call(
      "checkpointSize", R"({"model":{"params":1000},"optimizer":"sgd","weightDtype":"fp32"})"));
  CHECK(out.at("result").at("formula") ==
        "sum of tensor storages: weights + buffers + optimizer state");
  CHECK(out.at("result").at("messages").at("formula") ==
        json::parse(R"([{"code":"size.formula.sum","params":{}}])"));
}

TEST_CASE("every sentence of every result comes from catalog codes that spell it",
          "[messages][message_codes]") {
  size_t checked = 0;
  for (const auto& [function, request] : all_requests()) {
    const json out = json::parse(trainmem::call(function, request.dump()));
    if (!out.at("ok").get<bool>()) continue;
    const json& result = out.at("result");
    std::vector<std::pair<std::string, std::string>> found;
    sentences(result, "", "", &found);
    for (const auto& [path, text] : found) {
      if (is_data(function, path)) continue;
      INFO(function << " " << path << ": " << text);
      const bool coded = result.contains("messages") && result.at("messages").contains(path);
      CHECK(coded);
      if (!coded) continue;
      std::string spelled;
      for (const json& part : result.at("messages").at(path)) {
        const std::string code = part.at("code").get<std::string>();
        INFO("code " << code);
        CHECK(trainmem::messages::find_template(code.c_str()) != nullptr);
        spelled += (spelled.empty() ? "" : "; ") + trainmem::english(message_of(part));
      }
      CHECK(spelled == text);
      ++checked;
    }
  }
  CHECK(checked > 1000);
}
