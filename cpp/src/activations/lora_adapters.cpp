// LoRA on the recipes written for full fine-tuning (the diffusion networks, the decoder families
// of llm_families_activations.cpp, torch.nn.Transformer): each adapted linear's own saves at the
// rows it processes (LayerActivations::module_rows / tokens, activations::linear_rows), by the
// rules of lora_flow.cpp's Flow::adapter (PEFT lora.Linear.forward: result = base_layer(x);
// x = x.to(lora_A.weight.dtype); result + lora_B(lora_A(dropout(x))) * scaling), and autocast's
// per-op 16-bit copies of frozen fp32 matmul weights (autocast_mode.cpp cached_cast caches only
// leaves that require grad). The frozen base's own saves stay those of full fine-tuning.
#include <map>
#include <utility>

#include "activations/llm_families.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace activations {
namespace {

std::string module_of(const std::string& tensor) {
  const size_t dot = tensor.rfind('.');
  return dot == std::string::npos ? std::string() : tensor.substr(0, dot);
}

uint32_t width_of(DType t) { return t == DType::fp32 ? 4 : 2; }

// One adapter's tensors, appended before the layer's output (the output stays last).
struct Adapter {
  uint64_t rows = 0, in = 0, out = 0;
};

class LayerEdit {
 public:
  LayerEdit(const Settings& s, uint32_t x_width, LayerActivations* l)
      : s_(s), xw_(x_width), l_(l) {}

  void add(const Adapter& a, const std::string& name) {
    const bool ac = s_.precision == Precision::amp_bf16 || s_.precision == Precision::amp_fp16;
    const uint32_t aw = width_of(s_.lora.adapter_dtype);
    const uint64_t x_elems = checked_mul(a.rows, a.in, "lora");
    uint32_t cur = xw_;  // the adapter's input: x, its copy in the adapter's dtype, dropped out
    bool copy = xw_ != aw;
    if (copy) {
      forward_temp(checked_mul(x_elems, aw, "lora"));
      cur = aw;
    }
    if (s_.lora.dropout > 0 && s_.dropout) {
      const uint32_t mw = s_.runtime.dropout_mask_bytes ? s_.runtime.dropout_mask_bytes : cur;
      save(name + " lora_dropout mask", checked_mul(x_elems, mw, "lora"), "dropout mask");
      copy = true;
    }
    // lora_A's mm keeps its input: under autocast a 16-bit copy of it (an fp32 adapter input
    // is cast per op); otherwise the tensor itself, x when nothing copied it (then the base's
    // full-fine-tuning saves already hold it)
    if (ac && cur == 4) {
      save(name + " lora_A input", checked_mul(x_elems, 2, "lora"),
           "MmBackward0 keeps lora_A's input for its weight");
    } else if (copy) {
      save(name + " lora_A input", checked_mul(x_elems, cur, "lora"),
           "MmBackward0 keeps lora_A's input for its weight");
    }
    const uint32_t ow = ac ? 2 : aw;
    save(name + " lora_B input (lora_A output)", checked_mul(a.rows * s_.lora.rank, ow, "lora"),
         "MmBackward0 keeps lora_B's input for its weight");
    // lora_B's output and its scaled copy while the sum is made; the input's gradient through
    // lora_A in the backward
    const uint64_t b_out = checked_mul(a.rows * a.out, ow, "lora");
    l_->forward_temps.push_back({at(), 2, b_out});
    l_->backward_temps.push_back({at() - 1, 1, checked_mul(x_elems, aw, "lora")});
  }

  // The layer's output goes back to the end of its tensors.
  void finish() {
    if (!moved_) return;
    // the recipe's transients at the output (or after it) move with it
    const uint32_t n = at() - out_at_;
    for (size_t k = 0; k < old_f_; ++k)
      if (l_->forward_temps[k].at >= out_at_) l_->forward_temps[k].at += n;
    for (size_t k = 0; k < old_b_; ++k)
      if (l_->backward_temps[k].at >= out_at_) l_->backward_temps[k].at += n;
    l_->tensors.push_back(output_);
    if (s_.detail) l_->saved.push_back(output_saved_);
  }

