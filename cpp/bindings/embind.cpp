// The only file that knows Emscripten: exposes trainmem::call (JSON string in, JSON
// envelope out) and trainmem::call_with_bytes (the same with a file's bytes). Neither ever
// throws, so no C++ exception crosses into JavaScript.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>

#include "trainmem/api.hpp"

namespace {
std::string call_json(const std::string& function, const std::string& request) {
  return trainmem::call(function, request);
}
// The file's bytes. A Uint8Array (a Node Buffer too) is copied once, by TypedArray.set, into
// the string the reader parses: Embind's std::string parameter copied it byte by byte in
// JavaScript into a buffer of its own and then again into a std::string (two copies of a
// 200 MB file in the WebAssembly heap). Anything else (a JS string, sent as UTF-8; an
// ArrayBuffer; …) goes through Embind's std::string as before, with its errors.
std::string call_bytes(const std::string& function, const std::string& request,
                       const emscripten::val& bytes) {
  if (bytes.instanceof (emscripten::val::global("Uint8Array"))) {
    std::string b;
    // Uninitialised: TypedArray.set writes every byte (the -Oz libc's memset of 200 MB was
    // about 5 % of the read).
    b.__resize_default_init(bytes["length"].as<size_t>());
    emscripten::val(emscripten::typed_memory_view(b.size(), reinterpret_cast<uint8_t*>(&b[0])))
        .call<void>("set", bytes);
    return trainmem::call_with_bytes(function, request, b);
  }
  return trainmem::call_with_bytes(function, request, bytes.as<std::string>());
}
std::string version_string() { return trainmem::version(); }
}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("call", &call_json);
  emscripten::function("callBytes", &call_bytes);
  emscripten::function("version", &version_string);
}
