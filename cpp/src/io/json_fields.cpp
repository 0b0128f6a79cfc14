#include "io/json_fields.hpp"

namespace trainmem {
namespace json_fields_detail {

void put_json(nlohmann::json& o, const char* key, nlohmann::json&& v) { o[key] = std::move(v); }
void put_bool(nlohmann::json& o, const char* key, bool v) { put_json(o, key, nlohmann::json(v)); }
void put_u64(nlohmann::json& o, const char* key, uint64_t v) {
  put_json(o, key, nlohmann::json(v));
}
void put_i64(nlohmann::json& o, const char* key, int64_t v) { put_json(o, key, nlohmann::json(v)); }
void put_f64(nlohmann::json& o, const char* key, double v) { put_json(o, key, nlohmann::json(v)); }
void put_str(nlohmann::json& o, const char* key, const std::string& v) {
  put_json(o, key, nlohmann::json(v));
}
void put_cstr(nlohmann::json& o, const char* key, const char* v) {
  put_json(o, key, nlohmann::json(v));
}

}  // namespace json_fields_detail

bool json_has(const nlohmann::json& o, const char* key) { return o.contains(std::string(key)); }
const nlohmann::json& json_at(const nlohmann::json& o, const char* key) {
  return o.at(std::string(key));
}
std::string json_value_or(const nlohmann::json& o, const char* key, const std::string& fallback) {
  return o.value(std::string(key), fallback);
}
std::string json_value_or(const nlohmann::json& o, const char* key, const char* fallback) {
  return json_value_or(o, key, std::string(fallback));
}
double json_value_or(const nlohmann::json& o, const char* key, double fallback) {
  return o.value(std::string(key), fallback);
}
uint64_t json_value_or(const nlohmann::json& o, const char* key, uint64_t fallback) {
  return o.value(std::string(key), fallback);
}
nlohmann::json json_value_or(const nlohmann::json& o, const char* key,
                             const nlohmann::json& fallback) {
  return o.value(std::string(key), fallback);
}
}  // namespace trainmem
