// Native differential runner: reads requests framed as "FUNCTION\nBYTES_FILE\nLENGTH\n<text>"
// from standard input (BYTES_FILE "-" for none; tools/differential.mjs --dump writes them) and
// prints, per request, the envelope's length and FNV-1a 64-bit hash on one line (with --full,
// the envelope itself). Two builds' outputs are compared with cmp.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "trainmem/api.hpp"

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 offset basis (Fowler, Noll, Vo)
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;  // FNV 64 prime
  return h;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  const bool full = argc > 1 && std::string(argv[1]) == "--full";
  std::string fn, path, len;
  while (std::getline(std::cin, fn) && std::getline(std::cin, path) &&
         std::getline(std::cin, len)) {
    std::string text(std::stoull(len), '\0');
    std::cin.read(&text[0], static_cast<std::streamsize>(text.size()));
    const std::string bytes = path == "-" ? std::string() : read_file(path);
    const std::string out = trainmem::call_with_bytes(fn, text, bytes);
    if (full)
      std::cout << out << "\n";
    else
      std::cout << out.size() << " " << fnv1a(out) << "\n";
  }
  return 0;
}
