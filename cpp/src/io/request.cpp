#include "io/request.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace trainmem {
namespace {

// A number as the range errors print it (printf's %.10g).
std::string g10(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const char ca = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i - 1])));
      const char cb = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j - 1])));
      const size_t sub = prev[j - 1] + (ca == cb ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string printable(const std::string& s) {
  // Error messages quote user text; keep them short and printable.
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

std::string json_type_name(const json& v) { return type_name(v); }

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.size() > 256) return "";
  std::string best;
  size_t best_d = 4;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<size_t>(1, std::min<size_t>(3, word.size() / 2)) ? best : "";
}

uint64_t read_u64(const json& v, const std::string& path, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  if (v.is_number_unsigned()) {
    value = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    const int64_t s = v.get<int64_t>();
    if (s < 0)
      fail(code::kOutOfRange, path,
           Message{"error.field.atLeastGot",
                   {{"field", path}, {"min", std::to_string(min)}, {"value", std::to_string(s)}}});
    value = static_cast<uint64_t>(s);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d))
      fail(code::kOutOfRange, path, Message{"error.field.finite", {{"field", path}}});
    if (d < 0)
      fail(code::kOutOfRange, path,
           Message{"error.field.atLeast", {{"field", path}, {"min", std::to_string(min)}}});
    if (d != std::floor(d))
      fail(code::kNotInteger, path, Message{"error.field.whole", {{"field", path}}});
    if (d >= 18446744073709551616.0)
      fail(code::kOutOfRange, path,
           Message{"error.field.atMost", {{"field", path}, {"max", std::to_string(max)}}});
    value = static_cast<uint64_t>(d);
  } else {
    fail(code::kInvalidType, path,
         Message{"error.field.wholeGot", {{"field", path}, {"type", type_name(v)}}});
  }
  if (value < min || value > max)
    fail(code::kOutOfRange, path,
         Message{"error.field.between",
                 {{"field", path},
                  {"min", std::to_string(min)},
                  {"max", std::to_string(max)},
                  {"value", std::to_string(value)}}});
  return value;
}

double read_num(const json& v, const std::string& path, double min, double max) {
  if (!v.is_number())
    fail(code::kInvalidType, path,
         Message{"error.field.numberGot", {{"field", path}, {"type", type_name(v)}}});
  const double d = v.get<double>();
  if (!std::isfinite(d))
    fail(code::kOutOfRange, path, Message{"error.field.finite", {{"field", path}}});
  if (d < min || d > max) {
    fail(code::kOutOfRange, path,
         Message{"error.field.between",
                 {{"field", path}, {"min", g10(min)}, {"max", g10(max)}, {"value", g10(d)}}});
  }
  return d;
}

std::string read_str(const json& v, const std::string& path, size_t max_len) {
  if (!v.is_string())
    fail(code::kInvalidType, path,
         Message{"error.field.stringGot", {{"field", path}, {"type", type_name(v)}}});
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_len)
    fail(code::kTooLarge, path,
         Message{"error.field.tooLong", {{"field", path}, {"maxLen", std::to_string(max_len)}}});
  return s;
}

Obj::Obj(const json& j, const char* path) : Obj(j, std::string(path)) {}

Obj::Obj(const json& j, std::string path) : j_(&j), path_(std::move(path)) {
  if (!j.is_object())
    fail(code::kInvalidType, path_,
         Message{"error.field.objectGot",
                 {{"field", (path_.empty() ? std::string("request") : path_)},
                  {"type", type_name(j)}}});
}

std::string Obj::field(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}
std::string Obj::field(const char* key) const { return field(std::string(key)); }

bool Obj::has(const char* key) const {
  auto it = j_->find(std::string(key));
  return it != j_->end() && !(null_absent_ && it->is_null());
}

void Obj::mark_used(const char* key) const { used_.insert(key); }

const json& Obj::raw(const char* key) const {
  used_.insert(key);
  auto it = j_->find(std::string(key));
  if (it == j_->end() || (null_absent_ && it->is_null()))
    fail(code::kMissingField, field(key), Message{"error.field.required", {{"field", field(key)}}});
  return *it;
}

