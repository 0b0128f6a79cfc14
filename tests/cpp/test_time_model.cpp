// Time model: FLOPs against published formulas and parameter counts; the step-time formula by
// hand.
#include <catch2/catch.hpp>

#include "trainmem/error.hpp"
#include "trainmem/time_model.hpp"

using namespace trainmem;
using namespace trainmem::time_model;

namespace {
ModelDescription gpt_like(uint64_t layers, uint64_t h, uint64_t vocab) {
  ModelDescription m;
  m.source = "config";
  m.arch.model_type = "gpt2";
  m.arch.layers = layers;
  m.arch.hidden = h;
  m.arch.heads = h / 128;
  m.arch.intermediate = 4 * h;
  m.arch.vocab = vocab;
  return m;
}
}  // namespace

TEST_CASE("time model: training FLOPs per token equal Megatron's formula (Narayanan 2021)",
          "[time_model]") {
  // GPT-3 175B: l = 96, h = 12288, s = 2048, V = 51200 (Brown et al. 2020, Table 2.1).
  const double l = 96, h = 12288, s = 2048, V = 51200;
  const ForwardFlops f = forward_flops_per_token(gpt_like(96, 12288, 51200), 2048);
  CHECK(f.method == "architecture");
  CHECK(f.layers == 96);
  // Narayanan et al. 2021 sec. 5.1: without recompute 72 B s l h^2 (1 + s/6h + V/12lh) FLOPs
  // per iteration; divided by the B*s tokens.
  const double no_recompute = 72 * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  CHECK(3 * f.total == Approx(no_recompute).epsilon(1e-12));
  // With full activation recompute (one extra forward of the blocks): 96 B s l h^2 (1 + s/6h +
  // V/16lh) -- the formula as printed in the paper.
  const double with_recompute = 96 * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(3 * f.total + f.blocks == Approx(with_recompute).epsilon(1e-12));
}

TEST_CASE("time model: block matmul FLOPs are 2 x non-embedding weights (Llama-2-7B, Mistral-7B)",
          "[time_model]") {
  // Llama-2-7B: 6,738,415,616 parameters (model index) minus embeddings and LM head
  // (2 x 32000 x 4096) minus RMSNorm weights (65 x 4096) = 6,476,005,376 matmul weights.
  ModelDescription llama;
  llama.arch.model_type = "llama";
  llama.arch.layers = 32;
  llama.arch.hidden = 4096;
  llama.arch.heads = 32;
  llama.arch.kv_heads = 32;
  llama.arch.intermediate = 11008;
  llama.arch.vocab = 32000;
  llama.arch.gated_mlp = true;
  const uint64_t llama_matmul = 6738415616ULL - 2ULL * 32000 * 4096 - 65ULL * 4096;
  CHECK(forward_flops_per_token(llama, 4096).block_matmul == 2.0 * llama_matmul);
  // Mistral-7B-v0.1 (grouped-query attention, 8 KV heads): 7,241,732,096 parameters.
  ModelDescription mistral = llama;
  mistral.arch.model_type = "mistral";
  mistral.arch.kv_heads = 8;
  mistral.arch.intermediate = 14336;
  const uint64_t mistral_matmul = 7241732096ULL - 2ULL * 32000 * 4096 - 65ULL * 4096;
  const ForwardFlops f = forward_flops_per_token(mistral, 4096);
  CHECK(f.block_matmul == 2.0 * mistral_matmul);
  // Attention scores: 4 s h per layer (Narayanan 2021), LM head 2 h V (untied or tied alike).
  CHECK(f.attention == 32.0 * 4 * 4096 * 4096);
  CHECK(f.head == 2.0 * 4096 * 32000);
}

TEST_CASE("time model: a bare parameter count falls back to Kaplan's 6N", "[time_model]") {
  ModelDescription m;
  m.params = 124439808;  // GPT-2 (model index)
  const ForwardFlops f = forward_flops_per_token(m, 1024);
  CHECK(f.method == "parameters");
  CHECK(3 * f.total == 6.0 * 124439808);  // Kaplan et al. 2020: C ~ 6N per token
  CHECK(!f.assumptions.empty());
  ModelDescription empty;
  CHECK_THROWS_AS(forward_flops_per_token(empty, 10), RequestError);
}

TEST_CASE("time model: BERT classification head is spread over the sequence", "[time_model]") {
  ModelDescription bert;
  bert.arch.model_type = "bert";
  bert.arch.layers = 24;
  bert.arch.hidden = 1024;
  bert.arch.heads = 16;
  bert.arch.intermediate = 4096;
  bert.arch.vocab = 30522;
  bert.arch.encoder_only = true;
  bert.arch.num_labels = 2;
  const ForwardFlops f = forward_flops_per_token(bert, 512);
  // Pooler 1024x1024 + classifier 1024x2 on the [CLS] token only: 2 FLOPs per weight / 512.
  CHECK(f.head == Approx((2.0 * 1024 * 1024 + 2.0 * 1024 * 2) / 512));
  // Per sample forward: 24 x (24 s h^2 + 4 s^2 h) (Narayanan 2021) = 335.0 GFLOP.
  const double per_sample = 24.0 * (24.0 * 512 * 1024 * 1024 + 4.0 * 512 * 512 * 1024);
  CHECK(f.blocks * 512 == Approx(per_sample).epsilon(1e-12));
}

