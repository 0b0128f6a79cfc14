// The sharding settings worked by hand from their sources: FSDP2's reshard_after_forward per
// unit (the root, the last block), FSDP1's rate limiter (limit_all_gathers) and DeepSpeed's
// gradient buckets (reduce_bucket_size, overlap_comm, contiguous_gradients,
// allgather_bucket_size).
#include <catch2/catch.hpp>

#include <string>

#include "io/request.hpp"
#include "test_support.hpp"
#include "trainmem/api.hpp"
#include "trainmem/caching_allocator.hpp"
#include "trainmem/step_trace.hpp"

using trainmem::json;
using namespace trainmem;

using tm_test::peak_envelope;
using tm_test::peak_result;
using tm_test::timeline_point;
using tm_test::with;

namespace {
std::string error_field(const json& req) {
  const json env = peak_envelope(req);
  return env["ok"] == true ? std::string("ok") : env["error"]["field"].get<std::string>();
}
double gathered(const json& r, const char* phase, int layer) {
  return timeline_point(r, phase, layer)["gatheredBytes"].get<double>();
}
bool has_assumption(const json& r, const std::string& start) {
  for (const auto& a : r["assumptions"])
    if (a.get<std::string>().rfind(start, 0) == 0) return true;
  return false;
}

// Llama-2-7b by hand (config.json: hidden 4096, intermediate 11008, 32 layers, vocab 32000,
// untied): a block is q,k,v,o 4 x 4096^2 + gate, up, down 3 x 4096 x 11008 + two RMSNorm
// 2 x 4096 = 202,383,360; the root unit is embed_tokens + lm_head 2 x 32000 x 4096 + the final
// norm 4096 = 262,148,096. Chain layers: 0 the embeddings, 1..32 the blocks, 33 the head.
constexpr double kBlock = 202383360.0, kRoot = 262148096.0;
json fsdp7b(const json& fsdp, bool simulate = false) {
  return {{"model", {{"preset", "llama-2-7b"}}},
          {"microBatch", 1},
          {"seqLen", 512},
          {"precision", "amp-bf16"},
          {"dataParallel", 8},
          {"fsdp", fsdp},
          {"simulateAllocator", simulate},
          {"searchMaxMicroBatch", false}};
}
const json kBf16 = {{"paramDtype", "bf16"}};
}  // namespace

TEST_CASE("FSDP2 root: kept gathered after the forward unless given reshard_after_forward=True",
          "[peak][fsdp][sharding-settings]") {
  // _fsdp_state.py _lazy_init (@ 1fd469d0): the root's post_forward_mesh_info = None, so its
  // parameters (bf16, 2 B) stay gathered from the forward through the loss to the backward
  const json d = peak_result(fsdp7b({{"mixedPrecision", kBf16}}));
  CHECK(gathered(d, "loss", -1) == Approx(2 * kRoot));
  // an explicit True on the root (newer torch: _auto_reshard_after_forward is False): freed in
  // the root's post-forward, after the head; the pre-backward hook on the output gathers it
  // again for the head's backward. At the loss nothing is gathered.
  const json r = peak_result(fsdp7b(
      {{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"blocks", true}, {"root", true}}}}));
  CHECK(gathered(r, "loss", -1) == 0);
  // the forward and backward ops hold it as before: block 1's forward = root + block 1 + the
  // prefetched block 2
  CHECK(gathered(r, "forward", 1) == Approx(2 * (kRoot + 2 * kBlock)));
  CHECK(gathered(r, "forward", 1) == gathered(d, "forward", 1));
  CHECK(has_assumption(r, "FSDP2 root unit with reshard_after_forward=True"));
}

