// Context parallelism (ring attention) and expert parallelism through peakMemory: the ring's
// buffers hand-worked from torch's _attention.py, the sequence and gradient groups, the experts'
// share per rank against Megatron-Bridge's theoretical memory, routing assumptions, and errors.
#include <catch2/catch.hpp>
#include <string>
#include <utility>

#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

json run(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  REQUIRE(env.value("ok", false));
  return env["result"];
}

std::pair<std::string, std::string> error_of(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  if (env.value("ok", true)) return {"", ""};
  return {env["error"]["code"].get<std::string>(), env["error"]["field"].get<std::string>()};
}

// A Llama-shaped config (HF LlamaConfig): h 1024, 16 heads of 64, 4 KV heads, SwiGLU 2816.
json llama_config() {
  return {{"model_type", "llama"},        {"hidden_size", 1024},
          {"intermediate_size", 2816},    {"num_hidden_layers", 8},
          {"num_attention_heads", 16},    {"num_key_value_heads", 4},
          {"vocab_size", 32000},          {"max_position_embeddings", 16384},
          {"tie_word_embeddings", false}, {"rms_norm_eps", 1e-5}};
}

json llama_request(uint64_t seq, uint64_t cp) {
  json r = {{"model", {{"config", llama_config()}}},
            {"microBatch", 2},
            {"seqLen", seq},
            {"precision", "amp-bf16"},
            {"optimizer", "adamw"},
            {"simulateAllocator", false},
            {"searchMaxMicroBatch", false},
            {"timeline", false}};
  if (cp > 1) r["contextParallel"] = cp;
  return r;
}

uint64_t temps(const std::vector<trainmem::activations::LayerActivations::TempGroup>& g) {
  uint64_t n = 0;
  for (const auto& t : g) n += t.pieces * t.bytes;
  return n;
}

}  // namespace

TEST_CASE("context parallelism: a rank keeps the activations of seqLen / cp tokens",
          "[parallel][context]") {
  // torch context_parallel shards the sequence dim of every buffer (_attention.py
  // context_parallel_buffers): each rank runs the model on seqLen / cp tokens, and its SDPA
  // saves the local q, k, v, output and logsumexp as a plain SDPA would
  const json cp4 = run(llama_request(8192, 4));
  const json one = run(llama_request(2048, 1));
  CHECK(cp4["storedActivationBytes"] == one["storedActivationBytes"]);
  // Megatron-Bridge's activation formula (theoretical_memory_utils.py
  // _compute_activation_memory_bytes at NVIDIA-NeMo/Megatron-Bridge@067f987d) is linear in the
  // sequence and divides by tp x cp; with SDPA every saved tensor here is linear in the
  // sequence too, so the same quarter holds, but for one named difference: the loss, a 4-byte
  // fp32 scalar, is whole on every rank (so 4 ranks hold 3 x 4 B more than one)
  const json whole = run(llama_request(8192, 1));
  CHECK(4 * cp4["storedActivationBytes"].get<double>() ==
        whole["storedActivationBytes"].get<double>() + 3 * 4);
  CHECK(cp4["contextParallel"]["rankSeqLen"] == 2048);
  CHECK(cp4["contextParallel"]["seqLen"] == 8192);
  // the parameters are not sharded by CP
  CHECK(cp4["breakdown"]["weights"]["bytes"] == one["breakdown"]["weights"]["bytes"]);
}