TEST_CASE("time model: step time by hand (Hockney t0 + W / r)", "[time_model]") {
  ForwardFlops f;
  f.total = 1e9;  // forward FLOPs per token
  f.blocks = 8e8;
  f.layers = 10;
  Device d;
  d.peak_flops = 100e12;
  d.memory_bandwidth = 1e12;
  Knobs k;
  k.utilization = 0.5;
  k.overhead_per_layer_s = 0.001;
  StepInputs in;
  in.micro_batch = 2;
  in.accumulation_steps = 3;
  in.data_parallel = 4;
  in.seq_len = 1000;
  in.recompute_flops_per_token = f.blocks;
  in.optimizer_bytes = 5e9;
  const StepTime t = estimate_step(f, in, d, k);
  // micro-step: 2000 tokens x (3e9 + 0.8e9) FLOPs / 50e12 FLOP/s + 10 x 1 ms
  const double micro = 2000 * 3.8e9 / 50e12 + 0.010;
  CHECK(t.micro_step_seconds == Approx(micro));
  CHECK(t.optimizer_seconds == Approx(0.005));  // 5 GB at 1 TB/s
  CHECK(t.step_seconds == Approx(3 * micro + 0.005));
  CHECK(t.samples_per_second == Approx(24 / (3 * micro + 0.005)));  // 2 x 3 x 4 samples
  CHECK(t.model_flops_utilization == Approx(3 * 2000 * 3e9 / (100e12 * (3 * micro + 0.005))));
  // All-reduce on 4 ranks: ring moves 2(N-1)/N of the buffer.
  d.interconnect_bandwidth = 100e9;
  in.allreduce_bytes = 4e9;
  CHECK(estimate_step(f, in, d, k).allreduce_seconds == Approx(2.0 * 3 / 4 * 4e9 / 100e9));
}

TEST_CASE("time model: optimizer traffic per parameter", "[time_model]") {
  // fp32 AdamW: read+write weights (8), read gradient (4), read+write 2 states (16) = 28 B.
  CHECK(optimizer_bytes_per_param(2, 4, 4) == 28);
  CHECK(optimizer_bytes_per_param(0, 4, 4) == 12);  // plain SGD
}

TEST_CASE("time model: T5 counts its encoder over seqLen and its decoder over targetLen",
          "[time_model][t5]") {
  // t5-small (google-t5/t5-small config.json: d_model 512, 8 heads x d_kv 64, d_ff 2048,
  // relu, 6 + 6 layers, vocab 32128); s = 512 input tokens, t = 128 decoder tokens, by hand:
  //   encoder matmuls per input token: 6 x 2 x (4 x 512 x 512 + 2 x 512 x 2048) = 37,748,736
  //   decoder cross-attention k, v on the encoder's tokens: 6 x 2 x 2 x 512 x 512 = 6,291,456
  //   decoder per decoder token 6 x 2 x (6 x 512 x 512 + 2 x 512 x 2048) = 44,040,192, x t/s
  //     = 11,010,048                                                  -> matmuls 55,050,240
  //   scores: encoder 6 x 4 x 512 x 512 = 6,291,456; decoder (t/s) x 6 x 4 x (128 + 512) x 512
  //     = 1,966,080                                                   -> attention 8,257,536
  //   LM head (t/s) x 2 x 512 x 32128 = 8,224,768
  ModelDescription m;
  m.params = 60506624;
  Architecture& a = m.arch;
  a.model_type = "t5";
  a.layers = a.encoder_layers = 6;
  a.hidden = 512;
  a.heads = 8;
  a.head_dim = 64;
  a.intermediate = 2048;
  a.vocab = 32128;
  const ForwardFlops f = forward_flops_per_token(m, 512, 128);
  CHECK(f.method == "architecture");
  CHECK(f.layers == 12);
  CHECK(f.block_matmul == Approx(55050240.0).epsilon(1e-12));
  CHECK(f.attention == Approx(8257536.0).epsilon(1e-12));
  CHECK(f.head == Approx(8224768.0).epsilon(1e-12));
  CHECK(f.total == Approx(71532544.0).epsilon(1e-12));
  // without targetLen the decoder runs over seqLen: r = 1
  const ForwardFlops g = forward_flops_per_token(m, 512);
  CHECK(g.head == Approx(2.0 * 512 * 32128).epsilon(1e-12));
}