TEST_CASE("FSDP2 last block kept gathered (torchtitan's reshard_after_forward=False)",
          "[peak][fsdp][sharding-settings]") {
  const json d = peak_result(fsdp7b({{"mixedPrecision", kBf16}}));
  const json t = peak_result(
      fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"lastBlock", false}}}}));
  // the head's forward: every block resharded, nothing left to prefetch: the root alone
  CHECK(gathered(d, "forward", 33) == Approx(2 * kRoot));
  // block 32 (the last) keeps its bf16 parameters from its forward to its backward: at the
  // head's forward and at the loss the root + that block
  CHECK(gathered(t, "forward", 33) == Approx(2 * (kRoot + kBlock)));
  CHECK(gathered(t, "loss", -1) == Approx(2 * (kRoot + kBlock)));
  // a block before it still reshards: block 10's forward = root + block 10 + prefetched 11
  CHECK(gathered(t, "forward", 10) == Approx(2 * (kRoot + 2 * kBlock)));
  // the boolean form is the per-unit form with every block alike
  const json b = peak_result(fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", true}}));
  CHECK(b["allocatedPeakBytes"] == d["allocatedPeakBytes"]);
  CHECK(has_assumption(t, "FSDP2: the last block keeps its parameters gathered"));
}

// torchtitan's apply_fsdp (torchtitan/models/llama3/infra/parallelize.py @ 018740b7):
// fully_shard(tok_embeddings, reshard_after_forward=True), each block (True), [norm, output]
// (reshard_after_forward=False unless the policy is "always"), then the root, which holds no
// parameter of its own. Llama-2-7b's embed_tokens 32000 x 4096; norm + lm_head 4096 + 32000 x 4096.
constexpr double kEmbed = 131072000.0, kHead = 131076096.0;

TEST_CASE("FSDP2 units of their own for the embeddings and the head (torchtitan's layout)",
          "[peak][fsdp][sharding-settings]") {
  REQUIRE(kEmbed + kHead == kRoot);
  const json t = peak_result(
      fsdp7b({{"mixedPrecision", kBf16},
              {"reshardAfterForward", {{"blocks", true}, {"embedding", true}, {"head", false}}}}));
  // the embeddings' forward: their unit and the prefetched block 1; no root copy
  CHECK(gathered(t, "forward", 0) == Approx(2 * (kEmbed + kBlock)));
  // a block's forward: it and the next; the embeddings resharded after their forward
  CHECK(gathered(t, "forward", 5) == Approx(2 * 2 * kBlock));
  // the last block's forward prefetches the head's unit, which then stays for the loss
  CHECK(gathered(t, "forward", 32) == Approx(2 * (kBlock + kHead)));
  CHECK(gathered(t, "forward", 33) == Approx(2 * kHead));
  CHECK(gathered(t, "loss", -1) == Approx(2 * kHead));
  CHECK(has_assumption(t, "FSDP2: the embeddings and the final norm + head are units"));
  // the head resharded too (policy "always"): nothing gathered at the loss
  const json a = peak_result(fsdp7b(
      {{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"embedding", true}, {"head", true}}}}));
  CHECK(gathered(a, "loss", -1) == 0);
  // the embeddings alone: the root holds the head from the forward to the backward
  const json e = peak_result(
      fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"embedding", true}}}}));
  CHECK(gathered(e, "forward", 5) == Approx(2 * (kHead + 2 * kBlock)));
  CHECK(gathered(e, "forward", 0) == Approx(2 * (kHead + kEmbed + kBlock)));
  CHECK(has_assumption(e, "FSDP2: the embeddings are a unit of their own"));
  // against the one root unit: 2 x 262,148,096 B less at a block's forward
  const json d = peak_result(fsdp7b({{"mixedPrecision", kBf16}}));
  CHECK(gathered(d, "forward", 5) - gathered(t, "forward", 5) == Approx(2 * kRoot));
}

