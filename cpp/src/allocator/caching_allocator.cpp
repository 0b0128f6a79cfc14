// A simulator of PyTorch's CUDA caching allocator. Each rule names the function of
// c10/cuda/CUDACachingAllocator.cpp (or CUDAAllocatorConfig.cpp) it follows and the commit read:
//   001074d = pytorch/pytorch 001074d25084fdb87a799823e395a50f5ec044d3 (main, 2.x series),
//   eb42ad6 = pytorch/pytorch eb42ad6eca0ce61e7c581212b4bf32f991425571 (2.x series),
//   1.13    = the v1.13-era text of the same file (CachingAllocatorConfig still inside it,
//             roundup_bypass_threshold_mb, per-block gc_count).
// Where the two agree only the newer is named. docs/allocator.md lists every rule and what is not
// modelled (events / record_stream, CUDA graph pools, IPC, real addresses).
#include "trainmem/caching_allocator.hpp"

#include "util/sorted_order.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

namespace trainmem {
namespace allocator {

namespace {

// CUDACachingAllocator.cpp constants (001074d, identical in 1.13):
constexpr uint64_t kMinBlockSize = 512;        // all sizes are rounded to at least 512 bytes
constexpr uint64_t kSmallSize = 1048576;       // largest "small" allocation is 1 MiB
constexpr uint64_t kSmallBuffer = 2097152;     // "small" allocations are packed in 2 MiB blocks
constexpr uint64_t kLargeBuffer = 20971520;    // "large" allocations may be packed in 20 MiB blocks
constexpr uint64_t kMinLargeAlloc = 10485760;  // allocations between 1 and 10 MiB use kLargeBuffer
constexpr uint64_t kRoundLarge = 2097152;      // round up large allocations to 2 MiB
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();
// Requests above this cannot be rounded without overflow; they fail as an OOM (the simulator's
// own guard: no GPU has 2^62 bytes).
constexpr uint64_t kMaxRequest = uint64_t{1} << 62;
// Address space of one expandable segment when no capacity is given (256 TiB, the figure of
// Note [Expandable Segments]); with a capacity it is 1 1/8 of it, as ExpandableSegment's
// constructor takes 1 1/8 of totalGlobalMem (001074d).
constexpr uint64_t kDefaultExpandableSpace = uint64_t{1} << 48;

int floor_log2(uint64_t v) {
  int r = -1;
  while (v != 0) {
    v >>= 1;
    ++r;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Node arena: std::set nodes and Blocks come from chunks and go back to a free list, so a replay
// does not call the system allocator once per event.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* get(std::size_t size) {
    Class& c = class_for(size);
    if (c.free != nullptr) {
      void* p = c.free;
      c.free = *static_cast<void**>(p);
      return p;
    }
    if (left_ < c.size) {
      chunks_.emplace_back(new unsigned char[kChunk]);
      cursor_ = chunks_.back().get();
      left_ = kChunk;
    }
    void* p = cursor_;
    cursor_ += c.size;
    left_ -= c.size;
    return p;
  }
  void put(void* p, std::size_t size) {
    Class& c = class_for(size);
    *static_cast<void**>(p) = c.free;
    c.free = p;
  }

 private:
  struct Class {
    std::size_t size = 0;
    void* free = nullptr;
  };
  static constexpr std::size_t kChunk = 64 * 1024;
  Class& class_for(std::size_t size) {
    const std::size_t a = alignof(std::max_align_t);
    const std::size_t rounded = (std::max(size, sizeof(void*)) + a - 1) / a * a;
    for (Class& c : classes_)
      if (c.size == rounded) return c;
    classes_.push_back(Class{rounded, nullptr});
    return classes_.back();
  }
  std::vector<Class> classes_;  // one or two node sizes in practice
  std::vector<std::unique_ptr<unsigned char[]>> chunks_;
  unsigned char* cursor_ = nullptr;
  std::size_t left_ = 0;
};

template <class T>
struct ArenaAllocator {
  using value_type = T;
  Arena* arena;
  explicit ArenaAllocator(Arena* a) : arena(a) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& o) : arena(o.arena) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(arena->get(sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    arena->put(p, sizeof(T));
  }
  template <class U>
  bool operator==(const ArenaAllocator<U>& o) const {
    return arena == o.arena;
  }
  template <class U>
  bool operator!=(const ArenaAllocator<U>& o) const {
    return arena != o.arena;
  }
};

struct Block;

// The key of a free block, kept inline in the set node so that comparisons do not chase the
// Block pointer.
struct Key {
  uint32_t stream;
  uint64_t size;
  uint64_t addr;
  Block* block;
};
// CUDACachingAllocator.cpp BlockComparatorAddress (001074d): by stream, then address.
struct ByAddress {
  bool operator()(const Key& a, const Key& b) const {
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.addr < b.addr;
  }
};
using UnmappedSet = std::set<Key, ByAddress, ArenaAllocator<Key>>;

struct ExpandableSegment {
  uint64_t base = 0;
  uint64_t space = 0;  // reserved address space
  uint64_t page = 0;   // kSmallBuffer (small pool) or kLargeBuffer (large pool)
};

struct Pool;

// CUDACachingAllocator.cpp struct Block (001074d), less events, contexts and device.
struct Block {
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  int64_t gc_count_base = 0;
  Block* prev = nullptr;
  Block* next = nullptr;
  Pool* pool = nullptr;
  ExpandableSegment* es = nullptr;
  // The key the block was filed under in its pool's free blocks (valid while in_blocks).
  uint64_t key_size = 0;
  uint64_t key_addr = 0;
  uint32_t stream = 0;
  bool allocated = false;
  bool mapped = true;
  bool in_blocks = false;
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// A stream's free blocks of one pool in CUDACachingAllocator.cpp BlockComparatorSize order
// (001074d: stream, then size, then address). Every search stays within one stream, so each
// stream has its own index. Sizes fall into classes, 8 per power of two (as in TLSF
// allocators), each class a short array sorted by (size, address), with a two-level bitmap of
// the classes that hold blocks: best fit is a scan of one class or else the first block of the
// next non-empty class. The Llama-2-70B trace's large pool holds ~130 free blocks of ~25 sizes
// across ~60 classes, so an insert or erase moves a few entries, where std::set chased ~8
// pointers through its tree and rebalanced it.
struct Entry {
  uint64_t size;
  uint64_t addr;
  Block* block;
};
bool entry_less(const Entry& e, uint64_t size, uint64_t addr) {
  return e.size < size || (e.size == size && e.addr < addr);
}

// Clang turns element loops back into memmove calls, which in WebAssembly (no bulk memory) are
// a slow generic loop or a call out to JavaScript; a few entries are moved faster in line.
#if defined(__clang__)
#define TRAINMEM_NO_MEMMOVE __attribute__((no_builtin("memmove", "memcpy")))
#else
#define TRAINMEM_NO_MEMMOVE
#endif

// A run of one size class: entries sorted by (size, address), with room at both ends, so that an
// insert or erase moves the shorter side. Best fit takes the first entry of a class, often of a run
// of equal sizes, which then costs no move at all.
class Chunk {
 public:
  Chunk() = default;
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  ~Chunk() { delete[] data_; }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Entry& operator[](std::size_t i) const { return data_[begin_ + i]; }

