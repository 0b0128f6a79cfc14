// Peak memory features checked against hand calculations from their sources: ZeRO (Rajbhandari
// et al. 2020; DeepSpeed's estimator), LoRA (PEFT's published trainable count), QLoRA (Dettmers
// et al. 2023), tensor parallelism, the timeline, and the maxMicroBatch search.
#include <catch2/catch.hpp>

#include <cmath>

#include "io/request.hpp"
#include "peak/peak_lora.hpp"
#include "trainmem/api.hpp"
#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;

namespace {
json run(const json& req) {
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}
json llama7b(json extra) {
  json r = {{"model", {{"preset", "llama-2-7b"}}}, {"microBatch", 1}, {"seqLen", 512}};
  for (auto it = extra.begin(); it != extra.end(); ++it) r[it.key()] = it.value();
  return r;
}
constexpr double P7 = 6738415616.0;  // Llama-2-7b-hf, model index
// Each tensor (or shard) is counted as the caching allocator rounds it (up to 512 B): 291
// tensors change a sum of gigabytes by less than this fraction.
constexpr double kRounding = 2e-4;
}  // namespace

TEST_CASE("peak: ZeRO-2 with mixed precision follows the ZeRO paper's 2 + 2 + K split", "[peak]") {
  const json r = run(llama7b({{"precision", "amp-bf16"},
                              {"optimizer", "adamw"},
                              {"zeroStage", 2},
                              {"dataParallel", 8},
                              {"simulateAllocator", false}}));
  // Rajbhandari et al. 2020, section 3: 16-bit params 2P, 16-bit grads 2P, fp32 master + Adam
  // moments K = 12 B/param; ZeRO-2 partitions grads and K over N = 8 ranks. (Each tensor's
  // share is rounded up to the allocator's 512 B: kRounding.)
  CHECK(r["breakdown"]["weights"]["bytes"].get<double>() == Approx(2 * P7).epsilon(kRounding));
  CHECK(r["breakdown"]["masterWeights"]["bytes"].get<double>() ==
        Approx(4 * P7 / 8).epsilon(kRounding));
  CHECK(r["breakdown"]["optimizerState"]["bytes"].get<double>() ==
        Approx(8 * P7 / 8).epsilon(kRounding));
  // gradients at the peak are at most 2P/N
  CHECK(r["breakdown"]["gradients"]["bytes"].get<double>() <= 2 * P7 / 8 * (1 + kRounding));
}

TEST_CASE("peak: ZeRO-3 partitions the weights too; stage 0 keeps everything", "[peak]") {
  const json z3 = run(llama7b({{"precision", "amp-bf16"},
                               {"zeroStage", 3},
                               {"dataParallel", 8},
                               {"simulateAllocator", false}}));
  CHECK(z3["breakdown"]["weights"]["bytes"].get<double>() == Approx(2 * P7 / 8).epsilon(kRounding));
  const json z0 =
      run(llama7b({{"precision", "fp32"}, {"optimizer", "adamw"}, {"simulateAllocator", false}}));
  // fp32 AdamW: 4 (weights) + 8 (moments) B/param (+ 4 B step per tensor); Transformer Math 101
  CHECK(z0["breakdown"]["weights"]["bytes"].get<double>() == Approx(4 * P7).epsilon(kRounding));
  CHECK(z0["breakdown"]["optimizerState"]["bytes"].get<double>() ==
        Approx(8 * P7).epsilon(kRounding));
}

