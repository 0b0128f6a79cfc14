// A restricted unpickler for PyTorch memory snapshots. It runs the pickle machine of
// CPython's Lib/pickle.py (_Unpickler: stack, metastack of MARKs, memo) for the plain-data
// opcodes of protocols 2-5 only, and turns the snapshot's dicts into typed records as soon as
// they are complete (when appended to their list), so that a file of several hundred MB never
// exists as an object graph: a trace entry becomes a 40-byte Event, a frame dict an interned
// Frame, a frames list an interned stack. Strings are interned by content.
// Schema: torch/csrc/cuda/memory_snapshot.cpp @00067369c9339bed950762afec327514d6fa2566
// (_memory_snapshot_pickled: keys of segments, blocks, trace entries, allocator_settings).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
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

// 4 bytes per container (a file of 1,000,000 trace entries builds 2,000,000 of them): ref below
// 2^25, as the records (kMaxTraceEvents, kMaxBlocks, kMaxSegments) and the slots of the
// containers being built at once (kMaxOpenContainers) are.
struct Container {
  T kind : 4;
  Conv conv : 3;
  uint32_t ref : 25;  // items slot (kNone) or the converted record's index
};
static_assert(sizeof(Container) == 4, "a container record in 4 bytes");
constexpr size_t kMaxOpenContainers = size_t{1} << 25;
constexpr uint32_t kNoRef = (uint32_t{1} << 25) - 1;  // a converted list with no record (no frames)

// A memo entry in 4 bytes (a V takes 16): the type in the top 4 bits; containers and strings
// keep their id in the other 28, the values that carry a number (bool, int, float) an index
// into Reader::memo_numbers_. All ones: never stored. A file of 1,000,000 trace entries has
// ~2,000,000 memo entries (every dict and list). Ids stay below 2^28: containers by
// kMaxContainers, strings by kMaxStringPoolBytes (an id per distinct string).
struct Memo {
  uint32_t bits = 0xffffffffu;
  bool unset() const { return bits == 0xffffffffu; }
  T t() const { return static_cast<T>(bits >> 28); }
  uint32_t a() const { return bits & 0x0fffffffu; }
  void set(T t, uint32_t a) { bits = static_cast<uint32_t>(t) << 28 | (a & 0x0fffffffu); }
};

// Storage in blocks of 4,096 entries: growing never moves what is stored (no copy, no moment
// with the old and the new array both held), and blocks never written (a PUT far ahead of the
// others) take no memory. Each block allocated is counted in *bytes (the reader's budget).
template <class E>
class Blocks {
 public:
  static constexpr size_t kBits = 12, kSize = size_t(1) << kBits, kMask = kSize - 1;
  explicit Blocks(uint64_t* bytes) : bytes_(bytes) {}
  size_t size() const { return size_; }
  // i < size(): the entry, or nullptr when its block was never written.
  const E* find(size_t i) const {
    const auto& b = blocks_[i >> kBits];
    return b ? &b[i & kMask] : nullptr;
  }
  E& at(size_t i) {  // i < size(); allocates the block
    auto& b = blocks_[i >> kBits];
    if (!b) {
      b.reset(new E[kSize]());
      *bytes_ += sizeof(E) * kSize;
    }
    return b[i & kMask];
  }
  E& operator[](size_t i) { return blocks_[i >> kBits][i & kMask]; }  // a written entry
  void grow(size_t n) {                                               // n > size()
    size_ = n;
    blocks_.resize((n + kMask) >> kBits);
  }
  void push_back(const E& e) {
    if ((size_ & kMask) == 0) {
      blocks_.emplace_back(new E[kSize]());
      *bytes_ += sizeof(E) * kSize;
    }
    blocks_[size_ >> kBits][size_ & kMask] = e;
    ++size_;
  }

 private:
  std::vector<std::unique_ptr<E[]>> blocks_;
  size_t size_ = 0;
  uint64_t* bytes_;
};

#define TM_HOT __attribute__((always_inline)) inline

// The WebAssembly module is linked -Oz, which links the libc whose memcpy and memset copy a
// byte at a time, and leaves std::vector's push_back out of line: the containers' items are
// kept in Values below, whose copies are loops of 16-byte values (kept loops on clang: a loop
// recognised as a memcpy would call that memcpy again).
#if defined(__clang__)
#define TM_NO_MEMCPY __attribute__((no_builtin("memcpy"), noinline))
#else
#define TM_NO_MEMCPY
#endif
TM_NO_MEMCPY void copy_values(V* to, const V* from, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
}