  TRAINMEM_NO_MEMMOVE void insert(std::size_t pos, const Entry& e) {
    const bool front_room = begin_ > 0, back_room = begin_ + size_ < cap_;
    if (!front_room && !back_room) {
      grow();
    } else if (front_room && (pos < size_ / 2 || !back_room)) {
      --begin_;  // the entries before pos move one down
      Entry* d = data_ + begin_;
      for (std::size_t i = 0; i < pos; ++i) d[i] = d[i + 1];
      d[pos] = e;
      ++size_;
      return;
    }
    Entry* d = data_ + begin_;  // the entries from pos move one up
    for (std::size_t i = size_; i > pos; --i) d[i] = d[i - 1];
    d[pos] = e;
    ++size_;
  }
  // Keeps the first n entries.
  void truncate(std::size_t n) { size_ = n; }
  TRAINMEM_NO_MEMMOVE void erase(std::size_t pos) {
    Entry* d = data_ + begin_;
    --size_;
    if (pos < size_ / 2) {  // the entries before pos move one up
      for (std::size_t i = pos; i > 0; --i) d[i] = d[i - 1];
      ++begin_;
    } else {
      for (std::size_t i = pos; i < size_; ++i) d[i] = d[i + 1];
    }
    if (size_ == 0) begin_ = cap_ / 2;
  }

 private:
  TRAINMEM_NO_MEMMOVE void grow() {
    const std::size_t cap = cap_ == 0 ? 8 : cap_ * 2;
    Entry* data = new Entry[cap];
    const std::size_t begin = (cap - size_) / 2;
    for (std::size_t i = 0; i < size_; ++i) data[begin + i] = data_[begin_ + i];
    delete[] data_;
    data_ = data;
    cap_ = cap;
    begin_ = begin;
  }
  Entry* data_ = nullptr;
  std::size_t begin_ = 0;  // data_[begin_, begin_ + size_) hold the entries
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

// One size class: runs (chunks) of at most kMaxChunk entries, in order. A class of thousands of
// equal sizes (a mixture of experts' 58,000 expert tensors) would otherwise move half its entries
// per insert or erase; a run moves at most half of kMaxChunk. Most classes hold one run.
class ClassArray {
 public:
  ClassArray() = default;
  ClassArray(const ClassArray&) = delete;
  ClassArray& operator=(const ClassArray&) = delete;
  ~ClassArray() {
    for (Chunk* c : chunks_) delete c;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Entry& operator[](std::size_t i) const {
    std::size_t c = 0;
    while (i >= chunks_[c]->size()) i -= chunks_[c++]->size();
    return (*chunks_[c])[i];
  }
  // The first position of the entries at or above (size, addr): the run that holds it found by
  // the runs' last entries, then a search within that run.
  std::size_t position(uint64_t size, uint64_t addr) const {
    std::size_t before = 0, c = 0;
    while (c + 1 < chunks_.size()) {
      const Chunk& run = *chunks_[c];
      if (!entry_less(run[run.size() - 1], size, addr)) break;
      before += run.size();
      ++c;
    }
    return chunks_.empty() ? 0 : before + chunk_position(*chunks_[c], size, addr);
  }
  void insert(std::size_t pos, const Entry& e) {
    if (chunks_.empty()) chunks_.push_back(new Chunk);
    std::size_t c = 0;
    while (c + 1 < chunks_.size() && pos > chunks_[c]->size()) pos -= chunks_[c++]->size();
    Chunk& run = *chunks_[c];
    run.insert(pos, e);
    ++size_;
    if (run.size() > kMaxChunk) split(c);
  }
  void erase(std::size_t pos) {
    std::size_t c = 0;
    while (pos >= chunks_[c]->size()) pos -= chunks_[c++]->size();
    chunks_[c]->erase(pos);
    --size_;
    if (chunks_[c]->empty() && chunks_.size() > 1) {
      delete chunks_[c];
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c));
    }
  }

 private:
  static constexpr std::size_t kMaxChunk = 512;
  static std::size_t chunk_position(const Chunk& v, uint64_t size, uint64_t addr) {
    std::size_t lo = 0, n = v.size();
    while (n > 8) {  // binary search while long, then a scan
      const std::size_t half = n / 2;
      if (entry_less(v[lo + half], size, addr)) {
        lo += half + 1;
        n -= half + 1;
      } else {
        n = half;
      }
    }
    const std::size_t end = lo + n;
    while (lo < end && entry_less(v[lo], size, addr)) ++lo;
    return lo;
  }
  // Moves the upper half of run c into a new run after it.
  void split(std::size_t c) {
    Chunk& run = *chunks_[c];
    const std::size_t half = run.size() / 2;
    Chunk* upper = new Chunk;
    for (std::size_t i = half; i < run.size(); ++i) upper->insert(upper->size(), run[i]);
    run.truncate(half);
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1, upper);
  }
  std::vector<Chunk*> chunks_;
  std::size_t size_ = 0;
};

class StreamBlocks {
 public:
  static constexpr int kSubBits = 3;  // 8 classes per power of two
  static constexpr int kClasses = 64 << kSubBits;
  static constexpr int kSubMask = (1 << kSubBits) - 1;

  explicit StreamBlocks(uint32_t s) : stream(s), classes_(new ClassArray[kClasses]) {}

  uint32_t stream;

  // A position: class c, entry k; c == kClasses is the end.
  struct Pos {
    int c;
    std::size_t k;
  };
  bool at_end(const Pos& p) const { return p.c == kClasses; }
  const Entry& at(const Pos& p) const { return classes_[p.c][p.k]; }
  bool empty() const { return top_ == 0; }

