#include "io/request.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace trainmem {
namespace {

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

std::string index_path(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

uint64_t read_u64(const json& v, const std::string& path, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  if (v.is_number_unsigned()) {
    value = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    const int64_t s = v.get<int64_t>();
    if (s < 0)
      fail(code::kOutOfRange, path,
           {path, " must be at least ", std::to_string(min), ", got ", std::to_string(s)});
    value = static_cast<uint64_t>(s);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(code::kOutOfRange, path, {path, " must be a finite number"});
    if (d < 0) fail(code::kOutOfRange, path, {path, " must be at least ", std::to_string(min)});
    if (d != std::floor(d)) fail(code::kNotInteger, path, {path, " must be a whole number"});
    if (d >= 18446744073709551616.0)
      fail(code::kOutOfRange, path, {path, " must be at most ", std::to_string(max)});
    value = static_cast<uint64_t>(d);
  } else {
    fail(code::kInvalidType, path, {path, " must be a whole number, got ", type_name(v)});
  }
  if (value < min || value > max)
    fail(code::kOutOfRange, path,
         {path, " must be between ", std::to_string(min), " and ", std::to_string(max), ", got ",
          std::to_string(value)});
  return value;
}

double read_num(const json& v, const std::string& path, double min, double max) {
  if (!v.is_number())
    fail(code::kInvalidType, path, {path, " must be a number, got ", type_name(v)});
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(code::kOutOfRange, path, {path, " must be a finite number"});
  if (d < min || d > max) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " must be between %.10g and %.10g, got %.10g", min, max, d);
    fail(code::kOutOfRange, path, {path, buf});
  }
  return d;
}

std::string read_str(const json& v, const std::string& path, size_t max_len) {
  if (!v.is_string())
    fail(code::kInvalidType, path, {path, " must be a string, got ", type_name(v)});
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_len)
    fail(code::kTooLarge, path, {path, " is longer than ", std::to_string(max_len), " characters"});
  return s;
}

namespace {
[[noreturn]] void exceeds_2_63(std::string_view field) {
  fail(code::kTooLarge, field, {field, ": result exceeds 2^63"});
}
}  // namespace

// (Two overloads each: a literal field name would otherwise be built as a std::string at every
// call, even when nothing overflows.)
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& field) {
  if (a != 0 && b > kMaxCount / a) exceeds_2_63(field);
  return a * b;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& field) {
  if (a > kMaxCount || b > kMaxCount - a) exceeds_2_63(field);
  return a + b;
}

uint64_t checked_mul(uint64_t a, uint64_t b, const char* field) {
  if (a != 0 && b > kMaxCount / a) exceeds_2_63(field);
  return a * b;
}

uint64_t checked_add(uint64_t a, uint64_t b, const char* field) {
  if (a > kMaxCount || b > kMaxCount - a) exceeds_2_63(field);
  return a + b;
}

namespace {

// SAX front end of nlohmann's DOM builder: tracks the field path of the value being read, so
// that a number overflow or a duplicate key names its field, and bounds depth and size
// before anything deep or huge is built. nlohmann's SAX parser itself is iterative.
class RequestSax {
 public:
  explicit RequestSax(json* root) : dom_(*root) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& s) {
    return value() && dom_.number_float(v, s);
  }
  bool string(std::string& v) { return value() && dom_.string(v); }
  bool binary(json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    value();
    push(false);
    return dom_.start_object(n);
  }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    f.key = k;
    if (!f.keys.insert(k).second)
      fail(code::kInvalidJson, path(false), {path(false), " appears twice in one object"});
    return dom_.key(k);
  }
  bool end_object() {
    stack_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    value();
    push(true);
    return dom_.start_array(n);
  }
  bool end_array() {
    stack_.pop_back();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& ex) {
    if (ex.id == 406) {  // out_of_range.406: a number beyond the range of a double
      const std::string field = path(true);
      fail(code::kOutOfRange, field,
           {(field.empty() ? std::string("request") : field),
            " is a number beyond the range of a double (", token.substr(0, 40), ")"});
    }
    return dom_.parse_error(position, token, ex);
  }

 private:
  struct Frame {
    bool array;
    size_t index;  // array: elements started so far
    std::string key;
    std::set<std::string> keys;
  };

  // Called when a value starts: counts it, and advances the enclosing array's index.
  bool value() {
    if (++values_ > kMaxRequestValues)
      fail(code::kTooLarge, "",
           {"request has more than ", std::to_string(kMaxRequestValues), " JSON values"});
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }
  void push(bool array) {
    if (stack_.size() >= kMaxRequestDepth)
      fail(code::kTooLarge, path(false),
           {"request nested deeper than ", std::to_string(kMaxRequestDepth), " levels"});
    stack_.push_back(Frame{array, 0, std::string(), {}});
  }
  // Dotted path of the current value; `pending`: the value has not started yet (its array
  // index is one past the last counted).
  std::string path(bool pending) const {
    std::string p;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.array) {
        const bool last = i + 1 == stack_.size();
        const size_t idx = f.index + (last && pending ? 1 : 0);
        if (idx == 0) break;  // no element yet
        p = index_path(p, idx - 1);
      } else {
        if (f.key.empty() && f.keys.empty()) break;
        p += (p.empty() ? "" : ".") + printable(f.key);
      }
    }
    return p;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<Frame> stack_;
  size_t values_ = 0;
};

}  // namespace

