// Gradient accumulation: batch arithmetic (HF Trainer / DDP definitions), and the planner's
// enumeration and choices against an injected, hand-computable peak-memory model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "io/accumulation_json.hpp"
#include "io/request.hpp"
#include "trainmem/accumulation.hpp"
#include "trainmem/api.hpp"

using namespace trainmem;
using namespace trainmem::accumulation;

namespace {
json call_ok(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump());
  REQUIRE(env["ok"] == true);
  return env["result"];
}
json call_err(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump());
  REQUIRE(env["ok"] == false);
  return env["error"];
}

// A linear memory model: weights W plus A bytes per sample of activations (A / 8 with
// checkpointing), on a GPU of capacity C.
struct LinearMemory {
  uint64_t W, A, C;
  PeakMemoryFn fn() const {
    return [*this](uint64_t m, uint64_t, vocab::Strategy ckpt) {
      MemoryEstimate e;
      e.peak_bytes = W + m * (ckpt == vocab::Strategy::none ? A : A / 8);
      e.fits = e.peak_bytes <= C;
      return e;
    };
  }
};

// Inputs where one micro-step of the whole per-device batch costs exactly 1 s of forward
// FLOPs (F x tokens / (peak x u) = 1 / 3 s for the forward, so 3 passes = 1 s).
PlannerInputs unit_inputs(uint64_t target, double overhead_s) {
  PlannerInputs in;
  in.target_global_batch = target;
  in.seq_len = 100;
  in.flops.total = 1e9;
  in.flops.blocks = 1e9;  // full recompute repeats the whole forward
  in.flops.layers = 1;
  // forward of the per-device batch: target x 100 tokens x 1e9 = 1/3 s at 1 PFLOP/s x u
  in.device.peak_flops = 3.0 * static_cast<double>(target) * 100 * 1e9;
  in.knobs.utilization = 1.0;
  in.knobs.overhead_per_layer_s = overhead_s;
  return in;
}
}  // namespace

TEST_CASE("accumulation forward: seed 000 / HF example (1 x 4, 512 samples)", "[accumulation]") {
  // HF perf_train_gpu_one: per_device_train_batch_size=1, gradient_accumulation_steps=4,
  // 512 samples, 1 epoch: 7.75 samples/s x 66.03 s = 512 samples in 512 / 4 = 128 steps.
  const json r =
      call_ok("accumulation",
              {{"microBatch", 1}, {"accumulationSteps", 4}, {"seqLen", 512}, {"datasetSize", 512}});
  CHECK(r["effectiveBatch"] == 4);
  CHECK(r["tokensPerStep"] == 2048);
  CHECK(r["optimizerStepsPerEpoch"] == 128);
  CHECK(r["microBatchesPerEpoch"] == 512);
  CHECK(r["remainderMicroBatches"] == 0);
}

TEST_CASE("accumulation forward: data parallel and a dataset that does not divide",
          "[accumulation]") {
  // DistributedSampler(drop_last=False): ceil(1000 / 3) = 334 samples per rank, 2 padded;
  // DataLoader batch 8: ceil(334 / 8) = 42 micro-batches; 4 steps: 10 full + 1 short (2).
  const json r = call_ok(
      "accumulation",
      {{"microBatch", 8}, {"accumulationSteps", 4}, {"dataParallel", 3}, {"datasetSize", 1000}});
  CHECK(r["effectiveBatch"] == 96);
  CHECK(r["samplesPerRank"] == 334);
  CHECK(r["paddedSamples"] == 2);
  CHECK(r["microBatchesPerEpoch"] == 42);
  CHECK(r["optimizerStepsPerEpoch"] == 11);
  CHECK(r["fullOptimizerStepsPerEpoch"] == 10);
  CHECK(r["remainderMicroBatches"] == 2);
  CHECK_FALSE(r.contains("tokensPerStep"));
}

TEST_CASE("accumulation forward: tokens per step above 4 GiB stay exact", "[accumulation]") {
  // 1024 x 64 x 16 = 2^20 samples x 8192 tokens = 2^33 tokens.
  const json r = call_ok(
      "accumulation",
      {{"microBatch", 1024}, {"accumulationSteps", 64}, {"dataParallel", 16}, {"seqLen", 8192}});
  CHECK(r["effectiveBatch"] == 1048576);
  CHECK(r["tokensPerStep"].get<uint64_t>() == (1ULL << 33));
}

