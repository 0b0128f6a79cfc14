// The one entry point every front end uses: a function name and a JSON request in, a JSON
// envelope out — {"ok":true,"result":{...}} or {"ok":false,"error":{code,field,message}}.
// Never throws.
#pragma once
#include <string>
#include <vector>

namespace trainmem {

std::string call(const std::string& function, const std::string& request_json) noexcept;
const char* version() noexcept;
// Names accepted by call(), e.g. "checkpointSize".
std::vector<std::string> function_names();

}  // namespace trainmem
