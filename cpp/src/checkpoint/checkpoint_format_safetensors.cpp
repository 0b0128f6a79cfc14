// safetensors file size. Source: huggingface/safetensors safetensors/src/tensor.rs (prepare /
// serialize): tensors sorted by dtype (descending alignment order of the Dtype enum) then
// name; header = compact JSON {"__metadata__":{...},"name":{"dtype":"F32","shape":[..],
// "data_offsets":[begin,end]},...} padded with spaces to a multiple of 8; file = 8-byte
// little-endian header length + header + data. transformers' save_pretrained writes
// metadata {"format":"pt"} and drops tied duplicates.
#include <algorithm>
#include <string>

#include "checkpoint/checkpoint_internal.hpp"
#include "trainmem/checkpoint_format.hpp"
#include "util/checked.hpp"
#include "util/sorted_order.hpp"

namespace trainmem {
namespace {

// JSON-escaped length of a tensor name (serde_json escapes '"', '\\' and control chars).
uint64_t json_string_len(const std::string& s) {
  uint64_t n = 2;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
      n += 2;
    else if (c < 0x20)
      n += 6;
    else
      n += 1;
  }
  return n;
}

}  // namespace

uint64_t decimal_digits(uint64_t v) {
  uint64_t d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

ContainerSize safetensors_size(const std::vector<SafetensorsEntry>& tensors, bool format_pt) {
  // std::stable_sort's order (ties by position). Size: the shared out-of-line sort.
  std::vector<const SafetensorsEntry*> order;
  order.reserve(tensors.size());
  for (size_t i : util::sorted_order(tensors.size(), [&tensors](size_t ia, size_t ib) {
         const SafetensorsEntry *a = &tensors[ia], *b = &tensors[ib];
         const int oa = dtype_info(a->dtype).safetensors_order;
         const int ob = dtype_info(b->dtype).safetensors_order;
         if (oa != ob) return oa > ob;
         if (*a->name != *b->name) return *a->name < *b->name;
         return ia < ib;
       }))
    order.push_back(&tensors[i]);
  uint64_t header = 2;  // {}
  uint64_t items = 0;
  if (format_pt) {
    header += std::string("\"__metadata__\":{\"format\":\"pt\"}").size();
    ++items;
  }
  uint64_t offset = 0;
  for (const SafetensorsEntry* t : order) {
    uint64_t numel = 1;
    for (uint64_t d : *t->shape) numel = checked_mul(numel, d, "safetensors");
    const uint64_t n = dtype_bytes_for(t->dtype, numel);
    // "name":{"dtype":"F32","shape":[a,b],"data_offsets":[x,y]}
    uint64_t e = json_string_len(*t->name) + 1;
    e += std::string("{\"dtype\":\"").size() +
         std::char_traits<char>::length(dtype_info(t->dtype).safetensors) +
         std::string("\",\"shape\":[").size();
    for (size_t i = 0; i < t->shape->size(); ++i) e += (i ? 1 : 0) + decimal_digits((*t->shape)[i]);
    e += std::string("],\"data_offsets\":[").size() + decimal_digits(offset) + 1 +
         decimal_digits(offset + n) + 2;  // "]}"
    header += e;
    ++items;
    offset = checked_add(offset, n, "safetensors");
  }
  if (items > 1) header += items - 1;  // commas
  const uint64_t padded = (header + 7) / 8 * 8;
  ContainerSize out;
  out.pickle_bytes = padded;
  out.padding_bytes = padded - header;
  out.payload_bytes = offset;
  out.records = order.size();
  out.file_bytes = 8 + padded + offset;
  out.overhead_bytes = out.file_bytes - offset;
  return out;
}

}  // namespace trainmem
