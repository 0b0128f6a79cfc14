// Placement chains in columnar form (chain.layers as one array per field; from the JS wrapper,
// numeric columns as float64s beside the request: trainmem::call_with_columns). Expected
// values: the same chain in the array-of-objects form, read by its own reader (the whole
// envelope must be byte-identical), and each error naming the field as README "Placement"
// states it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "trainmem/api.hpp"

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

const char* const kNumeric[] = {"forwardCost", "backwardCost",     "outputBytes",
                                "savedBytes",  "forwardTempBytes", "backwardTempBytes"};

// A random chain as the array form: fractional costs, some sizes above 4 GiB, names.
json random_layers(std::mt19937_64& rng, size_t n) {
  json layers = json::array();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t out = 1 + rng() % (uint64_t{6} << 30);  // up to 6 GiB
    layers.push_back({{"name", "block " + std::to_string(i)},
                      {"forwardCost", static_cast<double>(1 + rng() % 97) / 7.0},
                      {"backwardCost", static_cast<double>(1 + rng() % 193) / 7.0},
                      {"outputBytes", out},
                      {"savedBytes", out + rng() % (uint64_t{3} << 30)},
                      {"forwardTempBytes", rng() % 4096},
                      {"backwardTempBytes", rng() % 8192}});
  }
  return layers;
}

// The same layers as JSON columns.
json as_columns(const json& layers) {
  json cols = json::object();
  for (const char* k : kNumeric) cols[k] = json::array();
  cols["name"] = json::array();
  for (const json& L : layers) {
    for (const char* k : kNumeric) cols[k].push_back(L[k]);
    cols["name"].push_back(L["name"]);
  }
  return cols;
}

// The same numeric columns as call_with_columns takes them; `cols` keeps the names.
std::vector<double> as_values(const json& layers, json* cols) {
  std::vector<double> v;
  for (const char* k : kNumeric)
    for (const json& L : layers) v.push_back(L[k].get<double>());
  *cols = json::object();
  (*cols)["name"] = json::array();
  for (const json& L : layers) (*cols)["name"].push_back(L["name"]);
  return v;
}

json with_layers(json request, json layers) {
  request["chain"]["layers"] = std::move(layers);
  return request;
}

const std::vector<std::string> kNames(std::begin(kNumeric), std::end(kNumeric));

json error_of(const std::string& envelope) {
  const json e = json::parse(envelope);
  REQUIRE_FALSE(e["ok"].get<bool>());
  return e["error"];
}

}  // namespace

TEST_CASE("columnar chains give the array form's answer byte for byte", "[placement][columns]") {
  std::mt19937_64 rng(29);
  const json layers = random_layers(rng, 300);
  uint64_t saved = 0;
  for (const json& L : layers) saved += L["savedBytes"].get<uint64_t>();
  const json base = {{"chain", {{"inputBytes", 12345}}}};
  std::vector<json> requests = {
      {{"strategy", "sqrt"}},
      {{"strategy", "chen-greedy"}},
      {{"strategy", "chen-greedy"}, {"frontier", true}, {"timeline", false}},
      {{"strategy", "every-k"}, {"k", 7}},
      {{"strategy", "sequential"}, {"segments", 5}},
      {{"strategy", "optimal-single-level"}, {"budgetBytes", saved / 5}},
      {{"strategy", "optimal"}, {"budgetBytes", saved / 4}, {"slots", 100}},
      {{"strategy", "none"}},
  };
  for (json r : requests) {
    r.update(base, true);
    INFO(r.dump());
    const std::string expected = trainmem::call("placement", with_layers(r, layers).dump());
    REQUIRE(json::parse(expected)["ok"].get<bool>());
    CHECK(trainmem::call("placement", with_layers(r, as_columns(layers)).dump()) == expected);
    json rest;
    const std::vector<double> values = as_values(layers, &rest);
    CHECK(trainmem::call_with_columns("placement", with_layers(r, rest).dump(), kNames, values) ==
          expected);
  }
}

