// Per-layer activations of a traced model (traced_model.hpp): the trace's storages, evaluated at
// the request's micro-batch and length, become each chain layer's saved tensors (in the order
// the forward made them, the output last), its transients in the forward (per saved tensor:
// what else is live while it is made) and in the backward (per saved tensor the backward frees:
// what the layer's own backward nodes have allocated and not yet freed), and its FLOPs. The
// step's events are PyTorch's own (a dispatch mode saw every op; weak references saw every
// free), so nothing here is a model of the ops: only the sizes are evaluated.
#include <algorithm>

#include "trainmem/error.hpp"
#include "trainmem/traced_model.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace traced {
namespace {

using activations::LayerActivations;
using activations::ModelActivations;
using activations::Precision;
using activations::Settings;

// Value of a size polynomial at (b, s), exactly; negative sizes are refused (naming
// `list`[index], the size's place in the trace).
uint64_t eval(const Poly& p, uint64_t b, uint64_t s, const char* list, size_t index) {
  const char* field = "microBatch";
  const uint64_t bs = checked_mul(b, s, field), ss = checked_mul(s, s, field);
  const uint64_t mono[6] = {1, b, s, bs, ss, checked_mul(bs, s, field)};
  uint64_t pos = 0, neg = 0;
  for (int i = 0; i < 6; ++i) {
    if (p.c[i] == 0) continue;
    const uint64_t mag =
        p.c[i] < 0 ? uint64_t(0) - static_cast<uint64_t>(p.c[i]) : static_cast<uint64_t>(p.c[i]);
    const uint64_t term = checked_mul(mag, mono[i], field);
    (p.c[i] < 0 ? neg : pos) = checked_add(p.c[i] < 0 ? neg : pos, term, field);
  }
  if (neg > pos)
    fail(code::kOutOfRange, p.uses_seq() ? "seqLen" : "microBatch",
         p.uses_seq() ? Message{"error.trace.negativeSeq",
                                {{"list", list},
                                 {"index", std::to_string(index)},
                                 {"microBatch", std::to_string(b)},
                                 {"seqLen", std::to_string(s)}}}
                      : Message{"error.trace.negative",
                                {{"list", list},
                                 {"index", std::to_string(index)},
                                 {"microBatch", std::to_string(b)}}});
  const uint64_t v = pos - neg;
  return p.den <= 1 ? v : (v + p.den / 2) / p.den;
}

// Bytes of a tensor in the request's precision and on its runtime.
uint64_t rescale(const Tensor& t, uint64_t bytes, const Settings& s, uint32_t traced_width) {
  uint64_t w = t.element_bytes;
  if (t.floating && t.element_bytes == traced_width) {
    if (s.precision == Precision::bf16 || s.precision == Precision::fp16)
      w = 2;
    else if (s.precision == Precision::fp32)
      w = 4;
  }
  // CUDA's native_dropout keeps a bool mask where CPU and meta keep the float noise
  // (aten/src/ATen/native/Dropout.cpp: is_fused_kernel_acceptable needs a CUDA tensor)
  if (t.mask && s.runtime.dropout_mask_bytes > 0) w = s.runtime.dropout_mask_bytes;
  if (w == t.element_bytes || t.element_bytes == 0) return bytes;
  return bytes / t.element_bytes * w;
}

// Everything evaluated once per request.
struct Step {
  const Trace& t;
  std::vector<uint64_t> bytes;              // per tensor, in the request's precision
  std::vector<int64_t> layer_of;            // per forward op
  std::vector<uint64_t> live;               // per forward op: transient bytes live while it runs
  std::vector<std::vector<uint64_t>> kept;  // per layer: tensors kept for the backward
  std::vector<uint64_t> held;               // tensors only the step's code holds
  std::vector<uint8_t> released;            // per layer: its output is freed in the forward
};

int64_t layer_of_op(const Trace& t, const std::vector<int64_t>& by_op, int64_t op) {
  if (op < 0 || static_cast<size_t>(op) >= by_op.size())
    return static_cast<int64_t>(t.layers.size()) - 1;
  return by_op[static_cast<size_t>(op)];
}

// Per tensor: the layer (not the last) whose output it is when that layer made it and no op
// keeps it for the backward (freed in the forward, or held only by the step's code); else -1.
std::vector<int64_t> handed_outputs(const Step* st) {
  const Trace& t = st->t;
  std::vector<int64_t> out(t.tensors.size(), -1);
  for (size_t l = 0; l + 1 < t.layers.size(); ++l) {
    const Tensor& x = t.tensors[t.layers[l].output];
    if (!x.saved && !x.backward && layer_of_op(t, st->layer_of, x.op) == static_cast<int64_t>(l))
      out[t.layers[l].output] = static_cast<int64_t>(l);
  }
  return out;
}

void evaluate_sizes(Step* st, const Settings& s, uint32_t traced_width) {
  const Trace& t = st->t;
  const uint64_t seq = t.has_seq ? s.seq_len : 0;
  st->bytes.resize(t.tensors.size());
  for (size_t i = 0; i < t.tensors.size(); ++i)
    st->bytes[i] = rescale(t.tensors[i], eval(t.tensors[i].bytes, s.micro_batch, seq, "tensors", i),
                           s, traced_width);
  st->layer_of.assign(t.ops.size(), 0);
  for (size_t l = 0; l < t.layers.size(); ++l)
    for (uint64_t k = t.layers[l].start; k < t.layers[l].end; ++k)
      st->layer_of[k] = static_cast<int64_t>(l);
  // transients: alive over ops [op, free); the rest of the forward's storages are kept
  const char* field = "microBatch";
  std::vector<uint64_t> made(t.ops.size() + 1, 0), gone(t.ops.size() + 1, 0);
  st->kept.assign(t.layers.size(), {});
  st->released.assign(t.layers.size(), 0);
  const std::vector<int64_t> handed = handed_outputs(st);
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const Tensor& x = t.tensors[i];
    if (x.backward) continue;
    if (handed[i] >= 0) {
      // a layer's output no op keeps: the chain's layer keeps it (placement::Layer::saved_bytes
      // includes the output) until the next layer has run (its input_saved false: step_trace.cpp
      // releases it there); a transient from there on when the trace freed it later
      const size_t l = static_cast<size_t>(handed[i]);
      st->kept[l].push_back(i);
      st->released[l] = x.free >= 0;
      const uint64_t until = t.layers[l + 1].end;
      if (x.free > static_cast<int64_t>(until)) {
        made[until] = checked_add(made[until], st->bytes[i], field);
        gone[static_cast<size_t>(x.free)] =
            checked_add(gone[static_cast<size_t>(x.free)], st->bytes[i], field);
      }
      continue;
    }
    if (x.free < 0) {
      // kept for the backward: by the layer that made it; a tensor only the step's code holds
      // (the model's output) lives through the backward and the optimizer step
      // (ModelActivations::held; the loss stays the last layer's output)
      if (!x.saved && i != t.layers.back().output) {
        st->held.push_back(i);
        continue;
      }
      st->kept[static_cast<size_t>(layer_of_op(t, st->layer_of, x.op))].push_back(i);
      continue;
    }
    made[static_cast<size_t>(x.op)] =
        checked_add(made[static_cast<size_t>(x.op)], st->bytes[i], field);
    gone[static_cast<size_t>(x.free)] =
        checked_add(gone[static_cast<size_t>(x.free)], st->bytes[i], field);
  }
  // (every tensor is made before it is freed: the running sum never goes below zero)
  st->live.assign(t.ops.size(), 0);
  uint64_t run = 0;
  for (size_t k = 0; k < t.ops.size(); ++k) {
    run = checked_add(run - std::min(run, gone[k]), made[k], field);
    st->live[k] = run;
  }
}

