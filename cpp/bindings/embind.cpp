// The only file that knows Emscripten: exposes trainmem::call (JSON string in, JSON
// envelope out) and trainmem::call_with_bytes (the same with a file's bytes). Neither ever
// throws, so no C++ exception crosses into JavaScript.
#include <emscripten/bind.h>

#include <string>

#include "trainmem/api.hpp"

namespace {
std::string call_json(const std::string& function, const std::string& request) {
  return trainmem::call(function, request);
}
// Embind's std::string accepts a Uint8Array or ArrayBuffer: the file's bytes, copied once.
std::string call_bytes(const std::string& function, const std::string& request,
                       const std::string& bytes) {
  return trainmem::call_with_bytes(function, request, bytes);
}
std::string version_string() { return trainmem::version(); }
}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("call", &call_json);
  emscripten::function("callBytes", &call_bytes);
  emscripten::function("version", &version_string);
}
