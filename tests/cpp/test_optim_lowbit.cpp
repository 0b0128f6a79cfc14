// torchao low-bit AdamW states, torchao float8 training transients, and packed / padded
// batches. Every expected value is worked out by hand from the source named beside it.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>

#include "io/json_fields.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"
#include "trainmem/placement.hpp"

using trainmem::json;
using namespace trainmem;

// test_activations.cpp: a fixture case's hand-built model and the torch 1.13 CPU settings
ModelDescription fixture_model(const json& c);
activations::Settings cpu_settings(const json& c);

namespace {
constexpr double MiB = 1048576.0;

json call(const char* fn, const json& req) { return json::parse(trainmem::call(fn, req.dump())); }
json ok(const char* fn, const json& req) {
  const json env = call(fn, req);
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}
std::string error_field(const char* fn, const json& req) {
  const json env = call(fn, req);
  INFO(env.dump().substr(0, 600));
  REQUIRE(env["ok"] == false);
  return env["error"]["field"].get<std::string>();
}
bool mentions(const json& list, const char* word) {
  for (const auto& a : list)
    if (a.get<std::string>().find(word) != std::string::npos) return true;
  return false;
}

// Raw checkpoint of one bf16 tensor of `shape` with the optimizer's state.
json raw_state(const char* optimizer, std::vector<uint64_t> shape) {
  const json rq = {{"model", {{"tensors", {{{"name", "w"}, {"shape", shape}, {"dtype", "bf16"}}}}}},
                   {"optimizer", optimizer},
                   {"format", "raw"}};
  return ok("checkpointSize", rq);
}
}  // namespace

TEST_CASE("torchao AdamW8bit, AdamW4bit, AdamWFp8: state bytes per tensor",
          "[optimizer][torchao]") {
  // torchao/optim/adam.py @ 0372e5ff: step = torch.tensor(0.0) (4 B); exp_avg and exp_avg_sq
  // quantised when numel >= 4096 and numel % block_size == 0.
  // 8-bit (subclass_8bit.py): uint8 codes (numel B) + fp32 scale per 256 values + a 256-entry
  // fp32 qmap per state. 4096 x 4096 = 16,777,216 values: 16,777,216 + 65,536 x 4 + 1,024 =
  // 17,040,384 B per state.
  json r = raw_state("torchao-adamw-8bit", {4096, 4096});
  CHECK(r["optimizerStates"]["exp_avg.codes"] == 16777216);
  CHECK(r["optimizerStates"]["exp_avg_sq.scale"] == 262144);
  CHECK(r["optimizerStates"]["exp_avg.qmap"] == 1024);
  CHECK(r["breakdown"]["optimizerState"] == 2 * 17040384 + 4);
  // 4-bit (subclass_4bit.py): numel / 2 bytes of packed codes + fp32 scale per 128 values +
  // a 16-entry qmap: 8,388,608 + 131,072 x 4 + 64 = 8,912,960 B per state (1.0625 B/value).
  r = raw_state("torchao-adamw-4bit", {4096, 4096});
  CHECK(r["breakdown"]["optimizerState"] == 2 * 8912960 + 4);
  // fp8 (subclass_fp8.py): float8_e4m3fn codes + fp32 scale per 256 values, no qmap.
  r = raw_state("torchao-adamw-fp8", {4096, 4096});
  CHECK(r["breakdown"]["optimizerState"] == 2 * (16777216 + 262144) + 4);
  // 12,416 values: not a multiple of 256, so 8-bit keeps zeros_like(p) in bf16 (2 x 24,832 B);
  // a multiple of 128, so 4-bit quantises it: 6,208 + 97 x 4 + 64 = 6,660 B per state.
  r = raw_state("torchao-adamw-8bit", {97, 128});
  CHECK(r["optimizerStates"]["exp_avg"] == 24832);
  CHECK(r["breakdown"]["optimizerState"] == 2 * 24832 + 4);
  r = raw_state("torchao-adamw-4bit", {97, 128});
  CHECK(r["breakdown"]["optimizerState"] == 2 * 6660 + 4);
  // under 4096 values: never quantised (a 3,072-value norm weight: 2 x 6,144 B bf16)
  r = raw_state("torchao-adamw-4bit", {3072});
  CHECK(r["breakdown"]["optimizerState"] == 2 * 6144 + 4);
  // blockSize and amsgrad: block 2048 gives 8,192 scales; max_exp_avg_sq is a third state
  const json rq = {
      {"model", {{"tensors", {{{"name", "w"}, {"shape", {4096, 4096}}, {"dtype", "bf16"}}}}}},
      {"optimizer", {{"name", "torchao-adamw-8bit"}, {"blockSize", 2048}, {"amsgrad", true}}},
      {"format", "raw"}};
  r = ok("checkpointSize", rq);
  CHECK(r["breakdown"]["optimizerState"] == 3 * (16777216 + 8192 * 4 + 1024) + 4);
  // the torch container: storages exact, the subclass pickle approximated (stated)
  json tq = rq;
  tq["format"] = "torch";
  r = ok("checkpointSize", tq);
  CHECK(r["exact"] == false);
  CHECK(mentions(r["notes"], "tensor subclasses"));
  // an odd 4-bit block cannot hold two codes per byte
  json bad = rq;
  bad["optimizer"] = {{"name", "torchao-adamw-4bit"}, {"blockSize", 127}};
  CHECK(error_field("checkpointSize", bad) == "optimizer.blockSize");
}

