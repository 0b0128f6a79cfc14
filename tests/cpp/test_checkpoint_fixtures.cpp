// trainmem's checkpoint sizes against REAL torch.save files (tests/fixtures/
// torch_checkpoints.json, measured by tools/measure_checkpoints.py with torch 1.13).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "io/optimizer_json.hpp"
#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/optimizer.hpp"

using trainmem::json;

namespace {

const json& fixture() {
  static const json j = [] {
    std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_checkpoints.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json request_for(const json& c, const char* format) {
  json req;
  req["model"] = fixture()["models"][c["model"].get<std::string>()]["request"];
  req["weightDtype"] = c["weightDtype"];
  req["format"] = format;
  req["includeOptimizer"] = c["includeOptimizer"];
  req["fileName"] = c["fileName"];
  if (c.contains("optimizer")) req["optimizer"] = c["optimizer"];
  return req;
}

}  // namespace

TEST_CASE("torch.save file size within 0.1% of every measured checkpoint", "[checkpoint]") {
  double worst = 0;
  uint64_t exact = 0, n = 0;
  for (const auto& c : fixture()["cases"]) {
    INFO(c["name"].get<std::string>());
    const json r = call("checkpointSize", request_for(c, "torch"));
    const double want = c["measured"]["fileBytes"].get<double>();
    const double got = r["totalBytes"].get<double>();
    const double rel = std::fabs(got - want) / want;
    INFO("got " << got << " want " << want << " pickle " << r["container"]["pickleBytes"] << " vs "
                << c["measured"]["pickleBytes"]);
    CHECK(rel <= 0.001);
    worst = std::max(worst, rel);
    exact += got == want ? 1 : 0;
    ++n;
  }
  WARN("torch format: " << exact << "/" << n << " cases byte-exact, worst relative error "
                        << worst);
}

TEST_CASE("raw payload equals the measured storage bytes exactly", "[checkpoint]") {
  for (const auto& c : fixture()["cases"]) {
    INFO(c["name"].get<std::string>());
    const json r = call("checkpointSize", request_for(c, "raw"));
    const json& m = c["measured"];
    const uint64_t want =
        m["rawModelBytes"].get<uint64_t>() +
        (m.contains("rawOptimizerBytes") ? m["rawOptimizerBytes"].get<uint64_t>() : 0);
    CHECK(r["totalBytes"].get<uint64_t>() == want);
  }
}

TEST_CASE("safetensors size of every fixture model (format reimplementation)", "[checkpoint]") {
  for (const auto& c : fixture()["cases"]) {
    if (!c["measured"].contains("safetensorsBytes")) continue;
    INFO(c["name"].get<std::string>());
    json req = request_for(c, "safetensors");
    req["includeOptimizer"] = false;
    req["fileName"] = "model.safetensors";
    const json r = call("checkpointSize", req);
    CHECK(r["totalBytes"].get<uint64_t>() == c["measured"]["safetensorsBytes"].get<uint64_t>());
  }
}

TEST_CASE("optimizer state layouts equal the measured state_dict entries", "[optimizer]") {
  for (const auto& c : fixture()["cases"]) {
    if (!c["measured"].contains("layout")) continue;
    INFO(c["name"].get<std::string>());
    // Describe the model to get its tensors, then compare per parameter.
    const json d = call("describeModel",
                        {{"model", fixture()["models"][c["model"].get<std::string>()]["request"]}});
    json holder = {{"optimizer", c["optimizer"]}};
    const trainmem::Obj o(holder, "");
    const trainmem::OptimizerSpec spec = trainmem::parse_optimizer(o, "optimizer");
    trainmem::DType wd;
    REQUIRE(trainmem::parse_dtype(c["weightDtype"].get<std::string>(), &wd));
    const json& layout = c["measured"]["layout"]["state"];
    size_t p = 0;
    for (const auto& t : d["tensors"]) {
      if (t.contains("tiedTo")) continue;
      REQUIRE(p < layout.size());
      trainmem::TensorSpec ts;
      ts.name = t["name"];
      ts.shape = t["shape"].get<std::vector<uint64_t>>();
      const auto st = trainmem::optimizer_state(spec, ts, wd);
      const json& want = layout[p++];
      REQUIRE(st.size() == want.size());
      for (size_t i = 0; i < st.size(); ++i) {
        INFO("param " << ts.name << " state " << want[i].dump());
        CHECK(std::string(st[i].name) == want[i]["key"].get<std::string>());
        if (want[i].contains("shape")) {
          CHECK(st[i].shape == want[i]["shape"].get<std::vector<uint64_t>>());
          CHECK(std::string(trainmem::dtype_name(st[i].dtype)) ==
                want[i]["dtype"].get<std::string>());
        } else if (want[i]["python"] == "int") {
          CHECK(st[i].kind == trainmem::StateKind::python_int);
        } else {
          CHECK(st[i].kind == trainmem::StateKind::python_none);
        }
      }
    }
    CHECK(p == layout.size());
  }
}

TEST_CASE("config builder reproduces the measured state_dict names and shapes", "[model]") {
  for (const char* kind : {"gpt2", "llama"}) {
    INFO(kind);
    const json& m = fixture()["models"][kind];
    const json d = call("describeModel", {{"model", m["request"]}});
    const json& want = m["stateDict"]["tensors"];
    REQUIRE(d["tensors"].size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(d["tensors"][i]["name"] == want[i]["name"]);
      CHECK(d["tensors"][i]["shape"] == want[i]["shape"]);
      CHECK(d["tensors"][i].contains("tiedTo") == want[i].contains("tiedTo"));
    }
    CHECK(d["modules"].get<uint64_t>() == m["stateDict"]["modules"].size());
  }
}

TEST_CASE("torch.save above 4 GiB: zip64 records, byte-exact", "[checkpoint]") {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_checkpoint_zip64.json");
  REQUIRE(in.good());
  const json f = json::parse(in);
  const json r = call("checkpointSize", f["request"]);
  CHECK(r["totalBytes"].get<uint64_t>() == f["measured"]["fileBytes"].get<uint64_t>());
  CHECK(r["totalBytes"].get<uint64_t>() > (1ULL << 32));
}

TEST_CASE("safetensors shards split like huggingface_hub", "[checkpoint]") {
  // a 400 B, b 400 B, c 200 B with a 700 B limit: [a], [b, c] (split_torch_state_dict_into_
  // shards starts a new shard when the next tensor would pass the limit).
  const json req = {{"model",
                     {{"tensors",
                       {{{"name", "a"}, {"shape", {100}}},
                        {{"name", "b"}, {"shape", {100}}},
                        {{"name", "c"}, {"shape", {50}}}}}}},
                    {"format", "safetensors"},
                    {"maxShardBytes", 700}};
  const json r = call("checkpointSize", req);
  REQUIRE(r["files"].size() == 2);
  CHECK(r["files"][0]["tensors"] == 1);
  CHECK(r["files"][1]["tensors"] == 2);
  CHECK(r["files"][1]["name"] == "model-00002-of-00002.safetensors");
  // single file: 8 + header + 1000 bytes; header {"__metadata__":{"format":"pt"},"a":{...},...}
  const json one = call("checkpointSize", {{"model", req["model"]}, {"format", "safetensors"}});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[100],"data_offsets":[0,400]},)"
      R"("b":{"dtype":"F32","shape":[100],"data_offsets":[400,800]},)"
      R"("c":{"dtype":"F32","shape":[50],"data_offsets":[800,1000]}})";
  CHECK(one["totalBytes"].get<uint64_t>() == 8 + (header.size() + 7) / 8 * 8 + 1000);
}