uint64_t Obj::u64(const char* key, uint64_t min, uint64_t max) const {
  return read_u64(raw(key), field(key), min, max);
}
uint64_t Obj::u64_or(const char* key, uint64_t fallback, uint64_t min, uint64_t max) const {
  mark_used(key);
  return has(key) ? u64(key, min, max) : fallback;
}
double Obj::num(const char* key, double min, double max) const {
  return read_num(raw(key), field(key), min, max);
}
double Obj::num_or(const char* key, double fallback, double min, double max) const {
  mark_used(key);
  return has(key) ? num(key, min, max) : fallback;
}
bool Obj::boolean(const char* key) const {
  const json& v = raw(key);
  if (!v.is_boolean())
    fail(code::kInvalidType, field(key),
         Message{"error.field.boolGot", {{"field", field(key)}, {"type", type_name(v)}}});
  return v.get<bool>();
}
bool Obj::boolean_or(const char* key, bool fallback) const {
  mark_used(key);
  return has(key) ? boolean(key) : fallback;
}
std::string Obj::str(const char* key, size_t max_len) const {
  return read_str(raw(key), field(key), max_len);
}
std::string Obj::str_or(const char* key, const char* fallback, size_t max_len) const {
  mark_used(key);
  return has(key) ? str(key, max_len) : std::string(fallback);
}
std::string Obj::one_of(const char* key, const std::vector<std::string>& allowed,
                        const std::vector<std::string>* spellings) const {
  const std::string s = str(key);
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  if (spellings && std::find(spellings->begin(), spellings->end(), s) != spellings->end()) return s;
  const std::string near = closest_match(s, spellings ? *spellings : allowed);
  MessageParams p = {{"field", field(key)}, {"value", printable(s)}};
  if (!near.empty()) p.emplace_back("near", near);
  Text msg(near.empty() ? "error.value.unknown" : "error.value.unknownNear", std::move(p));
  std::string values;
  for (size_t i = 0; i < allowed.size(); ++i) values += (i ? ", " : "") + allowed[i];
  if (allowed.empty())
    msg.then_all(Text("expected one of:"));  // (never: every list names its values)
  else
    msg.then(Message{"error.value.expected", {{"values", values}}});
  fail_text(code::kUnknownValue, field(key), msg);
}
std::string Obj::one_of(const char* key, std::initializer_list<const char*> allowed) const {
  return one_of(key, std::vector<std::string>(allowed.begin(), allowed.end()));
}
std::string Obj::one_of_or(const char* key, const std::vector<std::string>& allowed,
                           const char* fallback) const {
  mark_used(key);
  return has(key) ? one_of(key, allowed) : std::string(fallback);
}
std::string Obj::one_of_or(const char* key, std::initializer_list<const char*> allowed,
                           const char* fallback) const {
  mark_used(key);
  return has(key) ? one_of(key, allowed) : std::string(fallback);
}
Obj Obj::obj(const char* key) const {
  Obj o(raw(key), field(key));
  o.null_absent_ = null_absent_;
  return o;
}

const json& Obj::array(const char* key, size_t max_items) const {
  const json& v = raw(key);
  if (!v.is_array())
    fail(code::kInvalidType, field(key),
         Message{"error.field.arrayGot", {{"field", field(key)}, {"type", type_name(v)}}});
  if (v.size() > max_items)
    fail(code::kTooLarge, field(key),
         Message{"error.field.maxItems",
                 {{"field", field(key)}, {"maxItems", std::to_string(max_items)}}});
  return v;
}

void Obj::finish(std::initializer_list<const char*> also_known) const {
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    if (used_.count(it.key())) continue;
    std::vector<std::string> known(used_.begin(), used_.end());
    for (const char* k : also_known) known.emplace_back(k);
    const std::string name = field(printable(it.key()));
    const std::string near = closest_match(it.key(), known);
    if (near.empty())
      fail(code::kUnknownKey, name, Message{"error.field.unknown", {{"field", name}}});
    fail(code::kUnknownKey, name,
         Message{"error.field.unknownNear", {{"field", name}, {"near", near}}});
  }
}

void only_for(const Obj& obj, const char* key, const std::string& value,
              std::initializer_list<const char*> allowed) {
  if (!obj.has(key)) return;
  for (const char* a : allowed)
    if (value == a) return;
  std::string list;
  for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
  fail(code::kInconsistent, obj.field(key),
       Message{"error.strategy.only",
               {{"field", obj.field(key)}, {"strategies", list}, {"strategy", value}}});
}

namespace {

// Whether strategy entry t takes the request key (a parameter bit of kStrategyParams, or
// budgetBytes when its budget is not `none`).
bool takes(const vocab::StrategyTerm& t, const char* key) {
  if (std::string(key) == "budgetBytes") return t.budget != vocab::Budget::none;
  const vocab::StrategyParamTerm* p = vocab::find(vocab::kStrategyParams, key);
  return p && (t.params & p->value) != 0;
}

}  // namespace

void only_for(const Obj& obj, const char* key, vocab::Strategy strategy, bool placement) {
  if (!obj.has(key) || takes(vocab::term(strategy), key)) return;
  std::string list;
  for (const vocab::StrategyTerm& t : vocab::kStrategies)
    if (takes(t, key) && (t.placement || !placement))
      list += std::string(list.empty() ? "" : ", ") + t.name;
  fail(code::kInconsistent, obj.field(key),
       Message{"error.strategy.only",
               {{"field", obj.field(key)},
                {"strategies", list},
                {"strategy", vocab::name_of(strategy)}}});
}

}  // namespace trainmem