TEST_CASE("torchao low-bit states in the allocator simulation", "[peak][allocator][torchao]") {
  // One Linear(4096, 4096) fp32 (test_peak_allocator.cpp's big_linear): weight 64 MiB and .grad
  // 64 MiB (own segments), cuBLAS workspace in a 20 MiB segment, one 2 MiB small segment.
  // 8-bit and fp8: two 16 MiB code tensors (> 10 MiB: own segments); scales (256 KiB each),
  // qmaps and the bias's quantised state (4,096 values) fit the small segment: 182 MiB. The
  // compiled step is taken to need no whole-tensor temporary.
  json rq = {{"mlp", {{"sizes", {4096, 4096}}, {"activation", "relu"}}},
             {"microBatch", 1},
             {"timeline", false},
             {"searchMaxMicroBatch", false}};
  rq["optimizer"] = "torchao-adamw-8bit";
  json r = ok("peakMemory", rq);
  CHECK(r["reservedPeakBytes"].get<double>() == 182 * MiB);
  CHECK(mentions(r["assumptions"], "torchao"));
  rq["optimizer"] = "torchao-adamw-fp8";
  CHECK(ok("peakMemory", rq)["reservedPeakBytes"].get<double>() == 182 * MiB);
  // 4-bit: two 8 MiB code tensors (1-10 MiB requests): the first fits the 11.875 MiB the
  // workspace left in its 20 MiB segment, the second opens a new 20 MiB segment; the two
  // 512 KiB scales fit the small segment: 64 + 64 + 20 + 20 + 2 = 170 MiB.
  rq["optimizer"] = "torchao-adamw-4bit";
  CHECK(ok("peakMemory", rq)["reservedPeakBytes"].get<double>() == 170 * MiB);
}

TEST_CASE("float8 training: the casts are transients, the saved tensors stay 16-bit",
          "[activations][float8]") {
  // A small Llama block: h 64, i 256, 4 heads, batch 2 x 8 tokens (T = 16), bf16.
  ModelDescription m;
  m.source = "config";
  Architecture& a = m.arch;
  a.model_type = "llama";
  a.layers = 2;
  a.hidden = 64;
  a.heads = 4;
  a.kv_heads = 4;
  a.intermediate = 256;
  a.vocab = 1000;
  activations::Settings s;
  s.micro_batch = 2;
  s.seq_len = 8;
  s.precision = activations::Precision::bf16;
  const activations::ModelActivations plain = activations::transformer_activations(m, s);
  s.float8 = true;
  const activations::ModelActivations f8 = activations::transformer_activations(m, s);
  const auto& p = plain.layers[1];
  const auto& q = f8.layers[1];
  // float8_linear.py @ 7ca1bfbe: save_for_backward(input_hp, weight_hp_t): nothing saved changes
  CHECK(q.saved_bytes == p.saved_bytes);
  // forward, gate/up (64 -> 256): fp8 input 16 x 64 + fp8 weight 64 x 256 = 17,408 B
  CHECK(q.forward_temp_bytes - p.forward_temp_bytes == 16 * 64 + 64 * 256);
  // backward: grad_output twice (2 x 16 x 256), weight (64 x 256), input (16 x 64) = 25,600 B
  CHECK(q.backward_temp_bytes - p.backward_temp_bytes == 2 * 16 * 256 + 64 * 256 + 16 * 64);
  CHECK(mentions(json(f8.assumptions), "float8"));
}

