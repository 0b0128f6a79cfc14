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
// The same with numeric columns of a placement request's chain.layers beside it (the JS
// wrapper's typed arrays, not written as JSON text): `names` (forwardCost, savedBytes, ...)
// and `values`, names.size() columns of equal length one after another; the request's
// chain.layers is an object holding the other columns (README "Placement", columnar layers).
// Never throws.
std::string call_with_columns(const std::string& function, const std::string& request_json,
                              const std::vector<std::string>& names,
                              const std::vector<double>& values) noexcept;
const char* version() noexcept;
// Any JSON text read by the requests' strict reader (a key twice in one object, nesting, size
// and number limits: README "Errors"), written back as {"ok":true,"result":<the value>} or the
// error envelope. The CLI reads its --json files through it. Never throws.
std::string parse_json(const std::string& text) noexcept;
// Names accepted by call() and call_with_bytes(), e.g. "checkpointSize", "readSnapshot".
std::vector<std::string> function_names();

}  // namespace trainmem