TEST_CASE("accumulation: bad input names its field", "[accumulation]") {
  json e = call_err("accumulation", {{"microBatch", 4}, {"accumulationSteps", 0}});
  CHECK(e["code"] == "out_of_range");
  CHECK(e["field"] == "accumulationSteps");
  e = call_err("accumulation", {{"microBatch", 2.5}, {"accumulationSteps", 4}});
  CHECK(e["code"] == "not_integer");
  CHECK(e["field"] == "microBatch");
  e = call_err("accumulation", {{"microBatch", 4}, {"accumulationSteps", 2}, {"microbatch", 1}});
  CHECK(e["code"] == "unknown_key");
  e = call_err("accumulation", {{"targetGlobalBatch", 4},
                                {"dataParallel", 8},
                                {"seqLen", 512},
                                {"model", {{"params", 1000}}},
                                {"gpuMemoryBytes", 1000},
                                {"gpuPeakTflops", 10}});
  CHECK(e["code"] == "inconsistent");
  CHECK(e["field"] == "targetGlobalBatch");
  e = call_err("accumulation",
               {{"targetGlobalBatch", 8}, {"microBatch", 2}, {"model", {{"params", 1}}}});
  CHECK(e["code"] == "inconsistent");
  CHECK(e["field"] == "microBatch");
}

TEST_CASE("planner: every divisor is a plan; fits follow the memory model", "[accumulation]") {
  const uint64_t GB = 1000000000ULL;
  LinearMemory mem{8 * GB, 2 * GB, 16 * GB};  // fits without checkpointing up to m = 4
  PlannerInputs in = unit_inputs(32, 0.1);
  in.checkpointing = {vocab::Strategy::none};
  const PlannerResult r = plan(in, mem.fn());
  REQUIRE(r.plans.size() == 6);  // 1, 2, 4, 8, 16, 32
  const uint64_t micro[] = {1, 2, 4, 8, 16, 32};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(r.plans[i].micro_batch == micro[i]);
    CHECK(r.plans[i].accumulation_steps == 32 / micro[i]);
    CHECK(r.plans[i].global_batch == 32);
    CHECK(r.plans[i].exact);
    CHECK(r.plans[i].memory.fits == (micro[i] <= 4));
  }
  // Same FLOPs for all; fewer micro-steps = less fixed overhead: the largest fitting wins.
  REQUIRE(r.recommended == 2);
  // step = 1 s of compute + 8 micro-steps x 0.1 s
  CHECK(r.plans[2].time.step_seconds == Approx(1.0 + 8 * 0.1));
}

TEST_CASE("planner: the memory model is asked once per micro-batch, steps and strategy",
          "[accumulation]") {
  // Global batch 32 on one device: micro-batches 1, 2, 4, 8, 16, 32 (its divisors) for each of
  // "none" and "full" are 12 distinct questions. The comparison's rows (32 x 1 and its split,
  // each with and without checkpointing) are four of them again.
  const uint64_t GB = 1000000000ULL;
  const LinearMemory mem{8 * GB, 2 * GB, 16 * GB};
  std::vector<std::string> asked;
  const PeakMemoryFn counted = [&](uint64_t m, uint64_t steps, vocab::Strategy ckpt) {
    asked.push_back(std::to_string(m) + "x" + std::to_string(steps) + " " + vocab::name_of(ckpt));
    return mem.fn()(m, steps, ckpt);
  };
  PlannerInputs in = unit_inputs(32, 0.1);
  in.checkpointing = {vocab::Strategy::none, vocab::Strategy::full};
  const PlannerResult r = plan(in, counted);
  CHECK(r.plans.size() == 12);
  CHECK(asked.size() == 12);
  std::vector<std::string> distinct = asked;
  std::sort(distinct.begin(), distinct.end());
  CHECK(std::unique(distinct.begin(), distinct.end()) == distinct.end());
  // The comparison's rows still carry the model's answers: 8 GB + 32 x 2 GB for the baseline.
  REQUIRE(r.comparison.rows.size() == 4);
  CHECK(r.comparison.rows[0].plan.memory.peak_bytes == 72 * GB);
  CHECK(r.comparison.rows[2].plan.memory.peak_bytes == 16 * GB);  // 8 + 32 x 2 / 8
}

