// A model description's derived facts: element counts, each tensor's block and role, and the
// module names torch.save's pickle holds (io/model_json.cpp reads the `model` field into it).
#include "trainmem/model.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "util/checked.hpp"  // checked_mul, checked_add

namespace trainmem {

uint64_t TensorSpec::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = checked_mul(n, d, name);
  return n;
}
uint64_t BufferSpec::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = checked_mul(n, d, name);
  return n;
}

namespace {

// Block index of a parameter name ("h.3.attn", "layers.3.", "layer.3.", "block.3."); -1 = outside.
// The leftmost match wins: T5's "encoder.block.2.layer.0.SelfAttention.q" is block 2 (its
// "layer.0" is the sub-layer inside the block).
int64_t block_index(const std::string& name) {
  static const char* keys[] = {".h.", "layers.", "layer.", "h.", "block."};
  size_t best_pos = std::string::npos;
  int64_t best = -1;
  for (const char* k : keys) {
    size_t p = name.find(k);
    while (p != std::string::npos && p < best_pos) {
      if (p == 0 || name[p - 1] == '.' || k[0] == '.') {
        const size_t q = p + std::char_traits<char>::length(k);
        size_t e = q;
        int64_t v = 0;
        while (e < name.size() && name[e] >= '0' && name[e] <= '9' && e - q < 9)
          v = v * 10 + (name[e++] - '0');
        if (e > q && e < name.size() && name[e] == '.') {
          best_pos = p;
          best = v;
          break;
        }
      }
      p = name.find(k, p + 1);
    }
  }
  return best;
}

bool is_embedding(const std::string& name) {
  return name.find("emb") != std::string::npos || name.find("wte") != std::string::npos ||
         name.find("wpe") != std::string::npos;
}

}  // namespace

void finalize_tensors(ModelDescription* m) {
  uint64_t total = 0, trainable = 0;
  int64_t encoder_blocks = 0;  // encoder-decoder models: decoder blocks follow the encoder's
  for (auto& t : m->tensors) {
    if (t.block_set) continue;
    t.block = block_index(t.name);
    t.embedding = is_embedding(t.name);
    if (t.block >= 0 && t.name.rfind("encoder.", 0) == 0)
      encoder_blocks = std::max(encoder_blocks, t.block + 1);
  }
  if (encoder_blocks > 0)
    for (auto& t : m->tensors)
      if (!t.block_set && t.block >= 0 && t.name.rfind("decoder.", 0) == 0)
        t.block += encoder_blocks;
  for (const auto& t : m->tensors) {
    if (!t.tied_to.empty()) continue;  // shares storage: counted once
    const uint64_t n = t.numel();
    total = checked_add(total, n, "model.tensors");
    if (t.trainable) trainable = checked_add(trainable, n, "model.tensors");
  }
  m->params = total;
  m->trainable_params = trainable;
  if (m->module_count == 0) {
    // Modules inferred from tensor-name prefixes ("a.b.c.weight" -> "", "a", "a.b", "a.b.c").
    std::set<std::string> mods{""};
    auto add_prefixes = [&](const std::string& name) {
      for (size_t i = 0; i < name.size(); ++i)
        if (name[i] == '.') mods.insert(name.substr(0, i));
    };
    for (const auto& t : m->tensors) add_prefixes(t.name);
    for (const auto& b : m->buffers) add_prefixes(b.name);
    m->module_count = mods.size();
    for (const auto& s : mods) m->module_name_bytes += s.size();
    m->modules_inferred = true;
  }
}

}  // namespace trainmem
