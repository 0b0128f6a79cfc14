// The parameter tensors per chain layer (peak_params.hpp). A tensor of block b belongs to chain
// layer b + 1 (TensorSpec.block, set by finalize_tensors or by the model's recipe); tensors
// before the first block belong to the embeddings, those after the last to the head.
#include "peak/peak_params.hpp"

#include <algorithm>
#include <string>

namespace trainmem {
namespace peak {
namespace {

// `explicit_head`: the model's own tensors name the head (a traced model: block = chain layer
// - 1, so the head's tensors have block = layers - 2), whether or not a block holds any tensor.
size_t slot_of(const TensorSpec& t, size_t layers, bool seen_block, bool explicit_head) {
  const size_t blocks = layers >= 2 ? layers - 2 : 0;
  if (t.block >= 0 && static_cast<size_t>(t.block) < blocks)
    return static_cast<size_t>(t.block) + 1;
  if (explicit_head && layers >= 2 && t.block == static_cast<int64_t>(blocks)) return layers - 1;
  if (t.embedding || !seen_block) return 0;
  return layers - 1;
}

void add(ParamsByLayer* p, size_t layer, const TensorSpec* t, bool in_block) {
  ParamRef r;
  r.spec = t;
  r.numel = t->numel();
  r.matrix = t->shape.size() >= 2 && !t->embedding;
  r.in_block = in_block;
  p->layers[layer].push_back(r);
}

void from_tensors(const ModelDescription& m, ParamsByLayer* p) {
  const size_t nl = p->layers.size();
  const size_t blocks = nl >= 2 ? nl - 2 : 0;
  bool seen_block = false;
  const bool traced = m.trace != nullptr;
  std::vector<std::pair<const TensorSpec*, size_t>> slot_by_name;
  for (const auto& t : m.tensors) {
    const size_t slot =
        slot_of(t, nl, seen_block || (t.block >= 0 && size_t(t.block) < blocks), traced);
    if (t.block >= 0 && static_cast<size_t>(t.block) < blocks) seen_block = true;
    if (!t.tied_to.empty()) {
      for (const auto& o : slot_by_name)
        if (o.first->name == t.tied_to && slot > o.second && o.first->trainable) {
          ParamRef owner;
          owner.spec = o.first;
          owner.numel = o.first->numel();
          owner.matrix = true;  // the user multiplies by it (an output head)
          p->tied.push_back({slot, o.second, owner});
        }
      continue;
    }
    slot_by_name.push_back({&t, slot});
    add(p, slot, &t, slot > 0 && slot + 1 < nl);
  }
}

// A parameter count only: one tensor per layer, the embeddings vocab x hidden (the head as
// much again unless tied), the rest spread evenly over the blocks.
void from_count(const ModelDescription& m, ParamsByLayer* p) {
  const size_t nl = p->layers.size();
  const size_t blocks = nl >= 2 ? nl - 2 : 0;
  const Architecture& a = m.arch;
  const uint64_t emb = std::min(a.vocab * a.hidden, m.params);
  const uint64_t head = a.tied_embeddings ? 0 : emb;
  const uint64_t rest = m.params > emb + head ? m.params - emb - head : 0;
  auto own = [&](const char* name, uint64_t n, bool embedding) {
    p->owned.push_back(TensorSpec{name, {n}});
    p->owned.back().embedding = embedding;
    return &p->owned.back();
  };
  if (emb) add(p, 0, own("embeddings", emb, true), false);
  for (size_t i = 1; i + 1 < nl; ++i) {
    TensorSpec* t = own("block", rest / blocks, false);
    t->linear = LinearKind::linear;
    add(p, i, t, true);
    p->layers[i].back().matrix = true;
  }
  const uint64_t last = m.params - emb - (blocks ? rest / blocks * blocks : 0);
  if (last) {
    TensorSpec* t = own("head", last, false);
    t->linear = LinearKind::linear;
    add(p, nl - 1, t, false);
    p->layers[nl - 1].back().matrix = true;
  }
  p->largest_tensor =
      std::max({emb, a.hidden * std::max<uint64_t>(a.intermediate, 4 * a.hidden), uint64_t(1)});
}

void from_mlp(const activations::MlpSpec& mlp, ParamsByLayer* p) {
  for (size_t i = 0; i < p->layers.size() && i + 1 < mlp.sizes.size(); ++i) {
    p->owned.push_back(TensorSpec{"weight", {mlp.sizes[i + 1], mlp.sizes[i]}});
    p->owned.back().linear = LinearKind::linear;
    add(p, i, &p->owned.back(), true);
    if (mlp.bias) {
      p->owned.push_back(TensorSpec{"bias", {mlp.sizes[i + 1]}});
      add(p, i, &p->owned.back(), true);
    }
  }
}

// Expert parallelism: a rank holds num_experts / expertParallel of each MoE layer's routed
// experts, each split over expertTensorParallel instead of tensorParallel (Megatron-Core
// moe/experts.py: expert parameters sharded over the expert-model-parallel group). Every
// routed expert's tensor keeps that share (the mean over the experts: one expert's tensors
// are the same size); the router and the shared experts stay whole. The later / t of every
// parameter is undone for the experts: numel x t / (ep x etp).
void shard_experts(const Request& rq, ParamsByLayer* p) {
  const uint64_t ep = rq.parallelism.expert.size * rq.parallelism.expert.tensor,
                 t = rq.parallelism.tensor;
  for (auto& layer : p->layers)
    for (auto& r : layer)
      if (r.spec && routed_expert(r.spec->name)) {
        r.numel = r.numel / ep * t;
        r.expert = true;
      }
}

}  // namespace

bool routed_expert(const std::string& name) {
  return name.find(".experts.") != std::string::npos &&
         name.find("shared_experts") == std::string::npos;
}

ParamsByLayer params_by_layer(const Request& rq, const activations::ModelActivations& acts) {
  ParamsByLayer p;
  const size_t nl = acts.layers.size();
  p.layers.assign(nl, {});
  if (rq.model.is_mlp)
    from_mlp(rq.model.mlp, &p);
  else if (rq.model.description().has_tensors())
    from_tensors(rq.model.description(), &p);
  else
    from_count(rq.model.description(), &p);
  if (rq.parallelism.expert.size > 1 || rq.parallelism.expert.tensor > 1) shard_experts(rq, &p);
  p.per_layer.assign(nl, 0);
  for (size_t i = 0; i < nl; ++i)
    for (const auto& r : p.layers[i]) {
      p.per_layer[i] += r.numel;
      if (rq.model.is_mlp || rq.model.description().has_tensors())
        p.largest_tensor = std::max(p.largest_tensor, r.numel);
      if (r.in_block && r.spec->linear != LinearKind::none) p.block_linear += r.numel;
    }
  for (uint64_t x : p.per_layer) {
    p.largest_layer = std::max(p.largest_layer, x);
    p.total += x;
  }
  return p;
}

}  // namespace peak
}  // namespace trainmem
