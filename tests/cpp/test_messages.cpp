// The message catalog's recogniser (cpp/src/io/messages.cpp): hand-written sentences against
// the templates of cpp/data/messages.json.
#include <catch2/catch.hpp>

#include "io/messages.hpp"
#include "trainmem/api.hpp"

using trainmem::messages::Part;
using trainmem::messages::recognise;

TEST_CASE("a sentence with parameters gives its code and values", "[messages]") {
  const auto parts = recognise(
      "LoRA: 48 linear layers adapted; activations of the frozen base and the adapters as the "
      "recipe keeps them; the base in bf16 (lora.baseDtype), adapters fp32");
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].code == "peak.assume.lora");
  REQUIRE(parts[0].params.size() == 3);
  CHECK(parts[0].params[0].first == "modules");
  CHECK(parts[0].params[0].second == "48");
  CHECK(parts[0].params[1].first == "base");
  CHECK(parts[0].params[1].second == "bf16");
}

TEST_CASE("clauses joined by '; ' are read one by one", "[messages]") {
  // peak_memory.cpp builds the optimizer-state source from three clauses.
  const auto parts = recognise(
      "optimizer 'adamw' state layout per parameter tensor (torch/optim, fp32 states); ZeRO "
      "partitions it over 8 ranks; offloaded to CPU (ZeRO-Offload)");
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].code == "peak.state.layout");
  CHECK(parts[0].params[0] == std::make_pair(std::string("optimizer"), std::string("adamw")));
  CHECK(parts[0].params[1] == std::make_pair(std::string("dtype"), std::string("fp32")));
  CHECK(parts[1].code == "peak.state.zero");
  CHECK(parts[2].code == "peak.state.offloaded");
}

TEST_CASE("a template that holds '; ' itself is matched whole first", "[messages]") {
  const auto parts = recognise(
      "device memory: the caching allocator simulated over 3 steps (PyTorch 2.5 and later on "
      "CUDA (eager); zero_grad(set_to_none=True), optimizer foreach); nvidia-smi = reserved + "
      "the CUDA context + NCCL buffers");
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].code == "peak.assume.device.nccl");
  CHECK(parts[0].params[1].second == "PyTorch 2.5 and later on CUDA (eager)");
}

TEST_CASE("text outside the catalog gets no parts", "[messages]") {
  CHECK(recognise("hello world").empty());
  CHECK(recognise("").empty());
  // A known clause followed by an unknown one: nothing, not half a translation.
  CHECK(recognise("fp32 parameters: 4 B/param; and something else").empty());
  // A parameter never matches the empty string.
  CHECK(recognise(
            "LoRA:  linear layers adapted; activations of the frozen base and the "
            "adapters as the recipe keeps them; the base in bf16 (lora.baseDtype), adapters fp32")
            .empty());
}

TEST_CASE("results carry their sentences as codes", "[messages]") {
  const std::string out = trainmem::call(
      "checkpointSize", R"({"model":{"params":1000},"optimizer":"sgd","weightDtype":"fp32"})");
  CHECK(out.find(R"("messages":{)") != std::string::npos);
  CHECK(out.find(R"("formula":[{"code":"size.formula.sum","params":{}}])") != std::string::npos);
}
