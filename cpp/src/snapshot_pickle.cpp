// A restricted unpickler for PyTorch memory snapshots. It runs the pickle machine of
// CPython's Lib/pickle.py (_Unpickler: stack, metastack of MARKs, memo) for the plain-data
// opcodes of protocols 2-5 only, and turns the snapshot's dicts into typed records as soon as
// they are complete (when appended to their list), so that a file of several hundred MB never
// exists as an object graph: a trace entry becomes a 40-byte Event, a frame dict an interned
// Frame, a frames list an interned stack. Strings are interned by content.
// Schema: torch/csrc/cuda/memory_snapshot.cpp @00067369c9339bed950762afec327514d6fa2566
// (_memory_snapshot_pickled: keys of segments, blocks, trace entries, allocator_settings).
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "trainmem/error.hpp"
#include "trainmem/snapshot.hpp"

namespace trainmem {
namespace snapshot {
namespace {

enum class T : uint8_t {
  kNone,
  kBool,
  kInt,
  kUInt,
  kBigInt,
  kFloat,
  kStr,
  kBytes,
  kList,
  kDict,
  kTuple
};

struct V {
  T t = T::kNone;
  uint32_t a = 0;  // string id or container id
  uint64_t u = 0;  // int64 bits, uint64, double bits, bool
};

// kBusy: a dict being converted; its own items are read, but it cannot be converted again from
// inside (a trace entry listed in its own frames: found by the fuzzer,
// tests/fuzz/regressions_snapshot).
enum class Conv : uint8_t { kNone, kBusy, kFrame, kStack, kEvents, kBlock, kSegment };

struct Container {
  T kind = T::kList;
  Conv conv = Conv::kNone;
  uint32_t ref = 0;  // items slot (kNone) or the converted record's index
};

const char* opcode_name(uint8_t op) {
  switch (op) {
    case '(':
      return "MARK";
    case '.':
      return "STOP";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'F':
      return "FLOAT";
    case 'I':
      return "INT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'L':
      return "LONG";
    case 'M':
      return "BININT2";
    case 'N':
      return "NONE";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'R':
      return "REDUCE";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'X':
      return "BINUNICODE";
    case 'a':
      return "APPEND";
    case 'b':
      return "BUILD";
    case 'c':
      return "GLOBAL";
    case 'd':
      return "DICT";
    case '}':
      return "EMPTY_DICT";
    case 'e':
      return "APPENDS";
    case 'g':
      return "GET";
    case 'h':
      return "BINGET";
    case 'i':
      return "INST";
    case 'j':
      return "LONG_BINGET";
    case 'l':
      return "LIST";
    case ']':
      return "EMPTY_LIST";
    case 'o':
      return "OBJ";
    case 'p':
      return "PUT";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 's':
      return "SETITEM";
    case 't':
      return "TUPLE";
    case ')':
      return "EMPTY_TUPLE";
    case 'u':
      return "SETITEMS";
    case 'G':
      return "BINFLOAT";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x80:
      return "PROTO";
    case 0x81:
      return "NEWOBJ";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

// Opcodes that import, call or build objects (Lib/pickle.py: find_class / REDUCE / BUILD …).
bool forbidden(uint8_t op) {
  switch (op) {
    case 'P':
    case 'Q':
    case 'R':
    case 'b':
    case 'c':
    case 'i':
    case 'o':
    case 0x81:
    case 0x82:
    case 0x83:
    case 0x84:
    case 0x92:
    case 0x93:
      return true;
    default:
      return false;
  }
}

constexpr const char* kField = "snapshot";

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {
    for (const char* k : {"action",
                          "addr",
                          "size",
                          "stream",
                          "frames",
                          "time_us",
                          "device_free",
                          "filename",
                          "line",
                          "name",
                          "state",
                          "total_size",
                          "blocks",
                          "address",
                          "requested_size",
                          "allocated_size",
                          "active_size",
                          "segment_type",
                          "is_expandable",
                          "device",
                          "segments",
                          "device_traces",
                          "allocator_settings",
                          "PYTORCH_CUDA_ALLOC_CONF",
                          "max_split_size",
                          "garbage_collection_threshold",
                          "expandable_segments",
                          "large"})
      intern(k, std::strlen(k));
  }

  Snapshot run() {
    if (b_.size() > kMaxFileBytes)
      fail(code::kTooLarge, kField,
           {"snapshot file is over 1 GiB (", std::to_string(b_.size()), " B)"});
    if (b_.empty()) fail(code::kInvalidJson, kField, "snapshot file is empty: not a valid pickle");
    if (static_cast<uint8_t>(b_[0]) != 0x80)
      fail(code::kInvalidJson, kField,
           "snapshot file is not a pickle (it does not start with the PROTO opcode 0x80); "
           "torch.cuda.memory._dump_snapshot writes one");
    for (;;) {
      op_at_ = pos_;
      const uint8_t op = byte();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      bad({"STOP at byte ", std::to_string(op_at_), " leaves ", std::to_string(stack_.size()),
           " values and ", std::to_string(marks_.size()), " open MARKs (expected one value)"});
    return finish(stack_.back());
  }

 private:
  // ---------------------------------------------------------------- errors
  [[noreturn]] void bad(std::initializer_list<std::string_view> m) const {
    std::string msg = "snapshot is not a valid pickle: ";
    for (auto p : m) msg += p;
    fail(code::kInvalidJson, kField, msg);
  }
  [[noreturn]] void truncated() const {
    fail(code::kInvalidJson, kField,
         {"snapshot is not a valid pickle: truncated at byte ", std::to_string(b_.size()),
          " (inside the opcode at byte ", std::to_string(op_at_),
          "); was the file copied completely?"});
  }
  [[noreturn]] void limit(const char* what, uint64_t max) const {
    fail(code::kTooLarge, kField,
         {"snapshot: more than ", std::to_string(max), " ", what, " (at byte ",
          std::to_string(op_at_), ")"});
  }
  [[noreturn]] void type_error(const std::string& field, const char* want) const {
    fail(code::kInvalidType, field,
         {field, " must be ", want, " (the value ending before byte ", std::to_string(pos_), ")"});
  }

  // ---------------------------------------------------------------- input
  uint8_t byte() {
    if (pos_ >= b_.size()) truncated();
    return static_cast<uint8_t>(b_[pos_++]);
  }
  uint64_t le(int n) {
    if (b_.size() - pos_ < static_cast<size_t>(n)) truncated();
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view take(uint64_t n) {
    if (n > b_.size() - pos_) truncated();
    std::string_view s = b_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }

  // ---------------------------------------------------------------- values
  uint32_t intern(const char* p, size_t n) {
    const std::string_view key(p, n);
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    pool_bytes_ += n;
    if (pool_bytes_ > kMaxStringPoolBytes) limit("bytes of distinct strings", kMaxStringPoolBytes);
    strings_.emplace_back(p, n);
    const uint32_t id = static_cast<uint32_t>(strings_.size() - 1);
    ids_.emplace(std::string_view(strings_.back()), id);
    return id;
  }

  void push(V v) {
    if (stack_.size() >= kMaxStackValues) limit("values on the unpickler stack", kMaxStackValues);
    stack_.push_back(v);
  }
  V pop() {
    if (stack_.size() <= base())
      bad({"stack underflow at byte ", std::to_string(op_at_), " (", opcode_name(b_[op_at_]), ")"});
    V v = stack_.back();
    stack_.pop_back();
    return v;
  }
  V& top() {
    if (stack_.size() <= base())
      bad({"stack underflow at byte ", std::to_string(op_at_), " (", opcode_name(b_[op_at_]), ")"});
    return stack_.back();
  }
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  size_t pop_mark() {
    if (marks_.empty()) bad({"no MARK for the opcode at byte ", std::to_string(op_at_)});
    const size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }

  uint32_t new_container(T kind) {
    if (containers_.size() >= kMaxContainers) limit("lists, dicts and tuples", kMaxContainers);
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    containers_.push_back({kind, Conv::kNone, slot});
    return static_cast<uint32_t>(containers_.size() - 1);
  }
  std::vector<V>& items(uint32_t c) { return slots_[containers_[c].ref]; }
  // Every items() access is on a container that is kNone (or kBusy, read by its converter):
  // once released, a slot belongs to the next container.
  void release(uint32_t c, Conv conv, uint32_t ref) {
    if (containers_[c].conv != Conv::kNone && containers_[c].conv != Conv::kBusy) return;
    // Keep the capacity: the slot is reused by the next container (few slots are live at once).
    auto& slot = slots_[containers_[c].ref];
    if (slot.capacity() > 4096)
      std::vector<V>().swap(slot);
    else
      slot.clear();
    free_slots_.push_back(containers_[c].ref);
    containers_[c].conv = conv;
    containers_[c].ref = ref;
  }

  void push_container(T kind, size_t from) {
    const uint32_t c = new_container(kind);
    auto& it = items(c);
    it.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    push({kind, c, 0});
  }

  // ---------------------------------------------------------------- the machine
  void step(uint8_t op) {
    if (forbidden(op))
      fail(code::kUnsupported, kField,
           {"snapshot contains the pickle opcode ", opcode_name(op), " at byte ",
            std::to_string(op_at_),
            ": it imports or calls code, which a memory snapshot never needs (only plain "
            "dicts, lists, tuples, strings, bytes, numbers, booleans and None are read)"});
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t p = byte();
        if (op_at_ != 0) bad({"PROTO at byte ", std::to_string(op_at_), " (only at the start)"});
        if (p < 2 || p > 5)
          fail(code::kUnsupported, kField,
               {"snapshot pickle protocol ", std::to_string(p), " is not read (2 to 5 are)"});
        protocol_ = p;
        return;
      }
      case 0x95: {  // FRAME: a length hint
        const uint64_t n = le(8);
        if (n > b_.size() - pos_) truncated();
        return;
      }
      case '(': {
        if (marks_.size() >= kMaxNesting) limit("nested MARKs (nesting depth)", kMaxNesting);
        marks_.push_back(stack_.size());
        return;
      }
      case '0':
        if (stack_.size() > base())
          stack_.pop_back();
        else
          pop_mark();  // Lib/pickle.py load_pop: an empty top frame pops the MARK
        return;
      case '1':
        stack_.resize(pop_mark());
        return;
      case '2':
        push(top());
        return;
      case 'N':
        push({});
        return;
      case 0x88:
        push({T::kBool, 0, 1});
        return;
      case 0x89:
        push({T::kBool, 0, 0});
        return;
      case 'J': {
        const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
        push({T::kInt, 0, static_cast<uint64_t>(static_cast<int64_t>(v))});
        return;
      }
      case 'K':
        push({T::kInt, 0, le(1)});
        return;
      case 'M':
        push({T::kInt, 0, le(2)});
        return;
      case 0x8a:
        long_bytes(le(1));
        return;
      case 0x8b:
        long_bytes(le(4));
        return;
      case 'G': {  // big-endian IEEE double
        if (b_.size() - pos_ < 8) truncated();
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(b_[pos_ + i]);
        pos_ += 8;
        push({T::kFloat, 0, v});
        return;
      }
      case 0x8c:
        str(T::kStr, le(1));
        return;
      case 'X':
        str(T::kStr, le(4));
        return;
      case 0x8d:
        str(T::kStr, le(8));
        return;
      case 'U':
        str(T::kStr, le(1));
        return;  // Python 2 str, read as text
      case 'T':
        str(T::kStr, le(4));
        return;
      case 'C':
        str(T::kBytes, le(1));
        return;
      case 'B':
        str(T::kBytes, le(4));
        return;
      case 0x8e:
        str(T::kBytes, le(8));
        return;
      case 0x96:
        str(T::kBytes, le(8));
        return;
      case ']':
        push({T::kList, new_container(T::kList), 0});
        return;
      case '}':
        push({T::kDict, new_container(T::kDict), 0});
        return;
      case ')':
        push({T::kTuple, new_container(T::kTuple), 0});
        return;
      case 'l':
        push_container(T::kList, pop_mark());
        return;
      case 't':
        push_container(T::kTuple, pop_mark());
        return;
      case 'd': {
        const size_t m = pop_mark();
        if ((stack_.size() - m) % 2)
          bad({"DICT at byte ", std::to_string(op_at_), " has a key without a value"});
        push_container(T::kDict, m);
        return;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        const size_t n = op - 0x84u;
        if (stack_.size() < base() + n)
          bad({"stack underflow at byte ", std::to_string(op_at_), " (", opcode_name(op), ")"});
        push_container(T::kTuple, stack_.size() - n);
        return;
      }
      case 'a': {
        const V item = pop();
        append(target(T::kList), &item, 1);
        return;
      }
      case 'e': {
        const size_t m = pop_mark();
        const size_t n = stack_.size() - m;
        append(target_at(m, T::kList), stack_.data() + m, n);
        stack_.resize(m);
        return;
      }
      case 's': {
        const V val = pop();
        const V key = pop();
        const uint32_t c = target(T::kDict);
        auto& it = items(c);
        it.push_back(key);
        it.push_back(val);
        return;
      }
      case 'u': {
        const size_t m = pop_mark();
        if ((stack_.size() - m) % 2)
          bad({"SETITEMS at byte ", std::to_string(op_at_), " has a key without a value"});
        const uint32_t c = target_at(m, T::kDict);
        auto& it = items(c);
        it.insert(it.end(), stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
        stack_.resize(m);
        return;
      }
      case 0x94:
        memo_put(memo_.size());
        return;  // MEMOIZE
      case 'q':
        memo_put(le(1));
        return;
      case 'r':
        memo_put(le(4));
        return;
      case 'h':
        memo_get(le(1));
        return;
      case 'j':
        memo_get(le(4));
        return;
      default:
        break;
    }
    if (const char* name = opcode_name(op))
      fail(code::kUnsupported, kField,
           {"snapshot contains the pickle opcode ", name, " at byte ", std::to_string(op_at_),
            ": not read (text forms of protocols 0-1, sets and out-of-band buffers never "
            "appear in a snapshot)"});
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    bad({"unknown opcode ", hex, " at byte ", std::to_string(op_at_)});
  }

  // The container just below the top values (APPEND/SETITEM) or below a MARK (APPENDS…).
  uint32_t target(T kind) { return check_target(top(), kind); }
  uint32_t target_at(size_t m, T kind) {
    if (m == 0 || m <= (marks_.empty() ? 0 : marks_.back()))
      bad({opcode_name(b_[op_at_]), " at byte ", std::to_string(op_at_),
           " has no container below its MARK"});
    return check_target(stack_[m - 1], kind);
  }
  uint32_t check_target(const V& v, T kind) {
    // (A device trace already turned into events keeps taking them: APPENDS comes in batches.)
    const Conv conv = v.t == kind ? containers_[v.a].conv : Conv::kNone;
    if (v.t != kind || !(conv == Conv::kNone || (kind == T::kList && conv == Conv::kEvents)))
      bad({opcode_name(b_[op_at_]), " at byte ", std::to_string(op_at_), " adds to a ",
           v.t == T::kTuple  ? "tuple"
           : v.t == T::kList ? "list"
           : v.t == T::kDict ? "dict"
                             : "non-container",
           kind == T::kList ? " (it needs a list)" : " (it needs a dict)"});
    return v.a;
  }

  void long_bytes(uint64_t n) {
    // Two's complement, little-endian (Lib/pickle.py decode_long).
    const std::string_view s = take(n);
    if (n == 0) return push({T::kInt, 0, 0});
    const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const bool negative = at(n - 1) & 0x80;
    const uint8_t ext = negative ? 0xff : 0x00;
    size_t len = n;  // drop sign-extension bytes that do not change the value
    while (len > 1 && at(len - 1) == ext && ((at(len - 2) & 0x80) == (ext & 0x80))) --len;
    if (len == 9 && !negative && at(8) == 0) return push({T::kUInt, 0, load_le(s, 8)});
    if (len > 8) return push({T::kBigInt, 0, 0});
    uint64_t v = load_le(s, len);
    if (negative && len < 8) v |= ~0ULL << (8 * len);
    push({T::kInt, 0, v});
  }
  static uint64_t load_le(std::string_view s, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(s[i])) << (8 * i);
    return v;
  }
  void str(T t, uint64_t n) {
    if (n > kMaxStringBytes) limit("bytes in one string", kMaxStringBytes);
    const std::string_view s = take(n);
    push({t, intern(s.data(), s.size()), 0});
  }
  void memo_put(uint64_t i) {
    if (i >= kMaxMemoEntries) limit("memo entries", kMaxMemoEntries);
    if (i >= memo_.size()) memo_.resize(static_cast<size_t>(i) + 1, {T::kNone, kUnset, 0});
    memo_[static_cast<size_t>(i)] = top();
  }
  void memo_get(uint64_t i) {
    if (i >= memo_.size() || (memo_[i].t == T::kNone && memo_[i].a == kUnset))
      bad({"memo entry ", std::to_string(i), " read at byte ", std::to_string(op_at_),
           " was never stored"});
    push(memo_[static_cast<size_t>(i)]);
  }
  static constexpr uint32_t kUnset = 0xffffffffu;

  // ---------------------------------------------------------------- schema
  // Appends items to list c, converting the snapshot's dicts on the way.
  void append(uint32_t c, const V* v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const V& x = v[i];
      if (x.t == T::kDict && containers_[x.a].conv == Conv::kNone) {
        if (find(x.a, k_action_)) {
          append_event(c, x.a);
          continue;
        }
        if (find(x.a, k_filename_) && find(x.a, k_name_))
          to_frame(x.a);
        else if (find(x.a, k_total_size_))
          to_segment(x.a);
        else if (find(x.a, k_state_) && find(x.a, k_size_))
          to_block(x.a);
      }
      if (containers_[c].conv == Conv::kEvents)
        fail(code::kInvalidType, "snapshot.device_traces",
             {"a device trace holds only trace entries (dicts with an \"action\"); found another "
              "value ending before byte ",
              std::to_string(pos_)});
      items(c).push_back(x);
    }
  }

  const V* find(uint32_t c, uint32_t key) {
    const auto& it = items(c);
    for (size_t i = it.size(); i >= 2; i -= 2)
      if (it[i - 2].t == T::kStr && it[i - 2].a == key) return &it[i - 1];
    return nullptr;
  }

  int64_t as_int(const V& v, const std::string& field) {
    if (v.t == T::kInt) return static_cast<int64_t>(v.u);
    if (v.t == T::kBool) return static_cast<int64_t>(v.u);
    if (v.t == T::kUInt || v.t == T::kBigInt)
      fail(code::kOutOfRange, field,
           {field, " is beyond 64-bit range (byte ", std::to_string(pos_), ")"});
    type_error(field, "a whole number");
  }
  uint64_t as_u64(const V& v, const std::string& field) {
    if (v.t == T::kUInt) return v.u;
    const int64_t s = as_int(v, field);
    if (s < 0)
      fail(code::kOutOfRange, field, {field, " is negative (byte ", std::to_string(pos_), ")"});
    return static_cast<uint64_t>(s);
  }
  uint64_t as_addr(const V& v, const std::string& field) {  // int64_t(ptr): may be written signed
    if (v.t == T::kUInt) return v.u;
    return static_cast<uint64_t>(as_int(v, field));
  }
  const std::string& as_str(const V& v, const std::string& field) {
    if (v.t != T::kStr) type_error(field, "a string");
    return strings_[v.a];
  }
  uint64_t req_u64(uint32_t c, uint32_t key, const char* field) {
    const V* v = find(c, key);
    if (!v)
      fail(code::kMissingField, field,
           {field, " is missing (the dict ending before byte ", std::to_string(pos_), ")"});
    return as_u64(*v, field);
  }
  uint64_t opt_u64(uint32_t c, uint32_t key, const char* field, uint64_t fallback = 0) {
    const V* v = find(c, key);
    return v && v->t != T::kNone ? as_u64(*v, field) : fallback;
  }

  void to_frame(uint32_t c) {
    const std::string& file = as_str(*find(c, k_filename_), "snapshot.frames.filename");
    const std::string& name = as_str(*find(c, k_name_), "snapshot.frames.name");
    const V* l = find(c, k_line_);
    const int64_t line = l ? as_int(*l, "snapshot.frames.line") : 0;
    const uint32_t fid = find(c, k_filename_)->a, nid = find(c, k_name_)->a;
    const auto key = std::make_tuple(fid, nid, line);
    auto it = frame_ids_.find(key);
    uint32_t id;
    if (it != frame_ids_.end()) {
      id = it->second;
    } else {
      id = static_cast<uint32_t>(out_.frames.size());
      out_.frames.push_back({file, line, name});
      frame_ids_.emplace(key, id);
    }
    release(c, Conv::kFrame, id);
  }

  // A frames list (or None / absent) -> an interned stack index.
  uint32_t stack_of(const V* v, const char* field) {
    if (!v || v->t == T::kNone) return kNoStack;
    if (v->t != T::kList) type_error(field, "a list of frames");
    Container& c = containers_[v->a];
    if (c.conv == Conv::kStack) return c.ref;
    if (c.conv != Conv::kNone) type_error(field, "a list of frames");
    std::vector<uint32_t> ids;
    for (const V& f : items(v->a)) {
      if (f.t == T::kDict && containers_[f.a].conv == Conv::kNone && find(f.a, k_filename_) &&
          find(f.a, k_name_))
        to_frame(f.a);
      if (f.t != T::kDict || containers_[f.a].conv != Conv::kFrame)
        type_error(field, "a list of frames ({filename, line, name})");
      ids.push_back(containers_[f.a].ref);
    }
    if (ids.empty()) {
      release(v->a, Conv::kStack, kNoStack);
      return kNoStack;
    }
    if (ids.size() > kMaxFramesPerStack) limit("frames in one traceback", kMaxFramesPerStack);
    auto it = stack_ids_.find(ids);
    uint32_t id;
    if (it != stack_ids_.end()) {
      id = it->second;
    } else {
      id = static_cast<uint32_t>(out_.stacks.size());
      out_.stacks.push_back(ids);
      stack_ids_.emplace(std::move(ids), id);
    }
    release(v->a, Conv::kStack, id);
    return id;
  }

  uint32_t stream_index(int64_t s) {
    for (size_t i = 0; i < out_.streams.size(); ++i)
      if (out_.streams[i] == s) return static_cast<uint32_t>(i);
    if (out_.streams.size() >= 4096) limit("distinct streams", 4096);
    out_.streams.push_back(s);
    return static_cast<uint32_t>(out_.streams.size() - 1);
  }

  void append_event(uint32_t list, uint32_t c) {
    Container& l = containers_[list];
    if (l.conv == Conv::kNone) {
      if (!items(list).empty())
        fail(code::kInvalidType, "snapshot.device_traces",
             "a device trace holds only trace entries; this list mixes them with other values");
      event_lists_.emplace_back();
      release(list, Conv::kEvents, static_cast<uint32_t>(event_lists_.size() - 1));
    }
    if (++events_ > kMaxTraceEvents) limit("trace entries", kMaxTraceEvents);
    containers_[c].conv = Conv::kBusy;
    Event e;
    const std::string& a = as_str(*find(c, k_action_), "snapshot.device_traces.action");
    // TraceEntry::Action names: memory_snapshot.cpp action_to_str.
    static const std::pair<const char*, Action> kActions[] = {
        {"alloc", Action::kAlloc},
        {"free_requested", Action::kFreeRequested},
        {"free_completed", Action::kFreeCompleted},
        {"segment_alloc", Action::kSegmentAlloc},
        {"segment_free", Action::kSegmentFree},
        {"segment_map", Action::kSegmentMap},
        {"segment_unmap", Action::kSegmentUnmap},
        {"snapshot", Action::kSnapshot},
        {"oom", Action::kOom},
    };
    for (const auto& k : kActions)
      if (a == k.first) e.action = k.second;
    if (e.action == Action::kOom) {
      e.addr = opt_u64(c, k_device_free_, "snapshot.device_traces.device_free");
    } else if (e.action != Action::kOther && e.action != Action::kSnapshot) {
      const V* addr = find(c, k_addr_);
      if (!addr)
        fail(code::kMissingField, "snapshot.device_traces.addr",
             {"snapshot.device_traces.addr is missing (", a, " entry ending before byte ",
              std::to_string(pos_), ")"});
      e.addr = as_addr(*addr, "snapshot.device_traces.addr");
    }
    if (e.action != Action::kOther) e.size = req_u64(c, k_size_, "snapshot.device_traces.size");
    if (const V* s = find(c, k_stream_); s && s->t != T::kNone)
      e.stream = stream_index(as_int(*s, "snapshot.device_traces.stream"));
    e.stack = stack_of(find(c, k_frames_), "snapshot.device_traces.frames");
    if (const V* t = find(c, k_time_us_); t && t->t != T::kNone) {
      e.time_us = as_int(*t, "snapshot.device_traces.time_us");
      e.has_time = true;
    }
    event_lists_[containers_[list].ref].push_back(e);
    release(c, Conv::kEvents, 0);
  }

  BlockState block_state(const V* v) {
    if (!v) return BlockState::kInactive;
    const std::string& s = as_str(*v, "snapshot.segments.blocks.state");
    if (s == "active_allocated") return BlockState::kActiveAllocated;
    if (s == "active_pending_free" || s == "active_awaiting_free")
      return BlockState::kActivePendingFree;
    if (s == "inactive") return BlockState::kInactive;
    fail(code::kUnknownValue, "snapshot.segments.blocks.state",
         {"snapshot.segments.blocks.state \"", s.substr(0, 64),
          "\" is not active_allocated, active_pending_free or inactive"});
  }

  void to_block(uint32_t c) {
    if (blocks_.size() >= kMaxBlocks) limit("blocks", kMaxBlocks);
    containers_[c].conv = Conv::kBusy;
    Block b;
    b.size = req_u64(c, k_size_, "snapshot.segments.blocks.size");
    b.requested_size =
        opt_u64(c, k_requested_size_, "snapshot.segments.blocks.requested_size", b.size);
    if (const V* a = find(c, k_address_); a && a->t != T::kNone)
      b.address = as_addr(*a, "snapshot.segments.blocks.address");
    b.state = block_state(find(c, k_state_));
    b.stack = stack_of(find(c, k_frames_), "snapshot.segments.blocks.frames");
    blocks_.push_back(b);
    release(c, Conv::kBlock, static_cast<uint32_t>(blocks_.size() - 1));
  }

  void to_segment(uint32_t c) {
    if (out_.segments.size() >= kMaxSegments) limit("segments", kMaxSegments);
    containers_[c].conv = Conv::kBusy;
    Segment s;
    s.total_size = req_u64(c, k_total_size_, "snapshot.segments.total_size");
    if (const V* a = find(c, k_address_); a && a->t != T::kNone)
      s.address = as_addr(*a, "snapshot.segments.address");
    s.device = opt_u64(c, k_device_, "snapshot.segments.device");
    s.allocated_size = opt_u64(c, k_allocated_size_, "snapshot.segments.allocated_size");
    s.active_size = opt_u64(c, k_active_size_, "snapshot.segments.active_size");
    s.requested_size = opt_u64(c, k_requested_size_, "snapshot.segments.requested_size");
    if (const V* st = find(c, k_stream_); st && st->t != T::kNone)
      s.stream = as_int(*st, "snapshot.segments.stream");
    if (const V* t = find(c, k_segment_type_); t && t->t != T::kNone)
      s.large = as_str(*t, "snapshot.segments.segment_type") != "small";
    if (const V* e = find(c, k_is_expandable_); e && e->t == T::kBool) s.expandable = e->u != 0;
    if (const V* bl = find(c, k_blocks_); bl && bl->t != T::kNone) {
      if (bl->t != T::kList || containers_[bl->a].conv != Conv::kNone)
        type_error("snapshot.segments.blocks", "a list of blocks");
      uint64_t addr = s.address;  // blocks follow each other (memory_snapshot.cpp: address += size)
      for (const V& b : items(bl->a)) {
        if (b.t == T::kDict && containers_[b.a].conv == Conv::kNone) to_block(b.a);
        if (b.t != T::kDict || containers_[b.a].conv != Conv::kBlock)
          type_error("snapshot.segments.blocks", "a list of blocks ({size, state, …})");
        Block blk = blocks_[containers_[b.a].ref];
        if (blk.address == 0) blk.address = addr;
        addr = blk.address + blk.size;
        s.blocks.push_back(blk);
      }
      release(bl->a, Conv::kBlock, 0);
    }
    out_.segments.push_back(std::move(s));
    release(c, Conv::kSegment, static_cast<uint32_t>(out_.segments.size() - 1));
  }

  Snapshot finish(const V& top) {
    out_.protocol = protocol_;
    out_.file_bytes = b_.size();
    if (top.t == T::kList) {  // torch.cuda.memory_snapshot(): the segments alone
      segments_from(top, "snapshot");
      out_.segments_only = true;
      return std::move(out_);
    }
    if (top.t != T::kDict || containers_[top.a].conv != Conv::kNone)
      type_error("snapshot",
                 "a dict {segments, device_traces, allocator_settings} (or a list of segments)");
    const V* seg = find(top.a, k_segments_);
    const V* traces = find(top.a, k_device_traces_);
    if (!seg && !traces)
      fail(code::kMissingField, "snapshot.segments",
           "snapshot has neither segments nor device_traces: is it a "
           "torch.cuda.memory._dump_snapshot file?");
    if (seg) segments_from(*seg, "snapshot.segments");
    if (traces && traces->t != T::kNone) {
      if (traces->t != T::kList || containers_[traces->a].conv != Conv::kNone)
        type_error("snapshot.device_traces", "a list (one trace per device)");
      const auto& devs = items(traces->a);
      if (devs.size() > kMaxDevices) limit("device traces", kMaxDevices);
      for (const V& d : devs) {
        if (d.t != T::kList)
          type_error("snapshot.device_traces", "a list of lists of trace entries");
        const Container& dc = containers_[d.a];
        if (dc.conv == Conv::kEvents)
          out_.device_traces.push_back(std::move(event_lists_[dc.ref]));
        else if (dc.conv == Conv::kNone && items(d.a).empty())
          out_.device_traces.emplace_back();
        else
          type_error("snapshot.device_traces", "a list of lists of trace entries");
      }
    }
    if (const V* s = find(top.a, k_allocator_settings_);
        s && s->t == T::kDict && containers_[s->a].conv == Conv::kNone) {
      AllocatorSettings& a = out_.settings;
      a.present = true;
      if (const V* v = find(s->a, k_conf_); v && v->t == T::kStr)
        a.conf = strings_[v->a].substr(0, 1024);
      if (const V* v = find(s->a, k_expandable_segments_); v && v->t == T::kBool)
        a.expandable_segments = v->u != 0;
      if (const V* v = find(s->a, k_max_split_size_); v && (v->t == T::kInt || v->t == T::kUInt))
        a.max_split_size = v->u;
      if (const V* v = find(s->a, k_gc_); v && v->t == T::kFloat) {
        double d;
        std::memcpy(&d, &v->u, sizeof d);
        // A threshold is in [0, 1) (CUDAAllocatorConfig.cpp parseGarbageCollectionThreshold);
        // anything else (NaN, infinity from a damaged file) is read as unset.
        if (d >= 0 && d < 1) a.garbage_collection_threshold = d;
      }
    }
    return std::move(out_);
  }

  void segments_from(const V& v, const char* field) {
    if (v.t == T::kNone) return;
    if (v.t != T::kList || containers_[v.a].conv != Conv::kNone)
      type_error(field, "a list of segments");
    for (const V& s : items(v.a))
      if (s.t != T::kDict || containers_[s.a].conv != Conv::kSegment) {
        if (s.t == T::kDict && containers_[s.a].conv == Conv::kNone && find(s.a, k_total_size_)) {
          to_segment(s.a);
        } else {
          type_error(field, "a list of segments ({address, total_size, blocks, …})");
        }
      }
  }

  std::string_view b_;
  size_t pos_ = 0, op_at_ = 0;
  int protocol_ = 0;
  std::vector<V> stack_;
  std::vector<size_t> marks_;
  std::vector<V> memo_;
  std::vector<Container> containers_;
  std::vector<std::vector<V>> slots_;
  std::vector<uint32_t> free_slots_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
  uint64_t pool_bytes_ = 0;
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, uint32_t> frame_ids_;
  struct StackHash {
    size_t operator()(const std::vector<uint32_t>& v) const noexcept {
      uint64_t h = 1469598103934665603ULL;  // FNV-1a over the frame ids
      for (uint32_t x : v) h = (h ^ x) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stack_ids_;
  std::vector<std::vector<Event>> event_lists_;
  std::vector<Block> blocks_;
  uint64_t events_ = 0;
  Snapshot out_;
  // Ids of the keys read (interned first, in the constructor's order).
  const uint32_t k_action_ = 0, k_addr_ = 1, k_size_ = 2, k_stream_ = 3, k_frames_ = 4,
                 k_time_us_ = 5, k_device_free_ = 6, k_filename_ = 7, k_line_ = 8, k_name_ = 9,
                 k_state_ = 10, k_total_size_ = 11, k_blocks_ = 12, k_address_ = 13,
                 k_requested_size_ = 14, k_allocated_size_ = 15, k_active_size_ = 16,
                 k_segment_type_ = 17, k_is_expandable_ = 18, k_device_ = 19, k_segments_ = 20,
                 k_device_traces_ = 21, k_allocator_settings_ = 22, k_conf_ = 23,
                 k_max_split_size_ = 24, k_gc_ = 25, k_expandable_segments_ = 26;
};

}  // namespace

Snapshot read_pickle(std::string_view bytes) { return Reader(bytes).run(); }

}  // namespace snapshot
}  // namespace trainmem
