// parse_request (io/request.hpp): a strict RFC 8259 JSON reader that builds nlohmann's DOM.
// It replaced nlohmann's own parser behind a SAX front end (issue "bounded work"): that lexer
// read a 13 MB, 100,000-layer placement chain at ~80 MB/s natively (2.3 s in WebAssembly
// with the DOM), most of it per-character buffering and strtoull/strtod calls. This one scans
// strings and whole numbers in place (floats by Clinger's exact fast path, else strtod), so
// that the request limits (16 MiB, 1,000,000 values) are read well inside the 1 s work bound.
//
// Semantics kept from nlohmann 3.11 (lexer.hpp, parser.hpp): a UTF-8 BOM at the start is
// skipped; strings must be valid UTF-8 (RFC 3629) with no raw control characters; \u escapes
// pair surrogates; a whole number that fits uint64 (int64 when negative) is an integer, any
// other number a double; a number beyond double range is refused (here: out_of_range naming
// its field). Added: a key twice in one object is invalid_json naming it; nesting deeper than
// kMaxRequestDepth or more than kMaxRequestValues values is too_large, checked before anything
// deep or large is built.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/compact_layers.hpp"
#include "io/request.hpp"

namespace trainmem {
namespace {

class Parser {
 public:
  Parser(const std::string& text, bool compact)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), compact_(compact) {
    levels_.reserve(kMaxRequestDepth + 1);  // never moves: object() holds a key by reference
  }

  json run() {
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;  // BOM
    json root;
    ws();
    if (p_ == end_) syntax("error.json.what.empty");
    value(root);
    ws();
    if (p_ != end_) syntax("error.json.what.trailing");
    return root;
  }

 private:
  // The field path of the value being read (errors only): keys and array indices.
  struct Level {
    bool array = false;
    size_t index = 0;
    std::string key;
  };

  std::string path() const {
    std::string out;
    for (size_t i = 0; i < depth_; ++i) {
      const Level& l = levels_[i];
      if (l.array) {
        out = index_path(out, l.index);
      } else {
        std::string k;
        for (char c : l.key.substr(0, 64)) k += (c >= 0x20 && c < 0x7f) ? c : '?';
        if (l.key.size() > 64) k += "...";
        out += (out.empty() ? "" : ".") + k;
      }
    }
    return out;
  }

  // what: the catalog's phrase for the fault (error.json.what.*)
  [[noreturn]] void syntax(const char* what) const {
    fail(code::kInvalidJson, "",
         Message{"error.json.invalid", {{"byte", std::to_string(p_ - begin_)}}}.with(
             "what", {Message{what, {}}}));
  }

  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  void count_value() {
    if (++values_ > kMaxRequestValues)
      fail(code::kTooLarge, "",
           Message{"error.json.values", {{"max", std::to_string(kMaxRequestValues)}}});
  }

  void value(json& out) {
    count_value();
    if (p_ == end_) syntax("error.json.what.end");
    switch (*p_) {
      case '{':
        return object(out);
      case '[':
        return array(out);
      case '"': {
        ++p_;
        out = json::value_t::string;
        return string(out.get_ref<std::string&>());
      }
      case 't':
        return literal("true", out, json(true));
      case 'f':
        return literal("false", out, json(false));
      case 'n':
        return literal("null", out, json(nullptr));
      default:
        return number(out);
    }
  }

