// The vocabulary tables (trainmem/vocabulary.hpp): every name of every table is accepted by
// the parser that reads it, and a misspelt name is an unknown_value error naming the field and
// suggesting the name. The expected values are the tables' own names by construction: what is
// checked is that the parsers and the tables agree.
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/limits.hpp"
#include "trainmem/vocabulary.hpp"

using namespace trainmem;

namespace {

// `request` with every "@" replaced by `name`.
std::string fill(const std::string& request, const std::string& name) {
  std::string out;
  for (char c : request) out += c == '@' ? name : std::string(1, c);
  return out;
}

// A misspelling at edit distance 1 from `name` and at least 2 from any other table name
// ('~' appears in none): the suggestion must be `name` itself.
std::string typo(const std::string& name) { return name.substr(0, 1) + "~" + name.substr(1); }

// Every name is accepted (no unknown_value at `field`); its typo is refused with a suggestion.
void check_vocabulary(const std::vector<std::string>& names, const char* function,
                      const std::string& request, const std::string& field) {
  REQUIRE(!names.empty());
  for (const auto& n : names) {
    INFO(function << " " << field << " = " << n);
    const json ok = json::parse(call(function, fill(request, n)));
    if (ok["ok"] == false) {
      // a name may need other fields (manual: its segments), or a model it is modelled for
      // (the op-level modes: Llama-family blocks); it must never be unknown
      CHECK(ok["error"]["code"] != "unknown_value");
      if (ok["error"]["code"] != "unsupported") CHECK(ok["error"]["field"] != field);
    }
    const json bad = json::parse(call(function, fill(request, typo(n))));
    REQUIRE(bad["ok"] == false);
    CHECK(bad["error"]["code"] == "unknown_value");
    CHECK(bad["error"]["field"] == field);
    const std::string msg = bad["error"]["message"].get<std::string>();
    CHECK(msg.find("did you mean \"" + n + "\"") != std::string::npos);
  }
}

bool placement(const vocab::StrategyTerm& t) { return t.placement; }

const char* kPeak = R"({"model":{"preset":"gpt2"},"optimizer":"adamw","microBatch":1,"seqLen":64,)"
                    R"("gpuMemoryBytes":80000000000,"timeline":false,)";
const char* kChain =
    R"({"chain":{"inputBytes":8,"layers":[{"forwardCost":1,"backwardCost":2,"outputBytes":8,"savedBytes":8},)"
    R"({"forwardCost":1,"backwardCost":2,"outputBytes":8,"savedBytes":8}]},"budgetBytes":1000,)";

}  // namespace

TEST_CASE("vocabulary: optimizers, dtypes and formats are read from their tables") {
  check_vocabulary(vocab::names(vocab::kOptimizers), "checkpointSize",
                   R"({"model":{"params":1000},"optimizer":"@"})", "optimizer");
  check_vocabulary(vocab::names(vocab::kOptimizers), "checkpointSize",
                   R"({"model":{"params":1000},"optimizer":{"name":"@"}})", "optimizer.name");
  // every spelling, listed or not
  check_vocabulary(vocab::names(vocab::kDTypes), "checkpointSize",
                   R"({"model":{"params":1000},"optimizer":"sgd","weightDtype":"@"})",
                   "weightDtype");
  check_vocabulary(vocab::names(vocab::kCheckpointFormats), "checkpointSize",
                   R"({"model":{"params":1000},"optimizer":"sgd","format":"@"})", "format");
}

