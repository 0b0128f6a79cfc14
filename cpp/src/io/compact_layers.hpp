// Placement chains in packed form. parse_request(text, true) reads `chain.layers` of a
// placement request into fixed-size records instead of one JSON object per layer (a 100,000-
// layer chain was 700,000 map nodes to build, read and free); the array's value in the DOM is
// then a JSON binary value (which JSON text can never produce) holding the records and the
// layer names. Only elements that are plain objects of the known keys with number values (a
// string name) are packed; any other array is read as ordinary JSON, so that its errors are
// the strict reader's. io/placement_request.cpp reads both forms with the same checks.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainmem {
namespace compact {

// The keys of a layer, in the order placement_request.cpp reads them.
inline constexpr const char* kKeys[] = {
    "name",       "forwardCost",      "backwardCost",     "outputBytes",
    "savedBytes", "forwardTempBytes", "backwardTempBytes"};
inline constexpr int kSlots = 7;
inline constexpr int kName = 0;
inline int slot_of(std::string_view key) {
  for (int i = 0; i < kSlots; ++i)
    if (key == kKeys[i]) return i;
  return -1;
}

enum Kind : uint8_t { kUnsigned, kSigned, kFloat };

struct Record {
  uint8_t present = 0;  // bit s: slot s was given
  uint8_t kind[kSlots] = {};
  uint32_t name_at = 0, name_len = 0;  // slot 0: the name's bytes in the names area
  uint64_t bits[kSlots] = {};          // the number (uint64, int64 or double bits)
};

// Layout: uint64 record count, the records, then the names' bytes.
inline nlohmann::json pack(const std::vector<Record>& records, const std::string& names) {
  const uint64_t n = records.size();
  std::vector<uint8_t> bytes(sizeof n + n * sizeof(Record) + names.size());
  std::memcpy(bytes.data(), &n, sizeof n);
  if (n) std::memcpy(bytes.data() + sizeof n, records.data(), n * sizeof(Record));
  if (!names.empty())
    std::memcpy(bytes.data() + sizeof n + n * sizeof(Record), names.data(), names.size());
  return nlohmann::json::binary(std::move(bytes));
}

// A read-only view of a packed array.
class View {
 public:
  explicit View(const nlohmann::json& v) : b_(v.get_binary()) {
    std::memcpy(&n_, b_.data(), sizeof n_);
  }
  size_t size() const { return static_cast<size_t>(n_); }
  Record at(size_t i) const {
    Record r;
    std::memcpy(&r, b_.data() + sizeof n_ + i * sizeof(Record), sizeof r);
    return r;
  }
  std::string name(const Record& r) const {
    const char* base = reinterpret_cast<const char*>(b_.data()) + sizeof n_ + n_ * sizeof(Record);
    return std::string(base + r.name_at, r.name_len);
  }
  // The value of slot s as the JSON number it was written as.
  static nlohmann::json value(const Record& r, int s) {
    if (r.kind[s] == kUnsigned) return nlohmann::json(r.bits[s]);
    if (r.kind[s] == kSigned) return nlohmann::json(static_cast<int64_t>(r.bits[s]));
    double d;
    std::memcpy(&d, &r.bits[s], sizeof d);
    return nlohmann::json(d);
  }

 private:
  const nlohmann::json::binary_t& b_;
  uint64_t n_ = 0;
};

}  // namespace compact
}  // namespace trainmem
