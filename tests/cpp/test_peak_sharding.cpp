// Sharded and encoder-decoder layouts checked by hand: what ZeRO-3 gathers for a T5 model, and
// which chain layer a T5 decoder's LoRA adapters belong to.
#include <catch2/catch.hpp>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {
json run(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

// modeling_t5.py T5Config fields; d_model 2048 and d_ff 8192 make a decoder block larger than
// the (tied) embedding, so the largest gathered layer is a block, not the embeddings.
json t5_request(uint64_t ranks) {
  const json cfg = {{"model_type", "t5"},  {"d_model", 2048},
                    {"d_kv", 64},          {"d_ff", 8192},
                    {"num_layers", 12},    {"num_heads", 32},
                    {"vocab_size", 32128}, {"feed_forward_proj", "relu"}};
  return {{"model", {{"config", cfg}}},
          {"microBatch", 1},
          {"seqLen", 128},
          {"precision", "amp-bf16"},
          {"optimizer", "sgd"},
          {"zeroStage", 3},
          {"dataParallel", ranks},
          {"simulateAllocator", false},
          {"searchMaxMicroBatch", false}};
}

// The unsharded parameters (and FSDP's unsharded gradients) live at a timeline point.
double transient_at(const json&, const json& point) { return point["gatheredBytes"].get<double>(); }
// Each tensor's shard is rounded up to the caching allocator's 512 B (round_size): a sum of
// shards is within this fraction of the formula's.
constexpr double kRounding = 2e-4;
}  // namespace

TEST_CASE("ZeRO-3 on T5 gathers its largest block twice, not the encoder stack", "[peak][zero]") {
  // Hand count (modeling_t5.py, inner = 32 x 64 = 2048): decoder block 0 = self-attention
  // q,k,v,o 4 x 2048^2 + cross-attention 4 x 2048^2 = 33,554,432, relative_attention_bias
  // 32 x 32 = 1,024, three T5LayerNorm 3 x 2048 = 6,144, wi + wo 2 x 2048 x 8192 = 33,554,432:
  // 67,116,032 params. The tied embedding is 32128 x 2048 = 65,798,144, smaller.
  // DeepSpeed's stage-3 estimator (stage3.py estimate_zero3_model_states_mem_needs:
  // largest_layer_memory = 4 * largest_layer_params, i.e. 2 B gathered twice) does not depend on
  // the rank count.
  const double expected = 2.0 * 2.0 * 67116032.0;
  for (uint64_t n : {2u, 4u, 16u}) {
    const json r = run(t5_request(n));
    const json& first = r["timeline"][0];
    REQUIRE(first["name"] == "embeddings");
    CHECK(transient_at(r, first) == Approx(expected).epsilon(1e-9));
    // the 16-bit weights themselves are partitioned
    CHECK(r["breakdown"]["weights"]["bytes"].get<double>() ==
          Approx(2.0 * r["params"].get<double>() / n).epsilon(kRounding));
  }
}

TEST_CASE("LoRA on T5: the decoder's adapters belong to the decoder's blocks", "[peak][lora]") {
  // t5-small (d_model 512, 6 + 6 blocks), PEFT's default targets q and v, r = 8: each adapter
  // is A (8 x 512) + B (512 x 8) = 8,192 fp32 params; a decoder block adapts self-attention and
  // cross-attention q and v: 4 x 8,192 x 4 B = 131,072 bytes of gradients.
  const json r = run({{"model", {{"preset", "t5-small"}}},
                      {"microBatch", 1},
                      {"seqLen", 64},
                      {"lora", {{"rank", 8}}},
                      {"searchMaxMicroBatch", false}});
  const json& tl = r["timeline"];
  // the backward walks the head (chain layer 13) first, then decoder block 5 (chain layer 12),
  // then decoder block 4 (11). Each point is its part's highest moment: block 5's gradients
  // are all there when block 4's backward runs, block 4's own only in part.
  double head = -1, block5 = -1, block4 = -1;
  for (const auto& p : tl) {
    if (p["phase"] != "backward") continue;
    if (p["layer"] == 13) head = p["gradientBytes"].get<double>();
    if (p["layer"] == 12) block5 = p["gradientBytes"].get<double>();
    if (p["layer"] == 11) block4 = p["gradientBytes"].get<double>();
  }
  CHECK(head == 0);  // the tied lm_head has no adapter
  CHECK(block5 < 131072);
  CHECK(block4 >= 131072);
  CHECK(block4 < 2 * 131072);
}

