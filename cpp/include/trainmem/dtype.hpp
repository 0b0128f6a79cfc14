// Element types and their storage sizes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainmem {

enum class DType { fp64, fp32, fp16, bf16, fp8, int64, int32, int8, uint8, int4, boolean };

// Everything the core knows of an element type, one row per DType (model/dtype.cpp).
struct DTypeInfo {
  DType type;
  uint32_t bits;
  const char* torch_name;     // torch's dtype: "torch.float32"
  const char* torch_storage;  // torch.save pickles GLOBAL 'torch <X>Storage' (torch/storage.py)
  const char* safetensors;    // safetensors' Dtype in a file header: "F32"
  int safetensors_order;      // its position in that enum (the sort key of a file's tensors)
};
const DTypeInfo& dtype_info(DType t);

// Bits per element. Source: IEEE 754 (fp64/fp32/fp16), Google bfloat16, OCP FP8 (E4M3/E5M2),
// two's-complement integers; int4 packs two values per byte (bitsandbytes / GPTQ style).
uint32_t dtype_bits(DType t);
// Bytes for n elements, rounded up to whole bytes (int4: ceil(n/2)).
uint64_t dtype_bytes_for(DType t, uint64_t n);
const char* dtype_name(DType t);  // "fp32", ...
// PyTorch's name of the storage type ("torch.float32"), for file-format modelling.
const char* torch_dtype_name(DType t);
// Names accepted in requests: fp32 float32 fp16 float16 half bf16 bfloat16 fp8 int8 ...
bool parse_dtype(const std::string& s, DType* out);
// Names we list in error messages and docs.
const std::vector<std::string>& dtype_names();
// Every accepted name, listed or not (vocab::kDTypes): what a misspelling is matched against.
const std::vector<std::string>& dtype_spellings();

}  // namespace trainmem
