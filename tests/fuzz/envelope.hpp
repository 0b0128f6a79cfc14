// The invariants every fuzz harness checks on trainmem::call's envelope (tests/fuzz/*.cpp); a
// violation aborts, which libFuzzer reports as a finding:
//   - the envelope is valid JSON: {"ok":true,"result":{...}} or
//     {"ok":false,"error":{"code","field","message"}} with a stable code and string field;
//   - never the "internal" code (which means a bug, e.g. a non-finite number in a result);
//   - result integers never exceed 2^63 (README "Numeric limits"), and every integer above
//     2^53 is listed in result.inexact.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/vocabulary.hpp"

namespace fuzz_envelope {

using trainmem::json;

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s\n%s\n", what, detail.substr(0, 2000).c_str());
  std::abort();
}

// The codes a request may end in: the core's one table (vocab::kErrorCodes) without
// `internal` (a bug, which the fuzzer reports).
inline const std::set<std::string>& stable_codes() {
  static const std::set<std::string> codes = [] {
    std::set<std::string> c;
    for (const auto& t : trainmem::vocab::kErrorCodes)
      if (std::string(t.name) != trainmem::code::kInternal) c.insert(t.name);
    return c;
  }();
  return codes;
}

// Collects dotted paths of integers above 2^53; aborts on one above 2^63.
inline void walk(const json& v, const std::string& path, std::set<std::string>* big,
                 const std::string& out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > (1ULL << 63)) finding("result integer above 2^63", path + "\n" + out);
    if (u > trainmem::kMaxExactJson) big->insert(path);
  } else if (v.is_number_integer()) {
    const int64_t s = v.get<int64_t>();
    if (s < -static_cast<int64_t>(trainmem::kMaxExactJson)) big->insert(path);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      walk(*it, path.empty() ? it.key() : path + "." + it.key(), big, out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) walk(v[i], trainmem::index_path(path, i), big, out);
  }
}

inline void check(const std::string& function, const std::string& request, const std::string& out) {
  json envelope;
  try {
    envelope = json::parse(out);
  } catch (const std::exception& e) {
    finding("envelope is not JSON", out);
  }
  if (!envelope.is_object() || !envelope.contains("ok") || !envelope["ok"].is_boolean())
    finding("envelope has no boolean ok", out);
  if (envelope["ok"].get<bool>()) {
    const json& result = envelope["result"];
    if (!result.is_object()) finding("result is not an object", out);
    std::set<std::string> big;
    walk(result, "", &big, out);
    std::set<std::string> listed;
    if (result.contains("inexact"))
      for (const auto& w : result["inexact"]) listed.insert(w.at("field").get<std::string>());
    for (const auto& p : big)
      if (p.rfind("inexact", 0) != 0 && !listed.count(p))
        finding("integer above 2^53 not listed in result.inexact", p + "\n" + out);
  } else {
    const json& e = envelope["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_string() || !e.contains("field") ||
        !e["field"].is_string() || !e.contains("message") || !e["message"].is_string())
      finding("error lacks code/field/message strings", out);
    const std::string c = e["code"].get<std::string>();
    if (c == trainmem::code::kInternal)
      finding("internal error", function + "\n" + request + "\n" + out);
    if (!stable_codes().count(c)) finding("unknown error code", out);
    if (e.contains("minimumBudgetBytes") &&
        (c != trainmem::code::kInfeasible || !e["minimumBudgetBytes"].is_number_unsigned()))
      finding("minimumBudgetBytes on a non-infeasible error, or not an unsigned integer", out);
  }
}

}  // namespace fuzz_envelope
