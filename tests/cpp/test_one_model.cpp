// One model of a step: the divergences the layer walk and the allocation trace had, each worked
// by hand from its source. Sizes are multiples of 512 B where a figure is checked exactly, so
// that the caching allocator's rounding (up to 512 B) adds nothing.
#include <catch2/catch.hpp>

#include "io/request.hpp"
#include "test_support.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

using tm_test::peak_envelope;
using tm_test::peak_result;
using tm_test::timeline_point;
using tm_test::with;

namespace {
double part(const json& r, const char* line, const char* name) {
  return r["breakdown"][line]["parts"][name].get<double>();
}
double line(const json& r, const char* name) { return r["breakdown"][name]["bytes"].get<double>(); }
// Linear(4096, 4096) layers: a 64 MiB fp32 weight and a 16 KiB bias each.
json linears(size_t n, const json& extra) {
  json sizes = json::array();
  for (size_t i = 0; i <= n; ++i) sizes.push_back(4096);
  return with({{"mlp", {{"sizes", sizes}}},
               {"microBatch", 1},
               {"timeline", true},
               {"simulateAllocator", false},
               {"searchMaxMicroBatch", false}},
              extra);
}
json llama7b(const json& extra) {
  return with({{"model", {{"preset", "llama-2-7b"}}},
               {"microBatch", 1},
               {"seqLen", 512},
               {"simulateAllocator", false},
               {"searchMaxMicroBatch", false}},
              extra);
}
constexpr double MiB = 1048576.0;
constexpr double kP7 = 6738415616.0;   // Llama-2-7b-hf, the published count
constexpr double kLoraQV = 4194304.0;  // PEFT r=8 on q_proj, v_proj: 32 x 8 x 8192 x 2
// Each tensor (or shard) counted as the allocator rounds it: within this fraction of a formula.
constexpr double kRounding = 2e-4;
}  // namespace

TEST_CASE("one model: a tied embedding's gradient is made by the head's backward",
          "[peak][one-model]") {
  // GPT-2 ties lm_head to wte (50,257 x 768 fp32 = 154,389,504 B). The head's backward runs first
  // and makes wte's .grad (AccumulateGrad steals the incoming gradient): when the last block's
  // backward runs it is there; the embeddings' backward later adds into it in place.
  const json r = peak_result({{"model", {{"preset", "gpt2"}}},
                              {"microBatch", 1},
                              {"seqLen", 128},
                              {"simulateAllocator", false},
                              {"searchMaxMicroBatch", false}});
  CHECK(timeline_point(r, "backward", 12)["gradientBytes"].get<double>() >= 154389504.0);
  CHECK(timeline_point(r, "backward", 12)["gradientBytes"].get<double>() < 154389504.0 + 30 * MiB);
}

TEST_CASE("one model: LoRA's fp32 adapters keep fp32 gradients and state under bf16",
          "[peak][one-model][lora]") {
  // torch keeps .grad and Adam's moments in the parameter's dtype; PEFT's adapters are fp32
  // (autocast_adapter_dtype=True): 4,194,304 x 4 B of gradients, 2 x that of moments (the `step`
  // scalars stay on the CPU for the for-each / for-loop step: torch/optim/adamw.py _init_group).
  const json r =
      peak_result(llama7b({{"precision", "bf16"},
                           {"optimizer", "adamw"},
                           {"lora", {{"rank", 8}, {"targetModules", {"q_proj", "v_proj"}}}}}));
  CHECK(timeline_point(r, "optimizer", -1)["gradientBytes"].get<double>() == kLoraQV * 4);
  CHECK(line(r, "optimizerState") == kLoraQV * 8);
  // torchtune's adapters follow the model's dtype instead (autocastAdapterDtype false)
  const json tt = peak_result(llama7b(
      {{"precision", "bf16"},
       {"optimizer", "adamw"},
       {"lora",
        {{"rank", 8}, {"autocastAdapterDtype", false}, {"targetModules", {"q_proj", "v_proj"}}}}}));
  CHECK(timeline_point(tt, "optimizer", -1)["gradientBytes"].get<double>() == kLoraQV * 2);
  CHECK(line(tt, "optimizerState") == kLoraQV * 4);
}