// The layer's kept tensors in creation order with its output moved last (the contract of
// LayerActivations::tensors) when the layer keeps it.
std::vector<uint64_t> ordered_kept(const Step& st, size_t l) {
  std::vector<uint64_t> k = st.kept[l];
  const uint64_t out = st.t.layers[l].output;
  const auto it = std::find(k.begin(), k.end(), out);
  if (it != k.end()) {
    k.erase(it);
    k.push_back(out);
  }
  return k;
}

// Forward transients: for each op of the layer, what is live besides the kept tensors, charged
// to the next kept tensor the layer makes (the one made while those transients exist).
void forward_temps(const Step& st, size_t l, const std::vector<uint64_t>& kept,
                   LayerActivations* la) {
  const Layer& L = st.t.layers[l];
  std::vector<uint64_t> most(kept.size() + 1, 0);
  size_t next = 0;
  for (uint64_t p = L.start; p < L.end; ++p) {
    // the first kept tensor made at or after op p
    while (next < kept.size() && st.t.tensors[kept[next]].op < static_cast<int64_t>(p)) ++next;
    most[next] = std::max(most[next], st.live[p]);
  }
  // the lump (placement's forwardTemp, on top of all the layer keeps): what exceeds the kept
  // tensors not yet made while those transients live
  uint64_t later = 0;  // kept tensors made after tensor k
  for (size_t k = most.size(); k-- > 0;) {
    if (most[k] > later) la->forward_temp_bytes = std::max(la->forward_temp_bytes, most[k] - later);
    if (k > 0) later += la->tensors[k - 1];
  }
  for (size_t k = 0; k < most.size(); ++k)
    if (most[k] > 0) la->forward_temps.push_back({static_cast<uint32_t>(k), 1, most[k]});
}

