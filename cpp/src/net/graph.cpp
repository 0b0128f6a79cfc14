// The op-by-op record of a network and its reduction to chain layers (graph.hpp states the
// model). The per-layer output follows the contract of activations.hpp: saved tensors in the
// order they are made, the output last; transients as groups placed at those tensors, in the
// form the allocation trace replays (cpp/src/peak/step_trace.cpp: forward_all allocates a
// layer's tensors in order with each group live around the tensor it is placed at; backward
// allocates the input gradient, frees the saved tensors in reverse order and lets a group
// replace the transients from the tensor it is placed at downwards).
#include "net/graph.hpp"

#include <algorithm>

#include "trainmem/error.hpp"
#include "util/checked.hpp"  // checked_mul, checked_add

namespace trainmem {
namespace net {

Graph::Graph(const activations::Settings& s, ModelDescription* m, bool activations)
    : s_(s), m_(m), rec_(activations) {
  vals_.emplace_back();
  st_.emplace_back();
  using P = activations::Precision;
  switch (s.precision) {
    case P::fp32:
      break;
    case P::amp_fp16:
    case P::amp_bf16:
      w_.autocast = true;  // fp32 parameters; matmuls and convolutions in 16-bit
      break;
    case P::bf16:
    case P::fp16:
      w_.param = w_.act = 2;
      break;
  }
}

uint64_t Graph::numel(V v) const {
  uint64_t n = 1;
  for (uint64_t d : vals_[v.id].shape) n = checked_mul(n, d, "microBatch");
  return n;
}

void Graph::layer(const std::string& name, int64_t block) {
  block_ = block;
  ++chain_layers_;
  if (!rec_) return;
  Layer l;
  l.name = name;
  l.first_op = static_cast<uint32_t>(ops_.size());
  layers_.push_back(std::move(l));
}

void Graph::output(V v) {
  if (rec_ && !layers_.empty()) layers_.back().output = v.id;
}

void Graph::carry(V v) {
  if (rec_ && !layers_.empty()) layers_.back().carried.push_back(v.id);
}

void Graph::tokens(uint64_t rows) {
  if (rec_ && !layers_.empty()) layers_.back().tokens = rows;
}

void Graph::assume(const Text& a) {
  if (std::find(assumptions_.begin(), assumptions_.end(), a) == assumptions_.end())
    assumptions_.push_back(a);
}

void Graph::module(const std::string& path) {
  if (!m_) return;
  ++m_->module_count;
  m_->module_name_bytes += path.size();
}

V Graph::param(const std::string& name, Shape shape, LinearKind lk, bool trainable,
               const std::string& tied) {
  if (m_) {
    TensorSpec t;
    t.name = name;
    t.shape = std::move(shape);
    t.linear = lk;
    t.trainable = trainable;
    t.tied_to = tied;
    t.block = block_;
    t.block_set = true;
    m_->tensors.push_back(std::move(t));
  }
  return V{};
}

void Graph::mark_output_head() {
  if (m_ && !m_->tensors.empty()) m_->tensors.back().output_head = true;
}

void Graph::buffer(const std::string& name, Shape shape, DType dt, bool persistent) {
  if (!m_) return;
  BufferSpec b;
  b.name = name;
  b.shape = std::move(shape);
  b.dtype = dt;
  b.persistent = persistent;
  m_->buffers.push_back(std::move(b));
}

V Graph::input(Shape shape, uint32_t width, bool grad) {
  Value v;
  v.shape = std::move(shape);
  v.width = width;
  v.grad = grad;
  v.storage = static_cast<uint32_t>(st_.size());
  vals_.push_back(std::move(v));
  Storage s;
  s.bytes = checked_mul(numel(V{static_cast<uint32_t>(vals_.size() - 1)}), width, "microBatch");
  s.batch = true;
  st_.push_back(s);
  return V{static_cast<uint32_t>(vals_.size() - 1)};
}

V Graph::weight_value(Shape shape) {
  const V v = input(std::move(shape), w_.param, false);
  st_[vals_[v.id].storage].batch = false;
  st_[vals_[v.id].storage].param = true;
  return v;
}

void Graph::use(V v) {
  if (v) st_[vals_[v.id].storage].last_read = static_cast<uint32_t>(ops_.size() - 1);
}

void Graph::begin_op(const std::vector<V>& in, bool alias_backward) {
  Op op;
  op.layer = static_cast<int32_t>(layers_.size()) - 1;
  op.alias = alias_backward;
  for (V v : in)
    if (v) op.in.push_back(v.id);
  ops_.push_back(std::move(op));
  for (V v : in) use(v);
}

void Graph::begin_op(std::initializer_list<V> in, bool alias_backward) {
  begin_op(std::vector<V>(in), alias_backward);
}

V Graph::make(Shape shape, uint32_t width, bool contiguous) {
  Value v;
  v.shape = std::move(shape);
  v.width = width;
  v.contiguous = contiguous;
  v.storage = static_cast<uint32_t>(st_.size());
  const V id{static_cast<uint32_t>(vals_.size())};
  vals_.push_back(std::move(v));
  Storage s;
  s.bytes = checked_mul(numel(id), width, "microBatch");
  s.layer = static_cast<int32_t>(layers_.size()) - 1;
  s.made = s.last_read = static_cast<uint32_t>(ops_.size() - 1);
  st_.push_back(s);
  ops_.back().out.push_back(id.id);
  return id;
}

V Graph::view(V base, Shape shape, bool contiguous) {
  Value v = vals_[base.id];
  v.shape = std::move(shape);
  v.contiguous = contiguous;
  vals_.push_back(std::move(v));
  const V id{static_cast<uint32_t>(vals_.size() - 1)};
  if (!ops_.empty()) ops_.back().out.push_back(id.id);
  return id;
}

V Graph::inplace(V base) { return view(base, vals_[base.id].shape, vals_[base.id].contiguous); }

void Graph::save(V v, const char* what, const char* why) {
  if (!v || !rec_) return;
  Storage& s = st_[vals_[v.id].storage];
  if (s.param) return;
  const int64_t op = static_cast<int64_t>(ops_.size()) - 1;
  if (s.first_saver < 0) {
    s.first_saver = op;
    s.what = what;
    s.why = why;
  }
}

void Graph::flops(double f) {
  if (rec_ && !layers_.empty()) layers_.back().flops += f;
}

void Graph::forward_extra(uint64_t bytes) {
  if (!rec_ || ops_.empty() || bytes == 0) return;
  Storage s;
  s.bytes = bytes;
  s.layer = static_cast<int32_t>(layers_.size()) - 1;
  s.made = s.last_read = static_cast<uint32_t>(ops_.size() - 1);
  st_.push_back(s);
}

void Graph::backward_extra(uint64_t bytes) {
  if (!ops_.empty()) ops_.back().extra += bytes;
}

}  // namespace net
}  // namespace trainmem
