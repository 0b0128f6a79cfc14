// torch.save's file, byte for byte (torch 1.13; measured in tests/fixtures/torch_checkpoints.json).
// Sources: torch/serialization.py (_save: pickle protocol 2, persistent_id ('storage', type,
// key, location, numel), records data.pkl, data/<key> in sorted key order, version),
// caffe2/serialize/inline_container.cc (archive folder = file base name, getPadding: a 'FB'
// extra field aligns each record's data to 64 bytes; zip64 writer), miniz
// mz_zip_writer_add_mem_ex_v2 (data descriptor after each record, central directory, zip64
// end records), CPython Lib/pickle.py (opcode widths, memo, 1000-item batches).
#include <algorithm>
#include <cstring>
#include <string>

#include "checkpoint/checkpoint_internal.hpp"
#include "trainmem/checkpoint_format.hpp"
#include "util/checked.hpp"
#include "util/sorted_order.hpp"

namespace trainmem {
namespace {

// Sizes of a CPython protocol-2 pickle, opcode by opcode.
class PickleSizer {
 public:
  uint64_t bytes = 2;  // PROTO 2
  uint64_t memo = 0;

  uint64_t put() {  // BINPUT (1-byte index) or LONG_BINPUT (4-byte index)
    bytes += memo < 256 ? 2 : 5;
    return memo++;
  }
  void get(uint64_t index) { bytes += index < 256 ? 2 : 5; }  // BINGET / LONG_BINGET
  void op(uint64_t n = 1) { bytes += n; }
  uint64_t str(uint64_t utf8_len) {  // BINUNICODE: opcode, 4-byte length, text; memoized
    bytes += 5 + utf8_len;
    return put();
  }
  // A string object that may repeat (same Python object): first BINUNICODE, then BINGET.
  void str_shared(uint64_t utf8_len, int64_t* memo_index) {
    if (*memo_index >= 0)
      get(static_cast<uint64_t>(*memo_index));
    else
      *memo_index = static_cast<int64_t>(str(utf8_len));
  }
  void global(const std::string& module, const std::string& name, int64_t* memo_index) {
    if (*memo_index >= 0) {
      get(static_cast<uint64_t>(*memo_index));
      return;
    }
    bytes += 1 + module.size() + 1 + name.size() + 1;  // GLOBAL 'module\nname\n'
    *memo_index = static_cast<int64_t>(put());
  }
  void integer(uint64_t v) {  // BININT1 / BININT2 / BININT / LONG1
    if (v <= 0xff)
      bytes += 2;
    else if (v <= 0xffff)
      bytes += 3;
    else if (v <= 0x7fffffff)
      bytes += 5;
    else {
      uint64_t bits = 0;
      for (uint64_t x = v; x; x >>= 1) ++bits;
      bytes += 2 + (bits >> 3) + 1;  // LONG1: n, two's-complement little-endian bytes
    }
  }
  void float64() { bytes += 9; }  // BINFLOAT
  // A tuple of n already-written items: TUPLE1..3 or MARK..TUPLE, then memoized; () unmemoized.
  void tuple_end(uint64_t n) {
    if (n == 0) {
      bytes += 1;  // EMPTY_TUPLE
      return;
    }
    bytes += 1;  // TUPLE1/2/3, or TUPLE (its MARK is counted by tuple_begin)
    put();
  }
  void tuple_begin(uint64_t n) {
    if (n > 3) bytes += 1;  // MARK
  }
  // Batched SETITEMS/APPENDS framing for n items (batches of 1000; single item: SETITEM).
  void batch_framing(uint64_t n) {
    while (n > 0) {
      const uint64_t k = std::min<uint64_t>(n, 1000);
      bytes += k > 1 ? 2 : 1;  // MARK + SETITEMS, or SETITEM alone
      n -= k;
    }
  }
};

struct TensorPickler {
  PickleSizer& p;
  const std::vector<StorageInfo>& storages;
  int64_t od_global = -1, rebuild_global = -1, storage_str = -1, cpu_str = -1;
  int64_t type_global[11];
  std::vector<int64_t> storage_key_memo;  // memo index of each storage's key string
  std::vector<int64_t> storage_key;       // key number (order of first pickling)
  uint64_t next_key = 0;