TEST_CASE("float8 training: request checks", "[peak][float8]") {
  const json config = {{"model_type", "llama"},     {"hidden_size", 256},
                       {"intermediate_size", 512},  {"num_hidden_layers", 2},
                       {"num_attention_heads", 4},  {"num_key_value_heads", 4},
                       {"vocab_size", 1000},        {"max_position_embeddings", 2048},
                       {"torch_dtype", "bfloat16"}, {"tie_word_embeddings", false}};
  json rq = {{"model", {{"config", config}}},
             {"microBatch", 1},
             {"seqLen", 128},
             {"precision", "bf16"},
             {"optimizer", "adamw"},
             {"timeline", false},
             {"searchMaxMicroBatch", false},
             {"float8", {{"recipe", "tensorwise"}}},
             {"gpu", "h100-80gb"}};
  const json h100 = ok("peakMemory", rq);
  CHECK(mentions(h100["assumptions"], "float8"));
  // torch._scaled_mm needs compute capability 8.9 (Ada) or 9.0 (Hopper): an A100 is 8.0
  rq["gpu"] = "a100-80gb";
  CHECK(error_field("peakMemory", rq) == "float8");
  rq["gpu"] = "rtx-4090";
  CHECK(call("peakMemory", rq)["ok"] == true);
  // without a preset the support cannot be checked: said so
  rq.erase("gpu");
  rq["gpuMemoryBytes"] = 80e9;
  CHECK(mentions(ok("peakMemory", rq)["assumptions"], "not checked"));
  rq["float8"] = {{"recipe", "rowwise"}};
  CHECK(error_field("peakMemory", rq) == "float8.recipe");
  rq["float8"] = {{"recipe", "delayed"}};
  CHECK(error_field("peakMemory", rq) == "float8.recipe");
  rq["float8"] = json::object();
  rq["lora"] = {{"rank", 8}};
  CHECK(error_field("peakMemory", rq) == "float8");
  const json mlp = {{"mlp", {{"sizes", {64, 64}}}}, {"microBatch", 1}, {"float8", json::object()}};
  CHECK(error_field("peakMemory", mlp) == "float8");
}