TEST_CASE("columnar chains: optional columns and numbers written as floats",
          "[placement][columns]") {
  // No temporaries and no names: the array form's defaults (0, "").
  const json layers = json::parse(
      R"([{"forwardCost":1,"backwardCost":2,"outputBytes":10,"savedBytes":20},
          {"forwardCost":1,"backwardCost":2,"outputBytes":10,"savedBytes":20},
          {"forwardCost":1,"backwardCost":2,"outputBytes":10,"savedBytes":20},
          {"forwardCost":1,"backwardCost":2,"outputBytes":10,"savedBytes":20}])");
  const json r = {{"chain", {{"inputBytes", 10}}}, {"strategy", "sqrt"}};
  const std::string expected = trainmem::call("placement", with_layers(r, layers).dump());
  const json cols = json::parse(
      R"({"forwardCost":[1,1,1,1],"backwardCost":[2,2,2,2],"outputBytes":[1e1,10,10,10],
          "savedBytes":[20,20.0,20,20]})");
  CHECK(trainmem::call("placement", with_layers(r, cols).dump()) == expected);
  const std::vector<double> values = {1, 1, 1, 1, 2, 2, 2, 2, 10, 10, 10, 10, 20, 20, 20, 20};
  CHECK(trainmem::call_with_columns("placement", with_layers(r, json::object()).dump(),
                                    {"forwardCost", "backwardCost", "outputBytes", "savedBytes"},
                                    values) == expected);
}

TEST_CASE("columnar chains: errors name the column and the value", "[placement][columns]") {
  const json r = {{"chain", {{"inputBytes", 10}}}, {"strategy", "sqrt"}};
  const json ok = json::parse(
      R"({"forwardCost":[1,1],"backwardCost":[2,2],"outputBytes":[10,10],"savedBytes":[20,20]})");
  const auto call = [&](json cols) {
    return error_of(trainmem::call("placement", with_layers(r, std::move(cols)).dump()));
  };
  json c = ok;
  c.erase("savedBytes");
  CHECK(call(c)["code"] == "missing_field");
  CHECK(call(c)["field"] == "chain.layers.savedBytes");
  c = ok;
  c["backwardCost"] = {2, 2, 2};
  CHECK(call(c)["code"] == "inconsistent");
  CHECK(call(c)["field"] == "chain.layers.backwardCost");
  c = ok;
  c["savedBytes"][1] = 20.5;
  CHECK(call(c)["code"] == "not_integer");
  CHECK(call(c)["field"] == "chain.layers.savedBytes[1]");
  c = ok;
  c["forwardCost"][0] = "fast";
  CHECK(call(c)["code"] == "invalid_type");
  CHECK(call(c)["field"] == "chain.layers.forwardCost[0]");
  c = ok;
  c["outputBytes"] = 10;
  CHECK(call(c)["code"] == "invalid_type");
  CHECK(call(c)["field"] == "chain.layers.outputBytes");
  c = ok;
  c["name"] = {"a"};
  CHECK(call(c)["code"] == "inconsistent");
  CHECK(call(c)["field"] == "chain.layers.name");
  c = ok;
  c["fowardTempBytes"] = {0, 0};
  CHECK(call(c)["code"] == "unknown_key");
  c = ok;
  for (const char* k : {"forwardCost", "backwardCost", "outputBytes", "savedBytes"})
    c[k] = json(std::vector<int>(100001, 1));
  CHECK(call(c)["code"] == "too_large");
  CHECK(call(c)["field"] == "chain.layers");
}

TEST_CASE("typed-array columns: non-finite numbers and misuse are refused",
          "[placement][columns]") {
  const std::string r = R"({"chain":{"inputBytes":10,"layers":{}},"strategy":"sqrt"})";
  const std::vector<std::string> names = {"forwardCost", "backwardCost", "outputBytes",
                                          "savedBytes"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  json e =
      error_of(trainmem::call_with_columns("placement", r, names, {1, 1, 2, 2, 10, nan, 20, 20}));
  CHECK(e["code"] == "invalid_number");
  CHECK(e["field"] == "chain.layers.outputBytes[1]");
  e = error_of(trainmem::call_with_columns("placement", r, names, {1, 1, 2, 2, 10, 10, 20, -20}));
  CHECK(e["code"] == "out_of_range");
  CHECK(e["field"] == "chain.layers.savedBytes[1]");
  // A column also given in the request, a column that is not numeric, another function.
  const std::string twice =
      R"({"chain":{"inputBytes":10,"layers":{"savedBytes":[20,20]}},"strategy":"sqrt"})";
  CHECK(error_of(trainmem::call_with_columns(
            "placement", twice, names, {1, 1, 2, 2, 10, 10, 20, 20}))["code"] == "inconsistent");
  CHECK(error_of(trainmem::call_with_columns("placement", r, {"name"}, {1, 2}))["code"] ==
        "unknown_key");
  CHECK(error_of(trainmem::call_with_columns("checkpointSize", "{}", names,
                                             {1, 1, 2, 2, 10, 10, 20, 20}))["code"] ==
        "inconsistent");
  const std::string array_form = R"({"chain":{"inputBytes":10,"layers":[]},"strategy":"sqrt"})";
  CHECK(error_of(trainmem::call_with_columns("placement", array_form, names,
                                             {1, 1, 2, 2, 10, 10, 20, 20}))["code"] ==
        "invalid_type");
}
