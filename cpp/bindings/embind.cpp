// The only file that knows Emscripten: exposes trainmem::call (JSON string in, JSON
// envelope out). call() never throws, so no C++ exception crosses into JavaScript.
#include <emscripten/bind.h>

#include <string>

#include "trainmem/api.hpp"

namespace {
std::string call_json(const std::string& function, const std::string& request) {
  return trainmem::call(function, request);
}
std::string version_string() { return trainmem::version(); }
}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("call", &call_json);
  emscripten::function("version", &version_string);
}