TEST_CASE("FSDP2 reshard_after_forward set block by block", "[peak][fsdp][sharding-settings]") {
  // block 4 (chain layer 4, the list's fourth item) keeps its parameters; the others reshard
  json list = json::array();
  for (int b = 1; b <= 32; ++b) list.push_back(b != 4);
  const json k =
      peak_result(fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"blocks", list}}}}));
  CHECK(gathered(k, "forward", 3) == Approx(2 * (kRoot + 2 * kBlock)));
  // after block 4's forward: root + block 10 + prefetched 11 + the kept block 4
  CHECK(gathered(k, "forward", 10) == Approx(2 * (kRoot + 3 * kBlock)));
  CHECK(gathered(k, "loss", -1) == Approx(2 * (kRoot + kBlock)));
  CHECK(has_assumption(k, "FSDP2: reshard_after_forward set per block: 1 of the 32 blocks"));
  // the list with only the last block kept is lastBlock false; every block true is the boolean
  json last = json::array();
  for (int b = 1; b <= 32; ++b) last.push_back(b != 32);
  const json l = peak_result(
      fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"blocks", last}}}}, true));
  const json lb = peak_result(
      fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"lastBlock", false}}}}, true));
  CHECK(l["allocatedPeakBytes"] == lb["allocatedPeakBytes"]);
  CHECK(l["reservedPeakBytes"] == lb["reservedPeakBytes"]);
  json all = json::array();
  for (int b = 1; b <= 32; ++b) all.push_back(true);
  const json al = peak_result(
      fsdp7b({{"mixedPrecision", kBf16}, {"reshardAfterForward", {{"blocks", all}}}}, true));
  const json bo = peak_result(fsdp7b({{"mixedPrecision", kBf16}}, true));
  CHECK(al["allocatedPeakBytes"] == bo["allocatedPeakBytes"]);
}

TEST_CASE("FSDP2 per-block and per-module settings the model cannot take are errors",
          "[peak][fsdp][sharding-settings]") {
  const auto unit = [](const json& r) { return fsdp7b({{"reshardAfterForward", r}}); };
  CHECK(error_field(unit({{"blocks", json::array({true, false})}})) ==
        "fsdp.reshardAfterForward.blocks");
  CHECK(error_field(unit({{"blocks", json::array()}})) == "fsdp.reshardAfterForward.blocks");
  CHECK(error_field(unit({{"blocks", json::array({true, 1})}})) ==
        "fsdp.reshardAfterForward.blocks[1]");
  json list = json::array();
  for (int b = 1; b <= 32; ++b) list.push_back(true);
  CHECK(error_field(unit({{"blocks", list}, {"lastBlock", false}})) ==
        "fsdp.reshardAfterForward.lastBlock");
  // every block kept is SHARD_GRAD_OP, as the boolean false is
  json none = json::array();
  for (int b = 1; b <= 32; ++b) none.push_back(false);
  CHECK(error_field(unit({{"blocks", none}})) == "fsdp.reshardAfterForward.blocks");
  // GPT-2 ties its head to the embeddings: one weight cannot be in two units
  json gpt2 = fsdp7b({{"reshardAfterForward", {{"embedding", true}}}});
  gpt2["model"] = {{"preset", "gpt2"}};
  CHECK(error_field(gpt2) == "fsdp.reshardAfterForward.embedding");
  // a pipeline stage's chain starts and ends with blocks: the settings are one stage's
  json staged = fsdp7b({{"reshardAfterForward", {{"head", false}}}});
  staged["pipelineParallel"] = 2;
  staged["gradientAccumulationSteps"] = 4;
  CHECK(error_field(staged) == "fsdp.reshardAfterForward.head");
}

TEST_CASE("FSDP per-unit settings that cannot be expressed are errors naming the field",
          "[peak][fsdp][sharding-settings]") {
  // FSDP1 reshards per shardingStrategy: the per-unit form is FSDP2's
  CHECK(error_field(fsdp7b({{"version", 1}, {"reshardAfterForward", {{"root", true}}}})) ==
        "fsdp.reshardAfterForward");
  CHECK(error_field(fsdp7b({{"reshardAfterForward", {{"blocks", false}}}})) ==
        "fsdp.reshardAfterForward.blocks");
  CHECK(error_field(fsdp7b({{"reshardAfterForward", {{"lastblock", false}}}})) ==
        "fsdp.reshardAfterForward.lastblock");
  // fully_shard has no rate limiter
  CHECK(error_field(fsdp7b({{"limitAllGathers", false}})) == "fsdp.limitAllGathers");
  CHECK(error_field(fsdp7b({{"version", 1}, {"limitAllGathers", false}})) == "ok");
}