namespace {
// Llama-2-7b by hand (config.json: hidden 4096, intermediate 11008, 32 layers, vocab 32000,
// untied): a block is q,k,v,o 4 x 4096^2 + gate, up, down 3 x 4096 x 11008 + two RMSNorm
// 2 x 4096 = 202,383,360; the root unit is embed_tokens + lm_head 2 x 32000 x 4096 + the final
// norm 4096 = 262,148,096; 32 blocks + root = 6,738,415,616 (the published count).
constexpr double kBlock = 202383360.0, kRoot = 262148096.0, kP7 = 6738415616.0;

json fsdp7b(json fsdp, uint64_t ranks = 8, bool simulate = false) {
  return {{"model", {{"preset", "llama-2-7b"}}},
          {"microBatch", 1},
          {"seqLen", 512},
          {"precision", "amp-bf16"},
          {"dataParallel", ranks},
          {"fsdp", fsdp},
          {"simulateAllocator", simulate},
          {"searchMaxMicroBatch", false}};
}
const json& point(const json& r, const char* phase, int layer) {
  for (const auto& p : r["timeline"])
    if (p["phase"] == phase && p["layer"] == layer) return p;
  FAIL("no timeline point " << phase << " " << layer);
  return r;
}
std::string error_field(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  return env["ok"] == true ? std::string("ok") : env["error"]["field"].get<std::string>();
}
}  // namespace

TEST_CASE("FSDP FULL_SHARD: 7B over 8 ranks by hand", "[peak][fsdp]") {
  const json mp = {{"paramDtype", "bf16"}, {"reduceDtype", "fp32"}};
  const json r = run(fsdp7b({{"mixedPrecision", mp}}));
  const json& b = r["breakdown"];
  // sharded fp32 parameters, fp32 AdamW moments (8 B) over 8 ranks
  CHECK(b["weights"]["bytes"].get<double>() == Approx(4 * kP7 / 8).epsilon(kRounding));
  CHECK(b["optimizerState"]["bytes"].get<double>() == Approx(8 * kP7 / 8).epsilon(kRounding));
  CHECK(b["masterWeights"]["bytes"] == 0);
  // forward of block 1 (chain layer 1): the root unit plus block 1 and the prefetched block 2,
  // gathered in bf16
  CHECK(transient_at(r, point(r, "forward", 1)) == Approx(2 * (kRoot + 2 * kBlock)));
  // the embeddings' forward: root + the prefetched block 1
  CHECK(transient_at(r, point(r, "forward", 0)) == Approx(2 * (kRoot + kBlock)));
  // the last block's forward has nothing left to prefetch
  CHECK(transient_at(r, point(r, "forward", 32)) == Approx(2 * (kRoot + kBlock)));
  // backward of block 1: root + block 1 (block 0 is the root), its bf16 unsharded gradients,
  // their fp32 copy for the reduce-scatter and the 1/8 fp32 output
  CHECK(transient_at(r, point(r, "backward", 1)) ==
        Approx(2 * (kRoot + kBlock) + kBlock * (2 + 4 + 4.0 / 8)));
  // the sharded fp32 gradients at the step
  const json& step = point(r, "optimizer", -1);
  CHECK(step["gradientBytes"].get<double>() == Approx(4 * kP7 / 8).epsilon(kRounding));
}

