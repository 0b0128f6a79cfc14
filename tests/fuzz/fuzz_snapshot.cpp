// libFuzzer harness over the snapshot reader: the input is the file's bytes, read by
// trainmem::call_with_bytes("readSnapshot", …). Invariants (a violation aborts = a finding):
//   - call_with_bytes returns (ASan/UBSan catch memory errors and undefined behaviour);
//   - the envelope is valid JSON with either a result object or {code, field, message};
//   - never the "internal" code, never an unknown code.
// Seeds: tests/fixtures/snapshots/*.pickle and small snapshots from gen_snapshot_seeds.py.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s\n%s\n", what, detail.substr(0, 2000).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> codes = {
      trainmem::code::kInvalidJson,  trainmem::code::kMissingField, trainmem::code::kInvalidType,
      trainmem::code::kOutOfRange,   trainmem::code::kNotInteger,   trainmem::code::kUnknownKey,
      trainmem::code::kUnknownValue, trainmem::code::kTooLarge,     trainmem::code::kUnsupported,
      trainmem::code::kInconsistent,
  };
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string out = trainmem::call_with_bytes("readSnapshot", "{}", bytes);
  trainmem::json envelope;
  try {
    envelope = trainmem::json::parse(out);
  } catch (const std::exception&) {
    finding("envelope is not JSON", out);
  }
  if (!envelope.is_object() || !envelope.contains("ok") || !envelope["ok"].is_boolean())
    finding("envelope has no boolean ok", out);
  if (envelope["ok"].get<bool>()) {
    if (!envelope["result"].is_object()) finding("result is not an object", out);
    return 0;
  }
  const auto& e = envelope["error"];
  if (!e.is_object() || !e.contains("code") || !e["code"].is_string() || !e.contains("field") ||
      !e["field"].is_string() || !e.contains("message") || !e["message"].is_string())
    finding("error lacks code/field/message strings", out);
  const std::string c = e["code"].get<std::string>();
  if (c == trainmem::code::kInternal) finding("internal error", out);
  if (!codes.count(c)) finding("unexpected error code", out);
  return 0;
}