TEST_CASE("peak: LoRA r=8 on q_proj, v_proj of Llama-2-7b trains 4,194,304 parameters", "[peak]") {
  // PEFT print_trainable_parameters() for meta-llama/Llama-2-7b-hf, r=8, q_proj+v_proj:
  // "trainable params: 4,194,304 || all params: 6,742,609,920" = 32 x 8 x (4096+4096) x 2.
  const json r = run(llama7b({{"precision", "bf16"},
                              {"simulateAllocator", false},
                              {"lora", {{"rank", 8}, {"targetModules", {"q_proj", "v_proj"}}}}}));
  CHECK(r["trainableParams"] == 4194304);
  CHECK(r["params"] == 6742609920ULL);
  // gradients and AdamW state only for the adapters (bf16 run: adapters fp32, grads 2 B? no:
  // adapters are fp32 parameters, so their grads and moments are fp32)
  CHECK(r["breakdown"]["optimizerState"]["bytes"].get<double>() < 4194304.0 * 8 + 4 * 32 * 4 + 1);
  // frozen base in bf16 (2 B) + adapters in fp32 (4 B)
  CHECK(r["breakdown"]["weights"]["bytes"].get<double>() ==
        Approx(2 * P7 + 4 * 4194304.0).epsilon(kRounding));
}

TEST_CASE("peak: QLoRA stores the block linears in 4.127 bits", "[peak]") {
  const json r = run(llama7b({{"precision", "amp-bf16"},
                              {"simulateAllocator", false},
                              {"lora", {{"rank", 8}, {"qlora", true}, {"baseDtype", "bf16"}}}}));
  // Dettmers et al. 2023: NF4 (4 bits) + double-quantised absmax (8/64 + 32/(64*256) bits).
  // Llama-2-7b block linears: 32 x (4 x 4096^2 + 3 x 4096 x 11008) = 6,476,005,376; the rest
  // (embeddings, lm_head, norms) 262,410,240 stay in the base dtype (bf16); adapters
  // 4,194,304 fp32.
  const double lin = 6476005376.0, rest = P7 - lin;
  const double expected = lin * (0.5 + 1.0 / 64 + 4.0 / (64 * 256)) + rest * 2 + 4194304.0 * 4;
  CHECK(r["breakdown"]["weights"]["bytes"].get<double>() == Approx(expected).epsilon(kRounding));
  // the base loaded in fp32 (from_pretrained's default torch_dtype): the rest 4 B each
  const json fp32_base = run(llama7b({{"precision", "amp-bf16"},
                                      {"simulateAllocator", false},
                                      {"lora", {{"rank", 8}, {"qlora", true}}}}));
  CHECK(fp32_base["breakdown"]["weights"]["bytes"].get<double>() ==
        Approx(expected + rest * 2).epsilon(kRounding));
}

TEST_CASE("peak: tensor parallel splits weights; sequence parallel splits activations", "[peak]") {
  const json t1 =
      run(llama7b({{"precision", "bf16"}, {"attention", "eager"}, {"simulateAllocator", false}}));
  const json t2 = run(llama7b({{"precision", "bf16"},
                               {"attention", "eager"},
                               {"tensorParallel", 2},
                               {"simulateAllocator", false}}));
  const json sp = run(llama7b({{"precision", "bf16"},
                               {"attention", "eager"},
                               {"tensorParallel", 2},
                               {"sequenceParallel", true}}));
  CHECK(t2["breakdown"]["weights"]["bytes"].get<double>() ==
        Approx(t1["breakdown"]["weights"]["bytes"].get<double>() / 2).epsilon(kRounding));
  CHECK(t2["storedActivationBytes"].get<double>() < t1["storedActivationBytes"].get<double>());
  CHECK(sp["storedActivationBytes"].get<double>() < t2["storedActivationBytes"].get<double>());
}

