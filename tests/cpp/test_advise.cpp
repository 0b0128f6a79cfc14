// advise (trainmem/advise.hpp): the verdict with a safety margin, the time of one step, the
// changes worth trying for a method, and their ranking. Expected values are hand calculations
// from published figures (NVIDIA datasheets, GPT-2's architecture) and the rules stated in
// advise.hpp, never the code's own output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "io/device_presets.hpp"
#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "trainmem/advise.hpp"
#include "trainmem/api.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

peak::Request run_of(const json& req) { return peak::parse_request(req); }

std::vector<std::string> ids(const std::vector<advise::Candidate>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.id);
  return out;
}

bool has(const std::vector<std::string>& v, const char* id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

json base_request() {
  return json{{"model", {{"preset", "gpt2"}}}, {"microBatch", 4},         {"seqLen", 1024},
              {"optimizer", "adamw"},          {"precision", "amp-bf16"}, {"gpu", "a100-80gb"}};
}

}  // namespace

TEST_CASE("advise: the margin as a share of the GPU's memory", "[advise]") {
  // A100 80 GB: 80 GiB = 85,899,345,920 B (datasheet); 5 % of it = 4 GiB = 4,294,967,296 B.
  CHECK(advise::margin_bytes(85899345920ull, 0.05, 0) == 4294967296ull);
  CHECK(advise::margin_bytes(85899345920ull, 0.05, 1000) == 1000);  // bytes win
  CHECK(advise::margin_bytes(85899345920ull, 0, 0) == 0);
  CHECK(advise::margin_bytes(1000, 0, 5000) == 1000);  // never more than the GPU
}

TEST_CASE("advise: fits with the margin left, tight with less, does not fit", "[advise]") {
  peak::Request r;
  r.runtime.gpu_memory_bytes = 80ull << 30;
  peak::Result res;
  res.has_device = true;
  res.simulated = true;
  res.fits = true;
  const uint64_t margin = 4ull << 30;
  res.device_used_bytes = 70ull << 30;  // 10 GiB left
  advise::Verdict v = advise::judge(r, res, margin);
  CHECK(v.status == advise::Status::fits);
  CHECK(v.headroom_bytes == int64_t(10) << 30);
  CHECK(v.nvidia_smi);
  res.device_used_bytes = (80ull << 30) - 1;  // one byte left: it fits, with no margin
  CHECK(advise::judge(r, res, margin).status == advise::Status::tight);
  CHECK(advise::judge(r, res, 0).status == advise::Status::fits);
  res.fits = false;  // the core's verdict: out of memory (fragmentation, or too much)
  CHECK(advise::judge(r, res, margin).status == advise::Status::does_not_fit);
  res.has_device = false;
  CHECK(advise::judge(r, res, margin).status == advise::Status::no_device);
  CHECK(std::string(advise::status_name(advise::Status::does_not_fit)) == "doesNotFit");
}

TEST_CASE("advise: the changes fit the method", "[advise]") {
  const advise::Options none;
  // full fine-tuning with AdamW under mixed bf16 on an A100
  const auto full = ids(advise::candidates(run_of(base_request()), none));
  for (const char* id :
       {"checkpointing", "micro-batch-1", "bf16", "bf16-checkpointing", "adam-8bit", "for-loop",
        "zero2-offload", "lora", "qlora", "tensor-parallel", "zero3"})
    CHECK(has(full, id));
  CHECK(!has(full, "mixed-precision"));  // it is mixed already
  // from scratch: nothing to adapt
  advise::Options scratch;
  scratch.from_scratch = true;
  const auto pre = ids(advise::candidates(run_of(base_request()), scratch));
  CHECK(!has(pre, "lora"));
  CHECK(!has(pre, "qlora"));
  CHECK(has(pre, "bf16-checkpointing"));
  // LoRA: the adapters' states are small — no 8-bit Adam, no optimizer offload; QLoRA offered
  json lora = base_request();
  lora["lora"] = {{"rank", 16}};
  const auto adapters = ids(advise::candidates(run_of(lora), none));
  CHECK(!has(adapters, "adam-8bit"));
  CHECK(!has(adapters, "zero2-offload"));
  CHECK(!has(adapters, "for-loop"));
  CHECK(!has(adapters, "bf16"));
  CHECK(!has(adapters, "lora"));
  CHECK(has(adapters, "qlora"));
  CHECK(has(adapters, "checkpointing"));
  // fp32 on a V100, which has no bf16 (datasheet): mixed fp16 offered, never bf16
  json v100 = base_request();
  v100["precision"] = "fp32";
  v100["gpu"] = "v100-16gb";
  const auto volta = advise::candidates(run_of(v100), none);
  CHECK(!has(ids(volta), "bf16"));
  for (const auto& c : volta)
    if (c.id == "mixed-precision") CHECK(*c.patch.precision == "amp-fp16");
  // a change the run already has is not offered
  json ckpt = base_request();
  ckpt["checkpointing"] = "full";
  ckpt["microBatch"] = 1;
  const auto have = ids(advise::candidates(run_of(ckpt), none));
  CHECK(!has(have, "checkpointing"));
  CHECK(!has(have, "micro-batch-1"));
}