TEST_CASE("bitsandbytes 8-bit Adam: uint8 moments, fp32 absmax per 2048 values", "[optimizer]") {
  // One 4096x4096 matrix: state1/state2 16,777,216 B each, absmax 8192 blocks x 4 B each,
  // shared qmaps 2 x 256 x 4 B (bitsandbytes/optim/optimizer.py Optimizer2State).
  const json r =
      call("checkpointSize", {{"model", {{"tensors", {{{"name", "w"}, {"shape", {4096, 4096}}}}}}},
                              {"optimizer", "adam-8bit"},
                              {"weightDtype", "fp32"}});
  CHECK(r["optimizerStates"]["state1"] == 16777216);
  CHECK(r["optimizerStates"]["absmax1"] == 32768);
  CHECK(r["optimizerStates"]["qmap1"] == 1024);
  CHECK(r["breakdown"]["optimizerState"] == 2 * 16777216 + 2 * 32768 + 2 * 1024);
}

TEST_CASE("checkpoint: the torch format is exact only when the modules are known", "[checkpoint]") {
  // torch.save(model.state_dict()) pickles one _metadata entry per module, parameterless ones
  // included (an nn.ReLU between two Linears): from tensor names alone they cannot be known.
  const json tensors = json::array(
      {{{"name", "0.weight"}, {"shape", {4, 4}}}, {{"name", "2.weight"}, {"shape", {4, 4}}}});
  const auto size = [&](json model) {
    const json env = json::parse(trainmem::call(
        "checkpointSize",
        json({{"model", model}, {"format", "torch"}, {"includeOptimizer", false}}).dump()));
    REQUIRE(env["ok"] == true);
    return env["result"];
  };
  const json guessed = size({{"tensors", tensors}});
  CHECK(guessed["exact"] == false);
  CHECK(guessed["notes"].dump().find("model.modules") != std::string::npos);
  const json known = size({{"tensors", tensors}, {"modules", {"", "0", "1", "2"}}});
  CHECK(known["exact"] == true);
  // the ReLU's entry is what the guess missed: the pickle only grows (the zip's 64-byte record
  // alignment may absorb it)
  CHECK(known["totalBytes"].get<double>() >= guessed["totalBytes"].get<double>());
}