// The items of a list, tuple or dict being built.
class Values {
 public:
  Values() = default;
  Values(Values&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) {
    o.p_ = nullptr, o.n_ = o.cap_ = 0;
  }
  Values& operator=(Values&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  Values(const Values&) = delete;
  Values& operator=(const Values&) = delete;
  ~Values() { std::free(p_); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  size_t capacity() const { return cap_; }
  const V* data() const { return p_; }
  const V* begin() const { return p_; }
  const V* end() const { return p_ + n_; }
  const V& operator[](size_t i) const { return p_[i]; }
  void clear() { n_ = 0; }
  void free_memory() { Values().swap(*this); }
  void swap(Values& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
  }
  TM_HOT void push_back(const V& v) {
    if (n_ == cap_) grow(n_ + 1);
    p_[n_++] = v;
  }
  void append(const V* v, size_t n) {
    if (n > cap_ - n_) grow(n_ + n);
    copy_values(p_ + n_, v, n);
    n_ += n;
  }

 private:
  void grow(size_t need) {
    size_t cap = cap_ * 2 > need ? cap_ * 2 : need;
    if (cap < 16) cap = 16;
    V* p = static_cast<V*>(std::malloc(cap * sizeof(V)));
    if (!p) throw std::bad_alloc();
    copy_values(p, p_, n_);
    std::free(p_);
    p_ = p;
    cap_ = cap;
  }
  V* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
};

// The unpickler stack: a vector's interface for what the machine does, with the push inlined
// (std::vector::emplace_back was a call per value).
class Stack {
 public:
  size_t size() const { return n_; }
  V* data() { return v_.data(); }
  V* begin() { return v_.data(); }
  V* end() { return v_.data() + n_; }
  V& back() { return v_[n_ - 1]; }
  V& operator[](size_t i) { return v_[i]; }
  void pop_back() { --n_; }
  void resize(size_t n) { n_ = n; }  // n <= size()
  TM_HOT V& emplace_back() {
    if (n_ == v_.size()) v_.resize(v_.size() * 2 + 256);
    return v_[n_++];
  }

 private:
  std::vector<V> v_;
  size_t n_ = 0;
};
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "load_le reads little-endian words");

// The opcodes of Lib/pickle.py (protocols 0-5), named as there.
struct Opcode {
  uint8_t op;
  bool calls;  // imports, calls or builds objects (find_class, REDUCE, BUILD, …)
  const char* name;
};
constexpr Opcode kOpcodes[] = {
    {'(', false, "MARK"},
    {'.', false, "STOP"},
    {'0', false, "POP"},
    {'1', false, "POP_MARK"},
    {'2', false, "DUP"},
    {'F', false, "FLOAT"},
    {'I', false, "INT"},
    {'J', false, "BININT"},
    {'K', false, "BININT1"},
    {'L', false, "LONG"},
    {'M', false, "BININT2"},
    {'N', false, "NONE"},
    {'P', true, "PERSID"},
    {'Q', true, "BINPERSID"},
    {'R', true, "REDUCE"},
    {'S', false, "STRING"},
    {'T', false, "BINSTRING"},
    {'U', false, "SHORT_BINSTRING"},
    {'V', false, "UNICODE"},
    {'X', false, "BINUNICODE"},
    {'a', false, "APPEND"},
    {'b', true, "BUILD"},
    {'c', true, "GLOBAL"},
    {'d', false, "DICT"},
    {'}', false, "EMPTY_DICT"},
    {'e', false, "APPENDS"},
    {'g', false, "GET"},
    {'h', false, "BINGET"},
    {'i', true, "INST"},
    {'j', false, "LONG_BINGET"},
    {'l', false, "LIST"},
    {']', false, "EMPTY_LIST"},
    {'o', true, "OBJ"},
    {'p', false, "PUT"},
    {'q', false, "BINPUT"},
    {'r', false, "LONG_BINPUT"},
    {'s', false, "SETITEM"},
    {'t', false, "TUPLE"},
    {')', false, "EMPTY_TUPLE"},
    {'u', false, "SETITEMS"},
    {'G', false, "BINFLOAT"},
    {'B', false, "BINBYTES"},
    {'C', false, "SHORT_BINBYTES"},
    {0x80, false, "PROTO"},
    {0x81, true, "NEWOBJ"},
    {0x82, true, "EXT1"},
    {0x83, true, "EXT2"},
    {0x84, true, "EXT4"},
    {0x85, false, "TUPLE1"},
    {0x86, false, "TUPLE2"},
    {0x87, false, "TUPLE3"},
    {0x88, false, "NEWTRUE"},
    {0x89, false, "NEWFALSE"},
    {0x8a, false, "LONG1"},
    {0x8b, false, "LONG4"},
    {0x8c, false, "SHORT_BINUNICODE"},
    {0x8d, false, "BINUNICODE8"},
    {0x8e, false, "BINBYTES8"},
    {0x8f, false, "EMPTY_SET"},
    {0x90, false, "ADDITEMS"},
    {0x91, false, "FROZENSET"},
    {0x92, true, "NEWOBJ_EX"},
    {0x93, true, "STACK_GLOBAL"},
    {0x94, false, "MEMOIZE"},
    {0x95, false, "FRAME"},
    {0x96, false, "BYTEARRAY8"},
    {0x97, false, "NEXT_BUFFER"},
    {0x98, false, "READONLY_BUFFER"},
};

const Opcode* find_opcode(uint8_t op) {
  for (const Opcode& o : kOpcodes)
    if (o.op == op) return &o;
  return nullptr;
}

const char* opcode_name(uint8_t op) {
  const Opcode* o = find_opcode(op);
  return o ? o->name : nullptr;
}

constexpr const char* kField = "snapshot";

// TraceEntry::Action names: memory_snapshot.cpp action_to_str.
const std::pair<const char*, Action> kActions[] = {
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
constexpr uint32_t kFirstAction = 28;  // string ids: the 28 keys, then the actions
constexpr uint32_t kActionCount = sizeof kActions / sizeof kActions[0];

class Reader {
 public:
  explicit Reader(std::string_view b)
      : b_(b), budget_(kReaderWorkPerFileByte * b.size() + kReaderWorkBaseBytes) {
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
    // The actions, compared by id (strings are interned by content): their bytes count towards
    // kMaxStringPoolBytes when the file first holds them, as any other string's.
    for (const auto& a : kActions) {
      const size_t n = std::strlen(a.first);
      intern(a.first, n);
      pool_bytes_ -= n;
    }
  }

  Snapshot run() {
    if (b_.size() > kMaxFileBytes)
      fail(code::kTooLarge, kField,
           Message{"error.snapshot.over1GiB", {{"size", std::to_string(b_.size())}}});
    if (b_.empty()) fail(code::kInvalidJson, kField, Message{"error.snapshot.empty", {}});
    if (static_cast<uint8_t>(b_[0]) != 0x80)
      fail(code::kInvalidJson, kField, Message{"error.snapshot.notPickle", {}});
    for (;;) {
      op_at_ = pos_;
      const uint8_t op = byte();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      bad({"error.pickle.stop",
           {{"byte", at()},
            {"values", std::to_string(stack_.size())},
            {"marks", std::to_string(marks_.size())}}});
    return finish(stack_.back());
  }

 private:
  // ---------------------------------------------------------------- errors
  // "snapshot is not a valid pickle: ..." (the catalog's error.pickle.* sentences)
  [[noreturn]] void bad(Message m) const { fail(code::kInvalidJson, kField, std::move(m)); }
  std::string at() const { return std::to_string(op_at_); }
  [[noreturn]] void truncated() const {
    fail(code::kInvalidJson, kField,
         Message{"error.snapshot.truncated",
                 {{"byte", std::to_string(b_.size())}, {"opcode", std::to_string(op_at_)}}});
  }
  // what: the catalog's phrase (error.snapshot.what.*) for what there are too many of
  [[noreturn]] void limit(const char* what, uint64_t max) const {
    fail(code::kTooLarge, kField,
         Message{"error.snapshot.count",
                 {{"max", std::to_string(max)}, {"byte", std::to_string(op_at_)}}}
             .with("what", {Message{what, {}}}));
  }
  // The working memory (what the reader builds, beside the file) stays within budget_: a
  // crafted file (memo indices far apart, endless lists of None) is refused, not grown into.
  void check_budget() const {
    if (work_bytes_ + kItemBytes * live_items_ > budget_)
      fail(code::kTooLarge, kField,
           Message{"error.snapshot.workMemory",
                   {{"perByte", std::to_string(kReaderWorkPerFileByte)},
                    {"base", std::to_string(kReaderWorkBaseBytes >> 20)},
                    {"budget", std::to_string(budget_ >> 20)},
                    {"byte", std::to_string(op_at_)}}});
  }
  // want: the catalog's phrase (error.snapshot.want.*) for what the field must be
  [[noreturn]] void type_error(const std::string& field, const char* want) const {
    fail(code::kInvalidType, field,
         Message{"error.snapshot.type", {{"field", field}, {"byte", std::to_string(pos_)}}}.with(
             "want", {Message{want, {}}}));
  }

  // ---------------------------------------------------------------- input
  TM_HOT uint8_t byte() {
    if (pos_ >= b_.size()) truncated();
    return static_cast<uint8_t>(b_[pos_++]);
  }
  TM_HOT uint64_t le(int n) {
    if (b_.size() - pos_ < static_cast<size_t>(n)) truncated();
    const uint64_t v = load_le(b_.data() + pos_, static_cast<size_t>(n));
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
    if (it != ids_.end()) {
      const uint32_t a = it->second - kFirstAction;
      if (a < kActionCount && !(actions_counted_ & (1u << a))) {
        actions_counted_ |= 1u << a;
        pool_bytes_ += n;
        if (pool_bytes_ > kMaxStringPoolBytes)
          limit("error.snapshot.what.stringBytes", kMaxStringPoolBytes);
      }
      return it->second;
    }
    pool_bytes_ += n;
    if (pool_bytes_ > kMaxStringPoolBytes)
      limit("error.snapshot.what.stringBytes", kMaxStringPoolBytes);
    work_bytes_ += n + kStringBytes;
    check_budget();
    strings_.emplace_back(p, n);
    const uint32_t id = static_cast<uint32_t>(strings_.size() - 1);
    ids_.emplace(std::string_view(strings_.back()), id);
    return id;
  }

  void push(V v) { push(v.t, v.a, v.u); }
  // Writes the fields in place (a V built on the side and copied in stalled store forwarding).
  TM_HOT void push(T t, uint32_t a, uint64_t u) {
    if (stack_.size() >= kMaxStackValues) limit("error.snapshot.what.stackValues", kMaxStackValues);
    V& v = stack_.emplace_back();
    v.t = t;
    v.a = a;
    v.u = u;
  }
  V pop() {
    if (stack_.size() <= base())
      bad({"error.pickle.underflow", {{"byte", at()}, {"op", opcode_name(b_[op_at_])}}});
    V v = stack_.back();
    stack_.pop_back();
    return v;
  }
  V& top() {
    if (stack_.size() <= base())
      bad({"error.pickle.underflow", {{"byte", at()}, {"op", opcode_name(b_[op_at_])}}});
    return stack_.back();
  }
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  size_t pop_mark() {
    if (marks_.empty()) bad({"error.pickle.noMark", {{"byte", at()}}});
    const size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }

  uint32_t new_container(T kind) {
    if (containers_.size() >= kMaxContainers)
      limit("error.snapshot.what.containers", kMaxContainers);
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      if (slots_.size() >= kMaxOpenContainers)
        limit("error.snapshot.what.openContainers", kMaxOpenContainers);
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
      work_bytes_ += sizeof(Values);
    }
    Container c;
    c.kind = kind;
    c.conv = Conv::kNone;
    c.ref = slot;
    containers_.push_back(c);
    return static_cast<uint32_t>(containers_.size() - 1);
  }
  TM_HOT Values& items(uint32_t c) { return slots_[containers_[c].ref]; }
  // Every items() access is on a container that is kNone (or kBusy, read by its converter):
  // once released, a slot belongs to the next container.
  void release(uint32_t c, Conv conv, uint32_t ref) {
    if (containers_[c].conv != Conv::kNone && containers_[c].conv != Conv::kBusy) return;
    // Keep the capacity: the slot is reused by the next container (few slots are live at once).
    auto& slot = slots_[containers_[c].ref];
    live_items_ -= std::min<uint64_t>(live_items_, slot.size());
    if (slot.capacity() > 4096)
      slot.free_memory();
    else
      slot.clear();
    free_slots_.push_back(containers_[c].ref);
    containers_[c].conv = conv;
    containers_[c].ref = ref;
  }

  void push_container(T kind, size_t from) {
    const uint32_t c = new_container(kind);
    auto& it = items(c);
    it.clear();
    it.append(stack_.data() + from, stack_.size() - from);
    live_items_ += stack_.size() - from;
    check_budget();
    stack_.resize(from);
    push(kind, c, 0);
  }

  // ---------------------------------------------------------------- the machine
  // The opcodes pickle.dump writes for a snapshot's dicts, lists, strings and numbers
  // (Lib/pickle.py save_dict, save_list, _batch_appends/_batch_setitems, save_str, save_long,
  // memoize, get); the others that are read in step_rare.
  TM_HOT void step(uint8_t op) {
    switch (op) {
      case 'N':
        return push(T::kNone, 0, 0);
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
        return push(T::kBool, 0, op == 0x88);
      case 'J':
        return binint();
      case 'K':
        return push(T::kInt, 0, byte());
      case 'M':
        return push(T::kInt, 0, le(2));
      case 0x8a:  // LONG1
        return long_bytes(byte());
      case 0x8b:  // LONG4
        return long_bytes(le(4));
      case 'G':
        return binfloat();
      case 0x8c:  // SHORT_BINUNICODE
        return str(T::kStr, byte());
      case 'X':   // BINUNICODE
      case 0x8d:  // BINUNICODE8
        return str(T::kStr, le(op == 'X' ? 4 : 8));
      case 'C':  // SHORT_BINBYTES
        return str(T::kBytes, byte());
      case 'B':
        return str(T::kBytes, le(4));
      case ']':
      case '}':
      case ')':
        return empty_container(op == ']' ? T::kList : op == '}' ? T::kDict : T::kTuple);
      case '(':
        return mark();
      case 'a':
        return append_one();
      case 'e':
        return appends();
      case 's':
        return setitem();
      case 'u':
        return setitems();
      case 0x94:  // MEMOIZE
        return memo_put(memo_.size());
      case 'q':  // BINPUT
        return memo_put(byte());
      case 'r':  // LONG_BINPUT
        return memo_put(le(4));
      case 'h':  // BINGET
        return memo_get(byte());
      case 'j':  // LONG_BINGET
        return memo_get(le(4));
      default:
        return step_rare(op);
    }
  }

  // Opcodes read that pickle.dump writes once (PROTO), rarely (FRAME, tuples) or not for a
  // snapshot at protocols 2-5 (POP, DUP, LIST, DICT, Python 2 strings); the rest are refused.
  void step_rare(uint8_t op) {
    switch (op) {
      case 0x80:
        return proto();
      case 0x95:  // FRAME: a length hint
        if (le(8) > b_.size() - pos_) truncated();
        return;
      case '0':
        return pop_top();
      case '1':
        return stack_.resize(pop_mark());
      case '2':
        return push(top());
      case 'l':
        return push_container(T::kList, pop_mark());
      case 't':
        return push_container(T::kTuple, pop_mark());
      case 'd':
        return dict();
      case 0x85:
      case 0x86:
      case 0x87:
        return tuple_of(op - 0x84u);
      case 'U':  // Python 2 str, read as text
      case 'T':
        return str(T::kStr, le(op == 'U' ? 1 : 4));
      case 0x8e:  // BINBYTES8
      case 0x96:  // BYTEARRAY8
        return str(T::kBytes, le(8));
      default:
        refuse(op);
    }
  }

  void proto() {
    const uint8_t p = byte();
    if (op_at_ != 0) bad({"error.pickle.proto", {{"byte", at()}}});
    if (p < 2 || p > 5)
      fail(code::kUnsupported, kField,
           Message{"error.snapshot.protocol", {{"p", std::to_string(p)}}});
    protocol_ = p;
  }
  TM_HOT void mark() {
    if (marks_.size() >= kMaxNesting) limit("error.snapshot.what.marks", kMaxNesting);
    marks_.push_back(stack_.size());
  }
  void pop_top() {
    if (stack_.size() > base())
      stack_.pop_back();
    else
      pop_mark();  // Lib/pickle.py load_pop: an empty top frame pops the MARK
  }
  TM_HOT void binint() {
    const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
    push(T::kInt, 0, static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  TM_HOT void binfloat() {  // big-endian IEEE double
    if (b_.size() - pos_ < 8) truncated();
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(b_[pos_ + i]);
    pos_ += 8;
    push(T::kFloat, 0, v);
  }
  TM_HOT void empty_container(T kind) { push(kind, new_container(kind), 0); }
  void dict() {
    const size_t m = pop_mark();
    if ((stack_.size() - m) % 2)
      bad({"error.pickle.keyWithoutValue", {{"op", "DICT"}, {"byte", at()}}});
    push_container(T::kDict, m);
  }
  void tuple_of(size_t n) {  // TUPLE1, TUPLE2, TUPLE3
    if (stack_.size() < base() + n)
      bad({"error.pickle.underflow", {{"byte", at()}, {"op", opcode_name(b_[op_at_])}}});
    push_container(T::kTuple, stack_.size() - n);
  }
  TM_HOT void append_one() {
    const V item = pop();
    append(target(T::kList), &item, 1);
  }
  TM_HOT void appends() {
    const size_t m = pop_mark();
    const size_t n = stack_.size() - m;
    append(target_at(m, T::kList), stack_.data() + m, n);
    stack_.resize(m);
  }
  TM_HOT void setitem() {
    const V val = pop();
    const V key = pop();
    auto& it = items(target(T::kDict));
    it.push_back(key);
    it.push_back(val);
    live_items_ += 2;
  }
  TM_HOT void setitems() {
    const size_t m = pop_mark();
    if ((stack_.size() - m) % 2)
      bad({"error.pickle.keyWithoutValue", {{"op", "SETITEMS"}, {"byte", at()}}});
    auto& it = items(target_at(m, T::kDict));
    it.append(stack_.data() + m, stack_.size() - m);
    live_items_ += stack_.size() - m;
    check_budget();
    stack_.resize(m);
  }

  // An opcode that is not read: one that runs code, one of the forms a snapshot never holds,
  // or not an opcode.
  [[noreturn]] void refuse(uint8_t op) const {
    const Opcode* o = find_opcode(op);
    if (o && o->calls)
      fail(code::kUnsupported, kField,
           Message{"error.snapshot.code", {{"op", o->name}, {"byte", std::to_string(op_at_)}}});
    if (o)
      fail(code::kUnsupported, kField,
           Message{"error.snapshot.opcode", {{"name", o->name}, {"byte", std::to_string(op_at_)}}});
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    bad({"error.pickle.unknownOpcode", {{"op", hex}, {"byte", at()}}});
  }

  // The container just below the top values (APPEND/SETITEM) or below a MARK (APPENDS…).
  uint32_t target(T kind) { return check_target(top(), kind); }
  uint32_t target_at(size_t m, T kind) {
    if (m == 0 || m <= (marks_.empty() ? 0 : marks_.back()))
      bad({"error.pickle.noContainer", {{"op", opcode_name(b_[op_at_])}, {"byte", at()}}});
    return check_target(stack_[m - 1], kind);
  }
  uint32_t check_target(const V& v, T kind) {
    // (A device trace already turned into events keeps taking them: APPENDS comes in batches.)
    const Conv conv = v.t == kind ? containers_[v.a].conv : Conv::kNone;
    if (v.t != kind || !(conv == Conv::kNone || (kind == T::kList && conv == Conv::kEvents)))
      bad({kind == T::kList ? "error.pickle.needsList" : "error.pickle.needsDict",
           {{"op", opcode_name(b_[op_at_])},
            {"byte", at()},
            {"kind", v.t == T::kTuple  ? "tuple"
                     : v.t == T::kList ? "list"
                     : v.t == T::kDict ? "dict"
                                       : "non-container"}}});
    return v.a;
  }

  void long_bytes(uint64_t n) {
    // Two's complement, little-endian (Lib/pickle.py decode_long).
    const std::string_view s = take(n);
    if (n == 0) return push(T::kInt, 0, 0);
    if (n <= 8) {  // the value sign-extended (what trimming the sign bytes below gives too)
      uint64_t v = load_le(s.data(), static_cast<size_t>(n));
      if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ULL << (8 * n);
      return push(T::kInt, 0, v);
    }
    const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const bool negative = at(n - 1) & 0x80;
    const uint8_t ext = negative ? 0xff : 0x00;
    size_t len = n;  // drop sign-extension bytes that do not change the value
    while (len > 1 && at(len - 1) == ext && ((at(len - 2) & 0x80) == (ext & 0x80))) --len;
    if (len == 9 && !negative && at(8) == 0) return push(T::kUInt, 0, load_le(s.data(), 8));
    if (len > 8) return push(T::kBigInt, 0, 0);
    uint64_t v = load_le(s.data(), len);
    if (negative && len < 8) v |= ~0ULL << (8 * len);
    push(T::kInt, 0, v);
  }
  static TM_HOT uint64_t load_le(const char* p, size_t n) {  // n <= 8
    switch (n) {  // the fixed widths as single loads (x86 and WebAssembly are little-endian)
      case 1:
        return static_cast<uint8_t>(*p);
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case 8: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
      }
      default: {
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i)
          v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
        return v;
      }
    }
  }
  void str(T t, uint64_t n) {
    if (n > kMaxStringBytes) limit("error.snapshot.what.stringLength", kMaxStringBytes);
    const std::string_view s = take(n);
    push(t, intern(s.data(), s.size()), 0);
  }
  static bool has_number(T t) {
    return t == T::kBool || t == T::kInt || t == T::kUInt || t == T::kFloat;
  }
  void memo_put(uint64_t i) {
    if (i >= kMaxMemoEntries) limit("error.snapshot.what.memo", kMaxMemoEntries);
    if (i >= memo_.size()) memo_.grow(static_cast<size_t>(i) + 1);
    const V& v = top();
    Memo& m = memo_.at(static_cast<size_t>(i));
    if (has_number(v.t)) {  // (their `a` is always 0)
      m.set(v.t, static_cast<uint32_t>(memo_numbers_.size()));
      memo_numbers_.push_back(v.u);
      work_bytes_ += sizeof(uint64_t);
    } else {
      m.set(v.t, v.a);
    }
    check_budget();
  }
  void memo_get(uint64_t i) {
    const Memo* m = i < memo_.size() ? memo_.find(static_cast<size_t>(i)) : nullptr;
    if (!m || m->unset())
      bad({"error.pickle.memo", {{"entry", std::to_string(i)}, {"byte", at()}}});
    if (has_number(m->t()))
      push(m->t(), 0, memo_numbers_[m->a()]);
    else
      push(m->t(), m->a(), 0);
  }

  // ---------------------------------------------------------------- schema
  // The values of the keys read (ids below kKeys: interned first) in one pass over a dict's
  // items: the last pair of each key, as a dict keeps it.
  static constexpr uint32_t kKeys = 20;
  struct Keys {
    uint32_t present;  // bit k: v[k] is set (no clearing of v per dict)
    const V* v[kKeys];
    const V* operator[](uint32_t k) const { return present >> k & 1 ? v[k] : nullptr; }
  };
  void keys_of(uint32_t c, Keys* k) {
    k->present = 0;
    const Values& it = items(c);
    const V* d = it.data();
    for (size_t i = 0, n = it.size() & ~size_t(1); i < n; i += 2)
      if (d[i].t == T::kStr && d[i].a < kKeys) {
        k->v[d[i].a] = &d[i + 1];
        k->present |= 1u << d[i].a;
      }
  }

  // Appends items to list c, converting the snapshot's dicts on the way.
  void append(uint32_t c, const V* v, size_t n) {
    Keys k;
    for (size_t i = 0; i < n; ++i) {
      const V& x = v[i];
      if (x.t == T::kDict && containers_[x.a].conv == Conv::kNone) {
        keys_of(x.a, &k);
        if (k[k_action_]) {
          append_event(c, x.a, k);
          continue;
        }
        if (k[k_filename_] && k[k_name_])
          to_frame(x.a, k);
        else if (k[k_total_size_])
          to_segment(x.a, k);
        else if (k[k_state_] && k[k_size_])
          to_block(x.a, k);
      }
      if (containers_[c].conv == Conv::kEvents)
        fail(code::kInvalidType, "snapshot.device_traces",
             Message{"error.snapshot.traceEntries", {{"byte", std::to_string(pos_)}}});
      items(c).push_back(x);
      ++live_items_;
    }
    check_budget();
  }

  const V* find(uint32_t c, uint32_t key) {
    const auto& it = items(c);
    for (size_t i = it.size(); i >= 2; i -= 2)
      if (it[i - 2].t == T::kStr && it[i - 2].a == key) return &it[i - 1];
    return nullptr;
  }

  int64_t as_int(const V& v, const char* field) {
    if (v.t == T::kInt) return static_cast<int64_t>(v.u);
    if (v.t == T::kBool) return static_cast<int64_t>(v.u);
    if (v.t == T::kUInt || v.t == T::kBigInt)
      fail(code::kOutOfRange, field,
           Message{"error.snapshot.over64", {{"field", field}, {"byte", std::to_string(pos_)}}});
    type_error(field, "error.snapshot.want.integer");
  }
  uint64_t as_u64(const V& v, const char* field) {
    if (v.t == T::kUInt) return v.u;
    const int64_t s = as_int(v, field);
    if (s < 0)
      fail(code::kOutOfRange, field,
           Message{"error.snapshot.negative", {{"field", field}, {"byte", std::to_string(pos_)}}});
    return static_cast<uint64_t>(s);
  }
  uint64_t as_addr(const V& v, const char* field) {  // int64_t(ptr): may be written signed
    if (v.t == T::kUInt) return v.u;
    return static_cast<uint64_t>(as_int(v, field));
  }
  const std::string& as_str(const V& v, const char* field) {
    if (v.t != T::kStr) type_error(field, "error.snapshot.want.string");
    return strings_[v.a];
  }
  uint64_t req_u64(const V* v, const char* field) {
    if (!v)
      fail(code::kMissingField, field,
           Message{"error.snapshot.missing", {{"field", field}, {"byte", std::to_string(pos_)}}});
    return as_u64(*v, field);
  }
  uint64_t opt_u64(const V* v, const char* field, uint64_t fallback = 0) {
    return v && v->t != T::kNone ? as_u64(*v, field) : fallback;
  }

  void to_frame(uint32_t c, const Keys& k) {
    const std::string& file = as_str(*k[k_filename_], "snapshot.frames.filename");
    const std::string& name = as_str(*k[k_name_], "snapshot.frames.name");
    const V* l = k[k_line_];
    const int64_t line = l ? as_int(*l, "snapshot.frames.line") : 0;
    const FrameKey key{k[k_filename_]->a, k[k_name_]->a, line};
    auto it = frame_ids_.find(key);
    uint32_t id;
    if (it != frame_ids_.end()) {
      id = it->second;
    } else {
      if (out_.frames.size() >= kNoRef) limit("error.snapshot.what.frames", kNoRef);
      id = static_cast<uint32_t>(out_.frames.size());
      out_.frames.push_back({file, line, name});
      work_bytes_ += sizeof(Frame) + file.size() + name.size() + 48;
      check_budget();
      frame_ids_.emplace(key, id);
    }
    release(c, Conv::kFrame, id);
  }

  // A frames list (or None / absent) -> an interned stack index.
  uint32_t stack_of(const V* v, const char* field) {
    if (!v || v->t == T::kNone) return kNoStack;
    if (v->t != T::kList) type_error(field, "error.snapshot.want.frames");
    Container& c = containers_[v->a];
    if (c.conv == Conv::kStack) return c.ref == kNoRef ? kNoStack : c.ref;
    if (c.conv != Conv::kNone) type_error(field, "error.snapshot.want.frames");
    std::vector<uint32_t>& ids = stack_scratch_;
    ids.clear();
    Keys k;
    for (const V& f : items(v->a)) {
      if (f.t == T::kDict && containers_[f.a].conv == Conv::kNone) {
        keys_of(f.a, &k);
        if (k[k_filename_] && k[k_name_]) to_frame(f.a, k);
      }
      if (f.t != T::kDict || containers_[f.a].conv != Conv::kFrame)
        type_error(field, "error.snapshot.want.framesFields");
      ids.push_back(containers_[f.a].ref);
    }
    if (ids.empty()) {
      release(v->a, Conv::kStack, kNoRef);
      return kNoStack;
    }
    if (ids.size() > kMaxFramesPerStack)
      limit("error.snapshot.what.framesPerStack", kMaxFramesPerStack);
    uint32_t id;
    if (ids == last_stack_) {  // consecutive entries often share a traceback
      id = last_stack_id_;
    } else {
      auto it = stack_ids_.find(ids);
      if (it != stack_ids_.end()) {
        id = it->second;
      } else {
        if (out_.stacks.size() >= kNoRef) limit("error.snapshot.what.stacks", kNoRef);
        id = static_cast<uint32_t>(out_.stacks.size());
        out_.stacks.push_back(ids);
        work_bytes_ += 48 + ids.size() * sizeof(uint32_t) * 2;  // (and its key in stack_ids_)
        check_budget();
        stack_ids_.emplace(ids, id);
      }
      last_stack_ = ids;
      last_stack_id_ = id;
    }
    release(v->a, Conv::kStack, id);
    return id;
  }

  uint32_t stream_index(int64_t s) {
    for (size_t i = 0; i < out_.streams.size(); ++i)
      if (out_.streams[i] == s) return static_cast<uint32_t>(i);
    if (out_.streams.size() >= 4096) limit("error.snapshot.what.streams", 4096);
    out_.streams.push_back(s);
    return static_cast<uint32_t>(out_.streams.size() - 1);
  }

  // A device trace grows to what the whole file would hold at its bytes per entry so far (at
  // least by an eighth; 10 % more, as the first entries bring their frames): few copies (a byte at
  // a time in the -Oz module, see Values). A trace that ends early is cut to size in finish().
  void push_event(std::vector<Event>& v, const Event& e) {
    if (v.size() == v.capacity()) {
      const size_t n = v.size();
      size_t cap = n < 4096 ? 4096 : n + n / 8;
      if (n >= 4096) {
        const double guess = static_cast<double>(n) * static_cast<double>(b_.size()) /
                             static_cast<double>(pos_) * 1.1;
        if (guess > static_cast<double>(cap)) cap = static_cast<size_t>(guess);
      }
      work_bytes_ += (cap - v.capacity()) * sizeof(Event);
      check_budget();
      v.reserve(cap);
    }
    v.push_back(e);
  }

  void append_event(uint32_t list, uint32_t c, const Keys& k) {
    Container& l = containers_[list];
    if (l.conv == Conv::kNone) {
      if (!items(list).empty())
        fail(code::kInvalidType, "snapshot.device_traces", Message{"error.snapshot.mixed", {}});
      event_lists_.emplace_back();
      release(list, Conv::kEvents, static_cast<uint32_t>(event_lists_.size() - 1));
    }
    if (++events_ > kMaxTraceEvents) limit("error.snapshot.what.traceEntries", kMaxTraceEvents);
    containers_[c].conv = Conv::kBusy;
    Event e;
    const V& av = *k[k_action_];
    if (av.t != T::kStr) type_error("snapshot.device_traces.action", "error.snapshot.want.string");
    // Interned by content: the action's string id names it.
    if (av.a - kFirstAction < kActionCount) e.action = kActions[av.a - kFirstAction].second;
    if (e.action == Action::kOom) {
      e.addr = opt_u64(k[k_device_free_], "snapshot.device_traces.device_free");
    } else if (e.action != Action::kOther && e.action != Action::kSnapshot) {
      const V* addr = k[k_addr_];
      if (!addr)
        fail(code::kMissingField, "snapshot.device_traces.addr",
             Message{"error.snapshot.addr",
                     {{"action", strings_[av.a]}, {"byte", std::to_string(pos_)}}});
      e.addr = as_addr(*addr, "snapshot.device_traces.addr");
    }
    if (e.action != Action::kOther) e.size = req_u64(k[k_size_], "snapshot.device_traces.size");
    if (const V* s = k[k_stream_]; s && s->t != T::kNone)
      e.stream = static_cast<uint16_t>(stream_index(as_int(*s, "snapshot.device_traces.stream")));
    e.stack = stack_of(k[k_frames_], "snapshot.device_traces.frames");
    if (const V* t = k[k_time_us_]; t && t->t != T::kNone) {
      e.time_us = as_int(*t, "snapshot.device_traces.time_us");
      e.has_time = true;
    }
    push_event(event_lists_[containers_[list].ref], e);
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
         Message{"error.snapshot.state", {{"s", s.substr(0, 64)}}});
  }

  void to_block(uint32_t c, const Keys& k) {
    if (blocks_.size() >= kMaxBlocks) limit("error.snapshot.what.blocks", kMaxBlocks);
    containers_[c].conv = Conv::kBusy;
    Block b;
    b.size = req_u64(k[k_size_], "snapshot.segments.blocks.size");
    b.requested_size =
        opt_u64(k[k_requested_size_], "snapshot.segments.blocks.requested_size", b.size);
    if (const V* a = k[k_address_]; a && a->t != T::kNone)
      b.address = as_addr(*a, "snapshot.segments.blocks.address");
    b.state = block_state(k[k_state_]);
    b.stack = stack_of(k[k_frames_], "snapshot.segments.blocks.frames");
    blocks_.push_back(b);
    work_bytes_ += 2 * sizeof(Block);  // (and its copy in its segment)
    check_budget();
    release(c, Conv::kBlock, static_cast<uint32_t>(blocks_.size() - 1));
  }

  void to_segment(uint32_t c, const Keys& k) {
    if (out_.segments.size() >= kMaxSegments) limit("error.snapshot.what.segments", kMaxSegments);
    containers_[c].conv = Conv::kBusy;
    Segment s;
    s.total_size = req_u64(k[k_total_size_], "snapshot.segments.total_size");
    if (const V* a = k[k_address_]; a && a->t != T::kNone)
      s.address = as_addr(*a, "snapshot.segments.address");
    s.device = opt_u64(k[k_device_], "snapshot.segments.device");
    s.allocated_size = opt_u64(k[k_allocated_size_], "snapshot.segments.allocated_size");
    s.active_size = opt_u64(k[k_active_size_], "snapshot.segments.active_size");
    s.requested_size = opt_u64(k[k_requested_size_], "snapshot.segments.requested_size");
    if (const V* st = k[k_stream_]; st && st->t != T::kNone)
      s.stream = as_int(*st, "snapshot.segments.stream");
    if (const V* t = k[k_segment_type_]; t && t->t != T::kNone)
      s.large = as_str(*t, "snapshot.segments.segment_type") != "small";
    if (const V* e = k[k_is_expandable_]; e && e->t == T::kBool) s.expandable = e->u != 0;
    if (const V* bl = k[k_blocks_]; bl && bl->t != T::kNone) {
      if (bl->t != T::kList || containers_[bl->a].conv != Conv::kNone)
        type_error("snapshot.segments.blocks", "error.snapshot.want.blocks");
      uint64_t addr = s.address;  // blocks follow each other (memory_snapshot.cpp: address += size)
      Keys bk;
      for (const V& b : items(bl->a)) {
        if (b.t == T::kDict && containers_[b.a].conv == Conv::kNone) {
          keys_of(b.a, &bk);
          to_block(b.a, bk);
        }
        if (b.t != T::kDict || containers_[b.a].conv != Conv::kBlock)
          type_error("snapshot.segments.blocks", "error.snapshot.want.blocksFields");
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
      type_error("snapshot", "error.snapshot.want.snapshot");
    const V* seg = find(top.a, k_segments_);
    const V* traces = find(top.a, k_device_traces_);
    if (!seg && !traces)
      fail(code::kMissingField, "snapshot.segments", Message{"error.snapshot.neither", {}});
    if (seg) segments_from(*seg, "snapshot.segments");
    if (traces && traces->t != T::kNone) {
      if (traces->t != T::kList || containers_[traces->a].conv != Conv::kNone)
        type_error("snapshot.device_traces", "error.snapshot.want.deviceTraces");
      const auto& devs = items(traces->a);
      if (devs.size() > kMaxDevices) limit("error.snapshot.what.devices", kMaxDevices);
      for (const V& d : devs) {
        if (d.t != T::kList) type_error("snapshot.device_traces", "error.snapshot.want.traceLists");
        const Container& dc = containers_[d.a];
        if (dc.conv == Conv::kEvents) {
          std::vector<Event>& ev = event_lists_[dc.ref];
          if (ev.capacity() - ev.size() > ev.size() / 4) ev.shrink_to_fit();
          out_.device_traces.push_back(std::move(ev));
        } else if (dc.conv == Conv::kNone && items(d.a).empty())
          out_.device_traces.emplace_back();
        else
          type_error("snapshot.device_traces", "error.snapshot.want.traceLists");
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
      type_error(field, "error.snapshot.want.segments");
    for (const V& s : items(v.a))
      if (s.t != T::kDict || containers_[s.a].conv != Conv::kSegment) {
        Keys k;
        if (s.t == T::kDict && containers_[s.a].conv == Conv::kNone &&
            (keys_of(s.a, &k), k[k_total_size_])) {
          to_segment(s.a, k);
        } else {
          type_error(field, "error.snapshot.want.segmentsFields");
        }
      }
  }

  std::string_view b_;
  const uint64_t budget_;  // of the working memory: kReaderWorkPerFileByte x the file + base
  size_t pos_ = 0, op_at_ = 0;
  int protocol_ = 0;
  Stack stack_;
  std::vector<size_t> marks_;
  // Working memory of the reader (everything but the file), checked against its budget.
  uint64_t work_bytes_ = 0;
  uint64_t live_items_ = 0;  // values held in containers being built (16 B each, x2 capacity)
  static constexpr uint64_t kItemBytes = 2 * sizeof(V);
  static constexpr uint64_t kStringBytes = 64;  // a std::string and its map node
  Blocks<Memo> memo_{&work_bytes_};
  std::vector<uint64_t> memo_numbers_;
  Blocks<Container> containers_{&work_bytes_};
  std::vector<Values> slots_;
  std::vector<uint32_t> free_slots_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
  uint64_t pool_bytes_ = 0;
  uint32_t actions_counted_ = 0;  // bit a: kActions[a] was read from the file
  struct FrameKey {
    uint32_t file, name;
    int64_t line;
    bool operator==(const FrameKey& o) const {
      return file == o.file && name == o.name && line == o.line;
    }
  };
  struct FrameHash {
    size_t operator()(const FrameKey& k) const noexcept {
      uint64_t h = (static_cast<uint64_t>(k.file) << 32 | k.name) * 0x9e3779b97f4a7c15ULL;
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(k.line) * 0xc2b2ae3d27d4eb4fULL) ^
                                 (h >> 29));
    }
  };
  std::unordered_map<FrameKey, uint32_t, FrameHash> frame_ids_;
  struct StackHash {
    size_t operator()(const std::vector<uint32_t>& v) const noexcept {
      uint64_t h = 1469598103934665603ULL;  // FNV-1a over the frame ids
      for (uint32_t x : v) h = (h ^ x) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stack_ids_;
  std::vector<uint32_t> stack_scratch_, last_stack_;
  uint32_t last_stack_id_ = 0;
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