TEST_CASE("advise: ranking — fitting, one GPU, the run's method, faster first", "[advise]") {
  const auto change = [](const char* id, advise::Status s, uint64_t gpus, bool method,
                         double seconds, bool cpu = false) {
    advise::Change c;
    c.candidate.id = id;
    c.candidate.gpus = gpus;
    c.candidate.changes_method = method;
    c.verdict.status = s;
    c.verdict.used_bytes = 100;
    c.timing.timed = seconds > 0;
    c.timing.time.step_seconds = seconds;
    c.timing.optimizer_on_cpu = cpu;
    return c;
  };
  using S = advise::Status;
  std::vector<advise::Change> cs = {
      change("nofit", S::does_not_fit, 1, false, 0),   change("eight", S::fits, 8, false, 0.1),
      change("lora", S::fits, 1, true, 0.1),           change("slow", S::fits, 1, false, 0.5),
      change("offload", S::fits, 1, false, 0.2, true), change("fast", S::fits, 1, false, 0.3),
      change("tight", S::tight, 1, false, 0.1),
  };
  advise::rank(&cs);
  std::vector<std::string> order;
  for (const auto& c : cs) order.push_back(c.candidate.id);
  CHECK(order ==
        std::vector<std::string>{"fast", "slow", "offload", "lora", "eight", "tight", "nofit"});
}

TEST_CASE("advise: the time of one step, by hand for GPT-2 on an A100", "[advise]") {
  // GPT-2 (h 768, 12 layers, 12 heads, MLP 3072, vocabulary 50257), sequence 1024, micro-batch
  // 1, mixed bf16 on an A100 80 GB: 312 TFLOP/s dense bf16, 2,039 GB/s (datasheet).
  // Forward FLOPs per token (Kaplan et al. 2020; Narayanan et al. 2021):
  //   matmuls 12 x 2 x (4 x 768^2 + 2 x 768 x 3072) = 169,869,312
  //   attention scores 12 x 4 x 1024 x 768 = 37,748,736; LM head 2 x 768 x 50257 = 77,194,752
  //   total 284,812,800. A micro-step: 3 x 284,812,800 x 1024 / (312e12 x 0.5) = 5.6086 ms
  //   + 0.89 ms x 12 layers (the time model's fixed cost) = 16.2886 ms.
  // The optimizer step: AdamW with fp32 weights, reads and writes 2 x 4 + 4 + 2 x 2 x 4 = 28 B
  //   per parameter: 124,439,808 x 28 / 2.039e12 = 1.7088 ms. Step: 17.9975 ms.
  json req = base_request();
  req["microBatch"] = 1;
  const peak::Request run = run_of(req);
  peak::Request r = run;
  r.answer.search_max_micro_batch = false;
  const peak::Result res = peak::evaluate(r);
  const peak::Gpu a100 = peak::gpu_preset(run.runtime.gpu_id, "gpu");
  const advise::Timing t = advise::step_time(run, res, &a100);
  REQUIRE(t.timed);
  const double micro = 3.0 * 284812800.0 * 1024 / (312e12 * 0.5) + 0.00089 * 12;
  const double opt = 124439808.0 * 28 / 2.039e12;
  CHECK(t.time.micro_step_seconds == Approx(micro).epsilon(1e-9));
  CHECK(t.time.step_seconds == Approx(micro + opt).epsilon(1e-9));
  CHECK(t.global_batch == 1);
  CHECK(t.throughput_precision == "bf16");
  // a custom memory size has no TFLOP/s: not timed, and said why
  json custom = req;
  custom.erase("gpu");
  custom["gpuMemoryBytes"] = 80e9;
  const peak::Request c = run_of(custom);
  const advise::Timing none = advise::step_time(c, res, nullptr);
  CHECK(!none.timed);
  CHECK(!none.not_timed.empty());
}