  // The first entry not less than (size, 0): best fit.
  Pos lower_bound_size(uint64_t size) const {
    const int c = class_of(size);
    const ClassArray& v = classes_[c];
    const std::size_t k = position(v, size, 0);
    if (k < v.size()) return Pos{c, k};
    return first_from(c + 1);
  }
  Pos next(Pos p) const {
    if (++p.k < classes_[p.c].size()) return p;
    return first_from(p.c + 1);
  }
  // The last entry (the stream must have one).
  Pos last() const { return last_before(kClasses); }
  // The entry before p, p not the first.
  Pos prev(Pos p) const {
    if (p.k > 0) return Pos{p.c, p.k - 1};
    return last_before(p.c);
  }
  bool is_first(const Pos& p) const { return p.k == 0 && last_before_or_none(p.c) < 0; }

  void insert(const Entry& e) {
    const int c = class_of(e.size);
    ClassArray& v = classes_[c];
    if (v.empty()) {
      top_ |= uint64_t{1} << (c >> kSubBits);
      sub_[c >> kSubBits] |= uint32_t{1} << (c & kSubMask);
    }
    v.insert(position(v, e.size, e.addr), e);
  }
  // Removes the entry filed under (size, addr).
  void erase(uint64_t size, uint64_t addr) {
    const int c = class_of(size);
    erase_at(Pos{c, position(classes_[c], size, addr)});
  }
  void erase_at(const Pos& p) {
    const int c = p.c;
    ClassArray& v = classes_[c];
    v.erase(p.k);
    if (v.empty()) {
      sub_[c >> kSubBits] &= ~(uint32_t{1} << (c & kSubMask));
      if (sub_[c >> kSubBits] == 0) top_ &= ~(uint64_t{1} << (c >> kSubBits));
    }
  }
  template <class F>
  void for_each(F f) const {
    for (Pos p = first_from(0); !at_end(p); p = next(p)) f(at(p).block);
  }

 private:
  static int floor_log2(uint64_t v) { return 63 - __builtin_clzll(v); }
  static int class_of(uint64_t size) {
    if (size < (uint64_t{1} << kSubBits)) return static_cast<int>(size);  // octaves 0-2: exact
    const int o = floor_log2(size);
    return (o << kSubBits) | static_cast<int>((size >> (o - kSubBits)) & kSubMask);
  }
  // The first position of the entries at or above (size, addr) in one class.
  static std::size_t position(const ClassArray& v, uint64_t size, uint64_t addr) {
    return v.position(size, addr);
  }
  // The first entry of the first non-empty class at or above c.
  Pos first_from(int c) const {
    if (c >= kClasses) return Pos{kClasses, 0};
    int o = c >> kSubBits;
    const uint32_t subs = sub_[o] & (~uint32_t{0} << (c & kSubMask));
    if (subs != 0) return Pos{(o << kSubBits) | __builtin_ctz(subs), 0};
    const uint64_t above = o + 1 < 64 ? top_ & (~uint64_t{0} << (o + 1)) : 0;
    if (above == 0) return Pos{kClasses, 0};
    o = __builtin_ctzll(above);
    return Pos{(o << kSubBits) | __builtin_ctz(sub_[o]), 0};
  }
  // The last non-empty class below c, or -1.
  int last_before_or_none(int c) const {
    if (c <= 0) return -1;
    --c;
    int o = c >> kSubBits;
    const uint32_t subs = sub_[o] & static_cast<uint32_t>((uint64_t{2} << (c & kSubMask)) - 1);
    if (subs != 0) return (o << kSubBits) | (31 - __builtin_clz(subs));
    const uint64_t below = top_ & ((uint64_t{1} << o) - 1);
    if (below == 0) return -1;
    o = 63 - __builtin_clzll(below);
    return (o << kSubBits) | (31 - __builtin_clz(sub_[o]));
  }
  Pos last_before(int c) const {
    const int d = last_before_or_none(c);
    return Pos{d, classes_[d].size() - 1};
  }

  std::unique_ptr<ClassArray[]> classes_;
  uint64_t top_ = 0;       // bit o: some class of octave o holds blocks
  uint32_t sub_[64] = {};  // bit s of sub_[o]: class (o, s) holds blocks
};

// CUDACachingAllocator.cpp struct BlockPool (001074d).
struct Pool {
  Pool(bool small, Arena* arena)
      : unmapped(ByAddress(), ArenaAllocator<Key>(arena)), is_small(small) {}
  std::vector<StreamBlocks> streams;  // `blocks`, by stream (usually one stream)
  UnmappedSet unmapped;
  bool is_small;
  int64_t get_free_blocks_call_count = 0;

  StreamBlocks* find(uint32_t stream) {
    for (StreamBlocks& sb : streams)
      if (sb.stream == stream) return &sb;
    return nullptr;
  }
  StreamBlocks& get(uint32_t stream) {
    if (!streams.empty() && streams.front().stream == stream) return streams.front();
    return add(stream);
  }
  StreamBlocks& add(uint32_t stream) {
    if (StreamBlocks* sb = find(stream)) return *sb;
    auto it = std::lower_bound(streams.begin(), streams.end(), stream,
                               [](const StreamBlocks& sb, uint32_t s) { return sb.stream < s; });
    return *streams.insert(it, StreamBlocks(stream));
  }
  // Every free block in BlockComparatorSize order (stream, size, address).
  template <class F>
  void for_each(F f) const {
    for (const StreamBlocks& sb : streams) sb.for_each(f);
  }
};

// Open-addressing map from a tensor's handle to its live Block (linear probing, backward-shift
// deletion): no node allocation per event.
class HashIdMap {
 public:
  HashIdMap() { rehash(64); }
  Block* find(uint64_t key) const {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (vals_[i] == nullptr) return nullptr;
      if (keys_[i] == key) return vals_[i];
    }
  }
  void insert(uint64_t key, Block* value) {
    if ((count_ + 1) * 2 > vals_.size()) rehash(vals_.size() * 2);
    place(key, value);
    ++count_;
  }
  Block* erase(uint64_t key) {
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (vals_[i] == nullptr) return nullptr;
      if (keys_[i] == key) break;
    }
    Block* found = vals_[i];
    vals_[i] = nullptr;
    --count_;
    for (std::size_t j = (i + 1) & mask_; vals_[j] != nullptr; j = (j + 1) & mask_) {
      const std::size_t h = home(keys_[j]);
      const bool stays = (i < j) ? (h > i && h <= j) : (h > i || h <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      vals_[i] = vals_[j];
      vals_[j] = nullptr;
      i = j;
    }
    return found;
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = 0; i < vals_.size(); ++i)
      if (vals_[i] != nullptr) f(vals_[i]);
  }

