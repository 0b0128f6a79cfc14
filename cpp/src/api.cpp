#include "trainmem/api.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainmem/calculators.hpp"
#include "trainmem/request.hpp"

namespace trainmem {
namespace {

using Handler = json (*)(const json&);
const std::pair<const char*, Handler> kHandlers[] = {
    {"checkpointSize", checkpoint_size_json},
    {"describeModel", describe_model_json},
    {"peakMemory", peak_memory_json},
    {"accumulation", accumulation_json},
    {"placement", placement_json},
    {"presets", presets_json},
};

// A result must never carry a silent non-finite number (JSON would print it as null).
void check_finite(const json& v, const std::string& path) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    throw RequestError(code::kInternal, path, "internal error: non-finite result at " + path);
  if (v.is_object())
    for (auto it = v.begin(); it != v.end(); ++it) check_finite(*it, path + "." + it.key());
  if (v.is_array())
    for (size_t i = 0; i < v.size(); ++i) check_finite(v[i], index_path(path, i));
}

std::string error_envelope(const std::string& c, const std::string& field,
                           const std::string& message) {
  json e = {{"ok", false}, {"error", {{"code", c}, {"field", field}, {"message", message}}}};
  return e.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

const char* version() noexcept { return TRAINMEM_VERSION; }

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const auto& h : kHandlers) names.emplace_back(h.first);
  return names;
}

std::string call(const std::string& function, const std::string& request_json) noexcept {
  try {
    Handler handler = nullptr;
    for (const auto& h : kHandlers)
      if (function == h.first) handler = h.second;
    if (!handler) {
      std::string msg = "unknown function \"" + function.substr(0, 64) + "\"";
      const std::string near = closest_match(function, function_names());
      if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
      return error_envelope(code::kUnknownFunction, "", msg);
    }
    if (request_json.size() > (16u << 20))
      return error_envelope(code::kTooLarge, "", "request is larger than 16 MiB");
    json request;
    try {
      // Depth is bounded by nlohmann's recursive parser only through the stack, so reject
      // deep nesting first: a request is never nested more than 64 levels.
      int depth = 0, max_depth = 0;
      bool in_string = false, escaped = false;
      for (char ch : request_json) {
        if (in_string) {
          if (escaped)
            escaped = false;
          else if (ch == '\\')
            escaped = true;
          else if (ch == '"')
            in_string = false;
          continue;
        }
        if (ch == '"')
          in_string = true;
        else if (ch == '[' || ch == '{')
          max_depth = std::max(max_depth, ++depth);
        else if (ch == ']' || ch == '}')
          --depth;
      }
      if (max_depth > 64)
        return error_envelope(code::kTooLarge, "", "request nested deeper than 64 levels");
      request = json::parse(request_json);
    } catch (const json::parse_error& e) {
      return error_envelope(code::kInvalidJson, "",
                            std::string("request is not valid JSON: ") + e.what());
    }
    json result = handler(request);
    check_finite(result, "result");
    json ok = {{"ok", true}, {"result", std::move(result)}};
    return ok.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const RequestError& e) {
    return error_envelope(e.code(), e.field(), e.what());
  } catch (const std::bad_alloc&) {
    return error_envelope(code::kTooLarge, "", "out of memory while computing the request");
  } catch (const std::exception& e) {
    return error_envelope(code::kInternal, "", std::string("internal error: ") + e.what());
  } catch (...) {
    return error_envelope(code::kInternal, "", "internal error");
  }
}

}  // namespace trainmem
