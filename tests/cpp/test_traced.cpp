// Traced models (model.trace) against real PyTorch. tests/fixtures/traces/ holds traces written on
// the meta device by python/trainmem_trace at one batch size; tests/fixtures/torch_traced.json
// the same models' real CPU training steps at other batch sizes (and lengths), measured with
// torch 1.13 by tools/measure_traced.py. Goals (issue: trace any PyTorch model): saved-for-
// backward bytes within 1 %, the step's peak within 5 %, runtime "pytorch-cpu".
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

std::string read_text(const std::string& rel) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 800));
  REQUIRE(env["ok"] == false);
  return env["error"];
}

json trace_of(const std::string& rel) { return json::parse(read_text(rel)); }

// The request a measured case describes (tools/measure_traced.py).
json request_for(const json& c, const json& trace) {
  json r = {{"model", {{"trace", trace}}},
            {"microBatch", c["microBatch"]},
            {"runtime", "pytorch-cpu"},
            {"optimizer", c["optimizer"]},
            {"timeline", false}};
  if (c.contains("seqLen")) r["seqLen"] = c["seqLen"];
  return r;
}

}  // namespace

TEST_CASE("traced: saved bytes within 1 % and step peaks within 5 % of torch 1.13 (CPU)",
          "[traced]") {
  const json fx = json::parse(read_text("torch_traced.json"));
  REQUIRE(fx["cases"].size() >= 14);
  std::set<std::string> models;
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    models.insert(c["trace"].get<std::string>());
    const json trace = trace_of(c["trace"]);
    // every case is measured at a size the trace was not recorded at
    CHECK(c["microBatch"] != trace["sizes"]["batch"]);
    const json res = call("peakMemory", request_for(c, trace));
    const double saved = c["savedBytes"].get<double>(), peak = c["peakBytes"].get<double>();
    const double got_saved = res["trace"]["savedBytes"].get<double>();
    const double got_peak = res["allocatedPeakBytes"].get<double>();
    INFO("saved: measured " << saved << " predicted " << got_saved);
    INFO("peak: measured " << peak << " (" << c["peakPhase"] << ") predicted " << got_peak << " ("
                           << res["peakPhase"] << ")");
    CHECK(std::fabs(got_saved - saved) <= 0.01 * saved);
    CHECK(std::fabs(got_peak - peak) <= 0.05 * peak);
    CHECK(res["params"] == c["params"]);
  }
  CHECK(models.size() >= 11);  // eight torchvision models and three of our own at least
}