TEST_CASE("peak: breakdown sums to the peak, the timeline walks the step", "[peak]") {
  const json r = run(llama7b({{"precision", "amp-bf16"}, {"checkpointing", "full"}}));
  // one model: the lines are what is live at the allocated peak, the runtime the device memory
  // outside the allocator, and peakBytes their sum
  double sum = 0;
  for (auto& kv : r["breakdown"].items()) {
    sum += kv.value()["bytes"].get<double>();
    CHECK(!kv.value()["source"].get<std::string>().empty());
  }
  CHECK(sum == r["peakBytes"].get<double>());
  CHECK(sum - r["breakdown"]["runtime"]["bytes"].get<double>() ==
        r["allocatedPeakBytes"].get<double>());
  const json& tl = r["timeline"];
  CHECK(tl.front()["phase"] == "forward");
  CHECK(tl[tl.size() - 2]["phase"] == "optimizer");
  CHECK(tl.back()["phase"] == "zero_grad");
  bool loss = false, recompute = false, backward = false;
  double highest = 0;
  for (const auto& p : tl) {
    loss |= p["phase"] == "loss";
    recompute |= p["phase"] == "recompute";
    backward |= p["phase"] == "backward";
    highest = std::max(highest, p["totalBytes"].get<double>());
  }
  CHECK((loss && recompute && backward));
  CHECK(highest == r["allocatedPeakBytes"].get<double>());
  CHECK(r["recomputeFraction"].get<double>() > 0.2);
}

TEST_CASE("peak: checkpointing lowers the peak; strategies run through the placement engine",
          "[peak]") {
  const json none = run(llama7b({{"precision", "bf16"}, {"microBatch", 4}, {"seqLen", 2048}}));
  const json full = run(llama7b(
      {{"precision", "bf16"}, {"microBatch", 4}, {"seqLen", 2048}, {"checkpointing", "full"}}));
  CHECK(full["peakBytes"].get<double>() < none["peakBytes"].get<double>());
  for (const char* s : {"sqrt", "attention-recompute"}) {
    INFO(s);
    const json r = run(llama7b({{"precision", "bf16"},
                                {"microBatch", 4},
                                {"seqLen", 2048},
                                {"attention", "eager"},
                                {"checkpointing", s}}));
    CHECK(r["peakBytes"].get<double>() > 0);
  }
  const json seq = run(llama7b(
      {{"precision", "bf16"}, {"checkpointing", {{"strategy", "sequential"}, {"segments", 4}}}}));
  CHECK(seq["storedActivationBytes"].get<double>() > 0);
}

TEST_CASE("peak: maxMicroBatch is the largest micro-batch that fits", "[peak]") {
  const json base = llama7b({{"precision", "bf16"},
                             {"optimizer", "adam-8bit"},
                             {"gpu", "a100-80gb"},
                             {"checkpointing", "full"}});
  const json r = run(base);
  const uint64_t m = r["maxMicroBatch"];
  REQUIRE(m >= 1);
  json at = base, above = base;
  at["microBatch"] = m;
  above["microBatch"] = m + 1;
  CHECK(run(at)["fits"] == true);
  CHECK(run(above)["fits"] == false);
  // a 7B model in fp32 with Adam does not fit 16 GB at all: 16 B/param > 16 GiB
  const json no = run(llama7b({{"precision", "fp32"}, {"gpu", "v100-16gb"}}));
  CHECK(no["fits"] == false);
  CHECK(no["maxMicroBatch"] == 0);
  CHECK(no["headroomBytes"].get<double>() < 0);
}

TEST_CASE("peak: runtime profiles and overhead override", "[peak]") {
  const json cuda = run(llama7b({{"precision", "bf16"}}));
  const json cpu = run(llama7b({{"precision", "bf16"}, {"runtime", "pytorch-cpu"}}));
  const json given = run(llama7b({{"precision", "bf16"}, {"runtimeOverheadBytes", 123456789}}));
  CHECK(cpu["breakdown"]["runtime"]["bytes"] == 0);
  // the default runtime's context without a GPU preset: 0.47 GiB after torch.ones(1).cuda() on
  // an A100 with torch 2.1.1's lazy loading (stas00/ml-engineering @ a4549bc6) less 2 MiB
  CHECK(cuda["breakdown"]["runtime"]["bytes"].get<double>() == 502267904.0);
  CHECK(given["breakdown"]["runtime"]["bytes"] == 123456789);
  // the layer-level model: peak = allocated + the runtime line
  const json coarse = run(llama7b(
      {{"precision", "bf16"}, {"runtimeOverheadBytes", 123456789}, {"simulateAllocator", false}}));
  CHECK(coarse["peakBytes"].get<double>() - coarse["allocatedPeakBytes"].get<double>() ==
        123456789);
  CHECK(coarse["deviceUsedBytes"].is_null());
  // the simulation: nvidia-smi = reserved + the context given (the cuBLAS workspace is allocated
  // through the caching allocator, so it is inside reserved)
  CHECK(given["deviceUsedBytes"].get<double>() - given["reservedPeakBytes"].get<double>() ==
        123456789);
  CHECK(given["reservedPeakBytes"].get<double>() >= given["allocatedPeakBytes"].get<double>());
  CHECK(cpu["reservedPeakBytes"].is_null());
}

