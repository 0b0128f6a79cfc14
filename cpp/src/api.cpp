#include "trainmem/api.hpp"

#include <cmath>
#include <utility>

#include "io/bytes_functions.hpp"
#include "io/calculators.hpp"
#include "io/json_fields.hpp"
#include "io/messages.hpp"
#include "io/placement_columns.hpp"
#include "io/request.hpp"

namespace trainmem {
namespace {

using Handler = json (*)(const json&);
const std::pair<const char*, Handler> kHandlers[] = {
    {"checkpointSize", checkpoint_size_json},
    {"describeModel", describe_model_json},
    {"peakMemory", peak_memory_json},
    {"accumulation", accumulation_json},
    {"placement", placement_json},
    {"presets", presets_json},
    {"advise", advise_json},
    {"vocabulary", vocabulary_json},
    {"planLayout", plan_layout_json},
};

// The walks below extend one path buffer in place (and cut it back after each child) instead
// of building a new string per node: results such as a 1,000-layer placement hold tens of
// thousands of values.
void append_key(std::string* path, const std::string& key) {
  if (!path->empty()) *path += '.';
  *path += key;
}
void append_index(std::string* path, size_t i) {
  *path += '[';
  *path += std::to_string(i);
  *path += ']';
}

// A string, boolean or null: nothing for the walks below to check (a 100,000-layer placement's
// plan is 100,000 strings).
bool is_leaf_without_number(const json& v) {
  return v.is_string() || v.is_boolean() || v.is_null();
}

// A result must never carry a silent non-finite number (JSON would print it as null).
void check_finite(const json& v, std::string* path) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    fail(code::kInternal, *path, Message{"error.internal.nonFinite", {{"field", *path}}});
  const size_t n = path->size();
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      append_key(path, it.key());
      check_finite(*it, path);
      path->resize(n);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (is_leaf_without_number(v[i])) continue;  // (no path built for it)
      append_index(path, i);
      check_finite(v[i], path);
      path->resize(n);
    }
  }
}

// Integers: none above 2^63 (README "Numeric limits"; a calculator that gets there without
// checked_mul is a bug), and every one beyond 2^53 — which a JSON/JavaScript number cannot hold
// exactly — is listed in result.inexact as {field, exact} (exact: the decimal digits).
void check_integers(const json& v, std::string* path, json* inexact) {
  if (v.is_number_unsigned() || v.is_number_integer()) {
    // (is_number_integer() is true for unsigned numbers too: test the stored type.)
    const bool negative = v.type() == json::value_t::number_integer && v.get<int64_t>() < 0;
    const uint64_t magnitude =
        negative ? 0 - static_cast<uint64_t>(v.get<int64_t>()) : v.get<uint64_t>();
    if (!negative && magnitude > kMaxCount)
      fail(code::kInternal, *path, Message{"error.internal.over63", {{"field", *path}}});
    if (magnitude > kMaxExactJson) {
      json e = json::object();
      put(e, "field", *path);
      put(e, "exact", (negative ? "-" : "") + std::to_string(magnitude));
      inexact->push_back(std::move(e));
    }
    return;
  }
  const size_t n = path->size();
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      append_key(path, it.key());
      check_integers(*it, path, inexact);
      path->resize(n);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (is_leaf_without_number(v[i])) continue;
      append_index(path, i);
      check_integers(v[i], path, inexact);
      path->resize(n);
    }
  }
}

