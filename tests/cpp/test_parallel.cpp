// Pipeline parallelism: in-flight micro-batches per schedule, hand-worked from the papers and
// checked against a small simulator of each rank's action list (written here, from the
// schedules' definitions); bubbles; and each stage's memory through peakMemory.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/parallel.hpp"

using trainmem::json;
using trainmem::parallel::bubble_fraction;
using trainmem::parallel::in_flight_chunks;
using S = trainmem::vocab::PipelineSchedule;

namespace {

// One action of a rank: +1 a chunk's forward (its activations made), -1 the backward that frees
// them (the full backward, or the backward for the input in zero-bubble schedules).
using Actions = std::vector<int>;

// The most chunks held at once along a rank's action list.
uint64_t peak_held(const Actions& a) {
  int64_t held = 0, top = 0;
  for (int x : a) top = std::max(top, held += x);
  return static_cast<uint64_t>(top);
}

// GPipe (torch ScheduleGPipe): every forward, then every backward.
Actions gpipe(uint64_t m) {
  Actions a(m, +1);
  a.insert(a.end(), m, -1);
  return a;
}

// 1F1B with `warmup` forwards first, then forward-backward pairs, then the remaining backwards
// (Megatron-Core forward_backward_pipelining_without_interleaving / with_interleaving: the same
// shape over m * v virtual micro-batches).
Actions one_f_one_b(uint64_t total, uint64_t warmup) {
  warmup = std::min(warmup, total);
  Actions a(warmup, +1);
  for (uint64_t k = warmup; k < total; ++k) {
    a.push_back(+1);
    a.push_back(-1);
  }
  a.insert(a.end(), warmup, -1);
  return a;
}

// torch ScheduleZBVZeroBubble._calculate_single_rank_operations: rebuilt step by step with the
// micro-batch counters, padded to max(2p - 1, m) micro-batches and the padding's actions dropped.
Actions zbv(uint64_t p, uint64_t r, uint64_t m) {
  const uint64_t n = std::max(2 * p - 1, m);
  uint64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  Actions a;
  auto F = [&](uint64_t& c) { a.push_back(c++ < m ? +1 : 0); };
  auto I = [&](uint64_t& c) { a.push_back(c++ < m ? -1 : 0); };
  for (uint64_t k = 0; k < 2 * (p - r) - 1; ++k) F(f0);
  for (uint64_t k = 0; k < r; ++k) {
    F(f1);
    F(f0);
  }
  for (uint64_t k = 0; k < p - r; ++k) {
    F(f1);
    I(b1);  // W follows at once and frees nothing more here
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) F(f0);
    I(b0);
    F(f1);
    I(b1);
  }
  for (uint64_t k = 0; k < r; ++k) {
    I(b0);
    I(b1);
  }
  for (uint64_t k = 0; k < p - r; ++k) I(b0);
  return a;
}

uint64_t simulated(S s, uint64_t p, uint64_t r, uint64_t m, uint64_t v) {
  switch (s) {
    case S::gpipe:
      return peak_held(gpipe(m));
    case S::one_f_one_b:
    case S::zb_h1:
      return peak_held(one_f_one_b(m, p - r - 1));
    case S::interleaved:
      return peak_held(one_f_one_b(m * v, 2 * (p - r - 1) + (v - 1) * p));
    case S::zb_v:
      return peak_held(zbv(p, r, m));
  }
  return 0;
}

json run(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

}  // namespace

TEST_CASE("in-flight micro-batches: hand-worked for p = 4, m = 8", "[parallel][pipeline]") {
  // GPipe (Huang et al. 2019): every stage holds all m = 8 micro-batches at the turn.
  for (uint64_t r = 0; r < 4; ++r) CHECK(in_flight_chunks(S::gpipe, 4, r, 8, 1) == 8);
  // 1F1B (Narayanan et al. 2021 Fig. 4): stage r holds p - r: 4, 3, 2, 1.
  for (uint64_t r = 0; r < 4; ++r) CHECK(in_flight_chunks(S::one_f_one_b, 4, r, 8, 1) == 4 - r);
  // fewer micro-batches than stages: at most m (Megatron caps the warmup at m)
  CHECK(in_flight_chunks(S::one_f_one_b, 4, 0, 2, 1) == 2);
  // Interleaved, v = 2: stage 0 holds p(1 + (p-1)/(pv)) = 5.5 micro-batches = 11 chunks
  // (Korthikanti et al. 2022 §4.2.3; Megatron's theoretical_memory_usage penalty), the last
  // stage (p - 1 warmup rounds fewer) 2(0) + 4 + 1 = 5 chunks.
  CHECK(in_flight_chunks(S::interleaved, 4, 0, 8, 2) == 11);
  CHECK(in_flight_chunks(S::interleaved, 4, 3, 8, 2) == 5);
  // ZB-H1 keeps 1F1B's peak (Qi et al. 2023 §3.1).
  CHECK(in_flight_chunks(S::zb_h1, 4, 1, 8, 1) == 3);
  // ZB-V: every rank holds 2p = 8 half-stage chunks, p micro-batches (Qi et al. 2023 §6).
  for (uint64_t r = 0; r < 4; ++r) CHECK(in_flight_chunks(S::zb_v, 4, r, 8, 2) == 8);
}