TEST_CASE("FSDP SHARD_GRAD_OP keeps every gathered block until its backward", "[peak][fsdp]") {
  const json r = run(fsdp7b(
      {{"shardingStrategy", "SHARD_GRAD_OP"}, {"mixedPrecision", {{"paramDtype", "bf16"}}}}));
  // at the loss every unit is gathered: the whole model in bf16
  CHECK(transient_at(r, point(r, "loss", -1)) == Approx(2 * kP7));
  // forward of block 10: root + blocks 1..10 + the prefetched 11
  CHECK(transient_at(r, point(r, "forward", 10)) == Approx(2 * (kRoot + 11 * kBlock)));
}

TEST_CASE("FSDP HYBRID_SHARD shards within its group; NO_SHARD gathers nothing", "[peak][fsdp]") {
  const json h = run(fsdp7b({{"shardingStrategy", "HYBRID_SHARD"}, {"shardGroupSize", 4}}, 16));
  CHECK(h["breakdown"]["weights"]["bytes"].get<double>() == Approx(4 * kP7 / 4).epsilon(kRounding));
  const json n = run(fsdp7b({{"shardingStrategy", "NO_SHARD"}}));
  CHECK(n["breakdown"]["weights"]["bytes"].get<double>() == Approx(4 * kP7).epsilon(kRounding));
  // fp32 parameters used as they are: no gathered copy in the forward
  CHECK(transient_at(n, point(n, "forward", 5)) == 0);
  // without mixed precision FULL_SHARD gathers fp32 units: root + 2 blocks x 4 B
  const json f = run(fsdp7b(json::object()));
  CHECK(transient_at(f, point(f, "forward", 1)) == Approx(4 * (kRoot + 2 * kBlock)));
}

TEST_CASE("FSDP CPU offload: parameters, gradients and the step leave the GPU", "[peak][fsdp]") {
  const json mp = {{"paramDtype", "bf16"}};
  const json r = run(fsdp7b({{"mixedPrecision", mp}, {"cpuOffload", true}}));
  const json& b = r["breakdown"];
  CHECK(b["weights"]["bytes"] == 0);
  CHECK(b["optimizerState"]["bytes"] == 0);
  CHECK(b["gradients"]["bytes"] == 0);
  for (const auto& p : r["timeline"]) CHECK(p["gradientBytes"] == 0);
  // what is left is the gathered units: forward of block 1 = root + 2 blocks in bf16
  CHECK(transient_at(r, point(r, "forward", 1)) == Approx(2 * (kRoot + 2 * kBlock)));
  // the allocator simulation: at least the sharded fp32 weights and gradients (4 + 4 B per
  // parameter over 8 ranks) leave the peak; both peaks hold the same activations
  const json sim_off = run(fsdp7b({{"mixedPrecision", mp}, {"cpuOffload", true}}, 8, true));
  const json sim_on = run(fsdp7b({{"mixedPrecision", mp}}, 8, true));
  CHECK(sim_on["allocatedPeakBytes"].get<double>() - sim_off["allocatedPeakBytes"].get<double>() >
        (4 + 4) * kP7 / 8);
}

TEST_CASE("FSDP settings that contradict each other are errors", "[peak][fsdp]") {
  json z = fsdp7b(json::object());
  z["zeroStage"] = 3;
  CHECK(error_field(z) == "fsdp");
  CHECK(error_field(fsdp7b({{"shardingStrategy", "HYBRID_SHARD"}})) == "fsdp.shardGroupSize");
  CHECK(error_field(fsdp7b({{"shardingStrategy", "HYBRID_SHARD"}, {"shardGroupSize", 3}})) ==
        "fsdp.shardGroupSize");
  CHECK(error_field(fsdp7b({{"reshardAfterForward", false}})) == "fsdp.reshardAfterForward");
  CHECK(error_field(fsdp7b({{"shardingStrategy", "FULL"}})) == "fsdp.shardingStrategy");
  CHECK(error_field(fsdp7b({{"version", 3}})) == "fsdp.version");
  CHECK(error_field(fsdp7b({{"mixedPrecision", {{"paramDtype", "fp8"}}}})) ==
        "fsdp.mixedPrecision.paramDtype");
  CHECK(error_field(fsdp7b({{"prefetch", 2}, {"cpuoffload", true}})) == "fsdp.cpuoffload");
}

