#include "trainmem/dtype.hpp"

#include "io/request.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {

uint32_t dtype_bits(DType t) {
  switch (t) {
    case DType::fp64:
      return 64;  // IEEE 754 binary64
    case DType::fp32:
      return 32;  // IEEE 754 binary32
    case DType::fp16:
      return 16;  // IEEE 754 binary16
    case DType::bf16:
      return 16;  // bfloat16: 8-bit exponent, 7-bit mantissa
    case DType::fp8:
      return 8;  // OCP 8-bit floating point (E4M3 / E5M2)
    case DType::int64:
      return 64;
    case DType::int32:
      return 32;
    case DType::int8:
      return 8;
    case DType::uint8:
      return 8;
    case DType::int4:
      return 4;  // two values per byte
    case DType::boolean:
      return 8;  // torch.bool is stored as one byte
  }
  return 32;
}

uint64_t dtype_bytes_for(DType t, uint64_t n) {
  const uint64_t bits = dtype_bits(t);
  // Checked (README "Numeric limits"): beyond 2^63 bytes is too_large, never a wrapped number.
  if (bits % 8 == 0) return checked_mul(n, bits / 8, "model");
  return (checked_mul(n, bits, "model") + 7) / 8;  // sub-byte types: packed, rounded up
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp64:
      return "fp64";
    case DType::fp32:
      return "fp32";
    case DType::fp16:
      return "fp16";
    case DType::bf16:
      return "bf16";
    case DType::fp8:
      return "fp8";
    case DType::int64:
      return "int64";
    case DType::int32:
      return "int32";
    case DType::int8:
      return "int8";
    case DType::uint8:
      return "uint8";
    case DType::int4:
      return "int4";
    case DType::boolean:
      return "bool";
  }
  return "fp32";
}

const char* torch_dtype_name(DType t) {
  switch (t) {
    case DType::fp64:
      return "torch.float64";
    case DType::fp32:
      return "torch.float32";
    case DType::fp16:
      return "torch.float16";
    case DType::bf16:
      return "torch.bfloat16";
    case DType::fp8:
      return "torch.float8_e4m3fn";
    case DType::int64:
      return "torch.int64";
    case DType::int32:
      return "torch.int32";
    case DType::int8:
      return "torch.int8";
    case DType::uint8:
      return "torch.uint8";
    case DType::int4:
      return "torch.uint8";  // packed pairs in a uint8 storage
    case DType::boolean:
      return "torch.bool";
  }
  return "torch.float32";
}

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
