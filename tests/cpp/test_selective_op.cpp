// Op-level selective activation checkpointing (torch.utils.checkpoint
// create_selective_checkpoint_contexts; torchtitan selective_ac_option "op" and "<int>"):
// - pinned to tests/fixtures/torch_sac.json (tools/measure_sac.py: torch 1.13 CPU, the policy
//   emulated with a dispatch-mode cache and replay whose gradients equal the plain block's);
// - hand calculations of the kept bytes and the recompute FLOPs for a small SDPA config.
#include <catch2/catch.hpp>

#include <fstream>

#include "io/device_presets.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

// The hand-built Llama block of tools/tm_torch_models.py as an architecture.
ModelDescription sac_fixture_model(const json& k) {
  ModelDescription m;
  m.source = "config";
  Architecture& a = m.arch;
  a.model_type = "llama";
  a.layers = 1;
  a.hidden = k["hidden_size"];
  a.heads = k["num_attention_heads"];
  a.kv_heads = k["num_key_value_heads"];
  a.intermediate = k["intermediate_size"];
  a.vocab = k["vocab_size"];
  a.activation = "silu";
  a.gated_mlp = true;
  a.norm = "rmsnorm";
  a.head_dim = a.hidden / a.heads;
  m.params = 1;
  return m;
}

json call(const char* fn, const json& req) { return json::parse(trainmem::call(fn, req.dump())); }
json run(const json& req) {
  const json env = call("peakMemory", req);
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

// A small Llama config for hand calculations: h 64, 4 heads of 16, i 128, V 128, 2 layers.
json small(json extra) {
  const json cfg = {{"model_type", "llama"},       {"hidden_size", 64},
                    {"num_attention_heads", 4},    {"num_key_value_heads", 4},
                    {"intermediate_size", 128},    {"num_hidden_layers", 2},
                    {"vocab_size", 128},           {"max_position_embeddings", 64},
                    {"rms_norm_eps", 1e-6},        {"hidden_act", "silu"},
                    {"tie_word_embeddings", false}};
  json r = {{"model", {{"config", cfg}}},  {"microBatch", 1},     {"seqLen", 8},
            {"precision", "bf16"},         {"attention", "sdpa"}, {"simulateAllocator", false},
            {"searchMaxMicroBatch", false}};
  for (auto it = extra.begin(); it != extra.end(); ++it) r[it.key()] = it.value();
  return r;
}

}  // namespace

TEST_CASE("selective-op: kept op outputs match torch 1.13 (emulated policies) within 0.1 %",
          "[sac]") {
  const json fx = load_fixture("torch_sac.json");
  REQUIRE(fx["cases"].size() >= 3);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    activations::Settings s;
    s.micro_batch = c["microBatch"];
    s.seq_len = c["seqLen"];
    s.precision =
        c["dtype"] == "bf16" ? activations::Precision::bf16 : activations::Precision::fp32;
    s.attention = activations::Attention::eager;  // torch 1.13 has no SDPA
    s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
    const activations::ModelActivations acts =
        activations::transformer_activations(sac_fixture_model(c["config"]), s);
    const activations::LayerActivations& block = acts.layers.at(1);
    // the ops a policy can name, in the measured order and sizes
    std::vector<std::pair<std::string, uint64_t>> measured, modelled;
    for (const auto& o : c["ops"]) {
      std::string op = o["op"];
      if (op == "_softmax") op = "softmax";
      if (op == "mm" || op == "bmm" || op == "softmax" || op == "silu")
        measured.push_back({op, o["bytes"].get<uint64_t>()});
    }
    for (const auto& o : block.op_outputs) modelled.push_back({o.op, o.bytes});
    CHECK(modelled == measured);
    for (auto it = c["policies"].begin(); it != c["policies"].end(); ++it) {
      INFO(it.key());
      const json& p = it.value();
      REQUIRE(p["gradientsMatch"] == true);  // the emulation reproduces the plain block
      // the recomputation re-creates everything autograd saves without checkpointing
      CHECK(p["recomputeSavedBytes"] == c["savedBytes"]);
      activations::SavePolicy policy;
      for (const auto& op : p["saveOps"])
        policy.ops.push_back(op == "_softmax" ? std::string("softmax") : op.get<std::string>());
      policy.every_other_mm = p["everyOtherMm"];
      const activations::SelectiveKeep k = activations::selective_keep(block, policy);
      CHECK(static_cast<double>(k.bytes) ==
            Approx(p["cachedBytes"].get<double>()).epsilon(0.001).margin(1));
      CHECK(k.tensors.size() == p["cachedTensors"].get<size_t>());
    }
  }
}