json parse_request(const std::string& text) {
  if (text.size() > kMaxRequestBytes)
    fail(code::kTooLarge, "",
         {"request is larger than ", std::to_string(kMaxRequestBytes >> 20), " MiB"});
  json root;
  RequestSax sax(&root);
  try {
    json::sax_parse(text, &sax);
  } catch (const json::exception& e) {
    // nlohmann quotes the last token read, which may be a whole (long) string: cut it short.
    std::string what = e.what();
    if (what.size() > 240) what = what.substr(0, 240) + "...'";
    fail(code::kInvalidJson, "", {"request is not valid JSON: ", what});
  }
  return root;
}

Obj::Obj(const json& j, const char* path) : Obj(j, std::string(path)) {}

Obj::Obj(const json& j, std::string path) : j_(&j), path_(std::move(path)) {
  if (!j.is_object())
    fail(code::kInvalidType, path_,
         {(path_.empty() ? std::string("request") : path_), " must be an object, got ",
          type_name(j)});
}

std::string Obj::field(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}
std::string Obj::field(const char* key) const { return field(std::string(key)); }

bool Obj::has(const char* key) const {
  auto it = j_->find(std::string(key));
  return it != j_->end() && !it->is_null();
}

void Obj::mark_used(const char* key) const { used_.insert(key); }

const json& Obj::raw(const char* key) const {
  used_.insert(key);
  auto it = j_->find(std::string(key));
  if (it == j_->end() || it->is_null())
    fail(code::kMissingField, field(key), {field(key), " is required"});
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
         {field(key), " must be true or false, got ", type_name(v)});
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
  std::string msg = field(key) + ": unknown value \"" + printable(s) + "\"";
  const std::string near = closest_match(s, spellings ? *spellings : allowed);
  if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
  msg += "; expected one of:";
  for (size_t i = 0; i < allowed.size(); ++i) msg += (i ? ", " : " ") + allowed[i];
  fail(code::kUnknownValue, field(key), msg);
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
Obj Obj::obj(const char* key) const { return Obj(raw(key), field(key)); }

const json& Obj::array(const char* key, size_t max_items) const {
  const json& v = raw(key);
  if (!v.is_array())
    fail(code::kInvalidType, field(key), {field(key), " must be an array, got ", type_name(v)});
  if (v.size() > max_items)
    fail(code::kTooLarge, field(key),
         {field(key), " has more than ", std::to_string(max_items), " items"});
  return v;
}

void Obj::finish(std::initializer_list<const char*> also_known) const {
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    if (used_.count(it.key())) continue;
    std::vector<std::string> known(used_.begin(), used_.end());
    for (const char* k : also_known) known.emplace_back(k);
    std::string msg = field(printable(it.key())) + " is not a known input";
    const std::string near = closest_match(it.key(), known);
    if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
    fail(code::kUnknownKey, field(printable(it.key())), msg);
  }
}

void only_for(const Obj& obj, const char* key, const std::string& strategy,
              std::initializer_list<const char*> allowed) {
  if (!obj.has(key)) return;
  for (const char* a : allowed)
    if (strategy == a) return;
  std::string list;
  for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
  fail(code::kInconsistent, obj.field(key),
       {obj.field(key), " applies to strategy ", list, " only, not ", strategy});
}

}  // namespace trainmem