TEST_CASE("context parallelism: ring attention's buffers per block, hand-worked",
          "[parallel][context]") {
  // torch/distributed/tensor/experimental/_attention.py (pytorch/pytorch@f2127dbd): T = 2 x 1024
  // local tokens, q = 16 x 64 = 1024, bf16 matmuls under autocast.
  //   KV cat buffer:        2 T q x 2 B          =  8,388,608
  //   all-gathered K/V:     cp x KV (cp = 4)     = 33,554,432 (all-to-all: one KV, 8,388,608)
  //   _SDPAMerger fp32:     3 x T q x 4 B        = 25,165,824
  //   logsumexps fp32:      2 x b a s x 4 B      =    262,144
  //   backward: dq/dk/dv fp32 accumulators 3 T q x 4 = 25,165,824; the KV cat and its exchange
  //   again (8,388,608 + 33,554,432); the dK/dV cat and the one received, fp32: 2 x 2 T q x 4 B
  //   = 33,554,432
  auto m = trainmem::parse_model_shared(trainmem::Obj(json{{"config", llama_config()}}, "model"));
  trainmem::activations::Settings st;
  st.micro_batch = 2;
  st.seq_len = 1024;
  st.precision = trainmem::activations::Precision::amp_bf16;
  st.attention = trainmem::activations::Attention::sdpa;
  const auto plain = trainmem::activations::transformer_activations(*m, st);
  st.context_parallel = 4;
  const auto ring = trainmem::activations::transformer_activations(*m, st);
  st.cp_all_gather = false;
  const auto a2a = trainmem::activations::transformer_activations(*m, st);
  const auto& p = plain.layers[1];
  CHECK(temps(ring.layers[1].forward_temps) - temps(p.forward_temps) ==
        8388608u + 33554432u + 25165824u + 262144u);
  CHECK(temps(ring.layers[1].backward_temps) - temps(p.backward_temps) ==
        25165824u + 8388608u + 33554432u + 33554432u);
  CHECK(temps(a2a.layers[1].forward_temps) - temps(p.forward_temps) ==
        8388608u + 8388608u + 25165824u + 262144u);
  // saved tensors are those of the local sequence
  CHECK(ring.layers[1].saved_bytes == p.saved_bytes);
  // the embeddings and the head have no attention
  CHECK(temps(ring.layers[0].forward_temps) == temps(plain.layers[0].forward_temps));
}

TEST_CASE("context parallelism: gradients reduced and ZeRO shards split over dp x cp",
          "[parallel][context]") {
  // Megatron-Bridge theoretical_memory_utils.py (NVIDIA-NeMo/Megatron-Bridge@067f987d,
  // estimate_training_memory): dense_optimizer_shard_size = data_parallel_size x
  // context_parallel_size; torchtitan shards FSDP over the dp_shard x cp mesh.
  // Parameters of the config: embeddings and head 2 x 32000 x 1024, 8 blocks of
  // q/o 2 x 1024^2 + k/v 2 x 1024 x 256 + SwiGLU 3 x 1024 x 2816 + 2 norms of 1024, final norm.
  const double P = 2.0 * 32000 * 1024 +
                   8 * (2.0 * 1024 * 1024 + 2.0 * 1024 * 256 + 3.0 * 1024 * 2816 + 2 * 1024) + 1024;
  json z = llama_request(8192, 4);
  z["zeroStage"] = 1;
  z["dataParallel"] = 2;
  const json r = run(z);
  CHECK(r["params"].get<double>() == P);
  // ZeRO-1: the fp32 Adam moments (8 B per parameter) split over 2 x 4 ranks
  CHECK(r["breakdown"]["optimizerState"]["bytes"].get<double>() == Approx(8 * P / 8).epsilon(1e-6));
  CHECK(r["contextParallel"]["gradientGroupRanks"] == 8);
  CHECK(r["contextParallel"]["dataParallel"] == 2);
  // FSDP's default shard group (dataParallel) grows by cp as well
  json f = llama_request(8192, 2);
  f["fsdp"] = json::object();
  f["dataParallel"] = 2;
  json g = llama_request(4096, 1);
  g["fsdp"] = json::object();
  g["dataParallel"] = 4;
  CHECK(run(f)["breakdown"]["weights"]["bytes"] == run(g)["breakdown"]["weights"]["bytes"]);
}

TEST_CASE("context parallelism: request errors name the field", "[parallel][context]") {
  json eager = llama_request(8192, 4);
  eager["attention"] = "eager";
  CHECK(error_of(eager) ==
        std::make_pair(std::string("inconsistent"), std::string("contextParallel")));
  // zig-zag needs 2 x cp chunks: 8196 is not a multiple of 8
  CHECK(error_of(llama_request(8196, 4)) ==
        std::make_pair(std::string("inconsistent"), std::string("seqLen")));
  json none = llama_request(8196, 4);  // a multiple of 4, not of 8
  none["contextParallelism"] = {{"loadBalance", "none"}};
  CHECK(error_of(none).first.empty());
  json bert = {{"model", {{"preset", "bert-large-uncased"}}},
               {"microBatch", 1},
               {"seqLen", 512},
               {"contextParallel", 2}};
  CHECK(error_of(bert) ==
        std::make_pair(std::string("unsupported"), std::string("contextParallel")));
  json lone = llama_request(8192, 1);
  lone["contextParallelism"] = {{"rotate", "alltoall"}};
  CHECK(error_of(lone).second == "contextParallelism");
}

