// libFuzzer harness over trainmem::call, the one entry point every front end uses.
// Input: first byte picks the function (every public name, plus one unknown name), the rest
// is the request text. Invariants checked on every input (a violation aborts = a finding):
// call() returns (ASan/UBSan catch memory errors and undefined behaviour on the way), and its
// envelope keeps the rules of tests/fuzz/envelope.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "envelope.hpp"
#include "io/request.hpp"

using fuzz_envelope::finding;
using trainmem::json;

// The request reader (io/json_parse.cpp) against nlohmann's parser on the same text: the same
// value when both read it (types and bits of every number), and both refuse what one refuses
// — except what only the request reader refuses by design (a key twice in one object; the
// depth, value and size limits) and text after a NUL byte (nlohmann stops reading there).
void compare_readers(const std::string& text) {
  if (text.find('\0') != std::string::npos) return;
  json ours;
  bool ours_ok = true;
  std::string why;
  try {
    ours = trainmem::parse_request(text);
  } catch (const trainmem::RequestError& e) {
    ours_ok = false;
    why = e.code();
    if (why == trainmem::code::kTooLarge ||
        std::string(e.what()).find("appears twice") != std::string::npos)
      return;
  }
  json theirs;
  bool theirs_ok = true;
  try {
    theirs = json::parse(text);
  } catch (const std::exception&) {
    theirs_ok = false;
  }
  if (ours_ok != theirs_ok) finding("the request reader and nlohmann disagree", text + "\n" + why);
  if (ours_ok && ours.dump() != theirs.dump())
    finding("the request reader read another value than nlohmann", text);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  compare_readers(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = trainmem::function_names();
    n.emplace_back("checkpointsize");  // near miss: unknown_function with a suggestion
    return n;
  }();
  const std::string& function = names[data[0] % names.size()];
  const std::string request(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz_envelope::check(function, request, trainmem::call(function, request));
  return 0;
}
