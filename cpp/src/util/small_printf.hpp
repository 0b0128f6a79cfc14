#pragma once
// small_vsnprintf: vsnprintf for the conversions the WebAssembly modules use, so that they link
// no C library printf (size: musl's printf_core and its helpers, 4.3 KB gzip of the page's core;
// bench/RESULTS.md, "Core diet"). cpp/bindings/small_snprintf.cpp makes it the modules'
// snprintf; nlohmann/json's lexer and serializer call snprintf too ("<U+%.4X>", "\\u%04x").
//
// Conversions: %d %i %u %x %X with flag '0', a width, a precision and the length modifiers hh, h,
// l, ll, z; %f %e %g with a precision (default 6); %s; %%. Floating-point output is exact and
// rounds half to even on the exact binary value, as musl and glibc do in the default rounding
// mode (checked against the C library's vsnprintf in tests/cpp/test_small_printf.cpp). Anything
// else (another flag, '*', %c, %p, %a, ...) writes "<unsupported format>" in place of the whole
// output, so a new use shows up in the text instead of formatting wrongly.
#include <cstdarg>
#include <cstddef>

namespace trainmem {
namespace util {

int small_vsnprintf(char* buf, size_t n, const char* fmt, va_list ap);

}  // namespace util
}  // namespace trainmem
