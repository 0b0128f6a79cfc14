// LoRA targets matched on the tensor list as PEFT matches them. Sources (huggingface/peft):
// src/peft/tuners/tuners_utils.py @831fd03 (check_target_module_exists: a module is adapted
// when its name equals a target or ends with "." + target; _maybe_include_all_linear_layers:
// "all-linear" = every nn.Linear / Conv1D except the output embedding), src/peft/utils/
// constants.py @00073fe (INCLUDE_LINEAR_LAYERS_SHORTHAND = "all-linear";
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: the defaults below).
#include "peak/peak_lora.hpp"
#include "util/checked.hpp"

#include <algorithm>

#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {
namespace {

// PEFT's default target_modules for the model types trainmem builds (constants.py).
const std::vector<std::string>* peft_default(const std::string& type) {
  static const std::vector<std::string> qv = {"q", "v"}, c_attn = {"c_attn"},
                                        qkv = {"query_key_value"}, bert = {"query", "value"},
                                        proj = {"q_proj", "v_proj"};
  if (type == "t5" || type == "mt5") return &qv;
  if (type == "gpt2") return &c_attn;
  if (type == "gpt_neox") return &qkv;
  if (type == "bert") return &bert;
  for (const char* t :
       {"llama", "mistral", "mixtral", "gemma", "gemma2", "gemma3_text", "qwen2", "qwen3"})
    if (type == t) return &proj;
  return nullptr;
}

std::string module_of(const std::string& tensor) {
  const size_t dot = tensor.rfind('.');
  return dot == std::string::npos ? std::string() : tensor.substr(0, dot);
}

bool ends_with_segment(const std::string& name, const std::string& target) {
  if (name == target) return true;
  const size_t n = name.size(), t = target.size();
  return n > t && name.compare(n - t, t, target) == 0 && name[n - t - 1] == '.';
}

// PEFT's rule, plus trainmem's "experts": every linear inside the routed experts (PEFT reaches
// them with a regex such as r".*\.experts\.\d+\..*"; shared_experts are not included).
bool matches(const std::string& module, const std::string& target) {
  if (target == "experts") return module.find(".experts.") != std::string::npos;
  return ends_with_segment(module, target);
}

// Some module whose name ends with the target, linear or not ("intermediate" in BERT).
bool names_a_module(const ModelDescription& m, const std::string& target) {
  for (const auto& t : m.tensors) {
    std::string mod = module_of(t.name);
    while (!mod.empty()) {
      if (ends_with_segment(mod, target)) return true;
      mod = module_of(mod);
    }
  }
  return false;
}

// The chain layer (0 embeddings, 1..blocks, last head) a tensor's adapter belongs to; the
// decoder's blocks of an encoder-decoder follow the encoder's (finalize_tensors has already
// numbered them after the encoder's).
size_t chain_slot(const TensorSpec& t, size_t layers, bool seen) {
  const size_t blocks = layers >= 2 ? layers - 2 : 0;
  if (t.block >= 0 && static_cast<size_t>(t.block) < blocks)
    return static_cast<size_t>(t.block) + 1;
  return seen ? layers - 1 : 0;
}

std::pair<uint64_t, uint64_t> in_out(const TensorSpec& t) {
  // nn.Linear weight [out, in]; Conv1D weight [in, out] (PEFT fan_in_fan_out)
  if (t.linear == LinearKind::conv1d) return {t.shape[0], t.shape[1]};
  return {t.shape[1], t.shape[0]};
}

std::vector<std::string> resolve_targets(const ModelDescription& m, const Lora& l) {
  if (!l.target_modules.empty()) return l.target_modules;
  const std::vector<std::string>* d = peft_default(m.arch.model_type);
  if (!d)
    fail(code::kMissingField, "lora.targetModules",
         Message{"error.lora.noDefaultTargets", {{"modelType", m.arch.model_type.substr(0, 64)}}});
  return *d;
}

std::string linear_names(const ModelDescription& m) {
  std::vector<std::string> names;
  for (const auto& t : m.tensors) {
    if (t.linear == LinearKind::none) continue;
    const std::string mod = module_of(t.name);
    std::string base = mod.substr(mod.rfind('.') == std::string::npos ? 0 : mod.rfind('.') + 1);
    if (std::find(names.begin(), names.end(), base) == names.end()) names.push_back(base);
    if (names.size() >= 16) break;
  }
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
  return s;
}

void check_unmatched(const ModelDescription& m, const std::vector<std::string>& targets,
                     const std::vector<bool>& hit, LoraPlan* p) {
  for (size_t i = 0; i < targets.size(); ++i) {
    if (hit[i] || targets[i] == "all-linear") continue;
    if (targets[i] != "experts" && names_a_module(m, targets[i]))
      fail(code::kUnsupported, "lora.targetModules",
           Message{"error.lora.notLinear",
                   {{"target", targets[i].substr(0, 64)}, {"layers", linear_names(m)}}});
    p->assumptions.push_back(
        Text("peak.assume.lora.unmatched", {{"target", targets[i].substr(0, 64)}}));
  }
  if (p->modules == 0)
    fail(code::kInconsistent, "lora.targetModules",
         Message{"error.loraTargets.none", {{"layers", linear_names(m)}}});
}

}  // namespace

LoraPlan plan_lora(const ModelDescription& m, const Lora& l, size_t chain_layers) {
  LoraPlan p;
  p.per_layer.assign(chain_layers, {});
  p.per_layer_modules.assign(chain_layers, {});
  p.targets = resolve_targets(m, l);
  const bool all = std::find(p.targets.begin(), p.targets.end(), "all-linear") != p.targets.end();
  std::vector<bool> hit(p.targets.size(), false);
  bool seen_block = false;
  for (const auto& t : m.tensors) {
    seen_block = seen_block || t.block >= 0;
    if (t.linear == LinearKind::none || t.shape.size() != 2) continue;
    const std::string mod = module_of(t.name);
    bool adapt = all && !t.output_head;  // all-linear leaves the output embedding out
    for (size_t i = 0; i < p.targets.size(); ++i)
      if (matches(mod, p.targets[i])) adapt = hit[i] = true;
    if (!adapt) continue;
    const auto io = in_out(t);
    const size_t slot = chain_slot(t, chain_layers, seen_block);
    p.per_layer[slot].push_back(io);
    p.per_layer_modules[slot].push_back(mod);
    p.params =
        checked_add(p.params, checked_mul(l.rank, io.first + io.second, "lora.rank"), "lora.rank");
    ++p.modules;
  }
  check_unmatched(m, p.targets, hit, &p);
  return p;
}

}  // namespace peak
}  // namespace trainmem