TEST_CASE("selective-op: torchtitan's op policy keeps q, v, SDPA, w1, w2 (hand calculation)",
          "[sac]") {
  // b 1, s 8 (T 8), h 64, 4 heads x 16, i 128, bf16 (2 B), SDPA. torchtitan keeps mm #1, #3,
  // #5, #7 of wq wk wv wo w1 w3 w2 and the SDPA outputs:
  //   wq 8*64*2 = 1024, wv 1024, SDPA out 8*64*2 + logsumexp 1*4*8*4 = 1152, w1 8*128*2 = 2048,
  //   w2 8*64*2 = 1024  -> 6272 B per block, 2 blocks: 12544 B more than full checkpointing.
  const json full = run(small({{"checkpointing", "full"}}));
  const json tt = run(small({{"checkpointing", "torchtitan-op"}}));
  CHECK(tt["storedActivationBytes"].get<double>() - full["storedActivationBytes"].get<double>() ==
        12544);
  // all of mm and sdpa: + wk 1024, wo 1024, w3 2048 per block
  const json all =
      run(small({{"checkpointing", {{"strategy", "selective-op"}, {"saveOps", {"mm", "sdpa"}}}}}));
  CHECK(all["storedActivationBytes"].get<double>() - full["storedActivationBytes"].get<double>() ==
        2 * (6272 + 4096));
  // the same list with torchtitan's every-second-mm rule is torchtitan's mode
  const json rule = run(small(
      {{"checkpointing",
        {{"strategy", "selective-op"}, {"saveOps", {"sdpa", "mm"}}, {"everyOtherMm", true}}}}));
  CHECK(rule["storedActivationBytes"] == tt["storedActivationBytes"]);

  // Recompute FLOPs. Block forward = 2T (h(2h + 2 kv d) + 3 h i) + 4 b s^2 q
  //   = 16 (64*256 + 3*64*128) + 4*64*64 = 671744; kept ops' FLOPs: wq 2*8*64*64 = 65536,
  //   wv 65536, SDPA 16384, w1 2*8*64*128 = 131072, w2 131072 -> 409600; recomputed per block
  //   262144. Whole forward = embeddings 2Th 1024 + 2 blocks + head 2ThV 131072 = 1475584;
  //   fraction = recompute / (forward + 2 forward).
  const double base = 3.0 * 1475584;
  CHECK(tt["recomputeFraction"].get<double>() == Approx(2 * 262144 / base));
  CHECK(full["recomputeFraction"].get<double>() == Approx(2 * 671744 / base));
  const json none =
      run(small({{"checkpointing", {{"strategy", "selective-op"}, {"saveOps", json::array()}}}}));
  CHECK(none["storedActivationBytes"] == full["storedActivationBytes"]);
  CHECK(none["peakBytes"] == full["peakBytes"]);
}

TEST_CASE(
    "selective-layer: torchtitan's '<k>' checkpoints the blocks whose 1-based index is a "
    "multiple of k",
    "[sac]") {
  json cfg4 = small({})["model"];
  cfg4["config"]["num_hidden_layers"] = 4;
  // torchtitan _apply_layer_sac: _layer_sac_count % ac_freq == 0 -> blocks 2 and 4 for k = 2
  // (chain layers 2 and 4: chain layer 0 is the embeddings)
  const json k2 =
      run(small({{"model", cfg4}, {"checkpointing", {{"strategy", "selective-layer"}, {"k", 2}}}}));
  const json manual =
      run(small({{"model", cfg4},
                 {"checkpointing", {{"strategy", "manual"}, {"checkpointed", {{2, 2}, {4, 4}}}}}}));
  CHECK(k2["storedActivationBytes"] == manual["storedActivationBytes"]);
  CHECK(k2["peakBytes"] == manual["peakBytes"]);
  // k = 1 is every block (= full); the default k is torchtitan's config default "2"
  const json k1 =
      run(small({{"model", cfg4}, {"checkpointing", {{"strategy", "selective-layer"}, {"k", 1}}}}));
  const json full = run(small({{"model", cfg4}, {"checkpointing", "full"}}));
  CHECK(k1["storedActivationBytes"] == full["storedActivationBytes"]);
  const json dflt = run(small({{"model", cfg4}, {"checkpointing", "selective-layer"}}));
  CHECK(dflt["storedActivationBytes"] == k2["storedActivationBytes"]);
}

