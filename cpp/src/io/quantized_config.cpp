// config.json quantization_config: GPTQ and AWQ bases (trainmem/quantization.hpp). The packed
// layouts of AutoGPTQ's QuantLinear (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py
// @v0.7.1: register_buffer qweight, qzeros, scales, g_idx, bias) and AutoAWQ's WQLinear_GEMM
// (awq/modules/linear/gemm.py @v0.2.6: qweight, qzeros, scales, bias), as transformers loads
// them (GPTQConfig / AwqConfig: every nn.Linear of the decoder blocks, modules_to_not_convert
// left in 16 bits; the embeddings, norms and lm_head stay in torch_dtype).
#include "io/quantized_config.hpp"

#include <algorithm>

#include "trainmem/error.hpp"
#include "trainmem/quantization.hpp"

namespace trainmem {
namespace {

std::string module_of(const std::string& tensor) {
  const size_t dot = tensor.rfind('.');
  return dot == std::string::npos ? std::string() : tensor.substr(0, dot);
}

TensorSpec packed(const std::string& name, std::vector<uint64_t> shape, DType d) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = d;
  t.trainable = false;
  return t;
}

struct Format {
  std::string method;
  uint64_t bits = 4, group = 128;
  bool desc_act = false;
  std::vector<std::string> skip;  // modules_to_not_convert
};

Format read_format(const Obj& q) {
  Format f;
  f.method = q.one_of("quant_method", {"gptq", "awq", "bitsandbytes"});
  if (f.method == "bitsandbytes")
    fail(code::kUnsupported, q.field("quant_method"),
         Message{"error.quant.bnb4", {{"field", q.field("quant_method")}}});
  const char* bits_key = q.has("w_bit") ? "w_bit" : "bits";
  f.bits = q.u64_or(bits_key, 4, 2, 8);
  if (f.method == "awq" ? f.bits != 4 : (f.bits != 2 && f.bits != 3 && f.bits != 4 && f.bits != 8))
    fail(code::kOutOfRange, q.field(bits_key),
         Message{f.method == "awq" ? "error.quant.awqBits" : "error.quant.gptqBits",
                 {{"field", q.field(bits_key)}}});
  const char* group_key = q.has("q_group_size") ? "q_group_size" : "group_size";
  const json& g = q.has(group_key) ? q.raw(group_key) : json(128);
  if (g.is_number_integer() && g.get<int64_t>() == -1)
    f.group = 0;  // one group per input row
  else
    f.group = read_u64(g, q.field(group_key), 1, 1u << 20);
  f.desc_act = q.boolean_or("desc_act", false);
  if (f.method == "awq") {
    const std::string v = q.has("version") ? q.str("version", 16) : "gemm";
    if (v != "gemm" && v != "GEMM")
      fail(code::kUnsupported, q.field("version"),
           Message{"error.quant.awqVersion", {{"field", q.field("version")}, {"v", v}}});
    if (f.group == 0)
      fail(code::kOutOfRange, q.field(group_key), Message{"error.quant.awqGroup", {}});
  }
  if (q.has("modules_to_not_convert") && !q.raw("modules_to_not_convert").is_null()) {
    const json& a = q.array("modules_to_not_convert", 256);
    for (size_t i = 0; i < a.size(); ++i)
      f.skip.push_back(read_str(a[i], index_path(q.field("modules_to_not_convert"), i), 128));
  }
  for (auto it = q.json_value().begin(); it != q.json_value().end(); ++it) q.mark_used(it.key());
  return f;
}

// One linear's packed entries; returns their bytes.
uint64_t pack(const Format& f, const std::string& base, uint64_t in, uint64_t out, bool bias,
              const std::string& field, std::vector<TensorSpec>* outv) {
  if ((in * f.bits) % 32 != 0 || (out * f.bits) % 32 != 0 || (f.group && in % f.group != 0))
    fail(code::kInconsistent, field,
         Message{"error.quant.pack",
                 {{"field", field},
                  {"base", base},
                  {"in", std::to_string(in)},
                  {"out", std::to_string(out)},
                  {"group", std::to_string(f.group)}}});
  const uint64_t groups = f.group ? in / f.group : 1, word = 32 / f.bits;
  std::vector<TensorSpec> v;
  if (f.method == "gptq") {
    v.push_back(packed(base + ".qweight", {in * f.bits / 32, out}, DType::int32));
    v.push_back(packed(base + ".qzeros", {groups, out * f.bits / 32}, DType::int32));
    v.push_back(packed(base + ".scales", {groups, out}, DType::fp16));
    v.push_back(packed(base + ".g_idx", {in}, DType::int32));
  } else {
    v.push_back(packed(base + ".qweight", {in, out / word}, DType::int32));
    v.push_back(packed(base + ".qzeros", {groups, out / word}, DType::int32));
    v.push_back(packed(base + ".scales", {groups, out}, DType::fp16));
  }
  if (bias) v.push_back(packed(base + ".bias", {out}, DType::fp16));
  uint64_t bytes = 0;
  for (auto& t : v) {
    bytes += t.numel() * (t.dtype == DType::fp16 ? 2 : 4);
    outv->push_back(std::move(t));
  }
  return bytes;
}

}  // namespace