TEST_CASE("advise: one call answers the verdict, the changes and the time", "[advise]") {
  // LLaMA-2 7B full fine-tuning with AdamW on one A100 80 GB: weights, gradients and Adam's
  // states alone are 16 B x 6.74e9 = 107.8 GB (Transformer Math 101) > 85.9 GB.
  const json env = json::parse(call("advise", json{{"model", {{"preset", "llama-2-7b"}}},
                                                   {"microBatch", 1},
                                                   {"seqLen", 512},
                                                   {"optimizer", "adamw"},
                                                   {"precision", "amp-bf16"},
                                                   {"gpu", "a100-80gb"},
                                                   {"timeline", false},
                                                   {"marginFraction", 0.05}}
                                                  .dump()));
  REQUIRE(env["ok"] == true);
  const json& a = env["result"];
  CHECK(a["verdict"]["status"] == "doesNotFit");
  CHECK(a["verdict"]["capacityBytes"] == 85899345920ull);
  CHECK(a["verdict"]["marginBytes"] == 4294967296ull);
  CHECK(a["settings"]["optimizerImplementation"] == "foreach");  // PyTorch 2's default on CUDA
  CHECK(a["stepTime"]["stepSeconds"].get<double>() > 0);
  REQUIRE(a["changes"].size() >= 5);
  // those that fit come first, and each says what it sets
  bool seen_nofit = false;
  for (const json& c : a["changes"]) {
    if (c["status"] == "doesNotFit")
      seen_nofit = true;
    else
      CHECK(!seen_nofit);
    CHECK(c["set"].is_object());
    CHECK(!c["set"].empty());
  }
  CHECK(a["changes"][0]["status"] == "fits");
  // an unknown key of advise is named, as every request's
  const json bad = json::parse(call("advise", R"({"marginFractoin": 0.1})"));
  CHECK(bad["ok"] == false);
}

TEST_CASE("advise: with pipeline stages the verdict judges the stage that needs the most memory",
          "[advise][pipeline]") {
  // LLaMA-2 7B (32 blocks) over 4 stages of 1F1B, 8 micro-batches per step, on an A100 80 GB.
  json req{{"model", {{"preset", "llama-2-7b"}}},
           {"microBatch", 1},
           {"seqLen", 512},
           {"optimizer", "adamw"},
           {"precision", "amp-bf16"},
           {"gpu", "a100-80gb"},
           {"timeline", false},
           {"gradientAccumulationSteps", 8},
           {"pipelineParallel", 4}};
  const json env = json::parse(call("advise", req.dump()));
  REQUIRE(env["ok"] == true);
  const json& a = env["result"];
  const json& pp = a["peak"]["pipelineParallel"];
  REQUIRE(pp["perStage"].size() == 4);
  // stage 0: the embeddings (32000 x 4096 = 131,072,000) and 8 blocks of 202,383,360 parameters
  // (4 x 4096^2 attention, 3 x 4096 x 11008 MLP, 2 x 4096 norms: LLaMA-2's config.json), fp32
  // under autocast: 4 x 1,750,138,880 = 7,000,555,520 bytes, not the whole model's 26.95 GB
  CHECK(pp["perStage"][0]["weightsBytes"] == 7000555520ull);
  const json& top = pp["perStage"][pp["peakStage"].get<size_t>()];
  CHECK(a["verdict"]["usedBytes"] == top["deviceUsedBytes"]);
  CHECK(a["peak"]["deviceUsedBytes"] == top["deviceUsedBytes"]);
  // the same figures as peakMemory's
  const json peak = json::parse(call("peakMemory", req.dump()));
  REQUIRE(peak["ok"] == true);
  CHECK(peak["result"]["deviceUsedBytes"] == a["peak"]["deviceUsedBytes"]);
  // the step's time is not split over stages: said, not a number for one GPU
  CHECK(a["stepTime"]["note"].get<std::string>().find("pipeline") != std::string::npos);
  CHECK(!a["stepTime"].contains("stepSeconds"));
}