 private:
  std::size_t home(uint64_t k) const {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<std::size_t>(k) & mask_;
  }
  void place(uint64_t key, Block* value) {
    std::size_t i = home(key);
    while (vals_[i] != nullptr) i = (i + 1) & mask_;
    keys_[i] = key;
    vals_[i] = value;
  }
  void rehash(std::size_t capacity) {
    std::vector<uint64_t> keys(capacity, 0);
    std::vector<Block*> vals(capacity, nullptr);
    keys.swap(keys_);
    vals.swap(vals_);
    mask_ = capacity - 1;
    for (std::size_t i = 0; i < vals.size(); ++i)
      if (vals[i] != nullptr) place(keys[i], vals[i]);
  }
  std::vector<uint64_t> keys_;
  std::vector<Block*> vals_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
};

// Handle -> live Block: a dense array for the small consecutive handles traces use (peak memory
// numbers its tensors 1, 2, 3...), which also keeps neighbouring handles' slots together;
// other handles go to the hash map.
class IdMap {
 public:
  Block* find(uint64_t key) const {
    if (key < dense_.size()) return dense_[key];
    return sparse_count_ == 0 ? nullptr : sparse_.find(key);
  }
  void insert(uint64_t key, Block* value) {
    if (key >= dense_.size() && key < kDenseLimit)
      dense_.resize(
          std::max<std::size_t>({static_cast<std::size_t>(key) + 1, dense_.size() * 2, 1024}),
          nullptr);
    if (key < dense_.size()) {
      dense_[key] = value;
      return;
    }
    sparse_.insert(key, value);
    ++sparse_count_;
  }
  Block* erase(uint64_t key) {
    if (key < dense_.size()) {
      Block* b = dense_[key];
      dense_[key] = nullptr;
      return b;
    }
    if (sparse_count_ == 0) return nullptr;
    Block* b = sparse_.erase(key);
    if (b != nullptr) --sparse_count_;
    return b;
  }
  template <class F>
  void for_each(F f) const {
    for (Block* b : dense_)
      if (b != nullptr) f(b);
    if (sparse_count_ != 0) sparse_.for_each(f);
  }

 private:
  static constexpr uint64_t kDenseLimit = uint64_t{1} << 20;
  std::vector<Block*> dense_;
  HashIdMap sparse_;
  std::size_t sparse_count_ = 0;
};

}  // namespace

struct CachingAllocator::Impl {
  explicit Impl(const Config& c)
      : cfg(c),
        small(true, &arena),
        large(false, &arena),
        gc_enabled(c.garbage_collection_threshold > 0 && c.capacity_bytes > 0) {}

  ~Impl() {
    // Blocks are plain objects in the arena; the sets and the arena free themselves.
    small.unmapped.clear();
    large.unmapped.clear();
  }

  Config cfg;
  Arena arena;                    // declared before the pools: destroyed after them
  Block* spare_blocks = nullptr;  // deleted Blocks, linked through `next`
  Pool small;
  Pool large;
  IdMap live;
  std::vector<std::unique_ptr<ExpandableSegment>> expandable;
  Stats st;
  uint64_t inactive_split_bytes = 0;
  uint64_t next_addr = 0;  // the simulator's address space: segments in allocation order
  bool gc_enabled;

  // --- Blocks -----------------------------------------------------------------------------
  Block* new_block(uint32_t stream, uint64_t size, Pool* pool, uint64_t addr) {
    void* p = spare_blocks;
    if (p != nullptr)
      spare_blocks = spare_blocks->next;
    else
      p = arena.get(sizeof(Block));
    Block* b = new (p) Block();
    b->stream = stream;
    b->size = size;
    b->pool = pool;
    b->addr = addr;
    return b;
  }
  void delete_block(Block* b) {
    static_assert(std::is_trivially_destructible<Block>::value, "Blocks are reused in place");
    b->next = spare_blocks;  // a free list of its own: no search for the arena's size class
    spare_blocks = b;
  }
  // CUDACachingAllocator.cpp BlockPool::insert_into_blocks (001074d): stamps gc_count_base.
  void insert_into_blocks(Block* b) {
    b->gc_count_base = b->pool->get_free_blocks_call_count;
    b->pool->get(b->stream).insert(Entry{b->size, b->addr, b});
    b->key_size = b->size;
    b->key_addr = b->addr;
    b->in_blocks = true;
  }
  void erase_from_blocks(Block* b) {
    b->pool->find(b->stream)->erase(b->key_size, b->key_addr);
    b->in_blocks = false;
  }
  void insert_unmapped(Block* b) { b->pool->unmapped.insert(Key{b->stream, 0, b->addr, b}); }
  void erase_unmapped(Block* b) { b->pool->unmapped.erase(Key{b->stream, 0, b->addr, b}); }
  // CUDACachingAllocator.cpp Block::gc_count (001074d): get_free_block calls on the pool since
  // the block was last inserted into it (1.13 counted the same thing per block).
  static uint64_t gc_count(const Block* b) {
    return static_cast<uint64_t>(b->pool->get_free_blocks_call_count - b->gc_count_base);
  }
  // CUDACachingAllocator.cpp Block::splice (001074d).
  static void splice(Block* b, Block* before, Block* after) {
    if (before != nullptr) before->next = b;
    b->prev = before;
    if (after != nullptr) after->prev = b;
    b->next = after;
  }

  // --- Stats --------------------------------------------------------------------------------
  // CUDACachingAllocator.cpp increase_stat (001074d): current += amount; peak = max(peak, current).
  void add_reserved(uint64_t n) {
    st.reserved_bytes += n;
    st.peak_reserved_bytes = std::max(st.peak_reserved_bytes, st.reserved_bytes);
  }
  void add_allocated(uint64_t n) {
    st.allocated_bytes += n;
    st.peak_allocated_bytes = std::max(st.peak_allocated_bytes, st.allocated_bytes);
  }

