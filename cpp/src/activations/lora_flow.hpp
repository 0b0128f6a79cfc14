// Internal to the activation recipes: a small model of what PyTorch's autograd keeps when some
// weights are frozen (LoRA, QLoRA). Each op saves an input only when the gradient that needs it
// is computed: autograd's codegen guards a saved variable used by one input's formula with
// should_compute_output (tools/autograd/gen_variable_type.py, guard_for), so mm(x, W) keeps x only
// when W requires grad and W only when x does (derivatives.yaml: mm, addmm, bmm, mul). Values
// carry their element count, width, whether they require grad and a storage id, so that one
// storage kept by several ops counts once. Measured: tests/fixtures/torch_lora.json.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"

namespace trainmem {
namespace activations {
namespace lora {

// A tensor of the forward. id 0: a parameter or a constant (never counted as an activation).
struct Val {
  uint64_t elems = 0;
  uint32_t width = 4;  // bytes per element
  bool rg = false;     // requires grad
  uint32_t id = 0;
  bool tp = false;       // split over tensor-parallel ranks (heads, intermediate), else replicated
  uint32_t copy_of = 0;  // the storage this one is a dtype copy of (0: none)
};

// The dtypes of a LoRA run.
struct Dtypes {
  uint32_t base = 4;     // the frozen base's parameters (and so the embeddings' output)
  uint32_t adapter = 4;  // lora_A / lora_B
  uint32_t compute = 4;  // 16-bit under autocast; QLoRA's bnb_4bit_compute_dtype
  bool autocast = false;
  bool qlora = false;
};

// One linear of a block: its in/out features, whether it is adapted, and its tokens.
struct Linear {
  uint64_t in = 0, out = 0;
  bool adapted = false;
  bool quantized = false;  // QLoRA: a bitsandbytes Linear4bit
  bool bias = false;
  bool out_tp = true;  // column-parallel (q, k, v, up): output split; else input split
};

class Flow {
 public:
  Flow(const Settings& s, const Dtypes& dt, uint64_t tokens, LayerActivations* l);

  uint64_t tokens() const { return T_; }
  const Settings& settings() const { return s_; }
  const Dtypes& dtypes() const { return dt_; }
  LayerActivations* layer() { return l_; }
  // Values: a new storage; the layer's input (counted as the previous layer's output); a value
  // shared by every block (RoPE's cos and sin: counted with the embeddings, `used` says if kept).
  Val make(uint64_t elems, uint32_t width, bool rg, bool tp = false);
  Val input(uint64_t elems, uint32_t width, bool rg);
  Val shared(uint32_t id, uint64_t elems, uint32_t width, bool rg = false);
  bool shared_used(uint32_t id) const { return shared_used_.count(id) > 0; }
  static Val param(uint32_t width) { return Val{0, width, false, 0, false, 0}; }

  // Keeps v for the backward (once per storage).
  void save(const Val& v, const char* what, const char* source);
  // .to(width): a copy when the width changes (ToCopyBackward0 keeps nothing).
  Val cast(const Val& v, uint32_t width);
  // autocast's cast of an input of a 16-bit op (mm, bmm): a fresh copy of an fp32 tensor per op
  // (only leaves that require grad are cached: autocast_mode.cpp cached_cast).
  Val ac16(const Val& v);

  // Ops (the value they return; what they keep follows derivatives.yaml with the guards).
  Val mul(const Val& a, const Val& b, const char* what_a, const char* what_b);
  Val add(const Val& a, const Val& b);
  Val input_saved(const Val& x, uint32_t out_width, const char* what, const char* source);
  Val keeps_result(const Val& x, uint32_t out_width, const char* what, const char* source);
  Val dropout(const Val& x, double p, const char* what);
  // torch.matmul on 4-d operands (bmm): `copy_a` / `copy_b`: the operand is not contiguous, so
  // matmul's reshape copies it (a fresh storage is what BmmBackward0 keeps).
  Val bmm(const Val& a, const Val& b, uint64_t out_elems, bool copy_a, bool copy_b,
          const char* what_a, const char* what_b);
  // A block linear (nn.Linear / Conv1D, frozen, maybe 4-bit) with its PEFT adapter.
  Val linear(const Val& x, const Linear& lin, const char* name);

  // Transients for the allocation trace at the current tensor index.
  void forward_temp(uint64_t pieces, uint64_t bytes);
  void backward_temp(uint64_t pieces, uint64_t bytes);
  // The layer's output (kept: placement::Layer semantics) and the input's beyond-copy credit.
  void output(const Val& v, const char* what, const char* source);
  void finish();

  uint64_t bytes(const Val& v) const;

 private:
  Val base(const Val& x, const Linear& lin);
  Val adapter(const Val& x, const Val& result, const Linear& lin, const char* name);
  void add_tensor(const std::string& what, uint64_t bytes, const char* source);

  const Settings& s_;
  Dtypes dt_;
  uint64_t T_;
  LayerActivations* l_;
  uint32_t next_id_ = 1;
  std::set<uint32_t> saved_;
  std::set<uint32_t> shared_used_, shared_ids_;
  Val input_{};
  int64_t copy_entry_ = -1;  // the first saved copy of the input (its tensor index)
};

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