TEST_CASE("FSDP1 without the rate limiter: a layer's gathered block serves no other layer",
          "[allocator][trace][fsdp][sharding-settings]") {
  // Two layers, each gathering G = 20 MiB around its forward and backward and saving one
  // 1,000 B tensor. G is a large-pool request of a multiple of 2 MiB: its segment is exactly G
  // (CUDACachingAllocator.cpp get_allocation_size); the 1,000 B tensors share one 2 MiB
  // small-pool segment.
  const uint64_t G = 20ull << 20;
  auto spec = [&](bool own_streams) {
    trace::StepSpec s;
    for (uint32_t i = 0; i < 2; ++i) {
      trace::TraceLayer L;
      L.gather_forward = L.gather_backward = {G};
      L.tensors = {1000};
      L.output_bytes = 1000;
      if (own_streams) L.gather_stream = i + 1;
      s.layers.push_back(L);
    }
    s.ops = {{placement::OpKind::kForwardAll, 0},
             {placement::OpKind::kForwardAll, 1},
             {placement::OpKind::kLoss, 2},
             {placement::OpKind::kBackward, 1},
             {placement::OpKind::kBackward, 0}};
    s.impl = trace::OptimizerImpl::fused;
    s.steps = 1;
    return s;
  };
  const allocator::Stats limited = allocator::replay(trace::build(spec(false)).events, {});
  const allocator::Stats ahead = allocator::replay(trace::build(spec(true)).events, {});
  // with the limiter (one stream): layer 1 reuses layer 0's freed block: 20 + 2 MiB
  CHECK(limited.peak_reserved_bytes == G + (2ull << 20));
  // without it: layer 1 cannot take layer 0's block (still read by the GPU): 2 x 20 + 2 MiB
  CHECK(ahead.peak_reserved_bytes == 2 * G + (2ull << 20));
  // the tensors themselves are made and freed in the same program order
  CHECK(ahead.peak_allocated_bytes == limited.peak_allocated_bytes);
}

TEST_CASE("FSDP1 limitAllGathers false: the same allocated peak, a larger reserve",
          "[peak][fsdp][sharding-settings]") {
  const json v1 = {{"version", 1}, {"mixedPrecision", kBf16}};
  const json on = peak_result(fsdp7b(v1, true));
  const json off = peak_result(fsdp7b(with(v1, {{"limitAllGathers", false}}), true));
  // the same tensors in the same program order: the allocated peak moves only with how the
  // blocks of separate pools split (memory_allocated counts whole blocks), under 0.5 %
  CHECK(off["allocatedPeakBytes"].get<double>() ==
        Approx(on["allocatedPeakBytes"].get<double>()).epsilon(0.005));
  // each block's gathered bf16 parameters (2 x 202,383,360 B) held in the reserve for its own
  // layer: at least the 32 blocks' more than with the limiter, which reuses two blocks' worth
  CHECK(off["reservedPeakBytes"].get<double>() >=
        on["reservedPeakBytes"].get<double>() + 30 * 2 * kBlock);
  CHECK(has_assumption(off, "FSDP1 without its rate limiter"));
}

namespace {
// Linear(4096, 4096): 16,777,216 + 4,096 parameters; ZeRO-2 over 2 ranks, amp-bf16 (DeepSpeed's
// bf16 section: a 16-bit model, so the buckets are bf16, 2 B per element).
json zero_linear(uint32_t stage, const json& zero) {
  json r = {{"mlp", {{"sizes", {4096, 4096}}}},
            {"microBatch", 1},
            {"timeline", true},
            {"precision", "amp-bf16"},
            {"optimizer", "adamw"},
            {"zeroStage", stage},
            {"dataParallel", 2},
            {"simulateAllocator", false},
            {"searchMaxMicroBatch", false}};
  if (!zero.is_null()) r["zero"] = zero;
  return r;
}
double buckets(const json& r) {
  return r["breakdown"]["gradients"]["parts"]["reduceBuckets"].get<double>();
}
}  // namespace

