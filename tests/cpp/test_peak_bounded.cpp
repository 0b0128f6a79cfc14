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