TEST_CASE("vocabulary: peakMemory's names are read from their tables") {
  const std::string p = kPeak;
  check_vocabulary(vocab::names(vocab::kStrategies), "peakMemory", p + R"("checkpointing":"@"})",
                   "checkpointing");
  check_vocabulary(vocab::names(vocab::kStrategies), "peakMemory",
                   p + R"("checkpointing":{"strategy":"@"}})", "checkpointing.strategy");
  check_vocabulary(vocab::names(vocab::kPrecisions), "peakMemory", p + R"("precision":"@"})",
                   "precision");
  check_vocabulary(vocab::names(vocab::kAttention), "peakMemory", p + R"("attention":"@"})",
                   "attention");
  check_vocabulary(vocab::names(vocab::kRuntimes), "peakMemory", p + R"("runtime":"@"})",
                   "runtime");
  check_vocabulary(vocab::names(vocab::kOptimizerImpls), "peakMemory",
                   p + R"("optimizerImplementation":"@"})", "optimizerImplementation");
  check_vocabulary(vocab::names(vocab::kLosses), "peakMemory", p + R"("loss":"@"})", "loss");
  check_vocabulary(vocab::names(vocab::kLosses), "peakMemory", p + R"("loss":{"type":"@"}})",
                   "loss.type");
  check_vocabulary(vocab::names(vocab::kMlpActivations), "peakMemory",
                   R"({"mlp":{"sizes":[4,4],"activation":"@"},"microBatch":1})", "mlp.activation");
  check_vocabulary(vocab::names(vocab::kFsdpStrategies), "peakMemory",
                   p + R"("dataParallel":8,"fsdp":{"shardingStrategy":"@","shardGroupSize":4}})",
                   "fsdp.shardingStrategy");
  check_vocabulary(
      vocab::names(vocab::kZeroMixedPrecision), "peakMemory",
      p + R"("zeroStage":2,"dataParallel":2,"precision":"amp-fp16","zeroMixedPrecision":"@"})",
      "zeroMixedPrecision");
  check_vocabulary(vocab::names(vocab::kFloat8Recipes), "peakMemory",
                   p + R"("float8":{"recipe":"@"}})", "float8.recipe");
}

// A strategy's parameter given with another strategy is refused, naming the strategies that take
// it (from their sources: Megatron-LM's uniform and block methods and torchtitan's
// selective_ac_option take a k; checkpoint_sequential segments; revolve snapshots; Rotor its
// slots; Chen et al. 2016 Alg. 3 and the two optimal solvers a memory budget).
TEST_CASE("vocabulary: a strategy parameter names the strategies that take it") {
  const std::string p = kPeak;
  const std::string c = kChain;
  // {function, request, what the message says}
  const std::tuple<const char*, std::string, const char*> cases[] = {
      {"peakMemory", p + R"("checkpointing":{"strategy":"sqrt","k":2}})",
       "selective-layer, every-k, block only, not sqrt"},
      {"placement", c + R"("strategy":"sqrt","k":2})", "every-k, block only, not sqrt"},
      {"peakMemory", p + R"("checkpointing":{"strategy":"sqrt","budgetBytes":9}})",
       "chen-greedy, optimal-single-level, optimal only"},
      {"peakMemory", p + R"("checkpointing":{"strategy":"full","slots":9}})",
       "optimal only, not full"},
      {"placement", c + R"("strategy":"sqrt","snapshots":2})", "revolve only, not sqrt"},
      {"peakMemory", p + R"("checkpointing":{"strategy":"full","everyOtherMm":true}})",
       "selective-op only, not full"},
  };
  for (const auto& [fn, req, says] : cases) {
    INFO(req);
    const json e = json::parse(call(fn, req));
    REQUIRE(e["ok"] == false);
    CHECK(e["error"]["code"] == "inconsistent");
    CHECK(e["error"]["message"].get<std::string>().find(says) != std::string::npos);
  }
  // chen-greedy plans under a budget in peakMemory as in placement
  const json ok = json::parse(
      call("peakMemory", p + R"("checkpointing":{"strategy":"chen-greedy","budgetBytes":4e9}})"));
  CHECK(ok["ok"] == true);
}

TEST_CASE("vocabulary: placement's strategies are the table's placement entries") {
  const std::vector<std::string> names = vocab::names_if(vocab::kStrategies, placement);
  check_vocabulary(names, "placement", std::string(kChain) + R"("strategy":"@"})", "strategy");
  // full and selective are peakMemory strategies only: unknown to placement
  for (const auto& t : vocab::kStrategies) {
    if (t.placement) continue;
    INFO(t.name);
    const json e =
        json::parse(call("placement", std::string(kChain) + "\"strategy\":\"" + t.name + "\"}"));
    CHECK(e["error"]["code"] == "unknown_value");
    CHECK(e["error"]["field"] == "strategy");
  }
}