  TensorPickler(PickleSizer& sizer, const std::vector<StorageInfo>& s)
      : p(sizer), storages(s), storage_key_memo(s.size(), -1), storage_key(s.size(), -1) {
    std::fill(std::begin(type_global), std::end(type_global), -1);
  }

  void ordered_dict_new() {  // OrderedDict(): GLOBAL, EMPTY_TUPLE, REDUCE, memoized
    p.global("collections", "OrderedDict", &od_global);
    p.op(2);
    p.put();
  }

  void shape_tuple(const std::vector<uint64_t>& dims) {
    p.tuple_begin(dims.size());
    for (uint64_t d : dims) p.integer(d);
    p.tuple_end(dims.size());
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)
  void tensor(const std::vector<uint64_t>& shape, int64_t storage) {
    p.global("torch._utils", "_rebuild_tensor_v2", &rebuild_global);
    p.op(1);  // MARK of the 6-tuple
    // persistent id ('storage', torch.XStorage, key, 'cpu', numel) + BINPERSID
    const StorageInfo& s = storages[static_cast<size_t>(storage)];
    p.op(1);  // MARK
    p.str_shared(7, &storage_str);
    // torch.<X>Storage pickled as GLOBAL 'torch X'
    p.global("torch", dtype_info(s.dtype).torch_storage, &type_global[static_cast<int>(s.dtype)]);
    if (storage_key[static_cast<size_t>(storage)] < 0)
      storage_key[static_cast<size_t>(storage)] = static_cast<int64_t>(next_key++);
    p.str_shared(decimal_digits(static_cast<uint64_t>(storage_key[static_cast<size_t>(storage)])),
                 &storage_key_memo[static_cast<size_t>(storage)]);
    p.str_shared(3, &cpu_str);
    p.integer(s.numel);
    p.op(1);  // TUPLE
    p.put();
    p.op(1);       // BINPERSID
    p.integer(0);  // storage_offset
    shape_tuple(shape);
    // contiguous strides (product of the later dims), without allocating a vector
    p.tuple_begin(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      uint64_t stride = 1;
      for (size_t j = i + 1; j < shape.size(); ++j) stride *= shape[j];
      p.integer(stride);
    }
    p.tuple_end(shape.size());
    p.op(1);             // NEWFALSE (requires_grad)
    ordered_dict_new();  // backward_hooks
    p.op(1);             // TUPLE
    p.put();
    p.op(1);  // REDUCE
    p.put();
  }
};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

constexpr uint64_t kU32Max = 0xFFFFFFFFULL;

struct ZipWriter {
  uint64_t cursor = 0;
  uint64_t central = 0;
  uint64_t padding = 0;
  uint64_t records = 0;
  void record(uint64_t name_len, uint64_t size) {
    // inline_container.cc getPadding: local header 30 + name + 'FB' extra (4) [+ zip64 extra]
    uint64_t start = cursor + 30 + name_len + 4;
    uint64_t zip64_extra = 0;
    if (size >= kU32Max || cursor >= kU32Max) {
      zip64_extra = 4;
      if (size >= kU32Max) zip64_extra += 16;
      if (cursor >= kU32Max) zip64_extra += 8;
    }
    start += zip64_extra;
    const uint64_t data = align_up(start, 64);
    padding += data - start;
    // miniz data descriptor: 16 bytes, 24 with 64-bit sizes
    const uint64_t descriptor = zip64_extra ? 24 : 16;
    // central directory header 46 + name + zip64 extra (sizes and/or offset)
    central += 46 + name_len + zip64_extra;
    cursor = data + size + descriptor;
    ++records;
  }
  uint64_t finish() const {
    // zip64 end of central directory record (56) + locator (20) + end record (22): miniz in
    // zip64 mode writes all three (measured).
    return cursor + central + 56 + 20 + 22;
  }
};

// The pickle (data.pkl) of what torch.save writes: a model state dict, optionally wrapped with
// an optimizer state dict (serialization.py _save; module.py state_dict; optimizer.py
// state_dict).
class SavePickler {
 public:
  explicit SavePickler(const TorchSaveInput& in) : in_(in), tp_(p_, in.storages) {}

