// The one entry point every front end uses: a function name and a JSON request in, a JSON
// envelope out — {"ok":true,"result":{...}} or {"ok":false,"error":{code,field,message}}.
// Never throws.
#pragma once
#include <string>
#include <vector>

namespace trainmem {

std::string call(const std::string& function, const std::string& request_json) noexcept;
// The same with a file's bytes beside the request: readSnapshot and compareSnapshot read them
// (a PyTorch memory snapshot pickle, or memory_stats() JSON); the other functions need none.
// Never throws; errors come back as data.
std::string call_with_bytes(const std::string& function, const std::string& request_json,
                            const std::string& bytes) noexcept;
const char* version() noexcept;
// Names accepted by call() and call_with_bytes(), e.g. "checkpointSize", "readSnapshot".
std::vector<std::string> function_names();

}  // namespace trainmem