TEST_CASE("selective-op: the allocator trace keeps the cached outputs until the recomputation",
          "[sac]") {
  // a CUDA run simulated: the kept outputs are allocations that live from a block's forward to
  // its recomputation, so the simulated allocated peak lies between full and no checkpointing
  json base = small({{"simulateAllocator", true}, {"microBatch", 4}, {"seqLen", 64}});
  base["model"]["config"]["num_hidden_layers"] = 8;
  json f = base, t = base, n = base;
  f["checkpointing"] = "full";
  t["checkpointing"] = "torchtitan-op";
  const json rf = run(f), rt = run(t), rn = run(n);
  const double kept =
      rt["storedActivationBytes"].get<double>() - rf["storedActivationBytes"].get<double>();
  REQUIRE(kept > 0);
  // (a trace that ignored the cache would replay exactly the full-checkpointing trace)
  const double fa = rf["allocator"]["steadyAllocatedBytes"].get<double>(),
               ta = rt["allocator"]["steadyAllocatedBytes"].get<double>(),
               na = rn["allocator"]["steadyAllocatedBytes"].get<double>();
  CHECK(ta > fa);
  CHECK(ta < na);
  // at most the cache more than full checkpointing (plus allocator rounding, 512 B per tensor)
  CHECK(ta - fa <= kept + 8 * 5 * 512);
}

TEST_CASE(
    "checkpointing names: plain 'selective' is refused with both meanings, op names are "
    "checked",
    "[sac]") {
  json e = call("peakMemory", small({{"checkpointing", "selective"}}));
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["code"] == "unknown_value");
  CHECK(e["error"]["field"] == "checkpointing");
  const std::string msg = e["error"]["message"];
  CHECK(msg.find("attention-recompute") != std::string::npos);
  CHECK(msg.find("selective-op") != std::string::npos);
  e = call("peakMemory", small({{"checkpointing", {{"strategy", "selective"}}}}));
  CHECK(e["error"]["field"] == "checkpointing.strategy");

  e = call("peakMemory",
           small({{"checkpointing", {{"strategy", "selective-op"}, {"saveOps", {"mm", "spda"}}}}}));
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["code"] == "unknown_value");
  CHECK(e["error"]["field"] == "checkpointing.saveOps[1]");
  CHECK(e["error"]["message"].get<std::string>().find("did you mean 'sdpa'") != std::string::npos);

  e = call("peakMemory", small({{"checkpointing", {{"strategy", "selective-op"}}}}));
  CHECK(e["error"]["code"] == "missing_field");
  CHECK(e["error"]["field"] == "checkpointing.saveOps");

  e = call("peakMemory", small({{"checkpointing", "torchtitan-op"}, {"lora", json::object()}}));
  CHECK(e["error"]["code"] == "unsupported");
  CHECK(e["error"]["field"] == "checkpointing");

  e = call("peakMemory", {{"model", {{"preset", "gpt2"}}},
                          {"microBatch", 1},
                          {"seqLen", 64},
                          {"checkpointing", "torchtitan-op"}});
  CHECK(e["error"]["code"] == "unsupported");
  CHECK(e["error"]["field"] == "checkpointing");

  // Megatron's attention core recompute keeps its own name; with SDPA there is no s^2 tensor
  // to drop, so it equals no checkpointing (the reason plain 'selective' was ambiguous)
  const json mr = run(small({{"checkpointing", "attention-recompute"}}));
  const json none = run(small({}));
  CHECK(mr["storedActivationBytes"] == none["storedActivationBytes"]);
  // an op the blocks never call is named in the assumptions
  const json bmm =
      run(small({{"checkpointing", {{"strategy", "selective-op"}, {"saveOps", {"bmm"}}}}}));
  bool named = false;
  for (const auto& a : bmm["assumptions"])
    named = named || a.get<std::string>().find("'bmm' matches no op") != std::string::npos;
  CHECK(named);
}