// Per forward op: the temporaries its backward holds inside the kernel, beyond what the trace
// saw (the runtime's traits; CPU, torch 1.13, measured with torch.profiler by
// tools/measure_cpu_kernel_temps.py): a convolution's backward holds
// RuntimeTraits::conv_backward_temp_outputs temporaries of its output's size (oneDNN reorders
// grad_output) and one of the input gradient it makes (made in oneDNN's layout, then copied);
// batch norm's backward one of its output's size (native_batch_norm_backward on the CPU).
std::vector<uint64_t> kernel_temporaries(const Step& st, const Settings& s) {
  const Trace& t = st.t;
  std::vector<uint64_t> out(t.ops.size(), 0);
  // (batch norm's CPU backward follows the same runtime trait: the CPU kernels' temporaries)
  const uint32_t conv = s.runtime.conv_backward_temp_outputs, bn = conv > 0 ? 1 : 0;
  if (conv == 0 && bn == 0) return out;
  const char* field = "microBatch";
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const Tensor& x = t.tensors[i];
    if (x.backward || x.op < 0) continue;
    const size_t k = static_cast<size_t>(x.op);
    const std::string& name = t.ops[k].name;
    const uint32_t n = name == "aten.convolution"         ? conv
                       : name == "aten.native_batch_norm" ? bn
                                                          : 0;
    if (out[k] == 0 && n > 0) out[k] = checked_mul(st.bytes[i], n, field);
  }
  if (conv == 0) return out;
  // the input gradient a convolution's node makes: the largest tensor it allocates
  std::vector<uint64_t> grad_in(t.ops.size(), 0);
  int64_t node = -1;
  for (const Event& e : t.backward) {
    if (e.kind == 'n')
      node = e.index;
    else if (e.kind == 'a' && node >= 0 &&
             t.ops[static_cast<size_t>(node)].name == "aten.convolution")
      grad_in[static_cast<size_t>(node)] =
          std::max(grad_in[static_cast<size_t>(node)], st.bytes[static_cast<size_t>(e.index)]);
  }
  for (size_t k = 0; k < out.size(); ++k) out[k] = checked_add(out[k], grad_in[k], field);
  return out;
}

