// The only file that knows Emscripten: exposes trainmem::call (JSON string in, JSON
// envelope out), trainmem::call_with_bytes (the same with a file's bytes) and
// trainmem::call_with_columns (with a placement chain's typed-array columns). None ever
// throws, so no C++ exception crosses into JavaScript.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainmem/api.hpp"

namespace {
// A Uint8Array's bytes, copied once by TypedArray.set into the string the core reads; anything
// else (a JS string, sent as UTF-8; an ArrayBuffer; ...) through Embind's std::string, with its
// errors. The JS wrapper sends request text as TextEncoder's UTF-8: Embind's own conversion of
// a JS string ran in JavaScript, a character at a time (~10 ns each: 70 ms for a 6.8 MB,
// 100,000-layer placement request, more than the core took to read it).
std::string bytes_of(const emscripten::val& v) {
  if (v.instanceof (emscripten::val::global("Uint8Array"))) {
    std::string b;
    // Uninitialised: TypedArray.set writes every byte (the -Oz libc's memset of 200 MB was
    // about 5 % of a snapshot's read).
    b.__resize_default_init(v["length"].as<size_t>());
    emscripten::val(emscripten::typed_memory_view(b.size(), reinterpret_cast<uint8_t*>(&b[0])))
        .call<void>("set", v);
    return b;
  }
  return v.as<std::string>();
}
std::string call_json(const std::string& function, const emscripten::val& request) {
  return trainmem::call(function, bytes_of(request));
}
// The file's bytes beside the request (readSnapshot, compareSnapshot): a Uint8Array (a Node
// Buffer too) is copied once (Embind's std::string parameter copied a 200 MB file byte by byte
// in JavaScript into a buffer of its own and then again into a std::string).
std::string call_bytes(const std::string& function, const emscripten::val& request,
                       const emscripten::val& bytes) {
  return trainmem::call_with_bytes(function, bytes_of(request), bytes_of(bytes));
}
// placement with typed-array columns of chain.layers: `names` their keys joined by ",",
// `values` one Float64Array holding them one after another, copied once into the vector the
// core reads (no JSON text for 100,000 layers' numbers).
std::string call_columns(const std::string& function, const emscripten::val& request,
                         const std::string& names, const emscripten::val& values) {
  std::vector<std::string> keys;
  for (size_t at = 0; at <= names.size();) {
    const size_t comma = std::min(names.find(',', at), names.size());
    keys.push_back(names.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<double> v(values["length"].as<size_t>());
  emscripten::val(emscripten::typed_memory_view(v.size(), v.data())).call<void>("set", values);
  return trainmem::call_with_columns(function, bytes_of(request), keys, v);
}
std::string version_string() { return trainmem::version(); }
std::string parse_json_text(const emscripten::val& text) {
  return trainmem::parse_json(bytes_of(text));
}
}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("call", &call_json);
  emscripten::function("callBytes", &call_bytes);
  emscripten::function("callColumns", &call_columns);
  emscripten::function("version", &version_string);
  emscripten::function("parseJson", &parse_json_text);
}