TEST_CASE("one model: autocast caches casts of trainable leaves only", "[peak][one-model]") {
  // A frozen fp32 base under amp-bf16 (LoRA, baseDtype fp32) is cast per op: with every block
  // checkpointed, the copies the graph keeps are one block's (recomputed: 202,375,168 matrix
  // parameters x 2 B) and the head's (32,000 x 4,096 x 2 B), plus the adapters' cached copies
  // (4,194,304 x 2 B). Cached like trainable weights, all 32 blocks' would be live (12.9 GB).
  const json r = peak_result(llama7b({{"precision", "amp-bf16"},
                                      {"checkpointing", "full"},
                                      {"lora", {{"rank", 8}, {"baseDtype", "fp32"}}}}));
  const double bound = 202375168.0 * 2 + 32000.0 * 4096 * 2 + kLoraQV * 2;
  CHECK(part(r, "temporaries", "autocastCopies") <= bound);
  // a base loaded in bf16 needs no copies at all: only the adapters'
  const json bf16 = peak_result(llama7b({{"precision", "amp-bf16"},
                                         {"checkpointing", "full"},
                                         {"lora", {{"rank", 8}, {"baseDtype", "bf16"}}}}));
  CHECK(part(bf16, "temporaries", "autocastCopies") <= kLoraQV * 2);
}

TEST_CASE("one model: transformers' Adafactor and lion have a loop only", "[peak][one-model]") {
  // One Linear(4096, 4096): at the step the weight (64 MiB), its .grad (64 MiB) and Adafactor's
  // two per-tensor temporaries (grad**2 + eps, the update: 2 x 64 MiB) are live at once
  // (transformers optimization.py Adafactor.step), whatever the runtime's foreach default.
  const json r = peak_result(linears(1, {{"optimizer", "adafactor"}}));
  CHECK(r["peakPhase"] == "optimizer");
  CHECK(part(r, "temporaries", "optimizerTemporaries") == 2 * 64 * MiB);
  // asking for a list or fused implementation names the one it has
  for (const char* impl : {"foreach", "fused"}) {
    const json e =
        peak_envelope(linears(1, {{"optimizer", "adafactor"}, {"optimizerImplementation", impl}}));
    REQUIRE(e["ok"] == false);
    CHECK(e["error"]["field"] == "optimizerImplementation");
    CHECK(e["error"]["message"].get<std::string>().find("for-loop") != std::string::npos);
  }
  const json lion =
      peak_envelope(linears(1, {{"optimizer", "lion"}, {"optimizerImplementation", "fused"}}));
  CHECK(lion["error"]["field"] == "optimizerImplementation");
  // fused AdamW: one kernel, no temporaries
  const json fused =
      peak_result(linears(1, {{"optimizer", "adamw"}, {"optimizerImplementation", "fused"}}));
  CHECK(part(fused, "temporaries", "optimizerTemporaries") == 0);
}

TEST_CASE("one model: foreach AdamW keeps two lists in torch 2.0, one from 2.1",
          "[peak][one-model]") {
  // torch/optim/adamw.py _multi_tensor_adamw: 2.0 makes denom = _foreach_add(exp_avg_sq_sqrt, eps)
  // beside exp_avg_sq_sqrt; 2.1 adds eps in place. Two Linear(4096, 4096): a list is 2 x
  // (64 MiB + 16 KiB).
  auto temps = [](const char* runtime) {
    const json r = peak_result(linears(
        2, {{"optimizer", "adamw"}, {"runtime", runtime}, {"optimizerImplementation", "foreach"}}));
    return part(r, "temporaries", "optimizerTemporaries");
  };
  const double list = 2 * (64 * MiB + 16384);
  CHECK(temps("pytorch-2.0-cuda") == 2 * list);
  CHECK(temps("pytorch-2.1-cuda") == list);
}

TEST_CASE("one model: ZeRO mixed precision makes an fp32 gradient partition at the step",
          "[peak][one-model][zero]") {
  // deepspeed/runtime/zero/stage_1_and_2.py step(): single_grad_partition, the rank's share of
  // the 16-bit gradients in fp32, lives while the optimizer steps. Linear(4096, 4096) over 2
  // ranks: (16,777,216 + 4,096) x 4 B / 2 = 33,562,624 B.
  // (contiguous_gradients off: no 1 GB gradient bucket in the backward, which would hold the
  // peak of so small a model; test_sharding_settings.cpp checks the bucket)
  const json r = peak_result(linears(1, {{"precision", "amp-bf16"},
                                         {"optimizer", "adamw"},
                                         {"zeroStage", 2},
                                         {"dataParallel", 2},
                                         {"zero", {{"contiguousGradients", false}}}}));
  CHECK(r["peakPhase"] == "optimizer");
  CHECK(part(r, "temporaries", "gradientPartition") == 33562624.0);
  // its fp32 master partition: the same bytes, made when the engine wraps the optimizer
  CHECK(line(r, "masterWeights") == 33562624.0);
}

