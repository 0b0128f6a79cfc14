// Seed 000's HF example against the published V100 measurements
// (tests/fixtures/hf_v100_bert_large_timings.json): relative step times of the time model.
#include <catch2/catch.hpp>

#include <fstream>

#include "io/embedded_data.hpp"
#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/time_model.hpp"

using trainmem::json;

namespace {
json fixture() {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/hf_v100_bert_large_timings.json");
  REQUIRE(in.good());
  return json::parse(in);
}
double seconds(const json& fx, const std::string& id) {
  for (const auto& r : fx["rows"])
    if (r["id"] == id) return r["seconds"].get<double>();
  FAIL("no row " << id);
  return 0;
}
// Predicted epoch seconds of the seed comparison rows for one precision / optimizer.
json comparison(const std::string& precision, const std::string& optimizer) {
  const json cfg = trainmem::embedded_json("models/bert-large-uncased.json")["config"];
  const json req = {{"targetGlobalBatch", 4},
                    {"model", {{"config", cfg}, {"architecture", "BertForSequenceClassification"}}},
                    {"seqLen", 512},
                    {"precision", precision},
                    {"optimizer", optimizer},
                    {"gpu", "v100-16gb"}};
  const json env = json::parse(trainmem::call("accumulation", req.dump()));
  INFO(env.dump().substr(0, 1000));
  REQUIRE(env["ok"] == true);
  return env["result"]["comparison"]["rows"];
}
}  // namespace

TEST_CASE("seed 000: the per-layer overhead default is the published 4 x 1 vs 1 x 4 difference",
          "[accumulation][seed]") {
  // Calibration (docs/accumulation.md): 1 x 4 runs 3 more micro-steps per optimizer step than
  // 4 x 1 with the same FLOPs; 128 steps, 24 BERT-large layers.
  const json fx = fixture();
  const double per_layer =
      (seconds(fx, "accumulation") - seconds(fx, "vanilla")) / (3.0 * 128 * 24);
  CHECK(trainmem::time_model::kDefaultOverheadPerLayerSeconds == Approx(per_layer).epsilon(0.002));
}

TEST_CASE("seed 000: checkpointing costs what HF measured on a V100 (hold-out)",
          "[accumulation][seed]") {
  const json fx = fixture();
  const json rows = comparison("fp32", "adamw");
  // rows: baseline 4x1, accumulation 1x4, checkpointing 4x1, accumulation+checkpointing 1x4
  const double acc = rows[1]["stepSeconds"].get<double>();
  const double acc_ckpt = rows[3]["stepSeconds"].get<double>();
  const double measured = seconds(fx, "accumulation+checkpointing") / seconds(fx, "accumulation");
  CHECK(acc_ckpt / acc == Approx(measured).epsilon(0.03));  // 1.294 measured
  // Shares its data with the calibration above: batch 4 vs 1 x 4.
  const double base = rows[0]["stepSeconds"].get<double>();
  CHECK(base / acc == Approx(seconds(fx, "vanilla") / seconds(fx, "accumulation")).epsilon(0.03));
}

TEST_CASE("seed 000: fp16 batch 4 vs fp16 1 x 4 + checkpointing (hold-out)",
          "[accumulation][seed]") {
  const json fx = fixture();
  const json rows = comparison("amp-fp16", "adamw");
  const double predicted =
      rows[3]["stepSeconds"].get<double>() / rows[0]["stepSeconds"].get<double>();
  const double measured = seconds(fx, "fp16+accumulation+checkpointing") / seconds(fx, "fp16");
  CHECK(predicted == Approx(measured).epsilon(0.05));  // 1.848 measured
}

TEST_CASE("comparison: the checkpointed rows are checkpointed when the run itself is not",
          "[accumulation]") {
  // A request with checkpointing "none": seed 000's table still compares with HF's
  // gradient_checkpointing. Its checkpointed rows must hold what peakMemory gives for "full"
  // checkpointing at the same micro-batch, and fewer activation bytes than the rows without.
  const json base = {{"model", {{"preset", "gpt2"}}},
                     {"seqLen", 512},
                     {"precision", "fp32"},
                     {"optimizer", "adamw"},
                     {"gpu", "a100-80gb"}};
  json req = base;
  req["targetGlobalBatch"] = 8;
  req["checkpointing"] = "none";
  const json env = json::parse(trainmem::call("accumulation", req.dump()));
  REQUIRE(env["ok"] == true);
  json rows;
  for (const auto& r : env["result"]["comparison"]["rows"]) rows[r["id"].get<std::string>()] = r;
  REQUIRE(rows["checkpointing"]["checkpointing"] == "full");
  REQUIRE(rows["checkpointing"]["microBatch"] == 8);
  CHECK(rows["checkpointing"]["breakdown"]["activations"].get<double>() <
        rows["baseline"]["breakdown"]["activations"].get<double>());
  CHECK(rows["accumulationAndCheckpointing"]["breakdown"]["activations"].get<double>() <
        rows["accumulation"]["breakdown"]["activations"].get<double>());
  json peak = base;
  peak["microBatch"] = 8;
  peak["checkpointing"] = "full";
  peak["timeline"] = false;
  peak["searchMaxMicroBatch"] = false;
  const json p = json::parse(trainmem::call("peakMemory", peak.dump()));
  REQUIRE(p["ok"] == true);
  CHECK(rows["checkpointing"]["peakBytes"] == p["result"]["peakBytes"]);
}