  // Sizes the whole pickle; then storage_key() holds each storage's record key.
  uint64_t pickle() {
    if (in_.wrap) {
      p_.op(1);  // EMPTY_DICT
      p_.put();
      p_.op(1);   // MARK
      p_.str(5);  // 'model'
      model_state_dict();
      if (in_.has_optimizer) {
        p_.str(9);  // 'optimizer'
        optimizer_state_dict();
        p_.op(1);  // SETITEMS
      } else {
        p_.bytes -= 1;  // a single item: no MARK ...
        p_.op(1);       // ... SETITEM
      }
    } else {
      model_state_dict();
    }
    p_.op(1);  // STOP
    return p_.bytes;
  }
  const std::vector<int64_t>& storage_key() const { return tp_.storage_key; }

 private:
  const TorchSaveInput& in_;
  PickleSizer p_;
  TensorPickler tp_;
  // optimizer state: keys are interned literals (one memo each); shared tensors pickled once
  std::vector<int64_t> key_memo_;
  std::vector<const char*> key_names_;
  std::vector<int64_t> shared_tensor_memo_;
  std::vector<int64_t> shared_storage_;

  // OrderedDict state_dict: REDUCE form, items, then BUILD with {'_metadata': OrderedDict}
  void model_state_dict() {
    tp_.ordered_dict_new();
    for (const auto& t : in_.model) {
      p_.str(t.name->size());
      tp_.tensor(*t.shape, t.storage);
    }
    p_.batch_framing(in_.model.size());
    p_.op(1);  // EMPTY_DICT (instance __dict__)
    p_.put();
    p_.str(9);  // '_metadata'
    module_metadata();
    p_.op(1);  // SETITEM ('_metadata')
    p_.op(1);  // BUILD
  }

  // _metadata: OrderedDict of {module name: {'version': 1}}
  void module_metadata() {
    tp_.ordered_dict_new();
    int64_t version_str = -1;
    for (uint64_t i = 0; i < in_.module_count; ++i) {
      p_.put();       // module name string (length accounted below)
      p_.bytes += 5;  // BINUNICODE header
      p_.op(1);       // EMPTY_DICT {'version': n}
      p_.put();
      p_.str_shared(7, &version_str);  // 'version' (one interned object)
      p_.integer(1);
      p_.op(1);  // SETITEM
    }
    p_.bytes += in_.module_name_bytes;
    p_.batch_framing(in_.module_count);
  }

  // {'state': {i: {...}}, 'param_groups': [{...}]}
  void optimizer_state_dict() {
    p_.op(1);  // EMPTY_DICT
    p_.put();
    p_.op(1);   // MARK
    p_.str(5);  // 'state'
    p_.op(1);   // EMPTY_DICT
    p_.put();
    for (size_t i = 0; i < in_.optimizer_state.size(); ++i) {
      const auto& entries = in_.optimizer_state[i];
      p_.integer(i);
      p_.op(1);  // EMPTY_DICT
      p_.put();
      for (const auto& e : entries) state_entry(e);
      p_.batch_framing(entries.size());
    }
    p_.batch_framing(in_.optimizer_state.size());
    p_.str(12);  // 'param_groups'
    p_.op(1);    // EMPTY_LIST
    p_.put();
    param_group();
    p_.batch_framing(1);  // APPEND the group
    p_.op(1);             // SETITEMS ('state', 'param_groups') — MARK counted above
  }

