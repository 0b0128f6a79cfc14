// util::small_vsnprintf, the WebAssembly modules' snprintf (cpp/bindings/small_snprintf.cpp),
// against the C library's own vsnprintf: glibc in the native build, musl in the WebAssembly build
// of this suite (both print the exact value rounded half to even). The formats are the ones the
// modules' code passes (ours and nlohmann/json's) and a few neighbours; the values are random bit
// patterns, decimal ties, scaled integers and the special values.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "util/small_printf.hpp"

namespace {

std::string ours(const char* fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  const int n = trainmem::util::small_vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return std::to_string(n) + ":" + buf;
}

std::string libc(const char* fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return std::to_string(n) + ":" + buf;
}

int truncated(char* buf, size_t n, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int r = trainmem::util::small_vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return r;
}

double random_double(std::mt19937_64& g, int mode) {
  double x;
  if (mode == 0) {
    const uint64_t bits = g();
    std::memcpy(&x, &bits, sizeof x);
  } else if (mode == 1) {
    x = std::ldexp(static_cast<double>(g() >> 11), static_cast<int>(g() % 200) - 150);
  } else if (mode == 2) {  // multiples of 0.05: ties of %.1f
    x = static_cast<double>(static_cast<int64_t>(g() % 2000001) - 1000000) / 20.0;
  } else if (mode == 3) {
    x = static_cast<double>(g() % 100000) * std::pow(10.0, static_cast<int>(g() % 40) - 20);
  } else {  // eighths: exact binary ties
    x = static_cast<double>(g() % 1000) / 8.0;
  }
  return x;
}

}  // namespace

TEST_CASE("small_vsnprintf prints doubles as the C library does", "[small_printf]") {
  const char* formats[] = {"%.10g", "%.1f %%", "%g",   "%.3e", "%.0f",
                           "%.17g", "%.0g",    "%.2g", "%f",   "%e"};
  std::mt19937_64 g(20261201);
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    const double x = random_double(g, i % 5);
    for (const char* f : formats) {
      const std::string want = libc(f, x), got = ours(f, x);
      if (want != got) FAIL(f << " of " << x << ": " << want << " vs " << got);
      ++compared;
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, -0.0, inf, -inf, std::nan(""), 5e-324, 1.7976931348623157e308, 0.05, 0.15,
                   0.25, 2.5, 1e21, 1e-5, 9.9999999995e9, 99.95, -0.04})
    for (const char* f : formats) CHECK(ours(f, x) == libc(f, x));
  CHECK(ours(" must be between %.10g and %.10g, got %.10g", 0.5, 1e300, -3.25) ==
        libc(" must be between %.10g and %.10g, got %.10g", 0.5, 1e300, -3.25));
  CHECK(compared == 200000);
}

TEST_CASE("small_vsnprintf prints integers and truncates as the C library does", "[small_printf]") {
  std::mt19937_64 g(7);
  for (int i = 0; i < 20000; ++i) {
    const unsigned v = static_cast<unsigned>(g());
    const size_t z = static_cast<size_t>(g() % 200000);
    CHECK(ours("<U+%.4X>", v & 0xff) == libc("<U+%.4X>", v & 0xff));
    CHECK(ours("\\u%04x\\u%04x", v & 0xffff, v >> 16) ==
          libc("\\u%04x\\u%04x", v & 0xffff, v >> 16));
    CHECK(ours("model-%05zu-of-%05zu.safetensors", z, z + 1) ==
          libc("model-%05zu-of-%05zu.safetensors", z, z + 1));
    CHECK(ours("%d %5d %05d %.0d %hd %hhX %x %u", static_cast<int>(v), static_cast<int>(v) % 1000,
               -static_cast<int>(v % 1000), 0, static_cast<int>(v), v, v, v) ==
          libc("%d %5d %05d %.0d %hd %hhX %x %u", static_cast<int>(v), static_cast<int>(v) % 1000,
               -static_cast<int>(v % 1000), 0, static_cast<int>(v), v, v, v));
  }
  // truncated to n - 1 bytes, returning the full length (nlohmann writes "\u%04x" into 7)
  for (size_t n : {0, 1, 4, 6, 7, 8}) {
    char a[8] = "ZZZZZZZ", b[8] = "ZZZZZZZ";
    const int na = std::snprintf(a, n, "\\u%04x", 0x1fu);
    const int nb = truncated(b, n, "\\u%04x", 0x1fu);
    CHECK(na == nb);
    CHECK(std::string(a, 8) == std::string(b, 8));
  }
}

TEST_CASE("small_vsnprintf says so for a format it does not print", "[small_printf]") {
  CHECK(ours("%+d", 5) == "20:<unsupported format>");
  CHECK(ours("%p", nullptr) == "20:<unsupported format>");
  CHECK(ours("%.1Lf", 1.0L) == "20:<unsupported format>");
}