TEST_CASE("peak: the chunked and fused losses change the head's saves and transients",
          "[peak][loss]") {
  // GPT-2 (V = 50257, h = 768), batch 2 x 128 tokens = T 256, fp32.
  const auto gpt2 = [](json extra) {
    json r = {{"model", {{"preset", "gpt2"}}},
              {"microBatch", 2},
              {"seqLen", 128},
              {"simulateAllocator", false},
              {"attention", "sdpa"}};
    for (auto it = extra.begin(); it != extra.end(); ++it) r[it.key()] = it.value();
    return run(r);
  };
  const auto head_forward = [](const json& r) {
    for (const auto& p : r["timeline"])
      if (p["phase"] == "forward" && p["name"] == "head") return p["totalBytes"].get<double>();
    return -1.0;
  };
  const json ce = gpt2({});
  const json chunked = gpt2({{"loss", "chunked"}});
  // torchtune CEWithChunkedOutputLoss: the same fp32 log-probabilities are saved (one chunk
  // each), but only one chunk's fp32 copy of the logits exists at a time: the head's forward
  // holds T V 4 (1 - 1/8) = 256 x 50257 x 4 x 7/8 = 45,030,272 B less.
  CHECK(ce["storedActivationBytes"] == chunked["storedActivationBytes"]);
  // (each tensor is counted as the allocator rounds it, up to 512 B)
  CHECK(std::fabs(head_forward(ce) - head_forward(chunked) - 45030272) < 8 * 512);
  // Liger's fused linear cross-entropy saves grad_input (T h 4) and grad_weight (V h 4) and
  // the per-token loss (T 4) instead of the lm_head input (T h 4), the log-probabilities
  // (T V 4) and the labels (T 8): stored difference T V 4 + T 4 - V h 4 = 51,463,168 + 1,024 -
  // 154,389,504 = -102,925,312 B (at this small T the weight gradient dominates).
  const json liger = gpt2({{"loss", "liger-fused-linear"}});
  CHECK(ce["storedActivationBytes"].get<double>() - liger["storedActivationBytes"].get<double>() ==
        -102925312.0);
  // an MLP has no language-model loss to replace
  const json e = json::parse(trainmem::call(
      "peakMemory",
      json({{"mlp", {{"sizes", {8, 8}}}}, {"microBatch", 1}, {"loss", "chunked"}}).dump()));
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["field"] == "loss");
}

namespace {
json lora_run(json model, json lora) {
  return run(
      {{"model", model}, {"microBatch", 1}, {"seqLen", 64}, {"precision", "bf16"}, {"lora", lora}});
}
json lora_error(json model, json lora) {
  const json req = {{"model", model}, {"microBatch", 1}, {"seqLen", 64}, {"lora", lora}};
  const json env = json::parse(trainmem::call("peakMemory", req.dump()));
  REQUIRE(env["ok"] == false);
  return env["error"];
}
}  // namespace