// What the allocation trace holds while layer l's backward is in region k (step_trace.cpp
// backward: the region's transients are made with the layer's kept tensors 0..k alive, every
// earlier layer's kept tensors, the gradient of the layer's output and that of its input).
// The transients of region k are what the traced step held beyond that (clamped at zero).
class Baseline {
 public:
  Baseline(const Step& st, const std::vector<std::vector<uint64_t>>& kept,
           const ModelActivations& out) {
    const size_t nl = kept.size();
    prefix_.resize(nl);
    before_.assign(nl, 0);
    grads_.assign(nl, 0);
    uint64_t all = 0;
    for (size_t l = 0; l < nl; ++l) {
      before_[l] = all;
      uint64_t run = 0;
      // (a released output, the last of the layer's tensors, is gone before the backward)
      for (size_t k = 0; k < kept[l].size(); ++k)
        if (!st.released[l] || k + 1 < kept[l].size())
          prefix_[l].push_back(run = checked_add(run, st.bytes[kept[l][k]], kF));
        else
          prefix_[l].push_back(run);
      if (prefix_[l].empty()) prefix_[l].push_back(0);
      all = checked_add(all, run, kF);
      alive_ = checked_add(alive_, run, kF);
      grads_[l] =
          checked_add(out.layers[l].output_bytes, l > 0 ? out.layers[l - 1].output_bytes : 0, kF);
    }
  }
  // the traced step: a backward tensor made or freed, a kept tensor freed
  void made(uint64_t b) { backward_ = checked_add(backward_, b, kF); }
  void gone(uint64_t b) { backward_ -= std::min(backward_, b); }
  void unkept(uint64_t b) { alive_ -= std::min(alive_, b); }
  uint64_t excess(size_t l, size_t k, uint64_t node_temp) const {
    const uint64_t real = checked_add(checked_add(backward_, alive_, kF), node_temp, kF);
    const uint64_t base = checked_add(checked_add(before_[l], prefix_[l][k], kF), grads_[l], kF);
    return real > base ? real - base : 0;
  }

 private:
  static constexpr const char* kF = "microBatch";
  std::vector<std::vector<uint64_t>> prefix_;
  std::vector<uint64_t> before_, grads_;
  uint64_t backward_ = 0, alive_ = 0;  // the traced step's live backward and kept bytes
};

// Backward transients of every layer: tensors a layer's nodes allocate and free themselves,
// live while the backward frees the layer's kept tensors (region k: while it frees kept[k]).
void backward_temps(const Step& st, const Settings& s,
                    const std::vector<std::vector<uint64_t>>& kept, ModelActivations* out) {
  const Trace& t = st.t;
  const size_t nl = t.layers.size();
  std::vector<int64_t> alloc_layer(t.tensors.size(), -1), free_layer(t.tensors.size(), -1);
  int64_t cur = static_cast<int64_t>(nl) - 1;
  for (const Event& e : t.backward) {  // pass 1: where each backward tensor starts and ends
    if (e.kind == 'n') {
      if (e.index >= 0) cur = layer_of_op(t, st.layer_of, e.index);
    } else {
      (e.kind == 'a' ? alloc_layer : free_layer)[static_cast<size_t>(e.index)] = cur;
    }
  }
  std::vector<int64_t> owner(t.tensors.size(), -1);
  for (size_t l = 0; l < nl; ++l)
    for (uint64_t k : kept[l]) owner[k] = static_cast<int64_t>(l);
  std::vector<std::vector<uint64_t>> most(nl);
  for (size_t l = 0; l < nl; ++l) most[l].assign(std::max<size_t>(kept[l].size(), 1), 0);
  // (a released output counts as freed already: the step trace frees it in the forward)
  std::vector<size_t> freed(st.released.begin(), st.released.end());
  // per layer: its own transients live, the gradients it hands on (allocated in it, freed
  // later), and its kept bytes already freed; `lump`: the most the first two exceed the third
  std::vector<uint64_t> live(nl, 0), handed(nl, 0), gone(nl, 0), lump(nl, 0);
  const char* field = "microBatch";
  const std::vector<uint64_t> kernel_temp = kernel_temporaries(st, s);
  uint64_t node_temp = 0;  // the running node's kernel temporary (runtime trait)
  Baseline base(st, kept, *out);
  cur = static_cast<int64_t>(nl) - 1;
  for (const Event& e : t.backward) {  // pass 2: the live transients per layer and region
    const size_t i = static_cast<size_t>(e.index);
    if (e.kind == 'n') {
      if (e.index >= 0) cur = layer_of_op(t, st.layer_of, e.index);
      node_temp = e.index >= 0 ? kernel_temp[static_cast<size_t>(e.index)] : 0;
      continue;
    }
    const int64_t from = alloc_layer[i];
    const bool made_here = t.tensors[i].backward && from >= 0;
    const bool own = made_here && free_layer[i] == from;
    const size_t a = static_cast<size_t>(std::max<int64_t>(from, 0));
    uint64_t& pool = own ? live[a] : handed[a];
    if (made_here && e.kind == 'a') pool = checked_add(pool, st.bytes[i], field);
    if (made_here && e.kind == 'f') pool -= std::min(pool, st.bytes[i]);
    if (t.tensors[i].backward) (e.kind == 'a') ? base.made(st.bytes[i]) : base.gone(st.bytes[i]);
    if (e.kind == 'f' && owner[i] >= 0) {
      const size_t o = static_cast<size_t>(owner[i]);
      ++freed[o];
      base.unkept(st.bytes[i]);
      // (the output freed by the next layer's nodes is still live at this layer's backward when
      // this layer is recomputed under checkpointing: the lump keeps it)
      if (i != t.layers[o].output || static_cast<size_t>(cur) == o) gone[o] += st.bytes[i];
    }
    const size_t l = static_cast<size_t>(cur), n = most[l].size();
    const size_t region = n - 1 - std::min(freed[l], n - 1);
    const uint64_t own_now = checked_add(live[l], node_temp, field);
    most[l][region] = std::max(most[l][region], base.excess(l, region, node_temp));
    const uint64_t up = checked_add(own_now, handed[l], field);
    if (up > gone[l]) lump[l] = std::max(lump[l], up - gone[l]);
  }
  for (size_t l = 0; l < nl; ++l) {
    LayerActivations& la = out->layers[l];
    for (size_t k = 0; k < most[l].size(); ++k)
      if (most[l][k] > 0) la.backward_temps.push_back({static_cast<uint32_t>(k), 1, most[l][k]});
    // the lump (placement's backwardTemp, on top of all the layer keeps): the layer's own
    // transients and the gradients it hands on, less what it keeps and has already freed
    la.backward_temp_bytes = lump[l];
  }
}

