#include "trainmem/dtype.hpp"

#include "trainmem/vocabulary.hpp"
#include "util/checked.hpp"

namespace trainmem {

namespace {

// Bits: IEEE 754 (fp64, fp32, fp16), Google bfloat16 (8-bit exponent, 7-bit mantissa), OCP
// 8-bit floating point (E4M3 / E5M2), two's-complement integers; int4 packs two values per
// byte; torch.bool is stored as one byte. Storage classes: torch/storage.py (torch 1.13;
// Float8_e4m3fn from torch 2.1); int4 pairs live in a uint8 storage. Safetensors names and
// enum positions: huggingface/safetensors safetensors/src/tensor.rs @ 000a16f4 `enum Dtype` (BOOL
// 0, U8 1, I8 2, F8_E5M2 3, F8_E4M3 4, I16 5, U16 6, F16 7, BF16 8, I32 9, U32 10, F32 11, F64 12,
// I64 13).
constexpr DTypeInfo kDTypeInfo[] = {
    {DType::fp64, 64, "torch.float64", "DoubleStorage", "F64", 12},
    {DType::fp32, 32, "torch.float32", "FloatStorage", "F32", 11},
    {DType::fp16, 16, "torch.float16", "HalfStorage", "F16", 7},
    {DType::bf16, 16, "torch.bfloat16", "BFloat16Storage", "BF16", 8},
    {DType::fp8, 8, "torch.float8_e4m3fn", "Float8_e4m3fnStorage", "F8_E4M3", 4},
    {DType::int64, 64, "torch.int64", "LongStorage", "I64", 13},
    {DType::int32, 32, "torch.int32", "IntStorage", "I32", 9},
    {DType::int8, 8, "torch.int8", "CharStorage", "I8", 2},
    {DType::uint8, 8, "torch.uint8", "ByteStorage", "U8", 1},
    {DType::int4, 4, "torch.uint8", "ByteStorage", "U8", 1},
    {DType::boolean, 8, "torch.bool", "BoolStorage", "BOOL", 0},
};

// Row i describes DType i, and every DType has its row.
constexpr bool rows_in_enum_order() {
  int i = 0;
  for (const DTypeInfo& d : kDTypeInfo)
    if (static_cast<int>(d.type) != i++) return false;
  return i == static_cast<int>(DType::boolean) + 1;
}
static_assert(rows_in_enum_order(), "kDTypeInfo must list every DType in enum order");

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kDTypeInfo[static_cast<int>(t)]; }

uint32_t dtype_bits(DType t) { return dtype_info(t).bits; }

uint64_t dtype_bytes_for(DType t, uint64_t n) {
  const uint64_t bits = dtype_bits(t);
  // Checked (README "Numeric limits"): beyond 2^63 bytes is too_large, never a wrapped number.
  if (bits % 8 == 0) return checked_mul(n, bits / 8, "model");
  return (checked_mul(n, bits, "model") + 7) / 8;  // sub-byte types: packed, rounded up
}

// The first name of its row in vocab::kDTypes.
const char* dtype_name(DType t) { return vocab::name_for(vocab::kDTypes, t); }

const char* torch_dtype_name(DType t) { return dtype_info(t).torch_name; }

bool parse_dtype(const std::string& s, DType* out) {
  const vocab::DTypeTerm* t = vocab::find(vocab::kDTypes, s);
  if (t) *out = t->value;
  return t != nullptr;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names =
      vocab::names_if(vocab::kDTypes, [](const vocab::DTypeTerm& t) { return t.listed; });
  return names;
}

const std::vector<std::string>& dtype_spellings() {
  static const std::vector<std::string> names = vocab::names(vocab::kDTypes);
  return names;
}

}  // namespace trainmem