TEST_CASE("DeepSpeed ZeRO-1/2: the gradient bucket lives through each backward",
          "[peak][zero][sharding-settings]") {
  // stage_1_and_2.py @ edaa7221 setup_buckets: torch.empty(reduce_bucket_size = 5e8, bf16) at
  // the first gradient hook = 1,000,000,000 B (a multiple of 512: no rounding); it dwarfs the
  // 64 MiB layer, so the peak is in the backward and holds it
  const json d = peak_result(zero_linear(2, nullptr));
  CHECK(d["peakPhase"] == "backward");
  CHECK(buckets(d) == 1e9);
  // overlap_comm: a second buffer of the same size
  CHECK(buckets(peak_result(zero_linear(2, {{"overlapComm", true}}))) == 2e9);
  // ZeRO-1 allocates it too (the hooks exist with contiguous_gradients)
  CHECK(buckets(peak_result(zero_linear(1, nullptr))) == 1e9);
  // a 1,048,576-element bucket (2 MiB): released by the backward's epilogue
  // (_release_ipg_buffers), so the optimizer step, the peak, does not hold it
  const json s = peak_result(zero_linear(2, {{"reduceBucketSize", 1048576}}));
  CHECK(s["peakPhase"] == "optimizer");
  CHECK(buckets(s) == 0);
  // contiguous_gradients False: no bucket
  const json c = peak_result(zero_linear(2, {{"contiguousGradients", false}}));
  CHECK(buckets(c) == 0);
  // allgather_bucket_size: runtime/utils.py all_gather_dp_groups gathers into the parameters
  // (all_gather_into_tensor, or narrow() views per shard): no memory of its own
  const json a = peak_result(
      zero_linear(2, {{"reduceBucketSize", 1048576}, {"allgatherBucketSize", 1000000}}));
  CHECK(a["allocatedPeakBytes"] == s["allocatedPeakBytes"]);
  CHECK(has_assumption(d, "ZeRO-1/2: DeepSpeed's gradient bucket"));
}

TEST_CASE("DeepSpeed ZeRO-3: the gradient bucket is held for the whole run",
          "[peak][zero][sharding-settings]") {
  // stage3.py @ edaa7221 _setup_for_real_optimizer: torch.empty(reduce_bucket_size) once per
  // communication dtype; 1,048,576 bf16 elements = 2,097,152 B, live at any peak
  const json r = peak_result(zero_linear(3, {{"reduceBucketSize", 1048576}}));
  CHECK(buckets(r) == 2097152.0);
  CHECK(timeline_point(r, "optimizer", -1)["gradientBytes"].get<double>() >= 2097152.0);
  // overlap_comm (the stage-3 default) does not double it
  CHECK(buckets(peak_result(
            zero_linear(3, {{"reduceBucketSize", 1048576}, {"overlapComm", true}}))) == 2097152.0);
  CHECK(has_assumption(r, "ZeRO-3: DeepSpeed's gradient bucket"));
}

TEST_CASE("DeepSpeed bucket settings that do not apply are errors naming the field",
          "[peak][zero][sharding-settings]") {
  json no_zero = zero_linear(0, {{"reduceBucketSize", 1000}});
  CHECK(error_field(no_zero) == "zero");
  CHECK(error_field(zero_linear(3, {{"allgatherBucketSize", 1000}})) == "zero.allgatherBucketSize");
  CHECK(error_field(zero_linear(2, {{"reduceBucketSize", 0}})) == "zero.reduceBucketSize");
  CHECK(error_field(zero_linear(2, {{"overlapcomm", true}})) == "zero.overlapcomm");
}
