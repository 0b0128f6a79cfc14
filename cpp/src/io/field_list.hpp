// Writing the fields of a result object as one list:
//   put_fields(out, {{"peakBytes", r.peak_bytes}, {"peakPhase", r.peak_phase}});
// Each value is stored by put()'s rules (json_fields.hpp: bool, unsigned, signed, floating
// point, string, C string; nullptr is null and a json is copied), by one out-of-line loop
// instead of a call per field. A Field refers to its value: the list must be used within the
// expression that builds it (as put_fields does).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/json_fields.hpp"

namespace trainmem {

class Field {
 public:
  enum class Kind : uint8_t { boolean, u64, i64, f64, str, cstr, null, json, text };

  template <class T>
  Field(const char* key, const T& v) : key_(key) {
    using V = std::decay_t<T>;
    static_assert(!std::is_same_v<V, char>, "Field: a char is ambiguous (number or string)");
    if constexpr (std::is_same_v<V, bool>) {
      kind_ = Kind::boolean;
      b_ = v;
    } else if constexpr (std::is_integral_v<V> && std::is_unsigned_v<V>) {
      kind_ = Kind::u64;
      u_ = v;
    } else if constexpr (std::is_integral_v<V>) {
      kind_ = Kind::i64;
      i_ = v;
    } else if constexpr (std::is_floating_point_v<V>) {
      kind_ = Kind::f64;
      d_ = v;
    } else if constexpr (std::is_same_v<V, std::string>) {
      kind_ = Kind::str;
      s_ = &v;
    } else if constexpr (std::is_same_v<V, const char*> || std::is_same_v<V, char*>) {
      kind_ = Kind::cstr;
      c_ = v;
    } else if constexpr (std::is_same_v<V, std::nullptr_t>) {
      kind_ = Kind::null;
    } else if constexpr (std::is_same_v<V, Text>) {
      kind_ = Kind::text;  // its English, with its codes kept for result.messages
      t_ = &v;
    } else {
      static_assert(std::is_same_v<V, nlohmann::json>, "Field: no JSON type for this value");
      kind_ = Kind::json;
      j_ = &v;
    }
  }

  // o[key] = the value (a null `o` becomes an object, as with put).
  void put_into(nlohmann::json& o) const;

 private:
  const char* key_;
  Kind kind_ = Kind::null;
  union {
    bool b_;
    uint64_t u_;
    int64_t i_;
    double d_;
    const std::string* s_;
    const char* c_;
    const nlohmann::json* j_;
    const Text* t_;
  };
};

void put_fields(nlohmann::json& o, std::initializer_list<Field> fields);

// A JSON array with one element per item, written by item_json.
template <class T, class F>
nlohmann::json array_of(const std::vector<T>& items, F&& item_json) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& item : items) a.push_back(item_json(item));
  return a;
}

}  // namespace trainmem