TEST_CASE("planner: checkpointing that makes a larger micro-batch fit, faster or not",
          "[accumulation]") {
  const uint64_t GB = 1000000000ULL;
  LinearMemory mem{8 * GB, 2 * GB, 16 * GB};  // checkpointed: 0.25 GB/sample, fits m <= 32
  SECTION("overhead 0.2 s: 32 x 1 with recompute (4/3 s + 0.2) beats 4 x 8 (1 s + 1.6)") {
    const PlannerResult r = plan(unit_inputs(32, 0.2), mem.fn());
    REQUIRE(r.recommended >= 0);
    const Plan& best = r.plans[static_cast<size_t>(r.recommended)];
    CHECK(best.checkpointing == vocab::Strategy::full);
    CHECK(best.micro_batch == 32);
    CHECK(best.time.step_seconds == Approx(4.0 / 3.0 + 0.2));
    CHECK(r.checkpointing_verdict.enables_larger_micro_batch == true);
    CHECK(r.checkpointing_verdict.faster_than_more_accumulation == true);
    CHECK(r.checkpointing_verdict.largest_micro_batch_without == 4);
    CHECK(r.checkpointing_verdict.largest_micro_batch_with == 32);
    // (1 + 1.6) / (4/3 + 0.2) - 1
    CHECK(r.checkpointing_verdict.speedup_over_best_without.value_or(0) ==
          Approx(2.6 / (4.0 / 3.0 + 0.2) - 1.0));
  }
  SECTION("overhead 0.01 s: more accumulation (1 s + 0.08) beats recompute (4/3 s + 0.01)") {
    const PlannerResult r = plan(unit_inputs(32, 0.01), mem.fn());
    const Plan& best = r.plans[static_cast<size_t>(r.recommended)];
    CHECK(best.checkpointing == vocab::Strategy::none);
    CHECK(best.micro_batch == 4);
    CHECK(r.checkpointing_verdict.enables_larger_micro_batch == true);
    CHECK(r.checkpointing_verdict.faster_than_more_accumulation == false);
  }
  SECTION("nothing fits without checkpointing") {
    LinearMemory tight{15 * GB, 2 * GB, 16 * GB};  // none: 17 GB at m = 1; ckpt: m <= 4
    const PlannerResult r = plan(unit_inputs(32, 0.1), tight.fn());
    CHECK(r.checkpointing_verdict.checkpointing_required == true);
    const Plan& best = r.plans[static_cast<size_t>(r.recommended)];
    CHECK(best.checkpointing == vocab::Strategy::full);
    CHECK(best.micro_batch == 4);
  }
  SECTION("nothing fits at all") {
    LinearMemory none{17 * GB, 2 * GB, 16 * GB};
    const PlannerResult r = plan(unit_inputs(32, 0.1), none.fn());
    CHECK(r.recommended == -1);
    CHECK(to_json(r, unit_inputs(32, 0.1))["recommended"].is_null());
  }
}

TEST_CASE("planner: a target that DP does not divide gives the nearest batches, flagged",
          "[accumulation]") {
  const uint64_t GB = 1000000000ULL;
  LinearMemory mem{1 * GB, 1 * GB, 100 * GB};
  PlannerInputs in = unit_inputs(10, 0.1);
  in.data_parallel = 4;
  in.checkpointing = {vocab::Strategy::none};
  const PlannerResult r = plan(in, mem.fn());
  // per-device 2 (global 8): 1x2, 2x1; per-device 3 (global 12): 1x3, 3x1
  REQUIRE(r.plans.size() == 4);
  CHECK(r.plans[0].global_batch == 8);
  CHECK(r.plans[3].global_batch == 12);
  for (const auto& p : r.plans) CHECK_FALSE(p.exact);
  bool flagged = false;
  for (const auto& w : r.warnings) flagged = flagged || w.code == "target-not-divisible";
  CHECK(flagged);
}

TEST_CASE("planner: comparison rows and equivalence warnings", "[accumulation]") {
  const uint64_t GB = 1000000000ULL;
  LinearMemory mem{8 * GB, 2 * GB, 16 * GB};
  PlannerInputs in = unit_inputs(4, 0.1);
  in.model_may_have_batchnorm = true;
  const PlannerResult r = plan(in, mem.fn());
  const Comparison& c = r.comparison;
  REQUIRE(c.rows.size() == 4);
  CHECK(c.rows[0].id == "baseline");
  CHECK(c.rows[0].plan.memory.peak_bytes == 16 * GB);  // 8 + 4 x 2
  CHECK(c.rows[1].plan.memory.peak_bytes == 10 * GB);  // 8 + 1 x 2
  CHECK(c.rows[2].plan.memory.peak_bytes == 9 * GB);   // 8 + 4 x 0.25
  CHECK(c.rows[3].plan.memory.peak_bytes == 8250000000ULL);
  // accumulation saves activations: 6 GB here; checkpointing 7 GB
  REQUIRE(c.techniques.size() == 2);
  CHECK(c.techniques[0].memory_saved_bytes == 6e9);
  CHECK(c.techniques[1].memory_saved_bytes == 7e9);
  // time: baseline 1 s + 0.1; accumulation 1 s + 0.4; checkpointing 4/3 s + 0.1
  CHECK(c.rows[1].relative_time == Approx(1.4 / 1.1));
  CHECK(c.rows[2].relative_time == Approx((4.0 / 3 + 0.1) / 1.1));
  bool bn = false, loss = false;
  for (const auto& w : r.warnings) {
    bn = bn || w.code == "batchnorm-per-micro-batch";
    loss = loss || w.code == "loss-averaging";
  }
  CHECK(bn);
  CHECK(loss);
}
