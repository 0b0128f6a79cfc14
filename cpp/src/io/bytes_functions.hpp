// The functions that read a file's bytes (the memory-snapshot reader), kept apart from api.cpp
// so that a build can leave them out: bytes_functions.cpp lists them, and a module linked with
// cpp/bindings/no_bytes_functions.cpp instead has none (the page's first module: the snapshot
// reader is about a seventh of the core, loaded only when a snapshot is opened).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainmem {

using BytesHandler = nlohmann::json (*)(const nlohmann::json&, const std::string&);
// The handler of `function`, or nullptr when this build has no such function.
BytesHandler find_bytes_function(const std::string& function);
// Appends the names of this build's functions that read bytes.
void append_bytes_function_names(std::vector<std::string>* names);

}  // namespace trainmem