// Bytes per element of the dtype the model was traced in.
uint32_t traced_width_of(const Trace& t) {
  if (t.dtype == "bfloat16" || t.dtype == "float16") return 2;
  return t.dtype == "float64" ? 8 : 4;
}

bool has_op(const Trace& t, const char* name) {
  for (const Op& o : t.ops)
    if (o.name == name) return true;
  return false;
}

bool has_mask(const Trace& t) {
  for (const Tensor& x : t.tensors)
    if (x.mask) return true;
  return false;
}

void trace_assumptions(const Trace& t, const Settings& s, uint32_t traced_width,
                       std::vector<Text>* out) {
  MessageParams step = {
      {"torch", t.torch}, {"device", t.device}, {"batch", std::to_string(t.batch)}};
  if (t.has_seq) step.emplace_back("length", std::to_string(t.seq));
  out->push_back(Text(t.has_seq ? "trace.assume.stepSeq" : "trace.assume.step", std::move(step)));
  const uint32_t want = s.precision == Precision::bf16 || s.precision == Precision::fp16 ? 2 : 4;
  if (want != traced_width)
    out->push_back(
        Text("trace.assume.rescaled", {{"dtype", t.dtype},
                                       {"bytes", std::to_string(want)},
                                       {"precision", activations::precision_name(s.precision)}}));
  else if (s.precision == Precision::fp16 && t.dtype == "bfloat16")
    out->push_back(Text("trace.assume.fp16", {}));
  if (s.runtime.dropout_mask_bytes > 0 && has_mask(t))
    out->push_back(Text("trace.assume.mask", {}));
  if (s.runtime.conv_backward_temp_outputs > 0 && has_op(t, "aten.convolution"))
    out->push_back(Text("trace.assume.convTemp", {}));
  if (t.inexact > 0)
    out->push_back(Text("trace.assume.inexact", {{"count", std::to_string(t.inexact)}}));
  for (const Message& n : t.notes)
    out->push_back(Text(Message{"trace.note", {}}.with("note", {n})));
}

}  // namespace