TEST_CASE("one model: ZeroRedundancyOptimizer holds the binding rank's state",
          "[peak][one-model]") {
  // zero_redundancy_optimizer.py _partition_parameters: largest first, each to the rank with the
  // fewest elements. Two Linear(4096, 4096) over 2 ranks: W1 -> rank 0, W2 -> rank 1, b1 -> rank
  // 0 (a tie goes to the first), b2 -> rank 1; both hold 16,781,312 elements, rank 0 binds: W1's
  // and b1's AdamW moments, 2 x 4 B x 16,781,312 = 134,250,496 B (DDP itself keeps everything
  // else: both weights, both gradients, the reducer's buckets).
  const json r = peak_result(
      linears(2, {{"optimizer", "adamw"}, {"dataParallel", 2}, {"zeroRedundancyOptimizer", true}}));
  CHECK(line(r, "optimizerState") == 134250496.0);
  CHECK(line(r, "weights") == 2 * (64 * MiB + 16384));
  const json e =
      peak_envelope(linears(2, {{"optimizer", "adamw"}, {"zeroRedundancyOptimizer", true}}));
  CHECK(e["error"]["field"] == "zeroRedundancyOptimizer");
}

TEST_CASE("one model: FSDP with LoRA and QLoRA (the PEFT / Accelerate recipe)",
          "[peak][one-model][fsdp][lora]") {
  // FSDP2 FULL_SHARD over 8 ranks shards the frozen base and the adapters alike; only the
  // adapters have gradients and state. bf16 base (2 B), fp32 adapters (4 B).
  const json lora = {{"rank", 8}, {"baseDtype", "bf16"}, {"targetModules", {"q_proj", "v_proj"}}};
  const json r = peak_result(llama7b({{"precision", "bf16"},
                                      {"optimizer", "adamw"},
                                      {"dataParallel", 8},
                                      {"fsdp", {{"version", 2}}},
                                      {"lora", lora}}));
  CHECK(line(r, "weights") == Approx((kP7 * 2 + kLoraQV * 4) / 8).epsilon(kRounding));
  CHECK(line(r, "optimizerState") == Approx(kLoraQV * 8 / 8).epsilon(kRounding));
  CHECK(timeline_point(r, "optimizer", -1)["gradientBytes"].get<double>() ==
        Approx(kLoraQV * 4 / 8).epsilon(kRounding));
  // QLoRA: the block linears (6,476,005,376 values) packed 4-bit + absmax, the rest bf16
  json q = lora;
  q["qlora"] = true;
  const json qr = peak_result(llama7b({{"precision", "bf16"},
                                       {"optimizer", "adamw"},
                                       {"dataParallel", 8},
                                       {"fsdp", {{"version", 2}}},
                                       {"lora", q}}));
  const double lin = 6476005376.0;
  const double nf4 = lin * (0.5 + 1.0 / 64 + 4.0 / (64 * 256));
  CHECK(line(qr, "weights") ==
        Approx((nf4 + (kP7 - lin) * 2 + kLoraQV * 4) / 8).epsilon(kRounding));
}

TEST_CASE("one model: FSDP's param dtype without autocast computes in it", "[peak][one-model]") {
  // MixedPrecisionPolicy(param_dtype=bf16) with fp32 sharded parameters and no autocast: the
  // unsharded parameters are bf16, so the blocks compute and save in bf16
  const json mp = peak_result(llama7b({{"precision", "fp32"},
                                       {"dataParallel", 8},
                                       {"fsdp", {{"mixedPrecision", {{"paramDtype", "bf16"}}}}}}));
  const json pure = peak_result(llama7b({{"precision", "bf16"}}));
  CHECK(mp["activationsPerLayer"]["derivedBytes"] == pure["activationsPerLayer"]["derivedBytes"]);
  // the sharded parameters stay fp32
  CHECK(line(mp, "weights") == Approx(kP7 * 4 / 8).epsilon(kRounding));
}

TEST_CASE("one model: torch.compile with op-level selective checkpointing",
          "[peak][one-model][selective]") {
  // torchtitan's benchmark default (apply_ac, then apply_compile per block): the partitioner
  // keeps the policy's MUST_SAVE outputs, so each block stores what the eager policy stores
  // (the blocks' part: what the activations hold from block 2's forward to block 32's; the head
  // outside the blocks differs under compile)
  const json eager =
      peak_result(llama7b({{"precision", "bf16"}, {"checkpointing", "torchtitan-op"}}));
  const json compiled = peak_result(
      llama7b({{"precision", "bf16"}, {"checkpointing", "torchtitan-op"}, {"compile", true}}));
  auto blocks = [](const json& r) {
    return timeline_point(r, "forward", 32)["activationBytes"].get<double>() -
           timeline_point(r, "forward", 2)["activationBytes"].get<double>();
  };
  CHECK(blocks(compiled) == blocks(eager));
  CHECK(blocks(eager) > 0);
  CHECK(compiled["assumptions"].dump().find("partitioner") != std::string::npos);
}

