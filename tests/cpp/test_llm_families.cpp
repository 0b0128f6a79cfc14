// The decoder families with their own recipes (GPT-J, Phi, Falcon, StarCoder2, OLMo, OLMo 2,
// Gemma) and torch.nn.Transformer: saved-for-backward bytes against blocks rebuilt from
// transformers' eager modules and measured on torch 1.13 (tools/measure_llm_families.py ->
// tests/fixtures/torch_llm_families.json), nn.Transformer's parameter list against PyTorch's.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "io/device_presets.hpp"
#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"
#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

std::string tensors_hash(const ModelDescription& m) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const auto& t : m.tensors) {
    std::string line = t.name + ":";
    for (size_t i = 0; i < t.shape.size(); ++i) line += (i ? "," : "") + std::to_string(t.shape[i]);
    for (unsigned char c : line + ";") {
      h ^= c;
      h *= 0x100000001B3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

ModelDescription build(const json& c) {
  json config = c["config"];
  config["model_type"] = c["kind"];
  return model_from_config(Obj(config, "model.config"), "");
}

}  // namespace

TEST_CASE("LLM families: saved bytes match torch 1.13 within 1 %", "[llm-families]") {
  const json fx = load_fixture("torch_llm_families.json");
  REQUIRE(fx["cases"].size() >= 16);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const ModelDescription m = build(c);
    CHECK(m.params == c["params"].get<uint64_t>());
    activations::Settings s;
    s.micro_batch = c["microBatch"];
    s.seq_len = c["seqLen"];
    s.target_len = c.value("targetLen", 0);
    s.attention = activations::Attention::eager;
    if (c.value("dtype", "") == "bf16")
      s.precision = activations::Precision::bf16;  // loaded in bf16
    s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
    const activations::ModelActivations a = activations::transformer_activations(m, s);
    const double measured = c["savedBytes"].get<double>();
    const double predicted = static_cast<double>(a.total_saved_bytes);
    std::string layers;
    for (const auto& l : a.layers) layers += l.name + " " + std::to_string(l.saved_bytes) + "; ";
    INFO("predicted by layer " << layers);
    INFO("by region " << c["savedBytesByRegion"].dump());
    INFO("measured " << measured << " predicted " << predicted);
    CHECK(std::fabs(predicted - measured) <= 0.01 * measured);
  }
}

TEST_CASE("LLM families: nn.Transformer's parameters equal PyTorch's", "[llm-families]") {
  const json fx = load_fixture("torch_llm_families.json");
  REQUIRE(fx["tensorLists"].size() == 2);
  for (const auto& c : fx["tensorLists"]) {
    INFO(c["name"].get<std::string>());
    const ModelDescription m = model_from_config(Obj(c["config"], "model.config"), "");
    CHECK(m.params == c["params"].get<uint64_t>());
    CHECK(m.tensors.size() == c["tensors"].get<size_t>());
    CHECK(tensors_hash(m) == c["tensorsHash"].get<std::string>());
    CHECK(m.module_count == c["modules"].get<uint64_t>());
    CHECK(m.module_name_bytes == c["moduleNameBytes"].get<uint64_t>());
  }
}

TEST_CASE("LLM families: step peaks match torch 1.13 within 5 %", "[llm-families]") {
  // A whole training step on runtime pytorch-cpu (forward with HF's loss, backward, AdamW's
  // for-loop step, zero_grad(set_to_none=True)), fp32, eager attention.
  const json fx = load_fixture("torch_llm_families.json");
  int checked = 0;
  for (const auto& c : fx["cases"]) {
    if (!c.contains("peakBytes")) continue;
    INFO(c["name"].get<std::string>());
    json config = c["config"];
    config["model_type"] = c["kind"];
    json req = {{"model", {{"config", config}}}, {"microBatch", c["microBatch"]},
                {"seqLen", c["seqLen"]},         {"runtime", "pytorch-cpu"},
                {"attention", "eager"},          {"optimizer", "adamw"},
                {"zeroGradSetToNone", true}};  // the script's zero_grad(set_to_none=True)
    if (c.contains("targetLen")) req["targetLen"] = c["targetLen"];
    const json r = json::parse(trainmem::call("peakMemory", req.dump()));
    INFO(r.dump().substr(0, 600));
    REQUIRE(r["ok"] == true);
    const double measured = c["peakBytes"].get<double>();
    const double predicted = r["result"]["allocatedPeakBytes"].get<double>();
    INFO("measured " << measured << " predicted " << predicted << " at " << r["result"]["peakPhase"]
                     << " (measured " << c["peakPhase"] << ")");
    CHECK(std::fabs(predicted - measured) <= 0.05 * measured);
    ++checked;
  }
  CHECK(checked >= 9);
}
