// A base model stored quantized by GPTQ or AWQ (config.json quantization_config), as peft
// trains it with LoRA: the block linears packed to `bits` per weight with per-group scales and
// zeros, everything else in 16 bits. The logical tensor list (ModelDescription::tensors: the
// linears as [out, in], so LoRA finds its targets) stays; `packed` is the state_dict the
// quantized modules hold. Sources: AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py
// (QuantLinear buffers qweight int32 [in x bits / 32, out], qzeros int32
// [groups, out x bits / 32], scales fp16 [groups, out], g_idx int32 [in], bias fp16 [out]),
// AutoAWQ awq/modules/linear/gemm.py (WQLinear_GEMM: qweight int32 [in, out x bits / 32],
// qzeros int32 [in / group, out x bits / 32], scales fp16 [in / group, out], bias fp16 [out]);
// peft tuners/lora/gptq.py and awq.py (the adapters wrap these modules, fp32).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/model.hpp"

namespace trainmem {

struct Quantization {
  std::string method;  // "gptq" | "awq"
  uint64_t bits = 4;
  uint64_t group_size = 128;       // 0: one group per input row (GPTQ's group_size -1)
  bool desc_act = false;           // GPTQ act-order (g_idx permutes the groups)
  uint64_t quantized_params = 0;   // logical weights packed
  uint64_t packed_bytes = 0;       // bytes of every packed tensor (qweight, qzeros, scales, ...)
  std::vector<TensorSpec> packed;  // the quantized modules' state_dict entries, in order
};

// The bytes the weights take on the device with this quantization: packed_bytes and the rest
// of the model in `other_bytes` per parameter.
uint64_t quantized_weight_bytes(const ModelDescription& m, uint64_t other_bytes);

}  // namespace trainmem
