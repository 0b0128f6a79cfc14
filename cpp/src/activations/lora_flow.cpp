// What autograd keeps with frozen weights, op by op (lora_flow.hpp). Sources: pytorch
// tools/autograd/derivatives.yaml (mm, addmm, bmm, mul, native_dropout), tools/autograd/
// gen_variable_type.py (guard_for: should_compute_output), aten/src/ATen/autocast_mode.cpp
// (cached_cast), huggingface/peft src/peft/tuners/lora/layer.py and bnb.py (Linear.forward,
// Linear4bit.forward @ 5d602fdbf), bitsandbytes 0.49.2 bitsandbytes/autograd/_functions.py
// (MatMul4Bit) and bitsandbytes/nn/modules.py (Linear4bit.forward).
#include "activations/lora_flow.hpp"

#include <algorithm>

#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace activations {
namespace lora {

namespace {
constexpr uint32_t kFirstLocalId = 64;  // ids below are shared by every layer (RoPE cos, sin)
}

Flow::Flow(const Settings& s, const Dtypes& dt, uint64_t tokens, LayerActivations* l)
    : s_(s), dt_(dt), T_(tokens), l_(l), next_id_(kFirstLocalId) {}

uint64_t Flow::bytes(const Val& v) const {
  const uint64_t b = checked_mul(v.elems, v.width, "microBatch");
  // Megatron's split (Korthikanti et al. 4.2.2): heads / intermediate over t; the rest only
  // with sequence parallelism
  if (v.tp || s_.sequence_parallel) return b / s_.tensor_parallel;
  return b;
}

Val Flow::make(uint64_t elems, uint32_t width, bool rg, bool tp) {
  return Val{elems, width, rg, next_id_++, tp, 0};
}

Val Flow::input(uint64_t elems, uint32_t width, bool rg) {
  input_ = make(elems, width, rg);
  return input_;
}

Val Flow::shared(uint32_t id, uint64_t elems, uint32_t width, bool rg) {
  shared_ids_.insert(id);
  return Val{elems, width, rg, id, false, 0};
}

void Flow::add_tensor(const std::string& what, uint64_t b, const char* source) {
  if (b == 0) return;
  if (s_.detail) l_->saved.push_back({what, b, source});
  l_->saved_bytes = checked_add(l_->saved_bytes, b, "microBatch");
  l_->tensors.push_back(b);
}

void Flow::save(const Val& v, const char* what, const char* source) {
  if (v.id == 0 || !saved_.insert(v.id).second) return;
  if (shared_ids_.count(v.id)) {  // counted once, with the embeddings
    shared_used_.insert(v.id);
    return;
  }
  if (v.id == input_.id) return;  // the previous layer's output, counted there
  if (v.copy_of != 0 && v.copy_of == input_.id && copy_entry_ < 0)
    copy_entry_ = static_cast<int64_t>(l_->tensors.size());
  add_tensor(what, bytes(v), source);
}

Val Flow::cast(const Val& v, uint32_t width) {
  if (v.width == width) return v;
  Val c = make(v.elems, width, v.rg, v.tp);
  c.copy_of = v.copy_of ? v.copy_of : v.id;
  return c;
}

Val Flow::ac16(const Val& v) { return dt_.autocast ? cast(v, 2) : v; }

Val Flow::mul(const Val& a, const Val& b, const char* what_a, const char* what_b) {
  // mul: self's gradient reads other, other's reads self (derivatives.yaml mul.Tensor); the
  // node stores self first
  if (b.rg) save(a, what_a, "MulBackward0 keeps the other factor");
  if (a.rg) save(b, what_b, "MulBackward0 keeps the other factor");
  return make(std::max(a.elems, b.elems), std::max(a.width, b.width), a.rg || b.rg, a.tp || b.tp);
}

Val Flow::add(const Val& a, const Val& b) {
  // type promotion: a 16-bit tensor plus an fp32 one is fp32; AddBackward0 keeps nothing
  return make(std::max(a.elems, b.elems), std::max(a.width, b.width), a.rg || b.rg, a.tp || b.tp);
}

Val Flow::input_saved(const Val& x, uint32_t out_width, const char* what, const char* source) {
  if (x.rg) save(x, what, source);
  return make(x.elems, out_width, x.rg, x.tp);
}

Val Flow::keeps_result(const Val& x, uint32_t out_width, const char* what, const char* source) {
  Val r = make(x.elems, out_width, x.rg, x.tp);
  if (x.rg) save(r, what, source);
  return r;
}

Val Flow::dropout(const Val& x, double p, const char* what) {
  if (p <= 0 || !s_.dropout) return x;
  // native_dropout keeps its mask (CUDA: bool) when its input requires grad; torch 1.13 CPU
  // multiplies by a noise tensor of the input's dtype (MulBackward0 keeps it)
  const uint32_t mw = s_.compiled                     ? 1
                      : s_.runtime.dropout_mask_bytes ? s_.runtime.dropout_mask_bytes
                                                      : x.width;
  if (x.rg) save(make(x.elems, mw, false, x.tp), what, "dropout mask");
  return make(x.elems, x.width, x.rg, x.tp);
}

Val Flow::bmm(const Val& a, const Val& b, uint64_t out_elems, bool copy_a, bool copy_b,
              const char* what_a, const char* what_b) {
  Val a2 = ac16(a), b2 = ac16(b);
  if (copy_a) a2 = make(a.elems, a2.width, a.rg, a.tp);
  if (copy_b) b2 = make(b.elems, b2.width, b.rg, b.tp);
  // bmm: self's gradient reads mat2 and mat2's reads self (derivatives.yaml bmm)
  if (b2.rg) save(a2, what_a, "BmmBackward0 keeps self for mat2's gradient");
  if (a2.rg) save(b2, what_b, "BmmBackward0 keeps mat2 for self's gradient");
  return make(out_elems, dt_.autocast ? 2 : std::max(a.width, b.width), a.rg || b.rg, true);
}

void Flow::forward_temp(uint64_t pieces, uint64_t b) {
  if (b == 0 || pieces == 0) return;
  l_->forward_temps.push_back(
      {static_cast<uint32_t>(l_->tensors.size()), static_cast<uint32_t>(pieces), b});
  l_->forward_temp_bytes = std::max(l_->forward_temp_bytes, pieces * b);
}

void Flow::backward_temp(uint64_t pieces, uint64_t b) {
  if (b == 0 || pieces == 0) return;
  l_->backward_temps.push_back(
      {static_cast<uint32_t>(l_->tensors.size()), static_cast<uint32_t>(pieces), b});
  l_->backward_temp_bytes = std::max(l_->backward_temp_bytes, pieces * b);
}

// The frozen base layer: nn.Linear / Conv1D (its mm / addmm keeps the weight, a parameter, for
// the input's gradient and no input), or bitsandbytes' Linear4bit.
Val Flow::base(const Val& x, const Linear& lin) {
  const uint64_t t = x.elems / lin.in;
  const uint64_t w_elems = checked_mul(lin.in, lin.out, "model");
  if (lin.quantized) {
    // Linear4bit.forward: x.to(compute_dtype); MatMul4Bit keeps ctx.tensors = (None, B), the
    // packed weight, outside save_for_backward; F.linear(A, dequantize_4bit(B).to(A.dtype).t())
    // in the forward and grad_output @ dequantize_4bit(B) in the backward (no weight gradient);
    // the output .to(the input's dtype)
    const Val xc = cast(x, dt_.compute);
    const uint64_t deq = w_elems * dt_.compute / s_.tensor_parallel;
    if (xc.id != x.id) forward_temp(1, bytes(xc));
    forward_temp(1, deq);
    if (x.rg) backward_temp(1, deq);
    return cast(make(t * lin.out, dt_.compute, x.rg, lin.out_tp), x.width);
  }
  if (dt_.autocast) {
    if (x.width == 4) forward_temp(1, bytes(make(x.elems, 2, false, x.tp)));  // x's 16-bit copy
    // a frozen fp32 weight is cast per call (not cached); its mm keeps it when x requires grad
    if (dt_.base == 4 && x.rg) l_->kept_weight_casts.push_back(w_elems * 2 / s_.tensor_parallel);
  }
  return make(t * lin.out, dt_.autocast ? 2 : x.width, x.rg, lin.out_tp);
}

// PEFT lora.Linear.forward: result = base_layer(x); x = x.to(lora_A.weight.dtype);
// result = result + lora_B(lora_A(dropout(x))) * scaling; result.to(result's dtype). bnb's
// Linear4bit layer clones the result and casts only outside autocast.
Val Flow::adapter(const Val& x, const Val& result, const Linear& lin, const char* name) {
  const bool ac = dt_.autocast;
  const uint64_t t = x.elems / lin.in;
  const Val xa = (!lin.quantized || !ac) ? cast(x, dt_.adapter) : x;
  const std::string n(name);
  const Val xd = dropout(xa, s_.lora.dropout, (n + " lora_dropout mask").c_str());
  const Val ain = ac16(xd);
  save(ain, (n + " lora_A input").c_str(), "MmBackward0 keeps lora_A's input for its weight");
  if (xa.id != x.id && xa.id != ain.id) forward_temp(1, bytes(xa));  // the adapter-dtype copy
  const uint32_t aw = ac ? 2 : dt_.adapter;
  const Val a = make(t * s_.lora.rank, aw, true, false);
  save(a, (n + " lora_B input (lora_A output)").c_str(),
       "MmBackward0 keeps lora_B's input for its weight");
  // lora_B's output and its scaled copy coexist while the sum is made (MulBackward0 of a
  // Python scalar keeps nothing); the input's gradient through lora_A in the backward
  const Val b = make(t * lin.out, aw, true, lin.out_tp);
  forward_temp(2, bytes(b));
  backward_temp(1, bytes(make(x.elems, dt_.adapter, false, x.tp)));
  Val res = result;
  if (lin.quantized) {
    res = make(result.elems, result.width, result.rg, result.tp);  // result.clone()
    return add(res, ac ? b : cast(b, result.width));
  }
  Val sum = add(res, b);
  sum.rg = true;
  return cast(sum, result.width);
}

Val Flow::linear(const Val& x, const Linear& lin, const char* name) {
  Val r = base(x, lin);
  if (!lin.adapted) return r;
  Val out = adapter(x, r, lin, name);
  out.rg = true;
  return out;
}

void Flow::output(const Val& v, const char* what, const char* source) {
  l_->output_bytes = bytes(v);
  if (saved_.insert(v.id).second) add_tensor(what, bytes(v), source);
}

void Flow::finish() {
  // A 16-bit input that no op keeps while a wider copy of it is kept: the chain counts the input
  // once as the previous layer's output, so the copy adds only its bytes beyond it.
  if (input_.id == 0 || saved_.count(input_.id)) return;
  l_->input_saved = false;
  if (copy_entry_ < 0) return;
  const size_t i = static_cast<size_t>(copy_entry_);
  const uint64_t in = bytes(input_);
  if (l_->tensors[i] < in) return;  // a narrower copy (autocast's): counted whole
  l_->input_saved = true;
  l_->tensors[i] -= in;
  l_->saved_bytes -= in;
  if (s_.detail) {
    // the saved list has one entry per tensor here
    l_->saved[i].bytes -= in;
    l_->saved[i].name += " (beyond the 16-bit input)";
  }
}

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
