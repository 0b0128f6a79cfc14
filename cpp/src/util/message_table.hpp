// The message catalog (cpp/data/messages.json) as a C++ table, generated at build time by
// cpp/message_table.cmake: (code, English template) pairs sorted by code.
#pragma once
#include <cstddef>

namespace trainmem::messages {

struct CatalogEntry {
  const char* code;
  const char* text;  // English, with {name} for each parameter
};
struct Catalog {
  const CatalogEntry* entries;
  size_t count;
};
Catalog catalog_entries();

// The template of `code`, or nullptr when the catalog has no such code.
const char* find_template(const char* code);

}  // namespace trainmem::messages
