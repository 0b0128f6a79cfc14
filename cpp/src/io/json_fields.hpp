// Writing and reading the fields of JSON objects by C-string keys.
//
// Writing the fields of result objects. nlohmann's `out["key"] = value` and nested initializer
// lists (`json{{"a", x}, {"b", y}}`) expand inline at every call site (the key's conversion, a
// temporary json, the assignment, and cleanup code for exceptions); the core has hundreds of
// them, and they were most of the WebAssembly module (issue #7). put() is one out-of-line call
// per field. The stored JSON type follows nlohmann's own rules: bool -> boolean, unsigned
// integers -> number_unsigned, signed integers -> number_integer, floating point ->
// number_float, std::string and C strings -> string; anything else converts as json(value).
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "trainmem/message.hpp"

namespace trainmem {

// A Text in a result is its English string; its codes are kept for result.messages
// (io/messages.cpp, docs/i18n.md).
void to_json(nlohmann::json& j, const Text& t);

namespace json_fields_detail {
void put_json(nlohmann::json& o, const char* key, nlohmann::json&& v);
void put_bool(nlohmann::json& o, const char* key, bool v);
void put_u64(nlohmann::json& o, const char* key, uint64_t v);
void put_i64(nlohmann::json& o, const char* key, int64_t v);
void put_f64(nlohmann::json& o, const char* key, double v);
void put_str(nlohmann::json& o, const char* key, const std::string& v);
void put_cstr(nlohmann::json& o, const char* key, const char* v);
}  // namespace json_fields_detail

// o[key] = v (a null `o` becomes an object, as with operator[]).
template <class T>
inline void put(nlohmann::json& o, const char* key, T&& v) {
  namespace d = json_fields_detail;
  using V = std::decay_t<T>;
  static_assert(!std::is_same_v<V, char>, "put: a char is ambiguous (number or string)");
  if constexpr (std::is_same_v<V, bool>)
    d::put_bool(o, key, v);
  else if constexpr (std::is_integral_v<V> && std::is_unsigned_v<V>)
    d::put_u64(o, key, v);
  else if constexpr (std::is_integral_v<V>)
    d::put_i64(o, key, v);
  else if constexpr (std::is_floating_point_v<V>)
    d::put_f64(o, key, v);
  else if constexpr (std::is_same_v<V, std::string>)
    d::put_str(o, key, v);
  else if constexpr (std::is_same_v<V, const char*> || std::is_same_v<V, char*>)
    d::put_cstr(o, key, v);
  else
    d::put_json(o, key, nlohmann::json(std::forward<T>(v)));
}

// Reading (the embedded data files, requests already validated). nlohmann 3.11's at, value,
// contains and operator[] take the key's type as a template parameter, so a string literal of
// each length was a copy of its own; these take a C string and call the std::string overloads.
bool json_has(const nlohmann::json& o, const char* key);                  // o.contains(key)
const nlohmann::json& json_at(const nlohmann::json& o, const char* key);  // o.at(key)
// o.value(key, fallback): the value converted to the fallback's type, or the fallback.
std::string json_value_or(const nlohmann::json& o, const char* key, const std::string& fallback);
std::string json_value_or(const nlohmann::json& o, const char* key, const char* fallback);
double json_value_or(const nlohmann::json& o, const char* key, double fallback);
uint64_t json_value_or(const nlohmann::json& o, const char* key, uint64_t fallback);
nlohmann::json json_value_or(const nlohmann::json& o, const char* key,
                             const nlohmann::json& fallback);

}  // namespace trainmem
