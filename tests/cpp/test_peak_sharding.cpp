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
          {"searchMaxMicroBatch", false}};
}

// What the timeline adds on top of the persistent lines and activations at one point.
double transient_at(const json& r, const json& point) {
  const json& b = r["breakdown"];
  return point["totalBytes"].get<double>() - point["activationBytes"].get<double>() -
         point["gradientBytes"].get<double>() - b["weights"]["bytes"].get<double>() -
         b["masterWeights"]["bytes"].get<double>() - b["optimizerState"]["bytes"].get<double>() -
         b["runtime"]["bytes"].get<double>();
}
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
          Approx(2.0 * r["params"].get<double>() / n).epsilon(1e-9));
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
  // the backward walks the head (chain layer 13) first, then decoder block 5 (chain layer 12)
  double head = -1, last_decoder = -1;
  for (const auto& p : tl) {
    if (p["phase"] != "backward") continue;
    if (p["layer"] == 13) head = p["gradientBytes"].get<double>();
    if (p["layer"] == 12 && last_decoder < 0) last_decoder = p["gradientBytes"].get<double>();
  }
  CHECK(head == 0);  // the tied lm_head has no adapter
  CHECK(last_decoder == 131072);
}
