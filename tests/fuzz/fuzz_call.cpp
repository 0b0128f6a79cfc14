// libFuzzer harness over trainmem::call, the one entry point every front end uses.
// Input: first byte picks the function (every public name, plus one unknown name), the rest
// is the request text. Invariants checked on every input (a violation aborts = a finding):
// call() returns (ASan/UBSan catch memory errors and undefined behaviour on the way), and its
// envelope keeps the rules of tests/fuzz/envelope.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "envelope.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
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