  // --- Pools and sizes ----------------------------------------------------------------------
  // CUDACachingAllocator.cpp get_pool (001074d): rounded sizes <= kSmallSize go to the small pool.
  Pool& get_pool(uint64_t size) { return size <= kSmallSize ? small : large; }

  // CUDACachingAllocator.cpp should_split (001074d): small pool or expandable segments: split if
  // the rest is >= 512 B; large pool: only requests < max_split_size, and only if the rest is
  // > kSmallSize (1 MiB). 1.13 had no expandable clause.
  bool should_split(const Block* b, uint64_t size) const {
    const uint64_t remaining = b->size - size;
    if (b->pool->is_small || cfg.expandable_segments) return remaining >= kMinBlockSize;
    return size < cfg.max_split_size && remaining > kSmallSize;
  }

  // CUDACachingAllocator.cpp get_free_block (001074d).
  Block* get_free_block(Pool& pool, uint32_t stream, uint64_t size) {
    // get_free_block: the pool's call counter (block age) moves only when GC is enabled.
    if (gc_enabled) ++pool.get_free_blocks_call_count;
    // get_free_block: best fit = lower_bound on (stream, size, address); other streams never match.
    StreamBlocks* sb = pool.find(stream);
    if (sb == nullptr) return nullptr;
    StreamBlocks::Pos p = sb->lower_bound_size(size);
    if (sb->at_end(p)) return nullptr;
    if (sb->at(p).block->es != nullptr) {
      // get_free_block (001074d): for expandable blocks "best fit" measures a block with the
      // unmapped space after it, so a later block that expands less is preferred.
      auto expandable_size = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      for (StreamBlocks::Pos q = sb->next(p);
           sb->at(p).block->es != nullptr && !sb->at_end(q) &&
           expandable_size(sb->at(q).block) < expandable_size(sb->at(p).block);
           q = sb->next(q)) {
        p = q;
      }
    }
    const uint64_t found = sb->at(p).size;
    // get_free_block: "Do not return an oversized block for a large request".
    if (size < cfg.max_split_size && found >= cfg.max_split_size) return nullptr;
    // get_free_block: an oversize request may take a cached oversize block less than
    // kLargeBuffer (20 MiB) larger (newer main: max_non_split_rounding_mb, default 20 MiB).
    if (size >= cfg.max_split_size && found >= size + kLargeBuffer) return nullptr;
    Block* b = sb->at(p).block;
    sb->erase_at(p);  // erase_from_blocks(b), its position known
    b->in_blocks = false;
    return b;
  }

  // CUDACachingAllocator.cpp try_merge_blocks (001074d): absorbs a free neighbour with the same
  // mapped state; returns the bytes subsumed.
  uint64_t try_merge_blocks(Block* dst, Block* src) {
    if (src == nullptr || src->allocated || dst->mapped != src->mapped) return 0;
    if (dst->prev == src) {  // [src dst]
      dst->addr = src->addr;
      dst->prev = src->prev;
      if (dst->prev != nullptr) dst->prev->next = dst;
    } else {  // [dst src]
      dst->next = src->next;
      if (dst->next != nullptr) dst->next->prev = dst;
    }
    const uint64_t subsumed = src->size;
    dst->size += subsumed;
    if (src->mapped)
      erase_from_blocks(src);
    else
      erase_unmapped(src);
    delete_block(src);
    return subsumed;
  }

  // CUDACachingAllocator.cpp free_block (001074d): merge with both neighbours, back into the
  // pool; inactive_split_bytes counts free blocks of split segments (not expandable ones).
  void free_block(Block* b) {
    int64_t net_inactive_split = 0;
    Block* const candidates[2] = {b->prev, b->next};
    for (Block* c : candidates) {
      const uint64_t subsumed = try_merge_blocks(b, c);
      if (subsumed > 0) net_inactive_split -= static_cast<int64_t>(subsumed);
    }
    insert_into_blocks(b);
    if (b->is_split()) net_inactive_split += static_cast<int64_t>(b->size);
    if (b->es == nullptr) {
      inactive_split_bytes =
          static_cast<uint64_t>(static_cast<int64_t>(inactive_split_bytes) + net_inactive_split);
    }
  }

  // CUDACachingAllocator.cpp alloc_found_block (001074d; inline in malloc in 1.13).
  Block* alloc_found_block(Block* b, uint64_t size, uint64_t orig_size, bool split_remainder) {
    const bool already_split = b->is_split();
    if (split_remainder) {
      // alloc_found_block: the front `size` bytes become the new block, the rest stays cached.
      Block* remaining = b;
      b = new_block(remaining->stream, size, remaining->pool, remaining->addr);
      b->es = remaining->es;
      b->prev = remaining->prev;
      if (b->prev != nullptr) b->prev->next = b;
      b->next = remaining;
      remaining->prev = b;
      remaining->addr += size;
      remaining->size -= size;
      insert_into_blocks(remaining);
      if (already_split && b->es == nullptr) {
        inactive_split_bytes -= b->size;  // an inactive split block shrinks by size bytes
      } else if (b->es == nullptr) {
        inactive_split_bytes += remaining->size;  // a new inactive split block
      }
    } else if (already_split && b->es == nullptr) {
      inactive_split_bytes -= b->size;  // an inactive split block becomes active
    }
    b->allocated = true;
    b->requested = orig_size;
    // alloc_found_block: allocated_bytes += block->size (rounded), requested_bytes += orig_size.
    add_allocated(b->size);
    st.requested_bytes += orig_size;
    return b;
  }

  // CUDACachingAllocator.cpp alloc_block (001074d): one cudaMalloc of alloc_size; with a
  // capacity, a cudaMalloc that does not fit in the free device memory fails.
  Block* alloc_block(Pool& pool, uint32_t stream, uint64_t size, uint64_t alloc_size,
                     bool is_retry) {
    if (is_retry) ++st.num_alloc_retries;  // alloc_block: counted on the retry, success or not
    if (cfg.expandable_segments) return try_allocate_expandable_block(pool, stream, size);
    if (cfg.capacity_bytes != 0 &&
        (alloc_size > cfg.capacity_bytes || st.reserved_bytes > cfg.capacity_bytes - alloc_size))
      return nullptr;
    Block* b = new_block(stream, alloc_size, &pool, next_addr);
    next_addr += alloc_size;
    add_reserved(alloc_size);  // alloc_block: reserved_bytes += size, one more segment
    ++st.num_device_allocs;
    return b;
  }

