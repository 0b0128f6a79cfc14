// Native command-line access to the core: trainmem_cli_native FUNCTION [FILE] < request.json
// Prints the JSON envelope; FILE (readSnapshot, compareSnapshot) is read as the file's bytes.
// Used by benchmarks and for debugging without WASM.
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "trainmem/api.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: trainmem_cli_native FUNCTION [FILE] < request.json\n";
    return 2;
  }
  std::string request((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::string bytes;
  if (argc == 3) {
    std::ifstream f(argv[2], std::ios::binary);
    if (!f) {
      std::cerr << "cannot read " << argv[2] << "\n";
      return 2;
    }
    bytes.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  std::cout << trainmem::call_with_bytes(argv[1], request, bytes) << "\n";
  return 0;
}
