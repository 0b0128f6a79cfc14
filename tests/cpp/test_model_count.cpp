// A model given as a parameter count (model.params): peak memory and the planner answer with
// the persistent state as a lower bound; with layers, hidden and heads a Llama-style decoder of
// that size stands in (approximate).
#include <catch2/catch.hpp>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  REQUIRE(env["ok"] == false);
  return env["error"];
}

bool says(const json& res, const std::string& words) {
  for (const auto& a : res["assumptions"])
    if (a.get<std::string>().find(words) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a parameter count alone: the model states, stated as a lower bound", "[count]") {
  // 86,000,000 fp32 parameters under torch.optim.AdamW (torch/optim/adamw.py _init_group:
  // exp_avg and exp_avg_sq = zeros_like(p), fp32; `step` a 0-d tensor on the CPU unless
  // capturable or fused): 4 + 4 + 8 B/param on the GPU
  const json res = call("peakMemory", {{"model", {{"params", 86000000}}},
                                       {"microBatch", 4},
                                       {"optimizer", "adamw"},
                                       {"precision", "fp32"},
                                       {"gpu", "a100-40gb"}});
  const json& b = res["breakdown"];
  CHECK(b["weights"]["bytes"] == 344000000);
  CHECK(b["gradients"]["bytes"] == 344000000);
  CHECK(b["optimizerState"]["bytes"] == 688000000);
  CHECK(b["activations"]["bytes"] == 0);
  CHECK(res["lowerBound"] == true);
  CHECK(res["approximate"] == false);
  CHECK(says(res, "activations unknown"));
  CHECK(res["allocatedPeakBytes"].get<double>() >= 344e6 + 344e6 + 688e6);
  // a lower bound fits a 40 GB card; with activations unknown there is no largest micro-batch
  CHECK(res["fits"] == true);
  CHECK(res["maxMicroBatch"].is_null());
  // seqLen changes nothing without shapes; it may be given or left out
  json with_len = {{"model", {{"params", 86000000}}},
                   {"microBatch", 4},
                   {"seqLen", 512},
                   {"optimizer", "adamw"},
                   {"precision", "fp32"}};
  CHECK(call("peakMemory", with_len)["allocatedPeakBytes"] == res["allocatedPeakBytes"]);
}

TEST_CASE("a parameter count that cannot fit says so for certain", "[count]") {
  // 7e9 parameters, fp32 AdamW: 16 B/param = 112 GB of state alone > 80 GB
  const json res = call("peakMemory", {{"model", {{"params", 7000000000LL}}},
                                       {"microBatch", 1},
                                       {"optimizer", "adamw"},
                                       {"precision", "fp32"},
                                       {"gpu", "h100-80gb"}});
  CHECK(res["fits"] == false);
  CHECK(res["lowerBound"] == true);
}

TEST_CASE("the planner answers a parameter count", "[count]") {
  const json res = call("accumulation", {{"model", {{"params", 86000000}}},
                                         {"targetGlobalBatch", 64},
                                         {"optimizer", "adamw"},
                                         {"precision", "fp32"},
                                         {"gpu", "a100-40gb"}});
  INFO(res.dump().substr(0, 2000));
  CHECK(res["plans"].size() >= 1);
  CHECK(res["lowerBound"] == true);
  // 86e6 x 16 B = 1.376 GB of state: a 40 GB card holds it at any of the plans' micro-batches
  CHECK(res["recommended"]["microBatch"].get<double>() >= 1);
}

TEST_CASE("a count with Llama-2-7B's shape gives Llama-2-7B's activations", "[count]") {
  // Llama-2-7B (config.json of meta-llama/Llama-2-7b-hf): 32 layers, hidden 4096, 32 heads,
  // intermediate 11008, vocab 32000; 6,738,415,616 parameters (the model card's count)
  const json common = {{"microBatch", 1},
                       {"seqLen", 2048},
                       {"optimizer", "adamw"},
                       {"precision", "amp-bf16"},
                       {"attention", "eager"}};
  json approx = common;
  approx["model"] = {{"params", 6738415616LL},
                     {"layers", 32},
                     {"hidden", 4096},
                     {"heads", 32},
                     {"intermediate", 11008}};
  json preset = common;
  preset["model"] = {{"preset", "llama-2-7b"}};
  const json a = call("peakMemory", approx), p = call("peakMemory", preset);
  CHECK(a["approximate"] == true);
  CHECK(a["lowerBound"] == false);
  CHECK(a["trainableParams"] == 6738415616LL);
  CHECK(a["activationsPerLayer"]["derivedBytes"] == p["activationsPerLayer"]["derivedBytes"]);
  // the vocabulary derived from the count: (6,738,415,616 - 32 x 202,375,168) / (2 x 4096)
  // = 32,000 (embedding and untied head); the whole step then matches within 1 %
  CHECK(a["allocatedPeakBytes"].get<double>() ==
        Approx(p["allocatedPeakBytes"].get<double>()).epsilon(0.01));
  CHECK(says(a, "Llama-style decoder of that size"));
}

TEST_CASE("a parameter count's shape hints are checked by name", "[count]") {
  const json base = {
      {"microBatch", 1}, {"seqLen", 128}, {"optimizer", "sgd"}, {"precision", "fp32"}};
  json r = base;
  r["model"] = {{"params", 1000000}, {"layers", 4}, {"hidden", 256}};
  CHECK(error_of("peakMemory", r)["field"] == "model.heads");
  r["model"] = {{"params", 100000000}, {"layers", 4}, {"hidden", 256}, {"heads", 3}};
  CHECK(error_of("peakMemory", r)["field"] == "model.heads");
  r["model"] = {{"params", 1000}, {"layers", 4}, {"hidden", 256}, {"heads", 4}};
  CHECK(error_of("peakMemory", r)["field"] == "model.params");
  r["model"] = {{"preset", "gpt2"}, {"layers", 4}};
  CHECK(error_of("peakMemory", r)["field"] == "model.layers");
  // LoRA needs module names: a bare count refuses it by field
  r = base;
  r["model"] = {{"params", 1000000}};
  r["lora"] = {{"rank", 8}};
  CHECK(error_of("peakMemory", r)["field"] == "lora");
}
