// A recorded network reduced to chain layers (graph.hpp): each layer's saved tensors, its
// forward transients (storages alive but not saved, between the making of its saved tensors)
// and its backward transients (the gradients alive while each op's backward runs, walked in
// reverse over the whole network), placed as the allocation trace replays them.
#include <algorithm>

#include "net/graph.hpp"
#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace net {

struct Graph::Reduced {
  std::vector<uint8_t> kept;                 // per storage: saved, or a layer's output
  std::vector<std::vector<uint32_t>> saved;  // per layer: its kept storages, output last
  std::vector<uint64_t> nonsaved;            // per op: bytes of unkept storages alive
  std::vector<uint32_t> end_op;              // per layer: one past its last op
  // backward: per op, the bytes alive while its backward runs (its layer's saved tensors and
  // every gradient), the highest index of its layer's list still alive, whether it ran
  std::vector<uint64_t> real;
  std::vector<int32_t> top;
  std::vector<uint8_t> ran;
};

namespace {
uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
}  // namespace

void Graph::reduce_layers(Reduced* r, activations::ModelActivations* out) const {
  const size_t nl = layers_.size();
  r->kept.assign(st_.size(), 0);
  for (size_t s = 1; s < st_.size(); ++s) r->kept[s] = st_[s].first_saver >= 0 && !st_[s].param;
  for (const Layer& L : layers_) {
    if (L.output) r->kept[vals_[L.output].storage] = 1;
    for (uint32_t c : L.carried) r->kept[vals_[c].storage] = 1;
  }
  r->saved.assign(nl, {});
  out->input_bytes = 0;
  for (size_t s = 1; s < st_.size(); ++s) {
    if (st_[s].batch) out->input_bytes = checked_add(out->input_bytes, st_[s].bytes, "microBatch");
    if (r->kept[s] && st_[s].layer >= 0) r->saved[st_[s].layer].push_back(static_cast<uint32_t>(s));
  }
  r->end_op.assign(nl, static_cast<uint32_t>(ops_.size()));
  for (size_t L = 0; L + 1 < nl; ++L) r->end_op[L] = layers_[L + 1].first_op;
  out->layers.assign(nl, {});
  for (size_t L = 0; L < nl; ++L) {
    auto& S = r->saved[L];
    if (!layers_[L].output || st_[vals_[layers_[L].output].storage].layer != int32_t(L))
      fail(code::kInternal, "model",
           Message{"error.internal.layerOutput", {{"layer", layers_[L].name}}});
    const uint32_t o = vals_[layers_[L].output].storage;
    S.erase(std::find(S.begin(), S.end(), o));
    S.push_back(o);
    activations::LayerActivations& l = out->layers[L];
    l.name = layers_[L].name;
    for (uint32_t s : S) {
      l.tensors.push_back(st_[s].bytes);
      l.saved_bytes = checked_add(l.saved_bytes, st_[s].bytes, "microBatch");
      if (s_.detail) l.saved.push_back({st_[s].what, st_[s].bytes, st_[s].why});
    }
    if (s_.detail) l.saved.back() = {"layer output", st_[o].bytes, "read by the next layer"};
    l.output_bytes = out_bytes_of(L);
    l.forward_flops = std::max(1.0, layers_[L].flops);
    l.tokens = layers_[L].tokens;
  }
  // unkept storages alive at each op: made .. last read
  std::vector<int64_t> diff(ops_.size() + 1, 0);
  for (size_t s = 1; s < st_.size(); ++s) {
    if (r->kept[s] || st_[s].batch || st_[s].param || st_[s].layer < 0) continue;
    diff[st_[s].made] += static_cast<int64_t>(st_[s].bytes);
    diff[st_[s].last_read + 1] -= static_cast<int64_t>(st_[s].bytes);
  }
  r->nonsaved.assign(ops_.size(), 0);
  int64_t run = 0;
  for (size_t t = 0; t < ops_.size(); ++t) r->nonsaved[t] = static_cast<uint64_t>(run += diff[t]);
}

void Graph::forward_temps(const Reduced& r, size_t L, activations::LayerActivations* l) const {
  const auto& S = r.saved[L];
  const uint32_t a = layers_[L].first_op, b = r.end_op[L];
  int64_t prev = static_cast<int64_t>(a) - 1;
  // the allocation trace makes tensor k with group k live: the group must cover both the
  // transients alive at k's making and those alive earlier in its interval, less k itself
  for (size_t k = 0; k < S.size(); ++k) {
    const uint32_t m = st_[S[k]].made;
    uint64_t best = r.nonsaved[m];
    for (int64_t t = prev + 1; t < static_cast<int64_t>(m); ++t)
      best = std::max(best, sub0(r.nonsaved[t], st_[S[k]].bytes));
    if (best) l->forward_temps.push_back({static_cast<uint32_t>(k), 1, best});
    prev = std::max<int64_t>(prev, m);
  }
  uint64_t tail = 0;
  for (int64_t t = prev + 1; t < static_cast<int64_t>(b); ++t) tail = std::max(tail, r.nonsaved[t]);
  if (tail) l->forward_temps.push_back({static_cast<uint32_t>(S.size()), 1, tail});
  // the placement simulator's form: the highest excess over the layer's saved bytes
  uint64_t made = 0, worst = 0;
  size_t k = 0;
  std::vector<uint32_t> order(S.begin(), S.end());
  std::sort(order.begin(), order.end());
  for (uint32_t t = a; t < b; ++t) {
    while (k < order.size() && st_[order[k]].made <= t) made += st_[order[k++]].bytes;
    worst = std::max(worst, made + r.nonsaved[t]);
  }
  l->forward_temp_bytes = sub0(worst, l->saved_bytes);
}

