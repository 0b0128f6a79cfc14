#include "io/messages.hpp"

#include <unordered_map>

#include "io/json_fields.hpp"

namespace trainmem {
namespace messages {
namespace {

// The Texts of the result being written: their codes by their English (one call at a time per
// thread).
using Written = std::unordered_map<std::string, std::vector<Message>>;
Written& written() {
  thread_local Written w;
  return w;
}

void walk(const nlohmann::json& v, std::string* path, const std::string& key, nlohmann::json* out) {
  const size_t n = path->size();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (key == "name" || key == "field" || key == "id" || s.find(' ') == std::string::npos) return;
    const auto found = written().find(s);
    if (found != written().end()) (*out)[*path] = list_of(found->second);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!path->empty()) *path += '.';
      *path += it.key();
      walk(*it, path, it.key(), out);
      path->resize(n);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      *path += '[' + std::to_string(i) + ']';
      walk(v[i], path, key, out);
      path->resize(n);
    }
  }
}

}  // namespace

nlohmann::json list_of(const std::vector<Message>& parts) {
  nlohmann::json list = nlohmann::json::array();
  for (const Message& p : parts) {
    nlohmann::json e = nlohmann::json::object();
    put(e, "code", p.code);
    nlohmann::json params = nlohmann::json::object();
    for (const auto& kv : p.params) params[kv.first] = kv.second;
    for (const auto& kv : p.nested) params[kv.first] = list_of(kv.second);  // [{code, params}]
    put(e, "params", std::move(params));
    list.push_back(std::move(e));
  }
  return list;
}

void begin_result() { written().clear(); }

nlohmann::json codes_of(const nlohmann::json& result) {
  nlohmann::json out = nlohmann::json::object();
  std::string path;
  walk(result, &path, "", &out);
  return out;
}

}  // namespace messages

void to_json(nlohmann::json& j, const Text& t) {
  j = t.str();
  if (t.coded()) messages::written().emplace(t.str(), t.parts());
}

}  // namespace trainmem