TEST_CASE("in-flight micro-batches match a simulation of each rank's actions",
          "[parallel][pipeline]") {
  for (S s : {S::gpipe, S::one_f_one_b, S::zb_h1, S::interleaved, S::zb_v})
    for (uint64_t p = 1; p <= 6; ++p)
      for (uint64_t m = 1; m <= 14; ++m)
        for (uint64_t v : {1u, 2u, 3u}) {
          if ((s == S::interleaved) != (v > 1) && s != S::zb_v) continue;
          if (s == S::zb_v && v != 2) continue;
          for (uint64_t r = 0; r < p; ++r) {
            INFO("schedule " << int(s) << " p " << p << " rank " << r << " m " << m << " v " << v);
            CHECK(in_flight_chunks(s, p, r, m, v) == simulated(s, p, r, m, v));
          }
        }
}

TEST_CASE("pipeline bubbles, hand-worked", "[parallel][pipeline]") {
  // Narayanan et al. 2021 §2.2: (p-1)/m of the ideal time: p = 4, m = 8: 3 of 11
  CHECK(bubble_fraction(S::one_f_one_b, 4, 8, 1) == Approx(3.0 / 11));
  CHECK(bubble_fraction(S::gpipe, 4, 8, 1) == Approx(3.0 / 11));
  // interleaved v = 2: (p-1)/v = 1.5 beside 8
  CHECK(bubble_fraction(S::interleaved, 4, 8, 2) == Approx(1.5 / 9.5));
  // ZB-H1 with T_F = T_B = T_W: (p - 1) beside 3m: 3 of 27
  CHECK(bubble_fraction(S::zb_h1, 4, 8, 1) == Approx(3.0 / 27));
  CHECK(bubble_fraction(S::zb_v, 4, 8, 2) == 0);
}