namespace {
json zero7b(json extra) {
  json r = {{"model", {{"preset", "llama-2-7b"}}},
            {"microBatch", 1},
            {"seqLen", 512},
            {"precision", "amp-bf16"},
            {"dataParallel", 8},
            {"simulateAllocator", false},
            {"searchMaxMicroBatch", false}};
  for (auto it = extra.begin(); it != extra.end(); ++it) r[it.key()] = it.value();
  return r;
}
}  // namespace

TEST_CASE("ZeRO with amp-bf16 runs the model in bf16 unless torch_autocast is named",
          "[peak][zero]") {
  // DeepSpeed's bf16 section converts the module to bf16: the activations are those of a pure
  // bf16 run, not autocast's (fp32 residual stream)
  const json ds = run(zero7b({{"zeroStage", 2}}));
  const json pure = run(zero7b({{"precision", "bf16"}, {"dataParallel", 1}}));
  const json autocast = run(zero7b({{"precision", "amp-bf16"}, {"dataParallel", 1}}));
  CHECK(ds["activationsPerLayer"]["derivedBytes"] == pure["activationsPerLayer"]["derivedBytes"]);
  CHECK(ds["activationsPerLayer"]["derivedBytes"] !=
        autocast["activationsPerLayer"]["derivedBytes"]);
  // torch_autocast (deepspeed/runtime/torch_autocast.py: every parameter fp32): fp32 weights
  // (not partitioned at stage 2), no master copy, fp32 AdamW moments over 8 ranks
  const json ta = run(zero7b({{"zeroStage", 2}, {"zeroMixedPrecision", "torch-autocast"}}));
  CHECK(ta["breakdown"]["weights"]["bytes"].get<double>() == Approx(4 * kP7).epsilon(kRounding));
  CHECK(ta["breakdown"]["masterWeights"]["bytes"] == 0);
  CHECK(ta["breakdown"]["optimizerState"]["bytes"].get<double>() ==
        Approx(8 * kP7 / 8).epsilon(kRounding));
  CHECK(ta["activationsPerLayer"]["derivedBytes"] ==
        autocast["activationsPerLayer"]["derivedBytes"]);
  CHECK(error_field(zero7b({{"zeroMixedPrecision", "torch-autocast"}})) == "zeroMixedPrecision");
}

TEST_CASE("ZeRO-3 with DeepSpeed's prefetch bucket, live and reuse limits, by hand",
          "[peak][zero]") {
  // deepspeed/runtime/zero/config.py defaults: prefetch bucket 5e7, max live 1e9, max reuse
  // distance 1e9, persistence threshold 1e5 elements. Llama-2-7b: block 202,383,360; head
  // (lm_head + final norm) 131,076,096; 65 RMSNorm weights of 4096 stay whole.
  const json r = run(zero7b({{"zeroStage", 3}, {"optimizer", "sgd"}, {"zero3", json::object()}}));
  // forward of block 1: the block + 5e7 prefetched elements, bf16
  CHECK(transient_at(r, point(r, "forward", 1)) == Approx((kBlock + 5e7) * 2));
  // forward of the head: blocks 31 and 32 were kept (their backward comes within 1e9 fetched
  // elements: 2 x 333,459,456 and 2 x 131,076,096), block 30 was not (2 x 535,842,816 > 1e9)
  CHECK(transient_at(r, point(r, "forward", 33)) == Approx((131076096.0 + 2 * kBlock) * 2));
  CHECK(r["breakdown"]["weights"]["bytes"].get<double>() ==
        Approx(2 * kP7 / 8 + 65 * 4096 * 2 * (1 - 1.0 / 8)).epsilon(kRounding));
  // a smaller live limit leaves no room to prefetch beside block 1
  const json small = run(zero7b(
      {{"zeroStage", 3}, {"optimizer", "sgd"}, {"zero3", {{"maxLiveParameters", 202383360}}}}));
  CHECK(transient_at(small, point(small, "forward", 1)) == Approx(kBlock * 2));
  CHECK(error_field(zero7b({{"zeroStage", 2}, {"zero3", json::object()}})) == "zero3");
}
