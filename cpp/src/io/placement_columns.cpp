// chain.layers in columnar form (see placement_columns.hpp).
#include "io/placement_columns.hpp"

#include <cmath>
#include <cstring>

#include "trainmem/error.hpp"

namespace trainmem {
namespace {

// The numeric columns, in the order the array form reads a layer's fields.
constexpr const char* kNumeric[] = {"forwardCost", "backwardCost",     "outputBytes",
                                    "savedBytes",  "forwardTempBytes", "backwardTempBytes"};

bool is_numeric_column(const std::string& key) {
  for (const char* k : kNumeric)
    if (key == k) return true;
  return false;
}

// One numeric column: a JSON array, or a binary value of float64s (attach_columns). Values are
// checked as the array form checks a layer's field (io/request.cpp read_u64, read_num); the
// path of a value is built only for its error.
class Column {
 public:
  Column(const json& v, std::string path) : v_(&v), path_(std::move(path)) {
    if (v.is_binary())
      n_ = v.get_binary().size() / sizeof(double);
    else if (v.is_array())
      n_ = v.size();
    else
      fail(code::kInvalidType, path_,
           Message{"error.columns.numbers", {{"field", path_}, {"type", v.type_name()}}});
  }
  size_t size() const { return n_; }
  const std::string& path() const { return path_; }
  uint64_t u64(size_t i) const {
    if (v_->is_array()) {
      const json& e = (*v_)[i];
      if (e.is_number_unsigned() && e.get<uint64_t>() <= kMaxExactJson) return e.get<uint64_t>();
      return read_u64(e, at(i), 0, kMaxExactJson);
    }
    const double d = real(i);
    // 2^53 = kMaxExactJson: every whole double up to it is exact
    if (d >= 0 && d <= 9007199254740992.0 && d == std::floor(d)) return static_cast<uint64_t>(d);
    return read_u64(json(d), at(i), 0, kMaxExactJson);  // the array form's error
  }
  double num(size_t i) const {
    if (v_->is_array()) return read_num((*v_)[i], at(i), 0, 1e300);
    const double d = real(i);
    if (d >= 0 && d <= 1e300) return d;
    return read_num(json(d), at(i), 0, 1e300);
  }

 private:
  std::string at(size_t i) const { return index_path(path_, i); }
  // A float64 of the binary column; NaN and the infinities (which JSON cannot carry) are
  // refused as the JS wrapper refuses them in a request.
  double real(size_t i) const {
    double d;
    std::memcpy(&d, v_->get_binary().data() + i * sizeof d, sizeof d);
    if (!std::isfinite(d)) {
      const char* what = std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
      fail(code::kInvalidNumber, at(i),
           Message{"error.columns.finite", {{"field", at(i)}, {"what", what}}});
    }
    return d;
  }
  const json* v_;
  std::string path_;
  size_t n_ = 0;
};

void same_length(const Column& c, const Column& first) {
  if (c.size() != first.size())
    fail(code::kInconsistent, c.path(),
         Message{"error.columns.lengths",
                 {{"field", c.path()},
                  {"size", std::to_string(c.size())},
                  {"first", first.path()},
                  {"firstSize", std::to_string(first.size())}}});
}

// The names column: strings of at most 256 bytes, one per layer.
void read_names(const Obj& o, size_t n, placement::Chain* chain) {
  if (!o.has("name")) return;
  const std::string path = o.field("name");
  const json& a = o.raw("name");
  if (!a.is_array())
    fail(code::kInvalidType, path,
         Message{"error.columns.strings", {{"field", path}, {"type", a.type_name()}}});
  if (a.size() != n)
    fail(code::kInconsistent, path,
         Message{"error.columns.lengthsCost",
                 {{"field", path},
                  {"size", std::to_string(a.size())},
                  {"forwardCost", o.field("forwardCost")},
                  {"n", std::to_string(n)}}});
  for (size_t i = 0; i < n; ++i) chain->layers[i].name = read_str(a[i], index_path(path, i), 256);
}

}  // namespace

void columnar_layers(const Obj& o, placement::Chain* chain) {
  const Column fwd(o.raw("forwardCost"), o.field("forwardCost"));
  const size_t n = fwd.size();
  if (n > 100000)
    fail(code::kTooLarge, o.path(), Message{"error.columns.tooMany", {{"field", o.path()}}});
  const Column bwd(o.raw("backwardCost"), o.field("backwardCost"));
  const Column out(o.raw("outputBytes"), o.field("outputBytes"));
  const Column saved(o.raw("savedBytes"), o.field("savedBytes"));
  for (const Column* c : {&bwd, &out, &saved}) same_length(*c, fwd);
  const json none = json::array();
  const bool has_ft = o.has("forwardTempBytes"), has_bt = o.has("backwardTempBytes");
  const Column ft(has_ft ? o.raw("forwardTempBytes") : none, o.field("forwardTempBytes"));
  const Column bt(has_bt ? o.raw("backwardTempBytes") : none, o.field("backwardTempBytes"));
  if (has_ft) same_length(ft, fwd);
  if (has_bt) same_length(bt, fwd);
  chain->layers.assign(n, placement::Layer{});
  read_names(o, n, chain);
  o.finish();
  for (size_t i = 0; i < n; ++i) {
    placement::Layer& L = chain->layers[i];
    L.forward_cost = fwd.num(i);
    L.backward_cost = bwd.num(i);
    L.output_bytes = out.u64(i);
    L.saved_bytes = saved.u64(i);
    if (has_ft) L.forward_temp_bytes = ft.u64(i);
    if (has_bt) L.backward_temp_bytes = bt.u64(i);
  }
}

void attach_columns(json& request, const std::vector<std::string>& names,
                    const std::vector<double>& values) {
  if (names.empty() || values.size() % names.size() != 0)
    fail(code::kInternal, "chain.layers", Message{"error.internal.columns", {}});
  json* layers = nullptr;
  if (request.is_object() && request.contains("chain") && request["chain"].is_object() &&
      request["chain"].contains("layers") && request["chain"]["layers"].is_object())
    layers = &request["chain"]["layers"];
  if (!layers) fail(code::kInvalidType, "chain.layers", Message{"error.columns.object", {}});
  const size_t n = values.size() / names.size();
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string path = "chain.layers." + names[k];
    if (!is_numeric_column(names[k]))
      fail(code::kUnknownKey, path, Message{"error.columns.unknown", {{"field", path}}});
    if (layers->contains(names[k]))
      fail(code::kInconsistent, path, Message{"error.columns.twice", {{"field", path}}});
    std::vector<uint8_t> bytes(n * sizeof(double));
    if (n) std::memcpy(bytes.data(), values.data() + k * n, n * sizeof(double));
    (*layers)[names[k]] = json::binary(std::move(bytes));
  }
}

}  // namespace trainmem
