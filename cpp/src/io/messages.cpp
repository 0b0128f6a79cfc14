#include "io/messages.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"

namespace trainmem {
namespace messages {
namespace {

// A template "a{x}b" as literals {"a", "b"} around holes {"x"}: literals.size() = holes + 1.
struct Template {
  std::string code;
  std::vector<std::string> literals;
  std::vector<std::string> holes;
  size_t literal_chars = 0;  // ties between templates go to the most specific one
};

Template compile(const std::string& code, const std::string& text) {
  Template t;
  t.code = code;
  std::string lit;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t close = text[i] == '{' ? text.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      lit += text[i];
      continue;
    }
    t.literals.push_back(lit);
    t.literal_chars += lit.size();
    lit.clear();
    t.holes.push_back(text.substr(i + 1, close - i - 1));
    i = close;
  }
  t.literal_chars += lit.size();
  t.literals.push_back(lit);
  return t;
}

const std::vector<Template>& catalog() {
  static const std::vector<Template> all = [] {
    std::vector<Template> v;
    const nlohmann::json* file = embedded_find("messages.json");
    if (!file) return v;
    for (auto it = file->at("messages").begin(); it != file->at("messages").end(); ++it)
      v.push_back(compile(it.key(), it->get<std::string>()));
    return v;
  }();
  return all;
}

// Matches text[pos..] against holes i.. and literals i+1.. of t; every hole takes at least one
// character. Backtracks over the places where the next literal occurs.
bool match_from(const Template& t, std::string_view text, size_t pos, size_t hole,
                std::vector<std::pair<std::string, std::string>>* params) {
  if (hole == t.holes.size()) return pos == text.size();
  const std::string& next = t.literals[hole + 1];
  const bool last = hole + 1 == t.holes.size();
  if (last && next.empty()) {
    if (pos >= text.size()) return false;
    params->emplace_back(t.holes[hole], std::string(text.substr(pos)));
    return true;
  }
  for (size_t at = text.find(next, pos + 1); at != std::string_view::npos;
       at = text.find(next, at + 1)) {
    if (last && at + next.size() != text.size()) continue;
    params->emplace_back(t.holes[hole], std::string(text.substr(pos, at - pos)));
    if (match_from(t, text, at + next.size(), hole + 1, params)) return true;
    params->pop_back();
  }
  return false;
}

bool match(const Template& t, std::string_view text, Part* out) {
  const std::string& head = t.literals.front();
  if (text.compare(0, head.size(), head) != 0) return false;
  if (t.holes.empty() && text.size() != head.size()) return false;
  std::vector<std::pair<std::string, std::string>> params;
  if (!match_from(t, text, head.size(), 0, &params)) return false;
  out->code = t.code;
  out->params = std::move(params);
  return true;
}

bool whole(std::string_view text, Part* out) {
  const Template* best = nullptr;
  Part found;
  for (const Template& t : catalog()) {
    if (best && t.literal_chars <= best->literal_chars) continue;
    Part p;
    if (match(t, text, &p)) {
      best = &t;
      found = std::move(p);
    }
  }
  if (best) *out = std::move(found);
  return best != nullptr;
}

bool parts(std::string_view text, std::vector<Part>* out) {
  Part p;
  if (whole(text, &p)) {
    out->push_back(std::move(p));
    return true;
  }
  for (size_t cut = text.find("; "); cut != std::string_view::npos;
       cut = text.find("; ", cut + 1)) {
    const size_t n = out->size();
    if (whole(text.substr(0, cut), &p)) {
      out->push_back(std::move(p));
      if (parts(text.substr(cut + 2), out)) return true;
    }
    out->resize(n);
  }
  return false;
}

// The Texts of the result being written, by their English (one call at a time per thread).
struct Written {
  std::unordered_map<std::string, std::vector<Message>> coded;
  std::vector<std::string> fallback;
};
Written& written() {
  thread_local Written w;
  return w;
}

std::vector<Part> codes_for(const std::string& s) {
  Written& w = written();
  const auto it = w.coded.find(s);
  std::vector<Part> out;
  if (it != w.coded.end()) {
    for (const Message& m : it->second) out.push_back({m.code, m.params});
    return out;
  }
  out = recognise(s);
  if (!out.empty()) w.fallback.push_back(s);
  return out;
}

void walk(const nlohmann::json& v, std::string* path, const std::string& key, nlohmann::json* out) {
  const size_t n = path->size();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (key == "name" || key == "field" || key == "id" || s.find(' ') == std::string::npos) return;
    const std::vector<Part> found = codes_for(s);
    if (found.empty()) return;
    std::vector<Message> parts;
    for (const Part& p : found) parts.push_back({p.code, p.params});
    (*out)[*path] = list_of(parts);
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

std::vector<Part> recognise(const std::string& text) {
  std::vector<Part> out;
  if (!parts(text, &out)) out.clear();
  return out;
}

nlohmann::json list_of(const std::vector<Message>& parts) {
  nlohmann::json list = nlohmann::json::array();
  for (const Message& p : parts) {
    nlohmann::json e = nlohmann::json::object();
    put(e, "code", p.code);
    nlohmann::json params = nlohmann::json::object();
    for (const auto& kv : p.params) params[kv.first] = kv.second;
    put(e, "params", std::move(params));
    list.push_back(std::move(e));
  }
  return list;
}

void begin_result() {
  written().coded.clear();
  written().fallback.clear();
}

const std::vector<std::string>& fallback_strings() { return written().fallback; }

void note_fallback(const std::string& text) { written().fallback.push_back(text); }

nlohmann::json codes_of(const nlohmann::json& result) {
  nlohmann::json out = nlohmann::json::object();
  std::string path;
  walk(result, &path, "", &out);
  return out;
}

}  // namespace messages

void to_json(nlohmann::json& j, const Text& t) {
  j = t.str();
  if (t.coded()) messages::written().coded.emplace(t.str(), t.parts());
}

}  // namespace trainmem
