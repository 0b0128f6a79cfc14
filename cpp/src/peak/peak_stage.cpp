// One pipeline rank's share of the step (peak_stage.hpp): the chain layers of its chunks keep
// their activations and parameters, the others hold nothing but the activation this rank
// receives from them.
#include "peak/peak_stage.hpp"

#include <algorithm>

namespace trainmem {
namespace peak {
namespace {

std::vector<bool> stage_mask(const Request& rq, size_t nl) {
  std::vector<bool> in(nl, false);
  for (const auto& chunk : rq.parallelism.stage.chunks)
    for (uint32_t i : chunk)
      if (i < nl) in[i] = true;
  return in;
}

// A layer of another rank: it computes nothing here. The one before a chunk of this rank stands
// for the activation received from the previous stage (a p2p recv buffer: Megatron-Core
// p2p_communication.py recv_forward allocates it with the activation's shape), kept while the
// chunk's first layer saves it.
void empty_layer(activations::LayerActivations* la, bool feeds_stage) {
  const uint64_t received = feeds_stage ? la->output_bytes : 0;
  la->tensors.clear();
  if (received) la->tensors.push_back(received);
  la->saved_bytes = received;
  la->output_bytes = received;
  la->attention_core_bytes = 0;
  la->forward_temp_bytes = 0;
  la->backward_temp_bytes = 0;
  la->forward_temps.clear();
  la->backward_temps.clear();
  la->forward_flops = 0;
  la->params = 0;
  la->kept_weight_casts.clear();
  la->skips.clear();
  la->input_saved = false;
}

}  // namespace

void restrict_to_stage(const Request& rq, Step* s) {
  if (!rq.parallelism.stage.enabled) return;
  const size_t nl = s->nl;
  const std::vector<bool> in = stage_mask(rq, nl);
  for (size_t i = 0; i < nl; ++i)
    if (!in[i]) empty_layer(&s->acts.layers[i], i + 1 < nl && in[i + 1]);
  // the model's outputs (and the loss) live on the rank holding the head
  if (!in[nl - 1]) s->acts.held.clear();
  // tie_word_embeddings across stages: the last stage keeps its own copy of the embedding
  // matrix for the head, whose gradient is all-reduced with the first stage's (Megatron-Core
  // LanguageModule.setup_embeddings_and_output_layer, shared_embedding_or_output_weight)
  std::vector<TiedUse> tied;
  for (const TiedUse& u : s->params.tied) {
    const bool owner = in[u.owner_layer], user = in[u.user_layer];
    if (owner && user) tied.push_back(u);
    if (user && !owner) s->params.layers[u.user_layer].push_back(u.owner);
  }
  s->params.tied = tied;
  uint64_t total = 0;
  for (size_t i = 0; i < nl; ++i) {
    if (!in[i]) s->params.layers[i].clear();
    uint64_t n = 0;
    for (const ParamRef& p : s->params.layers[i]) n += p.numel;
    if (i < s->params.per_layer.size()) s->params.per_layer[i] = n;
    total += n;
  }
  s->params.total = total;
  s->P = total;
}

uint64_t stage_trainable(const Step& s) {
  uint64_t n = 0;
  for (const auto& layer : s.params.layers)
    for (const ParamRef& p : layer)
      if (p.spec && p.spec->trainable) n += p.numel;
  return n;
}

std::vector<uint64_t> resident_tensors(const Request& rq, const Step& s) {
  std::vector<uint64_t> out;
  const auto& chunks = rq.parallelism.stage.chunks;
  if (chunks.empty()) return out;
  const std::vector<bool> in = stage_mask(rq, s.nl);
  for (uint64_t j = 0; j < rq.parallelism.stage.resident_chunks; ++j)
    for (uint32_t i : chunks[j % chunks.size()]) {
      const auto& la = s.acts.layers[i];
      const std::string& what = i < s.plan.plan.size() ? s.plan.plan[i] : std::string("store");
      // a stored layer keeps its saved tensors, a checkpointed segment only its input
      // (placement.hpp PlanResult::plan), a layer inside a segment nothing
      if (what == "store") {
        out.insert(out.end(), la.tensors.begin(), la.tensors.end());
        if (la.tensors.empty() && la.saved_bytes) out.push_back(la.saved_bytes);
      } else if (what == "checkpoint" && i > 0) {
        out.push_back(s.acts.layers[i - 1].output_bytes);
      }
      // the chunk's received input (the layer before belongs to another rank)
      if (what == "store" && i > 0 && !in[i - 1]) out.push_back(s.acts.layers[i - 1].output_bytes);
    }
  out.erase(std::remove(out.begin(), out.end(), uint64_t{0}), out.end());
  return out;
}

}  // namespace peak
}  // namespace trainmem
