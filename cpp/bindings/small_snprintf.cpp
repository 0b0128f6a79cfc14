// The WebAssembly modules' snprintf: util::small_vsnprintf instead of musl's printf, which is then
// not linked (size: -4.3 KB gzip of the page's core; bench/RESULTS.md, "Core diet"). Linked into
// the two modules only (CMakeLists.txt), not into the core library: the native build and the
// Catch2 suite keep their C library's printf, which tests/cpp/test_small_printf.cpp compares
// small_vsnprintf against. Callers: our messages ("%.10g", "%.1f", "%05zu") and nlohmann/json's
// lexer and serializer ("<U+%.4X>", "\\u%04x").
#include <cstdarg>
#include <cstddef>

#include "util/small_printf.hpp"

extern "C" int snprintf(char* buf, size_t n, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int written = trainmem::util::small_vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return written;
}