namespace {

json mixtral(uint64_t ep, uint64_t dp) {
  json r = {{"model", {{"preset", "mixtral-8x7b"}}},
            {"microBatch", 1},
            {"seqLen", 512},
            {"precision", "amp-bf16"},
            {"optimizer", "adamw"},
            {"dataParallel", dp},
            {"simulateAllocator", false},
            {"searchMaxMicroBatch", false},
            {"timeline", false}};
  if (ep > 1) r["expertParallel"] = ep;
  return r;
}

}  // namespace

TEST_CASE("expert parallelism: a rank's parameters against Megatron-Bridge's most loaded shard",
          "[parallel][expert]") {
  // Megatron-Bridge theoretical_memory_utils.py (NVIDIA-NeMo/Megatron-Bridge@067f987d),
  // transcribed for Mixtral 8x7B (h 4096, 32 heads, 8 query groups, kv_channels 128, ffn 14336,
  // 8 experts, vocab 32000 untied, 32 layers, tp = pp = etp = 1, ep = 8):
  const double h = 4096, ffn = 14336, E = 8, L = 32, V = 32000, ep = 8;
  const double attention = 2 * h * h * ((1 + 8.0 / 32) * (128 * 32 / h));
  const double layernorms = 4 * h;        // layernorm_parameters_per_layer (weight and bias x 2)
  const double routed = 3 * h * ffn * E;  // ffn_projection_factor 3 (SwiGLU)
  const double dense = L * (attention + layernorms) + 2 * h + 2 * h * V;
  const double bridge = dense + L * routed / ep;
  // Named differences with HF's Mixtral tensors: RMSNorm has a weight only (2h per layer, h
  // for the final norm, against Bridge's 4h and 2h); the router (gate, h x E per layer) is in
  // HF's MoE block and not in Bridge's count
  const double hf_minus_bridge = L * (-2 * h + h * E) - h;
  const json r = run(mixtral(8, 8));
  CHECK(r["params"].get<double>() == bridge + hf_minus_bridge);
  CHECK(r["params"].get<double>() == 7242780672.0);
  CHECK(r["expertParallel"]["expertsPerRank"] == 1);
  // DDP, autocast: fp32 weights, fp32 grads, Adam's two fp32 moments per parameter of the rank
  // (Megatron without the distributed optimizer: 18 B, its 16-bit parameter copy included)
  const double state = r["breakdown"]["weights"]["bytes"].get<double>() +
                       r["breakdown"]["optimizerState"]["bytes"].get<double>();
  CHECK(state == 12 * r["params"].get<double>());
  (void)V;
}

TEST_CASE("expert parallelism: routed tokens, capacity factor and imbalance",
          "[parallel][expert]") {
  // The busiest rank's experts run imbalance x T x top-k token copies; SwiGLU keeps gate,
  // SiLU(gate), up and the product per copy: 4 x 512 x 2 x 14336 x 2 B = 117,440,512 per layer at
  // the mean. Imbalance 1.5 adds half of it in each of the 32 layers; a capacity factor of 1.25
  // (padded to capacity) a quarter.
  json even = mixtral(8, 8);
  json skew = even;
  skew["expertParallelism"] = {{"routingImbalance", 1.5}};
  json cap = even;
  cap["expertParallelism"] = {{"capacityFactor", 1.25}};
  const double base = run(even)["storedActivationBytes"].get<double>();
  CHECK(run(skew)["storedActivationBytes"].get<double>() - base == 32 * 58720256.0);
  CHECK(run(cap)["storedActivationBytes"].get<double>() - base == 32 * 29360128.0);
  const json c = run(cap);
  CHECK(c["expertParallel"]["dropless"] == false);
  CHECK(c["expertParallel"]["capacityFactor"] == 1.25);
}

TEST_CASE("expert parallelism: request errors name the field", "[parallel][expert]") {
  json dense = llama_request(1024, 1);
  dense["expertParallel"] = 2;
  CHECK(error_of(dense) ==
        std::make_pair(std::string("inconsistent"), std::string("expertParallel")));
  CHECK(error_of(mixtral(3, 3)).second == "expertParallel");  // 8 experts
  CHECK(error_of(mixtral(8, 4)).second == "expertParallel");  // 8 does not divide dp 4
  json both = mixtral(8, 8);
  both["expertParallelism"] = {{"capacityFactor", 1.0}, {"routingImbalance", 1.2}};
  CHECK(error_of(both).second == "expertParallelism.routingImbalance");
  // DeepSpeed refuses MoE under ZeRO-3 (runtime/engine.py: "MoE not supported with Stage 3")
  json zero3 = mixtral(8, 8);
  zero3["zeroStage"] = 3;
  CHECK(error_of(zero3) ==
        std::make_pair(std::string("unsupported"), std::string("expertParallel")));
  // FSDP's shard group of 4 (HSDP over dp 8) x tp 1 leaves no whole expert group for ep 8
  json hsdp = mixtral(8, 8);
  hsdp["fsdp"] = {{"shardingStrategy", "HYBRID_SHARD"}, {"shardGroupSize", 4}};
  CHECK(error_of(hsdp) ==
        std::make_pair(std::string("inconsistent"), std::string("expertParallel")));
  json lora = mixtral(8, 8);
  lora["lora"] = {{"rank", 8}};
  CHECK(error_of(lora).first == "unsupported");
}

