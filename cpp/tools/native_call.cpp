// Native command-line access to the core: trainmem_cli_native FUNCTION < request.json
// Prints the JSON envelope. Used by benchmarks and for debugging without WASM.
#include <iostream>
#include <iterator>
#include <string>

#include "trainmem/api.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: trainmem_cli_native FUNCTION < request.json\n";
    return 2;
  }
  std::string request((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::cout << trainmem::call(argv[1], request) << "\n";
  return 0;
}