ModelDescription packed_state_dict(const ModelDescription& m) {
  ModelDescription out = m;
  if (!m.quantization) return out;
  const std::vector<TensorSpec>& packed = m.quantization->packed;
  out.tensors.clear();
  std::string last;
  for (const auto& t : m.tensors) {
    const std::string mod = module_of(t.name);
    bool quantized = false;
    for (const auto& p : packed) quantized = quantized || module_of(p.name) == mod;
    if (!quantized) {  // AutoGPTQ / AutoAWQ save the model in fp16 (the rest in 16 bits)
      out.tensors.push_back(t);
      if (t.dtype == DType::fp32 || t.dtype == DType::bf16) out.tensors.back().dtype = DType::fp16;
      continue;
    }
    if (mod == last) continue;  // the module's entries are in already
    last = mod;
    for (const auto& p : packed)
      if (module_of(p.name) == mod) out.tensors.push_back(p);
  }
  out.quantization = nullptr;
  return out;
}

void apply_quantization(const Obj& config, ModelDescription* m) {
  const Obj q = config.obj("quantization_config");
  const Format f = read_format(q);
  auto z = std::make_shared<Quantization>();
  z->method = f.method;
  z->bits = f.bits;
  z->group_size = f.group;
  z->desc_act = f.desc_act;
  for (auto& t : m->tensors) {
    if (t.linear == LinearKind::none || t.shape.size() != 2 || t.block < 0 || t.output_head)
      continue;
    const std::string base = module_of(t.name);
    if (std::any_of(f.skip.begin(), f.skip.end(),
                    [&](const std::string& s) { return base.find(s) != std::string::npos; }))
      continue;
    const bool conv1d = t.linear == LinearKind::conv1d;
    const uint64_t in = conv1d ? t.shape[0] : t.shape[1], out = conv1d ? t.shape[1] : t.shape[0];
    bool bias = false;
    for (auto& b : m->tensors)
      if (b.name == base + ".bias") {
        bias = true;
        b.trainable = false;
        b.dtype = DType::fp16;
      }
    z->packed_bytes += pack(f, base, in, out, bias, q.field("bits"), &z->packed);
    z->quantized_params += in * out;
    t.dtype = f.bits == 8 ? DType::int8 : DType::int4;
    t.trainable = false;
  }
  if (!z->quantized_params)
    fail(code::kInconsistent, config.field("quantization_config"),
         Message{"error.quant.noLinear", {{"field", config.field("quantization_config")}}});
  m->quantization = z;
  m->assumptions.push_back(Text("quant.assume", {{"method", f.method == "gptq" ? "GPTQ" : "AWQ"},
                                                 {"bits", std::to_string(f.bits)},
                                                 {"bytes", std::to_string(z->packed_bytes)}}));
}

}  // namespace trainmem