namespace {

// Mixtral 8x7B's parameters (the test above): a rank's resident share at ep 8 is the dense
// part D (attention, norms, routers, embeddings, head) and one of the 8 experts of each layer,
// R = 32 x 3 x 4096 x 14336; the whole model D + 8R is Mixtral's published 46.7 B.
constexpr double kRoutedLocal = 32.0 * 3 * 4096 * 14336;  // 5,637,144,576
constexpr double kDense = 7242780672.0 - kRoutedLocal;    // 1,605,636,096
constexpr double kWhole = kDense + 8 * kRoutedLocal;      // 46,702,792,704

double line(const json& r, const char* name) { return r["breakdown"][name]["bytes"].get<double>(); }

}  // namespace

TEST_CASE("expert parallelism with ZeRO: experts shard over the expert-data-parallel group",
          "[parallel][expert]") {
  // Megatron-Core (NVIDIA/Megatron-LM@934c8260 megatron/core/parallel_state.py):
  // expert_data_parallel_size = world / (etp x ep x pp); dp 8, ep 8, tp = etp = pp = 1:
  // 8 / 8 = 1, so the experts' optimizer state is not sharded at all while the dense part's
  // is split over 8. Adam's two fp32 moments, 8 B per element:
  //   8 x D / 8 + 8 x R / 1 = 1,605,636,096 + 45,097,156,608 = 46,702,792,704 B.
  CHECK(kWhole == 46702792704.0);
  json z = mixtral(8, 8);
  z["zeroStage"] = 1;
  const json r8 = run(z);
  CHECK(line(r8, "optimizerState") == Approx(8 * kDense / 8 + 8 * kRoutedLocal).epsilon(1e-6));
  // dp 16: the expert group is 16 / 8 = 2: 8 x D / 16 + 8 x R / 2 = 23,351,396,352 B, which is
  // 8 B x the whole model / 16 (a dense model's distributed optimizer over 16 ranks)
  z["dataParallel"] = 16;
  const json r16 = run(z);
  CHECK(line(r16, "optimizerState") == Approx(8 * kWhole / 16).epsilon(1e-6));
  CHECK(line(r16, "optimizerState") ==
        Approx(8 * kDense / 16 + 8 * kRoutedLocal / 2).epsilon(1e-6));
  // ZeRO-1 keeps the rank's weights whole: DeepSpeed's 16-bit model under amp (2 B x (D + R)),
  // and shards its fp32 master copy like the moments: 4 B x (D / 16 + R / 2)
  CHECK(line(r16, "weights") == 2 * (kDense + kRoutedLocal));
  CHECK(line(r16, "masterWeights") == Approx(4 * kWhole / 16).epsilon(1e-6));
  // ZeRO-2 shards the 16-bit gradients the same way: 2 B x (D / 16 + R / 2)
  z["zeroStage"] = 2;
  CHECK(line(run(z), "gradients") == Approx(2 * kWhole / 16).epsilon(1e-6));
  CHECK(r16["messages"].dump().find("peak.assume.ep.shard") != std::string::npos);
}

TEST_CASE("expert parallelism with FSDP: the experts' shard group over dp x cp x tp / ep",
          "[parallel][expert]") {
  // torchtitan (pytorch/torchtitan@0119de15 torchtitan/distributed/parallel_dims.py) shards
  // the experts over dp_shard x cp x tp / ep ranks (etp 1), the rest over dp_shard x cp.
  // FSDP over dp 16, ep 8: the dense part over 16, the experts over 16 / 8 = 2; fp32 weights:
  //   4 x (D / 16 + R / 2) = 4 x 2,918,924,544 = 11,675,698,176 B = 4 B x the whole model / 16.
  json f = mixtral(8, 16);
  f["fsdp"] = json::object();
  const json r = run(f);
  CHECK(line(r, "weights") == Approx(4 * kWhole / 16).epsilon(1e-6));
  CHECK(line(r, "optimizerState") == Approx(8 * kWhole / 16).epsilon(1e-6));
}