  // CUDACachingAllocator.cpp release_block (001074d): cudaFree of a whole unused segment.
  void release_block(Block* b) {
    st.reserved_bytes -= b->size;
    ++st.num_device_frees;
    erase_from_blocks(b);
    delete_block(b);
  }

  // CUDACachingAllocator.cpp release_available_cached_blocks (001074d, also 1.13): with a
  // max_split_size, free one cached oversize block at least max(size, max_split_size) large, or
  // else the largest oversize blocks of the stream until that many bytes are freed.
  bool release_available_cached_blocks(Pool& pool, uint32_t stream, uint64_t size) {
    if (cfg.max_split_size == kUnlimited) return false;
    // The simulator's guard: PyTorch would call release_block on an expandable block here and
    // fail an internal assert; with expandable segments this step frees nothing.
    if (cfg.expandable_segments) return false;
    const uint64_t key_size = size < cfg.max_split_size ? cfg.max_split_size : size;
    StreamBlocks* sb = pool.find(stream);
    if (sb == nullptr) return false;
    const StreamBlocks::Pos p = sb->lower_bound_size(key_size);
    if (sb->at_end(p)) {
      // release_available_cached_blocks: "free multiple oversize blocks, starting with the largest"
      // (the set's walk back stops at the stream's first block: other streams never match)
      if (sb->empty()) return false;
      uint64_t total_released = 0;
      StreamBlocks::Pos it = sb->last();
      while (total_released < key_size && sb->at(it).size >= cfg.max_split_size) {
        Block* cur = sb->at(it).block;
        total_released += cur->size;
        const bool at_begin = sb->is_first(it);
        // release_block erases cur, which lies after `it`: `it` stays valid
        if (!at_begin) it = sb->prev(it);
        if (!cur->is_split()) release_block(cur);  // guard: only whole segments are freed
        if (at_begin) break;
      }
      if (total_released < key_size) return false;
    } else {
      Block* b = sb->at(p).block;
      if (b->is_split()) return false;  // guard (cannot happen with max_split > 20 MiB)
      release_block(b);
    }
    return true;
  }

  // CUDACachingAllocator.cpp release_cached_blocks / release_blocks (001074d): frees every
  // cached block that is a whole segment (large pool first, then small); expandable segments
  // unmap their free pages instead.
  bool release_cached_blocks() {
    release_blocks(large);
    release_blocks(small);
    return true;
  }
  void release_blocks(Pool& pool) {
    // release_block erases only the block it frees, so the walk may run over a copy.
    std::vector<Block*> all;
    pool.for_each([&all](Block* b) { all.push_back(b); });
    std::vector<Block*> to_unmap;
    for (Block* b : all) {
      if (b->es != nullptr)
        to_unmap.push_back(b);
      else if (b->prev == nullptr && b->next == nullptr)
        release_block(b);
    }
    for (Block* b : to_unmap) {
      unmap_block(b);
      // release_blocks: a segment whose only block is now unmapped is dropped (PyTorch asserts
      // the block is unmapped; a free block that kept a partial page stays).
      if (!b->mapped && b->prev == nullptr && b->next == nullptr) release_expandable_segment(b);
    }
  }

  // CUDACachingAllocator.cpp garbage_collect_cached_blocks (001074d): once reserved memory is
  // above threshold x allowed memory, free whole cached large-pool segments whose age is at least
  // the average age, repeating until target bytes are reclaimed or nothing more is freed.
  void garbage_collect_cached_blocks() {
    const uint64_t gc_threshold = static_cast<uint64_t>(cfg.garbage_collection_threshold *
                                                        static_cast<double>(cfg.capacity_bytes));
    if (st.reserved_bytes <= gc_threshold) return;  // "No need to trigger GC yet"
    const uint64_t target_size = st.reserved_bytes - gc_threshold;
    uint64_t gc_reclaimed = 0;
    uint64_t total_age = 0;
    int64_t freeable_block_count = 0;
    large.for_each([&](const Block* b) {
      if (!b->is_split() && b->es == nullptr) {
        total_age += gc_count(b);
        ++freeable_block_count;
      }
    });
    if (freeable_block_count == 0) return;
    bool block_freed = true;
    while (gc_reclaimed < target_size && block_freed && freeable_block_count > 0) {
      const double age_threshold =
          static_cast<double>(total_age) / static_cast<double>(freeable_block_count);
      block_freed = false;
      // release_block erases only the block it frees, so the walk may run over a copy.
      std::vector<Block*> all;
      large.for_each([&all](Block* b) { all.push_back(b); });
      for (Block* b : all) {
        if (!b->is_split() && b->es == nullptr &&
            static_cast<double>(gc_count(b)) >= age_threshold) {
          block_freed = true;
          gc_reclaimed += b->size;
          total_age -= gc_count(b);
          --freeable_block_count;
          release_block(b);
        }
      }
    }
  }

  // --- Expandable segments (torch >= 2.1) ---------------------------------------------------
  static bool allocatable(const Block* b) { return b != nullptr && !b->allocated; }