TEST_CASE("vocabulary: the micro-batch limit is the same in every calculator") {
  // limits::kMaxMicroBatch = 2^24 = 16,777,216: accepted in peakMemory, one more refused in
  // peakMemory, accumulation and placement's model form alike.
  REQUIRE(limits::kMaxMicroBatch == 16777216ULL);
  const std::string over = std::to_string(limits::kMaxMicroBatch + 1);
  const json peak =
      json::parse(call("peakMemory", R"({"mlp":{"sizes":[4,4]},"microBatch":)" + over + "}"));
  CHECK(peak["error"]["code"] == "out_of_range");
  CHECK(peak["error"]["field"] == "microBatch");
  const json acc =
      json::parse(call("accumulation", R"({"microBatch":)" + over + R"(,"accumulationSteps":1})"));
  CHECK(acc["error"]["code"] == "out_of_range");
  CHECK(acc["error"]["field"] == "microBatch");
  const json place = json::parse(
      call("placement", R"({"model":{"preset":"gpt2"},"seqLen":8,"microBatch":)" + over + "}"));
  CHECK(place["error"]["code"] == "out_of_range");
  CHECK(place["error"]["field"] == "microBatch");
  const json at = json::parse(call("peakMemory", R"({"mlp":{"sizes":[4,4]},"microBatch":)" +
                                                     std::to_string(limits::kMaxMicroBatch) + "}"));
  CHECK(at["ok"] == true);
}

TEST_CASE("vocabulary: the exported function lists every name of the tables") {
  const json v = json::parse(call("vocabulary", "{}"));
  REQUIRE(v["ok"] == true);
  const json& r = v["result"];
  CHECK(r["optimizers"].size() == std::size(vocab::kOptimizers));
  CHECK(r["checkpointing"].size() == std::size(vocab::kStrategies));
  CHECK(r["errorCodes"].size() == std::size(vocab::kErrorCodes));
  CHECK(r["limits"]["microBatch"] == limits::kMaxMicroBatch);
  bool lists_itself = false;
  for (const auto& f : r["functions"]) lists_itself = lists_itself || f == "vocabulary";
  CHECK(lists_itself);
  const json bad = json::parse(call("vocabulary", R"({"x":1})"));
  CHECK(bad["error"]["code"] == "unknown_key");
}

// An alias selects another name's state layout, and results print the layout's own name.
// Expected from the libraries: bitsandbytes' AdamW8bit and PagedAdamW8bit are
// Optimizer2State("adam", ..., 8 bits) as Adam8bit is (bitsandbytes/optim/adamw.py @ 06029dd6);
// transformers' Adafactor is one class; "sgd-momentum" is torch.optim.SGD with momentum set.
TEST_CASE("vocabulary: optimizer aliases print the layout they select") {
  const std::pair<const char*, const char*> cases[] = {
      {"adamw-8bit", "adam-8bit"},
      {"paged-adamw-8bit", "adam-8bit"},
      {"adafactor-hf", "adafactor"},
      {"sgd-momentum", "sgd"},
      {"torch-adafactor", "torch-adafactor"},
      {"torchao-adamw-4bit", "torchao-adamw-4bit"}};
  const json v = json::parse(call("vocabulary", "{}"));
  REQUIRE(v["ok"] == true);
  for (const auto& [alias, layout] : cases) {
    INFO(alias);
    CHECK(v["result"]["optimizerLayouts"][alias] == layout);
    const json r = json::parse(
        call("checkpointSize", fill(R"({"model":{"params":1000},"optimizer":"@"})", alias)));
    REQUIRE(r["ok"] == true);
    CHECK(r["result"]["optimizer"] == layout);
  }
}