void Graph::backward_walk(Reduced* r) const {
  const size_t n_ops = ops_.size();
  r->real.assign(n_ops, 0);
  r->top.assign(n_ops, -1);
  r->ran.assign(n_ops, 0);
  std::vector<std::vector<uint32_t>> freed_by(n_ops);
  std::vector<uint64_t> layer_alive(layers_.size(), 0);
  std::vector<uint8_t> alive(st_.size(), 0);
  for (size_t L = 0; L < layers_.size(); ++L)
    for (uint32_t s : r->saved[L]) {
      alive[s] = 1;
      layer_alive[L] += st_[s].bytes;
      if (st_[s].first_saver >= 0) freed_by[st_[s].first_saver].push_back(s);
    }
  std::vector<int64_t> slot(vals_.size(), -1);
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> refs;
  uint64_t live = 0;
  auto block = [&](uint64_t b) {
    bytes.push_back(b);
    refs.push_back(1);
    live += b;
    return static_cast<int64_t>(bytes.size() - 1);
  };
  const uint32_t loss = layers_.back().output;
  slot[loss] = block(st_[vals_[loss].storage].bytes);
  for (size_t j = n_ops; j-- > 0;) {
    const Op& op = ops_[j];
    int64_t src = -1;
    for (uint32_t o : op.out)
      if (slot[o] >= 0 && src < 0) src = slot[o];
    if (src >= 0) {
      r->ran[j] = 1;
      uint64_t transient = 0;
      for (size_t q = 0; q < op.in.size(); ++q) {
        const uint32_t v = op.in[q];
        const Value& val = vals_[v];
        if (!val.grad || st_[val.storage].param || st_[val.storage].batch) continue;
        if (std::find(op.in.begin(), op.in.begin() + q, v) != op.in.begin() + q) continue;
        if (op.alias) {
          if (slot[v] < 0) {
            slot[v] = src;
            ++refs[src];
          }
          continue;
        }
        const uint64_t b = checked_mul(numel(V{v}), val.width, "microBatch");
        if (slot[v] < 0)
          slot[v] = block(b);
        else
          transient += b;  // accumulated into the existing gradient, then freed
      }
      const size_t L = static_cast<size_t>(std::max(op.layer, 0));
      r->real[j] = live + transient + op.extra + layer_alive[L];
      const auto& S = r->saved[L];
      for (size_t k = S.size(); k-- > 0;)
        if (alive[S[k]]) {
          r->top[j] = static_cast<int32_t>(k);
          break;
        }
      for (uint32_t o : op.out)
        if (slot[o] >= 0) {
          if (--refs[slot[o]] == 0) live -= bytes[slot[o]];
          slot[o] = -1;
        }
    }
    for (uint32_t s : freed_by[j]) {
      alive[s] = 0;
      if (st_[s].layer >= 0) layer_alive[st_[s].layer] -= st_[s].bytes;
    }
  }
}

uint64_t Graph::out_bytes_of(size_t L) const {
  uint64_t b = st_[vals_[layers_[L].output].storage].bytes;
  for (uint32_t c : layers_[L].carried) b += st_[vals_[c].storage].bytes;
  return b;
}

void Graph::backward_temps(const Reduced& r, size_t L, activations::LayerActivations* l) const {
  const auto& S = r.saved[L];
  std::vector<uint64_t> prefix(S.size(), 0), temps(S.size(), 0);
  uint64_t sum = 0;
  for (size_t k = 0; k < S.size(); ++k) prefix[k] = sum += st_[S[k]].bytes;
  const uint64_t gout = l->output_bytes;
  const uint64_t din = L > 0 ? out_bytes_of(L - 1) : 0;
  uint64_t worst = din;
  for (uint32_t j = layers_[L].first_op; j < r.end_op[L]; ++j) {
    if (!r.ran[j]) continue;
    const size_t k = static_cast<size_t>(std::max(r.top[j], 0));
    temps[k] = std::max(temps[k], sub0(r.real[j], prefix[k] + din + gout));
    worst = std::max(worst, sub0(r.real[j], l->saved_bytes + gout));
  }
  for (size_t k = 0; k < S.size(); ++k)
    l->backward_temps.push_back({static_cast<uint32_t>(k), 1, temps[k]});
  l->backward_temp_bytes = worst;
}

void Graph::finish(activations::ModelActivations* out) {
  if (layers_.empty()) fail(code::kInternal, "model", Message{"error.internal.noLayers", {}});
  Reduced r;
  reduce_layers(&r, out);
  backward_walk(&r);
  out->total_saved_bytes = out->input_bytes;
  for (size_t L = 0; L < layers_.size(); ++L) {
    forward_temps(r, L, &out->layers[L]);
    backward_temps(r, L, &out->layers[L]);
    out->total_saved_bytes =
        checked_add(out->total_saved_bytes, out->layers[L].saved_bytes, "microBatch");
  }
  for (const auto& a : assumptions_) out->assumptions.push_back(a);
}

}  // namespace net
}  // namespace trainmem