// The step the precision runs: the bfloat16 variant for 16-bit models when the trace has it.
const Trace& step_for(const Trace& t, const Settings& s) {
  const bool sixteen = s.precision == Precision::bf16 || s.precision == Precision::fp16;
  return sixteen && t.half ? *t.half : t;
}

StepSummary step_summary(const Trace& whole, const Settings& s) {
  const Trace& t = step_for(whole, s);
  Step st{t, {}, {}, {}, {}, {}, {}};
  evaluate_sizes(&st, s, traced_width_of(t));
  StepSummary out;
  const char* field = "microBatch";
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const Tensor& x = t.tensors[i];
    if (x.backward || x.free >= 0) continue;
    uint64_t& into = x.saved ? out.saved_bytes : out.held_bytes;
    into = checked_add(into, st.bytes[i], field);
  }
  const uint64_t seq = t.has_seq ? s.seq_len : 0;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    const uint64_t b = eval(t.inputs[i], s.micro_batch, seq, "inputs", i);
    out.input_bytes = checked_add(out.input_bytes, b, field);
    if (i < t.inputs_saved.size() && t.inputs_saved[i])
      out.saved_bytes = checked_add(out.saved_bytes, b, field);
  }
  return out;
}

ModelActivations traced_activations(const Trace& whole, const Settings& s) {
  if (s.micro_batch == 0)
    fail(code::kOutOfRange, "microBatch", Message{"error.microBatch.min", {}});
  const Trace& t = step_for(whole, s);
  Step st{t, {}, {}, {}, {}, {}, {}};
  const uint32_t traced_width = traced_width_of(t);
  evaluate_sizes(&st, s, traced_width);
  ModelActivations out;
  out.recipe = "trace";
  const uint64_t seq = t.has_seq ? s.seq_len : 0;
  for (size_t i = 0; i < t.inputs.size(); ++i)
    out.input_bytes = checked_add(out.input_bytes,
                                  eval(t.inputs[i], s.micro_batch, seq, "inputs", i), "microBatch");
  std::vector<std::vector<uint64_t>> kept(t.layers.size());
  for (size_t l = 0; l < t.layers.size(); ++l) {
    const Layer& L = t.layers[l];
    LayerActivations la;
    la.name = L.name;
    kept[l] = ordered_kept(st, l);
    for (uint64_t i : kept[l]) {
      la.tensors.push_back(st.bytes[i]);
      la.saved_bytes = checked_add(la.saved_bytes, st.bytes[i], "microBatch");
      if (s.detail)
        la.saved.push_back({"tensor " + std::to_string(i), st.bytes[i],
                            t.ops.empty() || t.tensors[i].op < 0
                                ? ""
                                : t.ops[static_cast<size_t>(t.tensors[i].op)].name});
    }
    la.output_bytes = st.bytes[L.output];
    if (l > 0) la.input_saved = !st.released[l - 1];
    // an output the layer did not make (a storage an earlier layer made, or the batch): the
    // chain counts it with this layer too (conservative; the step trace keeps `tensors`)
    la.saved_bytes = std::max(la.saved_bytes, la.output_bytes);
    forward_temps(st, l, kept[l], &la);
    double flops = 0;
    for (uint64_t k = L.start; k < L.end; ++k)
      flops += static_cast<double>(eval(t.ops[k].flops, s.micro_batch, seq, "ops", k));
    la.forward_flops = flops > 0 ? flops : 1;
    la.params = l < t.layer_params.size() ? t.layer_params[l] : 0;
    out.layers.push_back(std::move(la));
  }
  backward_temps(st, s, kept, &out);
  for (uint64_t i : st.held) out.held.push_back(st.bytes[i]);
  // (what lives through the backward: the held outputs too)
  out.total_saved_bytes = out.input_bytes;
  for (uint64_t b : out.held)
    out.total_saved_bytes = checked_add(out.total_saved_bytes, b, "microBatch");
  for (const auto& la : out.layers)
    out.total_saved_bytes = checked_add(out.total_saved_bytes, la.saved_bytes, "microBatch");
  trace_assumptions(t, s, traced_width, &out.assumptions);
  return out;
}

}  // namespace traced
}  // namespace trainmem