 private:
  uint32_t at() const { return static_cast<uint32_t>(l_->tensors.size()); }
  void take_output() {
    if (moved_ || l_->tensors.empty()) return;
    moved_ = true;
    output_ = l_->tensors.back();
    l_->tensors.pop_back();
    out_at_ = at();
    old_f_ = l_->forward_temps.size();
    old_b_ = l_->backward_temps.size();
    if (s_.detail && !l_->saved.empty()) {
      output_saved_ = l_->saved.back();
      l_->saved.pop_back();
    }
  }
  void save(const std::string& what, uint64_t bytes, const char* source) {
    take_output();
    l_->tensors.push_back(bytes);
    l_->saved_bytes = checked_add(l_->saved_bytes, bytes, "lora");
    if (s_.detail) l_->saved.push_back({what, bytes, source});
  }
  void forward_temp(uint64_t bytes) {
    take_output();
    l_->forward_temps.push_back({at(), 1, bytes});
  }

  const Settings& s_;
  uint32_t xw_;
  LayerActivations* l_;
  bool moved_ = false;
  uint64_t output_ = 0;
  uint32_t out_at_ = 0;
  size_t old_f_ = 0, old_b_ = 0;
  Saved output_saved_;
};

}  // namespace

void add_lora_adapters(const ModelDescription& m, const Settings& s, uint64_t default_rows,
                       ModelActivations* acts) {
  if (!s.lora.enabled) return;
  // the adapted linears' inputs: 16-bit in a 16-bit model; under autocast mostly the fp32 norm
  // outputs (the saves are the same for a 16-bit input: only the fp32 copy's transient differs)
  const uint32_t x_width = s.precision == Precision::bf16 || s.precision == Precision::fp16 ? 2 : 4;
  // the linears' (in, out) by module name; nn.Linear weight [out, in], Conv1D [in, out]
  std::map<std::string, std::pair<uint64_t, uint64_t>> io;
  for (const auto& t : m.tensors) {
    if (t.linear == LinearKind::none || t.shape.size() != 2) continue;
    const bool c1d = t.linear == LinearKind::conv1d;
    io[module_of(t.name)] = {c1d ? t.shape[0] : t.shape[1], c1d ? t.shape[1] : t.shape[0]};
  }
  const bool ac = s.precision == Precision::amp_bf16 || s.precision == Precision::amp_fp16;
  const bool base32 = !s.lora.base_dtype
                          ? !(s.precision == Precision::bf16 || s.precision == Precision::fp16)
                          : *s.lora.base_dtype == DType::fp32;
  uint64_t added = 0;
  for (size_t i = 0; i < acts->layers.size(); ++i) {
    LayerActivations& l = acts->layers[i];
    const uint64_t before = l.saved_bytes;
    LayerEdit e(s, x_width, &l);
    if (i < s.lora.adapted.size())
      for (const auto& name : s.lora.adapted[i]) {
        auto it = io.find(name);
        if (it == io.end()) continue;  // a conv or a module no recipe linear answers to
        e.add({linear_rows(l, name, default_rows), it->second.first, it->second.second}, name);
      }
    e.finish();
    added += l.saved_bytes - before;
  }
  // autocast with an fp32 frozen base: each block matmul casts its weight to 16 bit per op and
  // the matmul's backward keeps the copy (the input requires grad there)
  if (ac && base32)
    for (const auto& t : m.tensors)
      if (t.linear != LinearKind::none && t.shape.size() == 2 && t.block >= 0 &&
          static_cast<size_t>(t.block) + 1 < acts->layers.size())
        acts->layers[static_cast<size_t>(t.block) + 1].kept_weight_casts.push_back(
            checked_mul(t.shape[0] * t.shape[1], 2, "lora"));
  acts->total_saved_bytes = checked_add(acts->total_saved_bytes, added, "lora");
  acts->assumptions.push_back(Text("lora.assume.recipeBase", {}));
}

}  // namespace activations
}  // namespace trainmem
