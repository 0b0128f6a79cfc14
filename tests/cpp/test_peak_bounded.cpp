// Peak memory within its time bound (issue "bounded work"): requests whose work the core cannot
// bound are refused before the work, naming the field; the others answer.
#include <catch2/catch.hpp>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using namespace trainmem;

namespace {

json call_json(const std::string& fn, const json& request) {
  return json::parse(trainmem::call(fn, request.dump()));
}

json mixtral(uint64_t layers, uint64_t experts) {
  return {{"model_type", "mixtral"},      {"hidden_size", 64},
          {"intermediate_size", 64},      {"num_attention_heads", 4},
          {"num_key_value_heads", 4},     {"num_hidden_layers", layers},
          {"vocab_size", 1000},           {"max_position_embeddings", 4096},
          {"num_local_experts", experts}, {"num_experts_per_tok", 2},
          {"tie_word_embeddings", false}};
}

}  // namespace

TEST_CASE("peak bounded: more expert MLPs than the bound is too_large naming the experts field") {
  // 1,000 layers x 65,536 experts (each field within its own range) would be 196 M weight
  // tensors; 64 x 1,024 = 65,536 expert MLPs is over the 32,768 bound.
  for (const auto& dims : {std::pair<uint64_t, uint64_t>{1000, 65536}, {64, 1024}}) {
    const json out =
        call_json("peakMemory", {{"model", {{"config", mixtral(dims.first, dims.second)}}},
                                 {"microBatch", 1},
                                 {"seqLen", 16}});
    REQUIRE(out["ok"] == false);
    CHECK(out["error"]["code"] == "too_large");
    CHECK(out["error"]["field"] == "model.config.num_local_experts");
  }
  // 128 x 256 = 32,768: at the bound, answered
  const json ok = call_json("peakMemory", {{"model", {{"config", mixtral(128, 256)}}},
                                           {"microBatch", 1},
                                           {"seqLen", 16},
                                           {"simulateAllocator", false}});
  CHECK(ok["ok"] == true);
}

TEST_CASE("peak bounded: the maxMicroBatch search stops at its work bound and says so") {
  // 128 layers x 256 experts: about two million trace events per evaluation, so the search
  // has room for a few probes only. What it answers must hold: its maxMicroBatch fits, and
  // maxMicroBatchBelow (when within the search's range) does not.
  json rq = {{"model", {{"config", mixtral(128, 256)}}},
             {"microBatch", 1},
             {"seqLen", 16},
             {"gpu", "h100-80gb"},
             {"timeline", false}};
  const json out = call_json("peakMemory", rq);
  REQUIRE(out["ok"] == true);
  const json& r = out["result"];
  REQUIRE(r.contains("maxMicroBatchBelow"));
  const uint64_t fits = r["maxMicroBatch"], below = r["maxMicroBatchBelow"];
  CHECK(fits >= 1);
  CHECK(below > fits);
  bool said = false;
  for (const auto& a : r["assumptions"])
    said = said || a.get<std::string>().rfind("maxMicroBatch: the search stopped", 0) == 0;
  CHECK(said);
  rq["searchMaxMicroBatch"] = false;
  rq["microBatch"] = fits;
  CHECK(call_json("peakMemory", rq)["result"]["fits"] == true);
  if (below <= (uint64_t{1} << 20)) {
    rq["microBatch"] = below;
    CHECK(call_json("peakMemory", rq)["result"]["fits"] == false);
  }
}

TEST_CASE("peak bounded: a small model's search is exact: the next micro-batch does not fit") {
  json rq = {{"model", {{"preset", "llama-3.1-8b"}}},
             {"microBatch", 1},
             {"seqLen", 4096},
             {"gpu", "h100-80gb"},
             {"precision", "bf16"},
             {"optimizer", "sgd"},
             {"timeline", false}};
  const json r = call_json("peakMemory", rq)["result"];
  CHECK_FALSE(r.contains("maxMicroBatchBelow"));
  const uint64_t m = r["maxMicroBatch"];
  REQUIRE(m >= 1);
  rq["searchMaxMicroBatch"] = false;
  rq["microBatch"] = m;
  CHECK(call_json("peakMemory", rq)["result"]["fits"] == true);
  rq["microBatch"] = m + 1;
  CHECK(call_json("peakMemory", rq)["result"]["fits"] == false);
}

TEST_CASE("peak bounded: a timeline of more than 10,000 points is thinned, its highest kept") {
  // a 10,000-layer MLP: per layer a forward and a backward point and more, about 60,000
  json sizes = json::array();
  for (int i = 0; i < 10000; ++i) sizes.push_back(64);
  const json out = call_json("peakMemory", {{"mlp", {{"sizes", sizes}}}, {"microBatch", 8}});
  REQUIRE(out["ok"] == true);
  const json& r = out["result"];
  CHECK(r["timeline"].size() <= 10001);
  REQUIRE(r.contains("timelinePoints"));
  CHECK(r["timelinePoints"].get<uint64_t>() > 10000);
  uint64_t top = 0;
  for (const auto& p : r["timeline"]) top = std::max<uint64_t>(top, p["totalBytes"]);
  CHECK(top == r["allocatedPeakBytes"].get<uint64_t>());
}