  // CUDACachingAllocator.cpp find_expandable_block (001074d): the lowest-address run of free and
  // unmapped blocks of this stream that holds `size`; else a new segment for (stream, pool).
  Block* find_expandable_block(Pool& pool, uint32_t stream, uint64_t size) {
    auto has_available_address_space = [size](const Block* b) {
      uint64_t bytes = 0;
      while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
      }
      return bytes >= size;
    };
    for (auto it = pool.unmapped.lower_bound(Key{stream, 0, 0, nullptr});
         it != pool.unmapped.end() && it->stream == stream; ++it) {
      Block* c = it->block;
      if (allocatable(c->prev)) c = c->prev;
      if (has_available_address_space(c)) return c;
    }
    // find_expandable_block: 2 MiB pages for the small pool, kLargeBuffer (20 MiB) for the large.
    auto es = std::make_unique<ExpandableSegment>();
    es->page = pool.is_small ? kSmallBuffer : kLargeBuffer;
    const uint64_t wanted = cfg.capacity_bytes != 0 ? cfg.capacity_bytes + cfg.capacity_bytes / 8
                                                    : kDefaultExpandableSpace;
    es->space = std::max<uint64_t>(1, (wanted + es->page - 1) / es->page) * es->page;
    es->space = std::max(es->space, (size + es->page - 1) / es->page * es->page);
    es->base = next_addr;
    next_addr += es->space;
    Block* candidate = new_block(stream, es->space, &pool, es->base);
    candidate->mapped = false;
    candidate->es = es.get();
    expandable.push_back(std::move(es));
    insert_unmapped(candidate);
    return candidate;
  }

  // CUDACachingAllocator.cpp map_block + ExpandableSegment::map (001074d): maps whole pages from
  // the block's start; reserved memory grows by the pages mapped. Fails (maps nothing) when the
  // pages do not fit in the capacity, as cuMemCreate's OOM releases the pages of that call.
  bool map_block(Block* to_map, uint64_t size) {
    const uint64_t page = to_map->es->page;
    const uint64_t mapped = (size + page - 1) / page * page;
    if (mapped == 0) return false;
    if (cfg.capacity_bytes != 0 &&
        (mapped > cfg.capacity_bytes || st.reserved_bytes > cfg.capacity_bytes - mapped))
      return false;
    erase_unmapped(to_map);
    to_map->mapped = true;
    if (mapped < to_map->size) {
      Block* remaining =
          new_block(to_map->stream, to_map->size - mapped, to_map->pool, to_map->addr + mapped);
      remaining->mapped = false;
      remaining->es = to_map->es;
      splice(remaining, to_map, to_map->next);
      insert_unmapped(remaining);
      to_map->size = mapped;
    }
    try_merge_blocks(to_map, to_map->prev);
    try_merge_blocks(to_map, to_map->next);
    insert_into_blocks(to_map);
    add_reserved(mapped);
    ++st.num_device_allocs;  // map_block: stats.num_device_alloc++
    return true;
  }

  // CUDACachingAllocator.cpp try_allocate_expandable_block (001074d): maps only what the rounded
  // request needs (not get_allocation_size's segment), merging into the free block before it.
  Block* try_allocate_expandable_block(Pool& pool, uint32_t stream, uint64_t size) {
    Block* candidate = find_expandable_block(pool, stream, size);
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size)))
      return nullptr;
    while (candidate->size < size) {
      const uint64_t remaining = size - candidate->size;
      Block* new_candidate = candidate->next;
      if (!map_block(new_candidate, std::min(remaining, new_candidate->size))) return nullptr;
      candidate = new_candidate;
    }
    erase_from_blocks(candidate);
    return candidate;
  }

  // CUDACachingAllocator.cpp unmap_block + ExpandableSegment::unmap (001074d): unmaps the pages
  // wholly inside a free block; partial pages at either end stay mapped as free blocks.
  void unmap_block(Block* b) {
    const ExpandableSegment* es = b->es;
    const uint64_t page = es->page;
    const uint64_t begin = (b->addr - es->base + page - 1) / page;  // segmentRight(ptr)
    const uint64_t end = (b->addr + b->size - es->base) / page;     // segmentLeft(ptr+size)
    if (begin >= end) return;
    const uint64_t unmapped_addr = es->base + begin * page;
    const uint64_t unmapped_size = (end - begin) * page;
    erase_from_blocks(b);
    const uint64_t before_size = unmapped_addr - b->addr;
    if (before_size > 0) {
      Block* before_free = new_block(b->stream, before_size, b->pool, b->addr);
      before_free->es = b->es;
      splice(before_free, b->prev, b);
      insert_into_blocks(before_free);
    }
    const uint64_t after_size = b->size - (before_size + unmapped_size);
    if (after_size > 0) {
      Block* after_free = new_block(b->stream, after_size, b->pool, unmapped_addr + unmapped_size);
      after_free->es = b->es;
      splice(after_free, b, b->next);
      insert_into_blocks(after_free);
    }
    b->addr = unmapped_addr;
    b->size = unmapped_size;
    b->mapped = false;
    try_merge_blocks(b, b->prev);
    try_merge_blocks(b, b->next);
    insert_unmapped(b);
    st.reserved_bytes -= unmapped_size;
    ++st.num_device_frees;  // unmap_block: stats.num_device_free++
  }

  // CUDACachingAllocator.cpp release_expandable_segment (001074d): a segment with nothing mapped
  // is dropped (its reserved bytes are already 0).
  void release_expandable_segment(Block* b) {
    erase_unmapped(b);
    ExpandableSegment* es = b->es;
    delete_block(b);
    for (auto it = expandable.begin(); it != expandable.end(); ++it) {
      if (it->get() == es) {
        expandable.erase(it);
        break;
      }
    }
  }

  // --- The public operations ----------------------------------------------------------------
  // CUDACachingAllocator.cpp DeviceCachingAllocator::malloc (001074d; same order in 1.13).
  bool malloc(uint64_t id, uint64_t orig_size, uint32_t stream) {
    if (orig_size == 0) return true;  // Tensor storage of 0 bytes never reaches the allocator
    if (live.find(id) != nullptr) return false;  // caller error: the handle is live already
    const uint64_t reserved_before = st.reserved_bytes;
    if (orig_size > kMaxRequest) return fail(orig_size);
    const uint64_t size = CachingAllocator::round_size(orig_size, cfg.roundup_power2_divisions);
    Pool& pool = get_pool(size);
    const uint64_t alloc_size = CachingAllocator::allocation_size(size);
    st.largest_request_bytes = std::max(st.largest_request_bytes, size);
    // malloc: 1. get_free_block (free-memory callbacks: none in a simulation).
    Block* b = get_free_block(pool, stream, size);
    if (b == nullptr) {
      // malloc: 2. garbage_collect_cached_blocks when garbage_collection_threshold is set (and
      // set_fraction: the capacity stands for allowed_memory_maximum).
      if (gc_enabled) garbage_collect_cached_blocks();
      // malloc: 3. alloc_block; 4. release_available_cached_blocks and alloc_block again;
      // 5. release_cached_blocks and alloc_block(isRetry = true).
      b = alloc_block(pool, stream, size, alloc_size, false);
      if (b == nullptr && release_available_cached_blocks(pool, stream, size))
        b = alloc_block(pool, stream, size, alloc_size, false);
      if (b == nullptr && release_cached_blocks())
        b = alloc_block(pool, stream, size, alloc_size, true);
    }
    // malloc: "CUDA out of memory. Tried to allocate <alloc_size>"; stats.num_ooms += 1.
    if (b == nullptr) return fail(alloc_size);
    b = alloc_found_block(b, size, orig_size, should_split(b, size));
    live.insert(id, b);
    note_reserved_peak(reserved_before);
    return true;
  }

  bool fail(uint64_t named_bytes) {
    ++st.num_ooms;
    if (st.failed_request_bytes == 0) st.failed_request_bytes = named_bytes;
    return false;
  }

  // The simulator's own snapshot: after an event that raised reserved memory to its peak.
  void note_reserved_peak(uint64_t reserved_before) {
    if (st.reserved_bytes > reserved_before && st.reserved_bytes >= st.peak_reserved_bytes) {
      st.inactive_split_bytes_at_peak = inactive_split_bytes;
      st.allocated_bytes_at_reserved_peak = st.allocated_bytes;
    }
  }

  // CUDACachingAllocator.cpp DeviceCachingAllocator::free (001074d): allocated_bytes -= size;
  // with no recorded stream uses the block goes straight to free_block.
  void free(uint64_t id) {
    Block* b = live.erase(id);
    if (b == nullptr) return;
    b->allocated = false;
    st.allocated_bytes -= b->size;
    st.requested_bytes -= b->requested;
    free_block(b);
  }

  void reset_peak_stats() {
    // CUDACachingAllocator.cpp resetPeakStats / reset_peak_stat (001074d): peak = current.
    st.peak_allocated_bytes = st.allocated_bytes;
    st.peak_reserved_bytes = st.reserved_bytes;
    st.inactive_split_bytes_at_peak = inactive_split_bytes;
    st.allocated_bytes_at_reserved_peak = st.allocated_bytes;
  }

  // CUDACachingAllocator.cpp snapshot (001074d): one segment per head block; an expandable
  // segment shows one segment per contiguous mapped range.
  // A segment's first block: no mapped block before it (segments() starts a segment there).
  static bool segment_head(const Block* b) { return b->prev == nullptr || !b->prev->mapped; }
  uint64_t segment_count() const {
    uint64_t n = 0;
    const auto count = [&n](const Block* b) { n += segment_head(b) ? 1 : 0; };
    for (const Pool* p : {&small, &large}) p->for_each(count);
    live.for_each(count);
    return n;
  }
  std::vector<SegmentInfo> segments() const {
    std::vector<const Block*> all;
    for (const Pool* p : {&small, &large})
      p->for_each([&all](const Block* b) { all.push_back(b); });
    live.for_each([&all](const Block* b) { all.push_back(b); });
    std::vector<SegmentInfo> out;
    for (const Block* head : all) {
      if (!segment_head(head)) continue;
      SegmentInfo s;
      s.address = head->addr;
      s.stream = head->stream;
      s.small_pool = head->pool->is_small;
      for (const Block* b = head; b != nullptr && b->mapped; b = b->next) {
        s.size += b->size;
        if (b->allocated) s.allocated_bytes += b->size;
        ++s.blocks;
      }
      out.push_back(s);
    }
    // By address (no two segments share one). Size: the shared out-of-line sort, not a
    // std::sort of SegmentInfo (10 KB of the -O2 code; this runs once per replay).
    std::vector<SegmentInfo> sorted;
    sorted.reserve(out.size());
    for (size_t i : util::sorted_order(
             out.size(), [&out](size_t a, size_t b) { return out[a].address < out[b].address; }))
      sorted.push_back(out[i]);
    return sorted;
  }
};