TEST_CASE("LoRA on mT5: PEFT's default q, v adapt self- and cross-attention", "[peak][lora]") {
  // PEFT README (Getting started): bigscience/mt0-large, LoraConfig(task_type=SEQ_2_SEQ_LM,
  // r=8) -> "trainable params: 2359296 || all params: 1231940608". By hand: PEFT's default
  // for mt5 is ["q", "v"] (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), matched in
  // every SelfAttention (24 encoder + 24 decoder blocks) and every EncDecAttention (24 decoder
  // blocks): (24 + 24 + 24) x 2 = 144 modules of 8 x (1,024 + 1,024) = 16,384 -> 2,359,296.
  const json cfg = {{"model_type", "mt5"},  {"d_model", 1024},
                    {"d_ff", 2816},         {"d_kv", 64},
                    {"num_heads", 16},      {"num_layers", 24},
                    {"vocab_size", 250112}, {"tie_word_embeddings", false}};
  const json r = lora_run({{"config", cfg}}, {{"rank", 8}});
  CHECK(r["trainableParams"] == 2359296);
  CHECK(r["params"] == 1231940608ULL);
}

TEST_CASE("LoRA on t5-small: 36 q / v modules, not 24", "[peak][lora]") {
  // 6 encoder blocks x SelfAttention {q, v} = 12; 6 decoder blocks x (SelfAttention +
  // EncDecAttention) x {q, v} = 24; 36 x 8 x (512 + 512) = 294,912 (a per-block count of the
  // two self-attention projections would give 12 x 2 = 24 modules, 196,608).
  const json r = lora_run({{"preset", "t5-small"}}, {{"rank", 8}});
  CHECK(r["trainableParams"] == 294912);
  // T5's FFN names: wi, wo (6 + 6 blocks each): 12 x 8 x (512 + 2048) x 2 = 491,520
  const json ff =
      lora_run({{"preset", "t5-small"}}, {{"rank", 8}, {"targetModules", {"wi", "wo"}}});
  CHECK(ff["trainableParams"] == 491520);
}

TEST_CASE("LoRA all-linear: every linear but the output head", "[peak][lora]") {
  // Llama-2-7b r=8, per layer q, k, v, o 4 x 8 x (4,096 + 4,096) = 262,144; gate, up
  // 2 x 8 x (4,096 + 11,008) = 241,664; down 8 x (11,008 + 4,096) = 120,832: 624,640 x 32 =
  // 19,988,480 (lm_head excluded: _maybe_include_all_linear_layers drops the output embedding).
  const json r =
      lora_run({{"preset", "llama-2-7b"}}, {{"rank", 8}, {"targetModules", "all-linear"}});
  CHECK(r["trainableParams"] == 19988480);
  // GPT-2 (Conv1D: weight [in, out]): c_attn 8 x (768 + 2,304) = 24,576, attn.c_proj
  // 8 x (768 + 768) = 12,288, c_fc 8 x (768 + 3,072) = 30,720, mlp.c_proj 30,720: 98,304 x 12
  // = 1,179,648; "c_proj" alone matches both c_proj modules (PEFT's suffix rule): 43,008 x 12.
  const json g = lora_run({{"preset", "gpt2"}}, {{"rank", 8}, {"targetModules", "ALL-LINEAR"}});
  CHECK(g["trainableParams"] == 1179648);
  const json c = lora_run({{"preset", "gpt2"}}, {{"rank", 8}, {"targetModules", {"c_proj"}}});
  CHECK(c["trainableParams"] == 43008 * 12);
}

