// LoRA / QLoRA activations vs real PyTorch: tests/fixtures/torch_lora.json was measured with
// torch 1.13 (CPU) by tools/measure_lora.py (saved_tensors_hooks, storages counted once, PEFT's
// lora.Linear and bitsandbytes' Linear4bit rebuilt from their source, CUDA autocast's fp32 ops
// applied). Not compared: 0-dim tensors (wrapped Python scalars, CPU-side on a CUDA run) and the
// 16-bit weight copies autocast makes (compared with kept_weight_casts instead).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

ModelDescription fixture_model(const json& c);  // test_activations.cpp

namespace {

const json& lora_fixture() {
  static const json fx = [] {
    std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_lora.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return fx;
}

// The module names PEFT's targets match in one block of each fixture model (HF's names).
std::vector<std::string> block_modules(const std::string& kind, const std::string& targets) {
  static const std::map<std::string, std::map<std::string, std::vector<std::string>>> names = {
      {"llama",
       {{"qv", {"self_attn.q_proj", "self_attn.v_proj"}},
        {"all",
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}},
        {"mlp", {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}}}},
      {"gpt2",
       {{"qv", {"attn.c_attn"}},
        {"all", {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}},
        {"mlp", {"mlp.c_fc", "mlp.c_proj"}}}},
      {"bert",
       {{"qv", {"attention.self.query", "attention.self.value"}},
        {"all",
         {"attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "intermediate.dense", "output.dense"}}}}};
  return names.at(kind).at(targets);
}

// A measured case as the core's request: the fixture's model, its shapes, dtypes and LoRA.
struct Case {
  ModelDescription model;
  activations::Settings s;
};

Case to_case(const json& fx, const json& c) {
  Case k;
  const std::string kind = c["kind"];
  k.model = fixture_model(json{{"kind", kind}, {"config", fx["configs"][kind]}});
  activations::Settings& s = k.s;
  s.micro_batch = c["microBatch"];
  s.seq_len = c["seqLen"];
  s.attention = activations::Attention::eager;
  s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
  const bool bf16 = c["dtype"] == "bf16", ac = c["autocast"];
  s.precision = ac ? activations::Precision::amp_bf16
                   : (bf16 ? activations::Precision::bf16 : activations::Precision::fp32);
  const json& l = c["lora"];
  s.lora.enabled = true;
  s.lora.rank = l["rank"];
  s.lora.dropout = l["dropout"];
  s.lora.qlora = l.value("qlora", false);
  s.lora.base_dtype = bf16 ? DType::bf16 : DType::fp32;
  s.lora.embeddings_require_grad = c.value("inputRequiresGrad", false);
  const std::vector<std::string> mods = block_modules(kind, l["targets"]);
  s.lora.adapted.assign(k.model.arch.layers + 2, {});
  for (uint64_t i = 0; i < k.model.arch.layers; ++i)
    for (const auto& m : mods) s.lora.adapted[i + 1].push_back("layers." + std::to_string(i) + "." + m);
  return k;
}

// A region's measured tensors (a "sameAs" region is the one it names).
const json& region_tensors(const json& c, const std::string& name) {
  const json& r = c["regions"][name];
  return r.contains("sameAs") ? region_tensors(c, r["sameAs"]) : r["tensors"];
}

bool is_scalar(const json& t) { return t[2].empty(); }
bool is_weight_cast(const json& t) {
  const std::string by = t[4];
  // a linear's mm / addmm keeps its weight as mat2; autocast's fp32 LayerNorm its weight and bias
  for (const char* f : {"MmBackward0.mat2", "AddmmBackward0.mat2", "NativeLayerNormBackward0.weight",
                        "NativeLayerNormBackward0.bias"})
    if (by.find(f) != std::string::npos) return true;
  return false;
}
bool is_adapter(const json& t) {
  const std::string m = t[3];
  return m.find("lora_A") != std::string::npos || m.find("lora_B") != std::string::npos;
}

// The activations of a region: every kept storage but scalars and weight casts, in order.
std::vector<uint64_t> measured(const json& c, const std::string& region) {
  std::vector<uint64_t> v;
  if (!c["regions"].contains(region)) return v;
  for (const auto& t : region_tensors(c, region))
    if (!is_scalar(t) && !is_weight_cast(t)) v.push_back(t[0]);
  return v;
}

// The 16-bit copies of frozen weights a region keeps.
std::vector<uint64_t> measured_casts(const json& c, const std::string& region) {
  std::vector<uint64_t> v;
  if (!c["regions"].contains(region)) return v;
  for (const auto& t : region_tensors(c, region))
    if (is_weight_cast(t) && !is_adapter(t)) v.push_back(t[0]);
  std::sort(v.begin(), v.end());
  return v;
}

uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

}  // namespace

// What a measured region keeps of its input (the previous layer's output, `in` bytes): the
// input itself, or a copy in another dtype (flags written by tools/measure_lora.py).
struct InputKept {
  uint64_t itself = 0;      // bytes of the input's storage, when kept
  uint64_t widest_copy = 0;  // the largest copy kept
};

InputKept input_kept(const json& c, const std::string& region) {
  InputKept k;
  if (!c["regions"].contains(region)) return k;
  for (const auto& t : region_tensors(c, region)) {
    if (t.size() < 6) continue;
    if (t[5] == "in") k.itself = t[0];
    if (t[5] == "in-copy") k.widest_copy = std::max<uint64_t>(k.widest_copy, t[0]);
  }
  return k;
}

TEST_CASE("LoRA activations: every layer's saved bytes as torch 1.13 keeps them",
          "[activations][lora]") {
  const json& fx = lora_fixture();
  int n = 0;
  for (const auto& c : fx["cases"]) {
    if (!c.contains("lora") || c["kind"] == "t5") continue;
    ++n;
    INFO(c["name"].get<std::string>());
    const Case k = to_case(fx, c);
    const activations::ModelActivations a = activations::transformer_activations(k.model, k.s);
    const size_t L = k.model.arch.layers;
    REQUIRE(a.layers.size() == L + 2);
    std::vector<std::string> regions = {"embed"};
    for (size_t i = 0; i < L; ++i) regions.push_back("block" + std::to_string(i));
    regions.push_back("head");
    for (size_t i = 0; i < a.layers.size(); ++i) {
      INFO(regions[i]);
      const activations::LayerActivations& l = a.layers[i];
      // The chain counts a layer's output with that layer (the head's: the loss scalar); the
      // measurement counts it in the next layer, where an op keeps it. A wider copy of the
      // input (16-bit -> fp32) stands for it: the chain counts the copy beyond the input. An
      // input nothing keeps is still counted with the previous layer (placement::Layer
      // semantics); keeps_input says so.
      const uint64_t in = i ? a.layers[i - 1].output_bytes : 0;
      const InputKept kept = input_kept(c, regions[i]);
      const uint64_t credit = !kept.itself && in && kept.widest_copy >= in ? in : 0;
      CHECK(l.saved_bytes + kept.itself + credit == sum(measured(c, regions[i])) + l.output_bytes);
      if (i) CHECK(l.keeps_input == (kept.itself > 0 || credit > 0));
      // the copies of frozen weights (autocast) the graph keeps
      std::vector<uint64_t> casts = l.kept_weight_casts;
      std::sort(casts.begin(), casts.end());
      CHECK(casts == measured_casts(c, regions[i]));
    }
  }
  CHECK(n >= 75);
}

TEST_CASE("lora debug", "[.dbg]") {
  const json& fx = lora_fixture();
  const char* want = std::getenv("CASE");
  for (const auto& c : fx["cases"]) {
    if (!want || c["name"] != want) continue;
    const Case k = to_case(fx, c);
    const activations::ModelActivations a = activations::transformer_activations(k.model, k.s);
    const char* regions[] = {"embed", "block0", "block1", "block2", "head"};
    for (size_t i = 0; i < a.layers.size(); ++i) {
      printf("== %s recipe %llu\n", regions[i], (unsigned long long)a.layers[i].saved_bytes);
      for (const auto& t : a.layers[i].saved) printf("   %9llu %s\n", (unsigned long long)t.bytes, t.name.c_str());
      printf("   measured:\n");
      if (c["regions"].contains(regions[i]))
        for (const auto& t : region_tensors(c, regions[i]))
          if (!is_scalar(t)) printf("   %9llu %s %s %s%s\n", (unsigned long long)t[0].get<uint64_t>(), t[1].get<std::string>().c_str(), t[3].get<std::string>().c_str(), t[4].get<std::string>().c_str(), is_weight_cast(t) ? " [cast]" : "");
    }
  }
}