TEST_CASE("pipeline stages split the layers: embeddings first, head last", "[parallel][pipeline]") {
  using trainmem::parallel::split_layers;
  // 14 chain layers = 12 blocks: 3 stages of 4 blocks
  const auto s = split_layers(S::one_f_one_b, 3, 1, 14, {});
  REQUIRE(s.size() == 3);
  CHECK(s[0][0] == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(s[1][0] == std::vector<uint32_t>{5, 6, 7, 8});
  CHECK(s[2][0] == std::vector<uint32_t>{9, 10, 11, 12, 13});
  // interleaved p = 2, v = 2: rank 0 holds model chunks 0 and 2
  const auto i = split_layers(S::interleaved, 2, 2, 14, {});
  CHECK(i[0][0] == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(i[0][1] == std::vector<uint32_t>{7, 8, 9});
  CHECK(i[1][1] == std::vector<uint32_t>{10, 11, 12, 13});
  // ZB-V p = 2: rank 0 holds model chunks 0 and 3 (the V), so both the embeddings and the head
  const auto v = split_layers(S::zb_v, 2, 2, 14, {});
  CHECK(v[0][1] == std::vector<uint32_t>{10, 11, 12, 13});
  // uneven: 2 and 10 blocks
  const auto u = split_layers(S::one_f_one_b, 2, 1, 14, {2, 10});
  CHECK(u[0][0] == std::vector<uint32_t>{0, 1, 2});
}

TEST_CASE("each stage holds its layers' weights; the last a copy of the tied embedding",
          "[parallel][pipeline]") {
  // GPT-2 124M (modeling_gpt2.py): wte 50257 x 768, wpe 1024 x 768; a block 12h^2 + 13h =
  // 7,087,872; ln_f 2 x 768; the head is tied to wte. Two stages of 6 blocks, fp32.
  const json r = run({{"model", {{"preset", "gpt2"}}},
                      {"microBatch", 1},
                      {"seqLen", 128},
                      {"pipelineParallel", 2},
                      {"gradientAccumulationSteps", 4},
                      {"simulateAllocator", false},
                      {"searchMaxMicroBatch", false}});
  const json& st = r["pipelineParallel"]["perStage"];
  REQUIRE(st.size() == 2);
  const double wte = 50257.0 * 768, wpe = 1024.0 * 768, block = 7087872;
  CHECK(st[0]["params"].get<double>() == wte + wpe + 6 * block);
  // Megatron-Core keeps the word embeddings on the last stage for the tied head
  CHECK(st[1]["params"].get<double>() == 6 * block + 2 * 768 + wte);
  CHECK(st[0]["weightsBytes"].get<double>() == 4 * (wte + wpe + 6 * block));
  CHECK(st[0]["inFlightMicroBatches"] == 2);
  CHECK(st[1]["inFlightMicroBatches"] == 1);
  CHECK(r["pipelineParallel"]["bubbleFraction"].get<double>() == Approx(1.0 / 5));
}

TEST_CASE("pipeline request errors name the field", "[parallel][pipeline]") {
  auto code_of = [](const json& req) {
    const json env = json::parse(trainmem::call("peakMemory", req.dump()));
    return std::make_pair(
        env.value("ok", true) ? std::string() : env["error"]["code"].get<std::string>(),
        env.value("ok", true) ? std::string() : env["error"]["field"].get<std::string>());
  };
  const json base = {{"model", {{"preset", "gpt2"}}}, {"microBatch", 1}, {"seqLen", 128}};
  json a = base;
  a["schedule"] = "gpipe";
  CHECK(code_of(a) == std::make_pair(std::string("inconsistent"), std::string("schedule")));
  json b = base;
  b["pipelineParallel"] = 2;
  b["schedule"] = "pipedream";
  CHECK(code_of(b).second == "schedule");
  json c = base;
  c["pipelineParallel"] = 24;  // 12 blocks
  CHECK(code_of(c) == std::make_pair(std::string("inconsistent"), std::string("pipelineParallel")));
  json d = base;
  d["pipelineParallel"] = 2;
  d["stageBlocks"] = {5, 5};
  CHECK(code_of(d) == std::make_pair(std::string("inconsistent"), std::string("stageBlocks")));
}

namespace {

// A Llama-shaped config (HF LlamaConfig fields): RMSNorm, SwiGLU, GQA, untied head.
json llama_config() {
  return {{"model_type", "llama"},        {"hidden_size", 1024},
          {"intermediate_size", 2816},    {"num_hidden_layers", 8},
          {"num_attention_heads", 16},    {"num_key_value_heads", 4},
          {"vocab_size", 32000},          {"max_position_embeddings", 2048},
          {"tie_word_embeddings", false}, {"rms_norm_eps", 1e-5}};
}

// Megatron-LM megatron/training/theoretical_memory_usage.py (NVIDIA/Megatron-LM @ d98e8a6)
// compute_weight_and_optimizer_memory, dense model, tp = 1: the parameters on the most loaded
// pipeline shard (the first: 1/pp of the layers and one embedding), transcribed here.
double megatron_most_loaded_params(double h, double ffn, double a, double g, double L, double V,
                                   double pp) {
  const double self_attn = 2 * h * h * (1 + g / a);  // query_projection_size = h
  const double dense_mlp = 2 * h * ffn * 1.5;        // swiglu: gated_linear_multiplier 3/2
  const double norms = 2 * h * 1;                    // RMSNorm: norm_size 1
  const double final_norm = h;
  const double tp_sharded = (self_attn + dense_mlp) * L;
  const double replicated = norms * L + final_norm;
  return tp_sharded / pp + h * V + replicated / pp;
}

}  // namespace

TEST_CASE("Megatron's theoretical weight and optimizer memory, stage by stage",
          "[parallel][pipeline][megatron]") {
  const double h = 1024, ffn = 2816, a = 16, g = 4, L = 8, V = 32000, pp = 4;
  const double megatron = megatron_most_loaded_params(h, ffn, a, g, L, V, pp);
  const json r = run({{"model", {{"config", llama_config()}}},
                      {"microBatch", 1},
                      {"seqLen", 256},
                      {"precision", "amp-bf16"},
                      {"optimizer", "adamw"},
                      {"pipelineParallel", 4},
                      {"gradientAccumulationSteps", 8},
                      {"simulateAllocator", false},
                      {"searchMaxMicroBatch", false}});
  const json& s0 = r["pipelineParallel"]["perStage"][0];
  // Named difference: Megatron spreads the final norm's h parameters over the stages
  // (replicated_params_in_transformer_block / pp); it lives on the last stage only.
  CHECK(s0["params"].get<double>() == megatron - h / pp);
  // Bytes per parameter. Megatron (no distributed optimizer): 18 = bf16 params 2 + fp32 main
  // grads 4 + fp32 main params 4 + Adam 8. torch.autocast trains the fp32 parameters: 4 + 4 + 8
  // = 16. Named difference: Megatron's 16-bit parameter copy (2 B), which autocast makes per op.
  const double state = s0["weightsBytes"].get<double>() + s0["gradientsBytes"].get<double>() +
                       s0["optimizerStateBytes"].get<double>();
  CHECK(state == (megatron - h / pp) * 16);
  CHECK(megatron * 18 - state == Approx((h / pp) * 18 + (megatron - h / pp) * 2));
}

TEST_CASE("Megatron's theoretical activation memory of the first stage, with named differences",
          "[parallel][pipeline][megatron]") {
  // Korthikanti et al. 2022's ops (native GELU, 16-bit, 1-byte dropout masks) are HF GPT-2
  // with activation "gelu" under bf16 (test_activations.cpp). 8 layers on 4 stages of 2.
  const json cfg = {{"model_type", "gpt2"},
                    {"n_embd", 1024},
                    {"n_head", 16},
                    {"n_layer", 8},
                    {"n_inner", 4096},
                    {"vocab_size", 1000},
                    {"n_positions", 1024},
                    {"resid_pdrop", 0.1},
                    {"attn_pdrop", 0.1},
                    {"embd_pdrop", 0.1},
                    {"activation_function", "gelu"}};
  auto first_stage = [&](uint64_t m) {
    const json r = run({{"model", {{"config", cfg}}},
                        {"microBatch", 2},
                        {"seqLen", 512},
                        {"precision", "bf16"},
                        {"attention", "eager"},
                        {"optimizer", "sgd"},
                        {"pipelineParallel", 4},
                        {"gradientAccumulationSteps", m},
                        {"simulateAllocator", false},
                        {"searchMaxMicroBatch", false}});
    return r["pipelineParallel"]["perStage"][0]["activationsBytes"].get<double>();
  };
  const double s = 512, b = 2, h = 1024, a = 16, L = 8, p = 4, sb = s * b, sbh = sb * h;
  // megatron/training/theoretical_memory_usage.py compute_activation_memory (@ d98e8a6), tp = 1,
  // ffn = 4h: per layer sbh(18 + 4 ffn/h) = 34 sbh, times L; the embedding's input 8sbp and
  // dropout mask sbhp; times min(1, m/p) micro-batches in flight on the first stage.
  auto megatron = [&](double m) {
    return (34 * sbh * L + 8 * sb * p + sbh * p) * std::min(1.0, m / p);
  };
  // What 3 more micro-batches in flight add (m = 8: 4 in flight; m = 1: 1).
  const double ours = first_stage(8) - first_stage(1);
  const double theirs = megatron(8) - megatron(1);
  // Named differences, per micro-batch in flight:
  // - 5as^2b per layer: eager attention keeps its scores, probabilities and mask; Megatron's
  //   formula assumes the attention core recomputed (selective recomputation);
  // - 16sb per layer: LayerNorm's fp32 mean and rstd (two norms), not in Korthikanti's count;
  // - 2sbh: the stage's output stays referenced until its backward (torch.distributed.pipelining
  //   keeps it in fwd_cache), where Megatron frees its data once sent (deallocate_output_tensor);
  // - 8s: the embedding's int64 position indices;
  // - minus 8sb: Megatron counts the token ids per micro-batch in flight; here the batch of the
  //   running micro-batch only (the loader's earlier ones are freed).
  const double per_micro_batch = 2 * (5 * a * s * s * b + 16 * sb) + 2 * sbh + 8 * s - 8 * sb;
  CHECK(ours == Approx(theirs + 3 * per_micro_batch).epsilon(1e-12));
}
