// Linked into the page's first module in place of cpp/src/io/bytes_functions.cpp (the static
// library's member is then never pulled in): no function reads a file's bytes, so the
// snapshot reader is not linked. The page loads the full module when a snapshot is opened.
#include "io/bytes_functions.hpp"

namespace trainmem {

BytesHandler find_bytes_function(const std::string&) { return nullptr; }

void append_bytes_function_names(std::vector<std::string>*) {}

}  // namespace trainmem