  void literal(const char* word, json& out, json v) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0)
      syntax("error.json.what.literal");
    p_ += n;
    out = std::move(v);
  }

  void enter(bool is_array) {
    if (levels_.size() >= kMaxRequestDepth)
      fail(code::kTooLarge, path(),
           Message{"error.json.depth", {{"max", std::to_string(kMaxRequestDepth)}}});
    if (depth_ == levels_.size()) levels_.emplace_back();
    Level& l = levels_[depth_];
    l.array = is_array;
    l.index = 0;
    l.key.clear();
    ++depth_;
  }

  void object(json& out) {
    ++p_;
    out = json::value_t::object;
    auto& obj = out.get_ref<json::object_t&>();
    enter(false);
    ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      --depth_;
      return;
    }
    std::string& key = levels_[depth_ - 1].key;
    for (;;) {
      if (p_ == end_ || *p_ != '"') syntax("error.json.what.key");
      ++p_;
      key.clear();
      string(key);
      ws();
      if (p_ == end_ || *p_ != ':') syntax("error.json.what.colon");
      ++p_;
      ws();
      auto ins = obj.emplace(key, json());
      if (!ins.second)
        fail(code::kInvalidJson, path(), Message{"error.json.duplicate", {{"field", path()}}});
      if (!(compact_ && at_chain_layers() && compact_layers(ins.first->second)))
        value(ins.first->second);
      ws();
      if (p_ == end_) syntax("error.json.what.endObject");
      if (*p_ == ',') {
        ++p_;
        ws();
        continue;
      }
      if (*p_ != '}') syntax("error.json.what.objectSep");
      ++p_;
      break;
    }
    --depth_;
  }

  void array(json& out) {
    ++p_;
    out = json::value_t::array;
    auto& arr = out.get_ref<json::array_t&>();
    enter(true);
    ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      --depth_;
      return;
    }
    for (;;) {
      levels_[depth_ - 1].index = arr.size();
      arr.emplace_back();
      value(arr.back());
      ws();
      if (p_ == end_) syntax("error.json.what.endArray");
      if (*p_ == ',') {
        ++p_;
        ws();
        continue;
      }
      if (*p_ != ']') syntax("error.json.what.arraySep");
      ++p_;
      break;
    }
    --depth_;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  uint32_t hex4() {
    if (end_ - p_ < 4) syntax("error.json.what.uTruncated");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) syntax("error.json.what.uInvalid");
      v = v * 16 + static_cast<uint32_t>(h);
    }
    p_ += 4;
    return v;
  }

  static void put_utf8(uint32_t cp, std::string& s) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  void escape(std::string& s) {
    if (p_ == end_) syntax("error.json.what.unterminated");
    const char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        s += c;
        return;
      case 'b':
        s += '\b';
        return;
      case 'f':
        s += '\f';
        return;
      case 'n':
        s += '\n';
        return;
      case 'r':
        s += '\r';
        return;
      case 't':
        s += '\t';
        return;
      case 'u':
        break;
      default:
        syntax("error.json.what.escape");
    }
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) syntax("error.json.what.loneLow");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') syntax("error.json.what.highLow");
      p_ += 2;
      const uint32_t lo = hex4();
      if (lo < 0xDC00 || lo > 0xDFFF) syntax("error.json.what.highLow");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    put_utf8(cp, s);
  }

  // One UTF-8 sequence starting at p_ (RFC 3629 Table 3-7 well-formed byte sequences).
  void utf8(std::string& s) {
    const auto b = [&](ptrdiff_t i) { return static_cast<uint8_t>(p_[i]); };
    const uint8_t c = b(0);
    int n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      syntax("error.json.what.utf8");
    }
    if (end_ - p_ <= n) syntax("error.json.what.utf8");
    if (b(1) < lo || b(1) > hi) syntax("error.json.what.utf8");
    for (int i = 2; i <= n; ++i)
      if (b(i) < 0x80 || b(i) > 0xBF) syntax("error.json.what.utf8");
    s.append(p_, static_cast<size_t>(n + 1));
    p_ += n + 1;
  }

  // The rest of a string after its opening quote, appended to s.
  void string(std::string& s) {
    for (;;) {
      const char* run = p_;
      while (p_ != end_) {
        const auto c = static_cast<uint8_t>(*p_);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++p_;
      }
      s.append(run, static_cast<size_t>(p_ - run));
      if (p_ == end_) syntax("error.json.what.unterminated");
      const auto c = static_cast<uint8_t>(*p_);
      if (c == '"') {
        ++p_;
        return;
      }
      if (c == '\\') {
        ++p_;
        escape(s);
      } else if (c < 0x20) {
        syntax("error.json.what.control");
      } else {
        utf8(s);
      }
    }
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  void number(json& out) {
    const char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || !digit(*p_)) syntax("error.json.what.value");
    // Whole part (a leading 0 stands alone), accumulated while it fits 64 bits.
    uint64_t whole = 0;
    bool overflow = false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && digit(*p_)) {
        const uint64_t d = static_cast<uint64_t>(*p_ - '0');
        if (whole > (UINT64_MAX - d) / 10) overflow = true;
        whole = whole * 10 + d;
        ++p_;
      }
    }
    bool is_float = false;
    if (p_ != end_ && *p_ == '.') {
      is_float = true;
      ++p_;
      if (p_ == end_ || !digit(*p_)) syntax("error.json.what.decimal");
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_float = true;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) syntax("error.json.what.exponent");
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (!is_float && !overflow) {
      if (!negative) {
        out = json(static_cast<json::number_unsigned_t>(whole));
        return;
      }
      if (whole <= (uint64_t{1} << 63)) {
        out = json(static_cast<json::number_integer_t>(0 - whole));
        return;
      }
    }
    const double d = to_double(start, static_cast<size_t>(p_ - start));
    if (!std::isfinite(d)) {
      const std::string field = path();
      fail(code::kOutOfRange, field,
           Message{"error.json.range",
                   {{"field", (field.empty() ? std::string("request") : field)},
                    {"text",
                     std::string(start, std::min<size_t>(40, static_cast<size_t>(p_ - start)))}}});
    }
    out = json(static_cast<json::number_float_t>(d));
  }

  // Clinger's fast path (an integer mantissa of at most 15 digits scaled by 10^k, |k| <= 22,
  // is exact in one rounding: both factors are exact doubles); else strtod, correctly rounded.
  double to_double(const char* s, size_t n) {
    static const double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char* p = s;
    const char* e = s + n;
    const bool neg = *p == '-';
    if (neg) ++p;
    uint64_t m = 0;
    int digits = 0, scale = 0;
    bool seen_nonzero = false;
    for (; p != e && (digit(*p) || *p == '.'); ++p) {
      if (*p == '.') continue;
      if (*p != '0') seen_nonzero = true;
      if (seen_nonzero) ++digits;
      if (digits > 15) break;
      m = m * 10 + static_cast<uint64_t>(*p - '0');
    }
    if (digits <= 15) {
      // decimals after the point scale the mantissa down
      const char* dot = static_cast<const char*>(std::memchr(s, '.', n));
      const char* exp_at = p;
      if (dot) scale -= static_cast<int>((exp_at - dot) - 1);
      if (exp_at != e) {  // 'e' or 'E'
        const char* q = exp_at + 1;
        const bool eneg = *q == '-';
        if (*q == '+' || *q == '-') ++q;
        int ev = 0;
        for (; q != e && ev < 10000; ++q) ev = ev * 10 + (*q - '0');
        scale += eneg ? -ev : ev;
      }
      if (m == 0) return neg ? -0.0 : 0.0;
      if (scale >= -22 && scale <= 22) {
        double v = static_cast<double>(m);
        v = scale < 0 ? v / kPow10[-scale] : v * kPow10[scale];
        return neg ? -v : v;
      }
    }
    buffer_.assign(s, n);
    return std::strtod(buffer_.c_str(), nullptr);
  }

  // ---- placement's chain.layers, read into packed records (io/compact_layers.hpp) ----
  bool at_chain_layers() const {
    return depth_ == 2 && !levels_[0].array && levels_[0].key == "chain" &&
           levels_[1].key == "layers";
  }

  // A plain string key or value (no escapes, ASCII) at p_ (after its quote): its text, or
  // false (p_ unspecified) when it is anything else.
  bool plain_string(const char** s, size_t* n) {
    const char* run = p_;
    while (p_ != end_) {
      const auto c = static_cast<uint8_t>(*p_);
      if (c == '"') {
        *s = run;
        *n = static_cast<size_t>(p_ - run);
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    return false;
  }

  // One layer object at p_ into r (names appended to names); false when it holds anything the
  // packed form does not (an unknown or repeated key, a value of another type, an escape, a
  // nested value): the caller then reads the whole array as ordinary JSON.
  bool compact_layer(compact::Record* r, std::string* names) {
    if (p_ == end_ || *p_ != '{') return false;
    ++p_;
    count_value();
    ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      const char* k;
      size_t kn;
      if (p_ == end_ || *p_ != '"') return false;
      ++p_;
      if (!plain_string(&k, &kn)) return false;
      const int slot = compact::slot_of(std::string_view(k, kn));
      if (slot < 0 || (r->present >> slot & 1)) return false;
      ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      ws();
      if (p_ == end_) return false;
      count_value();
      if (slot == compact::kName) {
        const char* s;
        size_t n;
        if (*p_ != '"') return false;
        ++p_;
        if (!plain_string(&s, &n)) return false;
        r->name_at = static_cast<uint32_t>(names->size());
        r->name_len = static_cast<uint32_t>(n);
        names->append(s, n);
      } else {
        if (*p_ != '-' && !digit(*p_)) return false;
        json v;
        try {
          number(v);
        } catch (const RequestError&) {
          return false;  // read again as JSON, which names the field
        }
        if (v.is_number_unsigned()) {
          r->kind[slot] = compact::kUnsigned;
          r->bits[slot] = v.get<uint64_t>();
        } else if (v.is_number_integer()) {
          r->kind[slot] = compact::kSigned;
          r->bits[slot] = static_cast<uint64_t>(v.get<int64_t>());
        } else {
          const double d = v.get<double>();
          r->kind[slot] = compact::kFloat;
          std::memcpy(&r->bits[slot], &d, sizeof d);
        }
      }
      r->present |= static_cast<uint8_t>(1u << slot);
      ws();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        ws();
        continue;
      }
      if (*p_ != '}') return false;
      ++p_;
      return true;
    }
  }

  // chain.layers as packed records (compact::pack) when every element allows it; else false
  // with the reader back at the array's start.
  bool compact_layers(json& out) {
    const char* start = p_;
    const size_t values = values_;
    if (p_ == end_ || *p_ != '[') return false;
    ++p_;
    count_value();
    std::vector<compact::Record> records;
    std::string names;
    ws();
    bool ok = true;
    if (p_ != end_ && *p_ == ']') {
      ++p_;
    } else {
      for (;;) {
        compact::Record r;
        if (!compact_layer(&r, &names)) {
          ok = false;
          break;
        }
        records.push_back(r);
        ws();
        if (p_ != end_ && *p_ == ',') {
          ++p_;
          ws();
          continue;
        }
        if (p_ != end_ && *p_ == ']') {
          ++p_;
          break;
        }
        ok = false;
        break;
      }
    }
    if (!ok) {
      p_ = start;
      values_ = values;
      return false;
    }
    out = compact::pack(records, names);
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const bool compact_;
  std::vector<Level> levels_;
  size_t depth_ = 0;
  size_t values_ = 0;
  std::string buffer_;
};

}  // namespace

json parse_request(const std::string& text, bool compact_chain) {
  if (text.size() > kMaxRequestBytes)
    fail(code::kTooLarge, "",
         Message{"error.json.size", {{"max", std::to_string(kMaxRequestBytes >> 20)}}});
  return Parser(text, compact_chain).run();
}

}  // namespace trainmem