CachingAllocator::CachingAllocator(const Config& config) : impl_(new Impl(config)) {}
CachingAllocator::~CachingAllocator() { delete impl_; }

bool CachingAllocator::malloc(uint64_t id, uint64_t size, uint32_t stream) {
  return impl_->malloc(id, size, stream);
}
void CachingAllocator::free(uint64_t id) { impl_->free(id); }
// CUDACachingAllocator.cpp emptyCache (001074d): release_cached_blocks.
void CachingAllocator::empty_cache() { impl_->release_cached_blocks(); }
void CachingAllocator::reset_peak_stats() { impl_->reset_peak_stats(); }
const Stats& CachingAllocator::stats() const { return impl_->st; }
std::vector<SegmentInfo> CachingAllocator::segments() const { return impl_->segments(); }
uint64_t CachingAllocator::segment_count() const { return impl_->segment_count(); }

// CUDACachingAllocator.cpp roundup_power2_next_division (001074d): the next of `divisions` equal
// steps between the two powers of two around size; powers of two stay as they are.
static uint64_t roundup_power2_next_division(uint64_t size, uint64_t divisions) {
  if ((size & (size - 1)) == 0) return size;  // llvm::isPowerOf2_64
  const uint64_t power2_floor = uint64_t{1} << floor_log2(size);
  const uint64_t power2_division = power2_floor >> floor_log2(divisions);
  if (power2_division == 0) return power2_floor << 1;
  const uint64_t round_size_floor = size & ~(power2_division - 1);
  return round_size_floor == size ? size : round_size_floor + power2_division;
}

// CUDACachingAllocator.cpp round_size (001074d): below 512 B -> 512 B; with divisions > 1 and
// size > 512 x divisions -> roundup_power2_next_division; else up to a multiple of 512 B.
// (CUDAAllocatorConfig.cpp keeps one division count per power-of-two interval from 1 MiB to
// 64 GiB; the single-value form fills all of them, which is what Config holds.)
uint64_t CachingAllocator::round_size(uint64_t size, uint32_t roundup_power2_divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const uint64_t divisions = roundup_power2_divisions;
  if (divisions > 1 && size > kMinBlockSize * divisions)
    return roundup_power2_next_division(size, divisions);
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

// CUDACachingAllocator.cpp get_allocation_size (001074d, same in 1.13): <= 1 MiB -> 2 MiB;
// < 10 MiB -> 20 MiB; else rounded up to a multiple of 2 MiB.
uint64_t CachingAllocator::allocation_size(uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

Stats replay(const std::vector<Event>& trace, const Config& config, bool stop_at_oom,
             std::vector<SegmentInfo>* final_segments) {
  CachingAllocator a(config);
  for (const Event& e : trace) {
    if (e.kind == Event::kAlloc) {
      if (!a.malloc(e.id, e.size, e.stream) && stop_at_oom) break;
    } else if (e.kind == Event::kFree) {
      a.free(e.id);
    } else {
      a.empty_cache();
    }
  }
  if (final_segments != nullptr) *final_segments = a.segments();
  return a.stats();
}

}  // namespace allocator
}  // namespace trainmem
