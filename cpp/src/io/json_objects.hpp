// Result objects and arrays written as lists of fields: object_of("a", x, "b", y) is the
// object {"a": x, "b": y} (each field stored by put(), json_fields.hpp), and array_of(v, f) the
// array of f(item) for each item of v. A result's shape then reads as one list of names and
// values instead of a put() line per field.
#pragma once
#include <utility>

#include <nlohmann/json.hpp>

#include "io/json_fields.hpp"

namespace trainmem {

// Stores each (key, value) pair of `fields` into `o` with put().
inline void put_fields(nlohmann::json&) {}
template <class V, class... Rest>
__attribute__((always_inline)) inline void put_fields(nlohmann::json& o, const char* key, V&& value,
                                                      Rest&&... rest) {
  put(o, key, std::forward<V>(value));
  put_fields(o, std::forward<Rest>(rest)...);
}

// A new object holding `fields`: key, value, key, value, …
template <class... Fields>
nlohmann::json object_of(Fields&&... fields) {
  nlohmann::json o = nlohmann::json::object();
  put_fields(o, std::forward<Fields>(fields)...);
  return o;
}

// The array [write(x) for x in items] (an empty array for no items).
template <class Items, class Write>
nlohmann::json array_of(const Items& items, Write&& write) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : items) a.push_back(write(x));
  return a;
}

}  // namespace trainmem