  // One entry of a parameter's state: its key, then its value.
  void state_entry(const TorchSaveInput::StateEntry& e) {
    size_t k = 0;
    while (k < key_names_.size() && std::strcmp(key_names_[k], e.key) != 0) ++k;
    if (k == key_names_.size()) {
      key_names_.push_back(e.key);
      key_memo_.push_back(-1);
    }
    p_.str_shared(std::char_traits<char>::length(e.key), &key_memo_[k]);
    switch (e.kind) {
      case StateKind::python_int:
        p_.integer(1);  // one step taken
        break;
      case StateKind::python_none:
        p_.op(1);  // NONE
        break;
      case StateKind::tensor:
        tp_.tensor(*e.shape, e.storage);
        break;
      case StateKind::shared_tensor: {
        size_t s = 0;
        while (s < shared_storage_.size() && shared_storage_[s] != e.storage) ++s;
        if (s == shared_storage_.size()) {
          shared_storage_.push_back(e.storage);
          tp_.tensor(*e.shape, e.storage);
          shared_tensor_memo_.push_back(static_cast<int64_t>(p_.memo - 1));
        } else {
          p_.get(static_cast<uint64_t>(shared_tensor_memo_[s]));
        }
        break;
      }
    }
  }

  // param_groups[0]: the optimizer's defaults, then 'params' (the parameter indices).
  void param_group() {
    p_.op(1);  // EMPTY_DICT (the group)
    p_.put();
    for (const auto& g : in_.param_group) {
      p_.str(std::char_traits<char>::length(g.key));
      switch (g.kind) {
        case 'f':
          p_.float64();
          break;
        case 'i':
          p_.integer(0);
          break;
        case 'b':
        case 'n':
          p_.op(1);
          break;
        case 't':  // (float, float)
          p_.float64();
          p_.float64();
          p_.tuple_end(2);
          break;
        case 'u':  // (None, float)
          p_.op(1);
          p_.float64();
          p_.tuple_end(2);
          break;
      }
    }
    p_.str(6);  // 'params'
    p_.op(1);   // EMPTY_LIST
    p_.put();
    for (uint64_t i = 0; i < in_.optimizer_params; ++i) p_.integer(i);
    p_.batch_framing(in_.optimizer_params);
    p_.batch_framing(in_.param_group.size() + 1);
  }
};

// Archive folder: the file's base name without its extension (inline_container.cc basename).
std::string archive_folder(const std::string& file_name) {
  std::string base = file_name;
  const size_t slash = base.find_last_of("/\\");
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos) base = base.substr(0, dot);
  if (base.empty()) base = "archive";
  return base;
}

}  // namespace

ContainerSize torch_save_size(const TorchSaveInput& in) {
  SavePickler pickler(in);
  ContainerSize out;
  out.pickle_bytes = pickler.pickle();
  const uint64_t prefix = archive_folder(in.file_name).size() + 1;
  ZipWriter z;
  z.record(prefix + 8, out.pickle_bytes);  // data.pkl
  // data/<key> records in sorted (string) key order.
  std::vector<std::pair<std::string, uint64_t>> recs;
  for (size_t i = 0; i < in.storages.size(); ++i) {
    const int64_t key = pickler.storage_key()[i];
    if (key < 0) continue;  // never referenced
    recs.emplace_back(std::to_string(key), in.storages[i].bytes);
    out.payload_bytes = checked_add(out.payload_bytes, in.storages[i].bytes, "checkpoint");
  }
  // Size: the shared out-of-line sort (equal pairs are alike, so ties by position change nothing).
  for (size_t i : util::sorted_order(recs.size(), [&recs](size_t a, size_t b) {
         return recs[a] < recs[b] || (!(recs[b] < recs[a]) && a < b);
       }))
    z.record(prefix + 5 + recs[i].first.size(), recs[i].second);
  z.record(prefix + 7, 2);  // version: "3\n"
  out.file_bytes = z.finish();
  out.records = z.records;
  out.padding_bytes = z.padding;
  out.overhead_bytes = out.file_bytes - out.payload_bytes;
  return out;
}

}  // namespace trainmem