TEST_CASE("LoRA names of the new families: fused, MLA, experts", "[peak][lora]") {
  // Phi-3 mini: PEFT has no default for phi3; qkv_proj 8 x (3,072 + 9,216) = 98,304 and
  // gate_up_proj 8 x (3,072 + 16,384) = 155,648 per layer: 253,952 x 32 = 8,126,464.
  const json e = lora_error({{"preset", "phi-3-mini-4k"}}, {{"rank", 8}});
  CHECK(e["field"] == "lora.targetModules");
  const json p = lora_run({{"preset", "phi-3-mini-4k"}},
                          {{"rank", 8}, {"targetModules", {"qkv_proj", "gate_up_proj"}}});
  CHECK(p["trainableParams"] == 8126464);
  // DeepSeek-V3 MLA, per layer: q_a_proj 8 x (7,168 + 1,536) = 69,632; q_b_proj
  // 8 x (1,536 + 24,576) = 208,896; kv_a_proj_with_mqa 8 x (7,168 + 576) = 61,952; kv_b_proj
  // 8 x (512 + 32,768) = 266,240: 606,720 x 61 = 37,009,920.
  const json d =
      lora_run({{"preset", "deepseek-v3"}},
               {{"rank", 8},
                {"targetModules", {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}}});
  CHECK(d["trainableParams"] == 37009920);
  // Qwen3-30B-A3B routed experts: 128 x 3 x 8 x (2,048 + 768) = 8,650,752 per layer x 48
  const json x =
      lora_run({{"preset", "qwen3-30b-a3b"}}, {{"rank", 8}, {"targetModules", {"experts"}}});
  CHECK(x["trainableParams"] == 415236096);
}

TEST_CASE("LoRA targets PEFT refuses or ignores", "[peak][lora]") {
  // BERT's "intermediate" is a BertIntermediate module, not nn.Linear: PEFT raises
  json e = lora_error({{"preset", "bert-base-uncased"}}, {{"targetModules", {"intermediate"}}});
  CHECK(e["field"] == "lora.targetModules");
  CHECK(e["code"] == "unsupported");
  e = lora_error({{"preset", "llama-2-7b"}}, {{"targetModules", {"nothing_here"}}});
  CHECK(e["code"] == "inconsistent");
  e = lora_error({{"preset", "llama-2-7b"}}, {{"targetModules", "all"}});
  CHECK(e["field"] == "lora.targetModules");
  // a name that matches nothing beside one that does: PEFT ignores it; trainmem says so
  const json r = lora_run({{"preset", "llama-2-7b"}}, {{"targetModules", {"q_proj", "wi"}}});
  CHECK(r["trainableParams"] == 32 * 8 * (4096 + 4096));
  bool said = false;
  for (const auto& a : r["assumptions"])
    said = said || a.get<std::string>().find("'wi'") != std::string::npos;
  CHECK(said);
}

TEST_CASE("LoRA on t5-small: all-linear, and the decoder's adapters in the decoder's blocks",
          "[peak][lora][t5]") {
  // all-linear (PEFT _maybe_include_all_linear_layers: every nn.Linear but the output
  // embedding): per encoder block q, k, v, o 4 x 8 x (512 + 512) = 32,768, wi and wo
  // 2 x 8 x (512 + 2,048) = 40,960 -> 73,728 x 6 = 442,368; per decoder block 8 attention
  // projections (self + EncDecAttention) 65,536 + 40,960 = 106,496 x 6 = 638,976; lm_head left
  // out. 96 modules, 1,081,344 parameters.
  const json r = lora_run({{"preset", "t5-small"}}, {{"rank", 8}, {"targetModules", "all-linear"}});
  CHECK(r["trainableParams"] == 1081344);
  // The chain: embeddings, 6 encoder blocks, 6 decoder blocks, head. PEFT's default q, v:
  // 2 adapters in each encoder block, 4 in each decoder block (self + cross), none in the head.
  const trainmem::ModelDescription m = trainmem::model_from_preset("t5-small", "model");
  trainmem::peak::Lora l;
  l.enabled = true;
  l.rank = 8;
  const trainmem::peak::LoraPlan p = trainmem::peak::plan_lora(m, l, 14);
  CHECK(p.modules == 36);
  CHECK(p.per_layer[0].empty());
  for (size_t i = 1; i <= 6; ++i) CHECK(p.per_layer[i].size() == 2);
  for (size_t i = 7; i <= 12; ++i) CHECK(p.per_layer[i].size() == 4);
  CHECK(p.per_layer[13].empty());
}