std::string error_envelope(const std::string& c, const std::string& field, const Text& t,
                           const RequestError* detail = nullptr) {
  const std::string& message = t.str();
  // Messages quote user input in places: keep every one short (and valid UTF-8, below). Cut
  // to 1,021 bytes + "..." in one step (a recursive cut to 1,024 + "..." never got shorter:
  // the fuzzer's stack overflow of 2026-11-30, tests/fuzz/regressions/).
  const std::string text = message.size() > 1024 ? message.substr(0, 1021) + "..." : message;
  json e = json::object();
  put(e, "ok", false);
  json error = json::object();
  put(error, "code", c);
  put(error, "field", field);
  put(error, "message", text);
  if (detail && detail->has_minimum_budget())
    put(error, "minimumBudgetBytes", detail->minimum_budget());
  // The codes of the message catalog: a page shows the error in its own language
  // (docs/i18n.md). A sentence cut short above has none.
  if (t.coded() && text == message) put(error, "messages", messages::list_of(t.parts()));
  put(e, "error", std::move(error));
  return e.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

const char* version() noexcept { return TRAINMEM_VERSION; }

std::string parse_json(const std::string& text) noexcept {
  try {
    json ok = json::object();
    put(ok, "ok", true);
    put(ok, "result", parse_request(text));
    return ok.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const RequestError& e) {
    return error_envelope(e.code(), e.field(), e.text(), &e);
  } catch (const std::bad_alloc&) {
    return error_envelope(code::kTooLarge, "", Message{"error.memory.json", {}});
  } catch (...) {
    return error_envelope(code::kInternal, "", Message{"error.internal.plain", {}});
  }
}

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const auto& h : kHandlers) names.emplace_back(h.first);
  append_bytes_function_names(&names);
  return names;
}

std::string call(const std::string& function, const std::string& request_json) noexcept {
  return call_with_bytes(function, request_json, std::string());
}

namespace {

// Numeric columns of chain.layers beside the request (call_with_columns).
struct Columns {
  const std::vector<std::string>& names;
  const std::vector<double>& values;
};

std::string call_any(const std::string& function, const std::string& request_json,
                     const std::string& bytes, const Columns* columns) noexcept {
  try {
    messages::begin_result();
    Handler handler = nullptr;
    for (const auto& h : kHandlers)
      if (function == h.first) handler = h.second;
    const BytesHandler bytes_handler = handler ? nullptr : find_bytes_function(function);
    if (!handler && !bytes_handler) {
      const std::string name = function.substr(0, 64);
      const std::string near = closest_match(function, function_names());
      return error_envelope(code::kUnknownFunction, "",
                            near.empty() ? Message{"error.function.unknown", {{"function", name}}}
                                         : Message{"error.function.unknownNear",
                                                   {{"function", name}, {"near", near}}});
    }
    if (handler && !bytes.empty())
      fail(code::kInconsistent, "", Message{"error.api.noFile", {{"function", function}}});
    json request = parse_request(request_json, handler == placement_json);
    if (columns) {
      if (handler != placement_json)
        fail(code::kInconsistent, "", Message{"error.api.noColumns", {{"function", function}}});
      attach_columns(request, columns->names, columns->values);
    }
    json result = handler ? handler(request) : bytes_handler(request, bytes);
    if (!result.is_object()) fail(code::kInternal, "", Message{"error.internal.notObject", {}});
    std::string path = "result";
    check_finite(result, &path);
    json inexact = json::array();
    path.clear();
    check_integers(result, &path, &inexact);
    if (!inexact.empty()) put(result, "inexact", std::move(inexact));
    // The sentences in the result as codes (a snapshot's frames and names are not sentences).
    if (function != "readSnapshot") {
      json codes = messages::codes_of(result);
      if (!codes.empty()) put(result, "messages", std::move(codes));
    }
    json ok = json::object();
    put(ok, "ok", true);
    put(ok, "result", std::move(result));
    return ok.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const RequestError& e) {
    return error_envelope(e.code(), e.field(), e.text(), &e);
  } catch (const std::bad_alloc&) {
    if (find_bytes_function(function))  // the file is the input that drives it
      return error_envelope(
          code::kTooLarge, "snapshot",
          Message{"error.memory.snapshot", {{"mib", std::to_string(bytes.size() >> 20)}}});
    return error_envelope(code::kTooLarge, "", Message{"error.memory.request", {}});
  } catch (const std::exception& e) {
    return error_envelope(code::kInternal, "",
                          Message{"error.internal.exception", {{"what", e.what()}}});
  } catch (...) {
    return error_envelope(code::kInternal, "", Message{"error.internal.plain", {}});
  }
}

}  // namespace

std::string call_with_bytes(const std::string& function, const std::string& request_json,
                            const std::string& bytes) noexcept {
  return call_any(function, request_json, bytes, nullptr);
}

std::string call_with_columns(const std::string& function, const std::string& request_json,
                              const std::vector<std::string>& names,
                              const std::vector<double>& values) noexcept {
  const Columns columns{names, values};
  return call_any(function, request_json, std::string(), &columns);
}

}  // namespace trainmem
