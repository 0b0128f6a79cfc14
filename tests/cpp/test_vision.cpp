// Vision networks vs real PyTorch: tests/fixtures/torch_vision.json was measured with torch 1.13
// and torchvision 0.14 (CPU) by tools/measure_vision.py: every preset's state_dict (parameter
// names and shapes, buffers, module tree), and per case the saved-for-backward bytes
// (saved_tensors_hooks, storages once) and one steady-state step's peak (profiler events +
// baseline). Goals (issue "every deep network"): saved bytes within 1 %, step peaks within 5 %.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"

using trainmem::json;

namespace {

json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  REQUIRE(env["ok"] == false);
  return env["error"];
}

// The preset id of a torchvision builder (cpp/data/models/torchvision-*.json).
std::string preset_of(const std::string& arch) { return "torchvision/" + arch; }

// The peakMemory request a fixture case describes (tools/measure_vision.py CASES).
json request_for(const json& c) {
  json r = {{"model", {{"preset", preset_of(c["arch"])}}},
            {"microBatch", c["microBatch"]},
            {"optimizer", c["optimizer"]},
            {"precision", c.value("dtype", "fp32")},
            {"runtime", "pytorch-cpu"}};
  if (c["imageSize"] != 224) r["imageSize"] = c["imageSize"];
  if (c.contains("numClasses")) r["numClasses"] = c["numClasses"];
  if (c.value("checkpoint", false)) r["checkpointing"] = "full";
  return r;
}

}  // namespace

TEST_CASE("torchvision presets: tensors, buffers and modules equal torchvision 0.14's",
          "[vision]") {
  const json fx = load_fixture("torch_vision.json");
  REQUIRE(fx["models"].size() >= 9);
  for (const auto& kv : fx["models"].items()) {
    INFO(kv.key());
    const json& want = kv.value();
    const trainmem::ModelDescription m = trainmem::model_from_preset(preset_of(kv.key()), "preset");
    CHECK(m.params == want["params"].get<uint64_t>());
    CHECK(m.published_params == want["params"].get<uint64_t>());
    REQUIRE(m.tensors.size() == want["tensors"].size());
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      INFO(want["tensors"][i].dump());
      CHECK(m.tensors[i].name == want["tensors"][i][0].get<std::string>());
      CHECK(m.tensors[i].shape == want["tensors"][i][1].get<std::vector<uint64_t>>());
    }
    REQUIRE(m.buffers.size() == want["buffers"].size());
    for (size_t i = 0; i < m.buffers.size(); ++i) {
      CHECK(m.buffers[i].name == want["buffers"][i][0].get<std::string>());
      CHECK(m.buffers[i].shape == want["buffers"][i][1].get<std::vector<uint64_t>>());
    }
    CHECK(m.module_count == want["modules"].get<uint64_t>());
    CHECK(m.module_name_bytes == want["moduleNameBytes"].get<uint64_t>());
  }
}

TEST_CASE("torchvision presets: saved bytes within 1 %, step peaks within 5 % of torch 1.13",
          "[vision]") {
  const json fx = load_fixture("torch_vision.json");
  REQUIRE(fx["cases"].size() >= 20);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const json res = call("peakMemory", request_for(c));
    const double saved = c["savedBytes"].get<double>();
    const double stored = res["storedActivationBytes"].get<double>();
    INFO("saved: measured " << saved << " predicted " << stored);
    CHECK(std::fabs(stored - saved) <= 0.01 * saved);
    const double peak = c["peakBytes"].get<double>();
    const double predicted = res["allocatedPeakBytes"].get<double>();
    INFO("peak: measured " << peak << " predicted " << predicted << " phase " << res["peakPhase"]
                           << " (measured " << c["peakPhase"] << ")");
    CHECK(std::fabs(predicted - peak) <= 0.05 * peak);
    CHECK(res["params"].get<double>() == c["params"].get<double>());
  }
}

TEST_CASE("vision request fields are checked by name", "[vision]") {
  const json base = {{"model", {{"preset", "torchvision/resnet50"}}},
                     {"microBatch", 2},
                     {"optimizer", "sgd"},
                     {"precision", "fp32"}};
  json r = base;
  r["seqLen"] = 512;  // an image network reads imageSize
  CHECK(error_of("peakMemory", r)["field"] == "seqLen");
  r = base;
  r["imageSize"] = 0;
  CHECK(error_of("peakMemory", r)["field"] == "imageSize");
  r = base;
  r["numClasses"] = "ten";
  CHECK(error_of("peakMemory", r)["field"] == "numClasses");
  // a text model refuses the image fields
  json t = {
      {"model", {{"preset", "gpt2"}}}, {"microBatch", 1}, {"seqLen", 128}, {"optimizer", "sgd"},
      {"precision", "fp32"},           {"imageSize", 224}};
  CHECK(error_of("peakMemory", t)["field"] == "imageSize");
  // an unknown builder names the ones modelled
  json u = base;
  u["model"] = {{"config", {{"model_type", "torchvision"}, {"architecture", "vgg16"}}}};
  const json e = error_of("peakMemory", u);
  CHECK(e["field"] == "model.config.architecture");
  CHECK(e["message"].get<std::string>().find("resnet50") != std::string::npos);
}

TEST_CASE("numClasses changes the head: ResNet-50's fc is 2048 x classes + classes", "[vision]") {
  // torchvision resnet50: fc = nn.Linear(512 * 4, num_classes); everything else is unchanged
  const json base = {{"model", {{"preset", "torchvision/resnet50"}}},
                     {"microBatch", 2},
                     {"optimizer", "sgd"},
                     {"precision", "fp32"}};
  json r = base;
  r["numClasses"] = 10;
  const double ten = call("peakMemory", r)["params"];
  const double thousand = call("peakMemory", base)["params"];
  CHECK(thousand - ten == 2049.0 * 990.0);
}