TEST_CASE("packed and padded batches", "[peak][samples]") {
  const json config = {{"model_type", "llama"},     {"hidden_size", 256},
                       {"intermediate_size", 512},  {"num_hidden_layers", 2},
                       {"num_attention_heads", 4},  {"num_key_value_heads", 4},
                       {"vocab_size", 1000},        {"max_position_embeddings", 2048},
                       {"torch_dtype", "bfloat16"}, {"tie_word_embeddings", false}};
  json base = {{"model", {{"config", config}}},
               {"microBatch", 2},
               {"seqLen", 512},
               {"precision", "bf16"},
               {"optimizer", "adamw"},
               {"gpuMemoryBytes", 80e9},
               {"timeline", false},
               {"searchMaxMicroBatch", false}};
  // lengths 100, 200, 300, 400 in micro-batches of 2: the peak is the micro-batch padded to 400
  // tokens; the six possible pairs pad to 200, 300, 400, 300, 400, 400: mean 2000 / 6; the
  // real tokens average 250, so a quarter of the padded tokens are padding.
  json rq = base;
  rq["samples"] = {{"lengths", {300, 100, 400, 200}}};
  const json r = ok("peakMemory", rq);
  CHECK(r["samples"]["memorySeqLen"] == 400);
  CHECK(r["samples"]["meanLength"].get<double>() == Approx(250));
  CHECK(r["samples"]["expectedPaddedLength"].get<double>() == Approx(2000.0 / 6));
  CHECK(r["samples"]["paddingFraction"].get<double>() == Approx(0.25));
  json at400 = base;
  at400["seqLen"] = 400;
  CHECK(r["peakBytes"] == ok("peakMemory", at400)["peakBytes"]);
  // lengths beyond seqLen are truncated to it (tokenizer max_seq_len); micro-batch 1: the
  // expected padded length is the mean, (100 + 512) / 2
  rq = base;
  rq["microBatch"] = 1;
  rq["samples"] = {{"lengths", {100, 600}}};
  const json t = ok("peakMemory", rq);
  CHECK(t["samples"]["truncated"] == 1);
  CHECK(t["samples"]["memorySeqLen"] == 512);
  CHECK(t["samples"]["expectedPaddedLength"].get<double>() == Approx(306));
  // packed: every row is seqLen tokens (torchtune PackedDataset): memory as seqLen
  rq = base;
  rq["samples"] = {{"packed", true}};
  const json pk = ok("peakMemory", rq);
  CHECK(pk["peakBytes"] == ok("peakMemory", base)["peakBytes"]);
  CHECK(pk["samples"]["packed"] == true);
  CHECK(mentions(pk["assumptions"], "packed rows"));
  // errors name the field
  rq["samples"] = {{"packed", true}, {"lengths", {10}}};
  CHECK(error_field("peakMemory", rq) == "samples.lengths");
  rq["samples"] = json::object();
  CHECK(error_field("peakMemory", rq) == "samples");
  rq["samples"] = {{"lengths", {10}}};  // fewer than one micro-batch of 2
  CHECK(error_field("peakMemory", rq) == "samples.lengths");
  rq["samples"] = {{"lengths", {10, 0}}};
  CHECK(error_field("peakMemory", rq) == "samples.lengths[1]");
  // the planner's time model takes one length: lengths are refused there
  json plan = base;
  plan.erase("microBatch");
  plan["targetGlobalBatch"] = 8;
  plan["samples"] = {{"lengths", {100, 200}}};
  CHECK(error_field("accumulation", plan) == "samples");
}

TEST_CASE("padded and packed batches against torch 1.13: memory follows the padded shape",
          "[activations][samples]") {
  // tests/fixtures/torch_samples.json (tools/measure_samples.py): saved bytes of real batches.
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_samples.json");
  REQUIRE(in.good());
  const json fx = json::parse(in);
  const auto predicted = [&](uint64_t b, uint64_t s) {
    const json c = {{"kind", "llama"}, {"config", fx["config"]}, {"microBatch", b}, {"seqLen", s}};
    const auto acts = activations::transformer_activations(fixture_model(c), cpu_settings(c));
    const placement::PlanResult plan = placement::evaluate(activations::to_chain(acts), {});
    return static_cast<double>(plan.stored_bytes) - 4;  // the loss scalar is not saved
  };
  int checked = 0;
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    if (c["mode"] == "padded") {
      // every micro-batch costs its longest sample times its rows, padding included
      double worst = 0;
      for (const auto& mb : c["microBatches"]) {
        const double m = mb["savedBytes"].get<double>();
        CHECK(std::fabs(predicted(mb["shape"][0], mb["shape"][1]) - m) <= 0.02 * m);
        worst = std::max(worst, m);
        ++checked;
      }
      // samples.lengths: the peak is at the longest sample (memorySeqLen)
      const uint64_t b = c.value("microBatch", c["lengths"].size());
      uint64_t longest = 0;
      for (const auto& v : c["lengths"]) longest = std::max<uint64_t>(longest, v);
      CHECK(std::fabs(predicted(b, longest) - worst) <= 0.02 * worst);
    } else if (c["mode"] == "packed") {
      // packed rows are packSize tokens whatever the documents inside
      const double m = c["savedBytes"].get<double>();
      CHECK(std::fabs(predicted(c["shape"][0], c["packSize"]) - m) <= 0.02 * m);
      ++checked;
    }
  }
  CHECK(checked == 4);
}