// A step whose allocations add up past 2^62 B is refused by the field that makes it so, not
// answered with a wrapped figure: T5's cross-attention scores alone are microBatch x heads x
// targetLen x seqLen x 4 B = 672,052 x 6 x 237,743 x 64 x 4 B = 2.45e17 B per layer, saved
// and recomputed in every layer and both steps (found by the stress test).
TEST_CASE("a step past 2^62 bytes in all is too_large, naming microBatch", "[peak][one-model]") {
  const json r = peak_envelope(json::parse(R"({"model":{"config":{"model_type":"t5","d_model":128,
      "d_kv":16,"d_ff":384,"num_heads":6,"num_layers":2,"num_decoder_layers":3,
      "vocab_size":1000,"feed_forward_proj":"relu","tie_word_embeddings":true}},
      "microBatch":672052,"seqLen":64,"targetLen":237743,"runtime":"pytorch-cpu"})"));
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["code"] == "too_large");
  CHECK(r["error"]["field"] == "microBatch");
}

TEST_CASE("one model: attention recompute drops the s^2 tensors from the trace as from the chain",
          "[peak][one-model]") {
  // GPT-2 (12 layers, 12 heads), eager attention, autocast bf16, b = 8, s = 1024. Megatron's
  // selective recompute (Korthikanti et al. 2022, section 5) drops each block's attention core:
  // b a s^2 = 8 x 12 x 1024^2 = 100,663,296 elements of the fp32 softmax output (HF GPT-2
  // upcasts under autocast: 4 B), the dropout mask (1 B) and the dropout output (bf16: 2 B):
  // 7 x 100,663,296 = 704,643,072 B a block, 8,455,716,864 B over 12 blocks.
  const json base = {
      {"model", {{"preset", "gpt2"}}}, {"attention", "eager"}, {"microBatch", 8},  {"seqLen", 1024},
      {"precision", "amp-bf16"},       {"gpu", "a100-80gb"},   {"timeline", false}};
  const json none = peak_result(base);
  const json ar = peak_result(with(base, {{"checkpointing", "attention-recompute"}}));
  const double core = 704643072.0;
  CHECK(none["storedActivationBytes"].get<double>() - ar["storedActivationBytes"].get<double>() ==
        12 * core);
  // one trace: the peak falls with the stored tensors, less the one core the backward
  // recomputes at a time (and at most the allocator's rounding of 12 blocks more)
  const double drop =
      none["allocatedPeakBytes"].get<double>() - ar["allocatedPeakBytes"].get<double>();
  CHECK(drop >= 11 * core);
  CHECK(drop <= 12 * core + 64.0 * 1024 * 1024);
  CHECK(none["peakBytes"].get<double>() - ar["peakBytes"].get<double>() == drop);
}

TEST_CASE("one model: attention recompute with SDPA recomputes nothing and says so",
          "[peak][one-model]") {
  // PyTorch's SDPA (flash / memory-efficient kernels) saves q, k, v, the output and the
  // logsumexp, never the b a s^2 scores (torch/_meta_registrations.py, the SDPA backward's
  // inputs): Megatron's core-attention recompute has nothing to drop, so the figures equal no
  // checkpointing, and the result says why instead of answering silently.
  const json base = {
      {"model", {{"preset", "gpt2"}}}, {"attention", "sdpa"}, {"microBatch", 8},  {"seqLen", 1024},
      {"precision", "amp-bf16"},       {"gpu", "a100-80gb"},  {"timeline", false}};
  const json none = peak_result(base);
  const json ar = peak_result(with(base, {{"checkpointing", "attention-recompute"}}));
  CHECK(ar["storedActivationBytes"] == none["storedActivationBytes"]);
  CHECK(ar["allocatedPeakBytes"] == none["allocatedPeakBytes"]);
  CHECK(ar["messages"].dump().find("peak.assume.attnRecompute.none") != std::string::npos);
  CHECK(ar["assumptions"].dump().find("nothing is recomputed") != std::string::npos);
  CHECK(none["assumptions"].dump().find("nothing is recomputed") == std::string::npos);
}
