// Robustness of the entry point (issue 8): strict request parsing, numeric limits, the
// inexact-integer report. Expected values are hand calculations noted beside each check.
#include <catch2/catch.hpp>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using namespace trainmem;

namespace {
json envelope(const std::string& function, const std::string& request) {
  return json::parse(call(function, request));
}
}  // namespace

TEST_CASE("robustness: a number beyond double range names its field") {
  // 1e400 > DBL_MAX (~1.8e308): strtod gives infinity; nlohmann reports out_of_range.406.
  const json e = envelope("checkpointSize", R"({"model":{"params":1e400},"optimizer":"adam"})");
  CHECK(e["ok"] == false);
  CHECK(e["error"]["code"] == "out_of_range");
  CHECK(e["error"]["field"] == "model.params");
  const json a = envelope("checkpointSize", R"({"x":[1,2,[3,-1e999]]})");
  CHECK(a["error"]["code"] == "out_of_range");
  CHECK(a["error"]["field"] == "x[2][1]");
}

TEST_CASE("robustness: duplicate keys are refused, naming the key") {
  const json e = envelope("checkpointSize", R"({"model":{"params":5,"params":7}})");
  CHECK(e["error"]["code"] == "invalid_json");
  CHECK(e["error"]["field"] == "model.params");
}

TEST_CASE("robustness: a message longer than 1 KB is cut once, not recursively") {
  // Found by the fuzzer (tests/fuzz/regressions/): a duplicate key at the end of a long path
  // quotes the path; cutting to 1,024 + "..." recursed forever (stack overflow). The limit
  // (README, "Errors"): messages stop at 1 KB.
  std::string req = "{";
  for (int i = 0; i < 30; ++i) req += "\"" + std::string(60, static_cast<char>('a' + i)) + "\":{";
  req += R"("x":1,"x":2)";
  req += std::string(31, '}');
  const json e = envelope("placement", req);
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["code"] == "invalid_json");
  const std::string m = e["error"]["message"].get<std::string>();
  CHECK(m.size() == 1024);
  CHECK(m.substr(1021) == "...");
  CHECK(e["error"]["field"].get<std::string>().size() > 1024);  // the field is not cut
}

TEST_CASE("robustness: depth, value count and size limits") {
  // kMaxRequestDepth = 64: 64 nested arrays parse (then fail as a non-object request),
  // 65 are too deep.
  const json ok64 = envelope("checkpointSize", std::string(64, '[') + std::string(64, ']'));
  CHECK(ok64["error"]["code"] == "invalid_type");
  const json deep = envelope("checkpointSize", std::string(65, '[') + std::string(65, ']'));
  CHECK(deep["error"]["code"] == "too_large");
  std::string many = "[0";
  for (size_t i = 0; i < kMaxRequestValues; ++i) many += ",0";  // 1 + 1e6 numbers + 1 array
  many += "]";
  CHECK(envelope("checkpointSize", many)["error"]["code"] == "too_large");
  const std::string big(kMaxRequestBytes + 1, ' ');
  CHECK(envelope("checkpointSize", big)["error"]["code"] == "too_large");
  // Unbalanced closers never confuse the depth limit: plain invalid JSON.
  CHECK(envelope("checkpointSize", "]]]]" + std::string(100, '['))["error"]["code"] ==
        "invalid_json");
}

TEST_CASE("robustness: checked arithmetic stops at 2^63") {
  CHECK(checked_mul(1ULL << 32, 1ULL << 31, "x") == (1ULL << 63));
  CHECK_THROWS_AS(checked_mul((1ULL << 32) + 1, 1ULL << 31, "x"), RequestError);
  CHECK(checked_add(1ULL << 62, 1ULL << 62, "x") == (1ULL << 63));
  CHECK_THROWS_AS(checked_add(1ULL << 63, 1, "x"), RequestError);
}

TEST_CASE("robustness: integers beyond 2^53 are listed in result.inexact with exact digits") {
  // 1e15 params, Adam with fp32 master weights and fp64 weights:
  // weights 8 B + master 4 B + 2 states x 4 B (fp32, the default with a master copy) = 20 B per
  // param (seed 003), total 2e16 > 2^53 = 9,007,199,254,740,992; weights 8e15 < 2^53.
  const json e = envelope("checkpointSize",
                          R"({"model":{"params":1e15},"optimizer":"adam","weightDtype":"fp64",
                              "masterWeights":true})");
  REQUIRE(e["ok"] == true);
  const json& r = e["result"];
  REQUIRE(r.contains("inexact"));
  bool total = false;
  for (const auto& w : r["inexact"]) {
    if (w["field"] == "totalBytes") {
      total = true;
      CHECK(w["exact"] == "20000000000000000");
    }
    CHECK(w["field"] != "breakdown.weights");
  }
  CHECK(total);
  // A result entirely below 2^53 carries no inexact list (seed 003 example 2a: 4e8 bytes).
  const json small = envelope("checkpointSize", R"({"model":{"params":1e8},"optimizer":"sgd"})");
  CHECK_FALSE(small["result"].contains("inexact"));
}

TEST_CASE("robustness: error messages stay short whatever the input") {
  // An unterminated 70,000-character string: nlohmann quotes the whole token it last read.
  const json e = envelope("checkpointSize", "\"" + std::string(70000, 'x'));
  CHECK(e["error"]["code"] == "invalid_json");
  CHECK(e["error"]["message"].get<std::string>().size() <= 1100);
  // An unknown 70,000-character key.
  const json k = envelope("checkpointSize", "{\"" + std::string(70000, 'k') + "\":1}");
  CHECK(k["error"]["code"] == "unknown_key");
  CHECK(k["error"]["message"].get<std::string>().size() <= 1100);
  CHECK(k["error"]["field"].get<std::string>().size() <= 80);
}

TEST_CASE("robustness: byte totals up to 2^63 are exact; beyond is too_large, never wrapped") {
  // One fp32 tensor of 2^30 x 2^31 = 2^61 elements: 2^61 x 4 B = 2^63 B exactly; SGD without
  // momentum keeps no state (torch/optim/sgd.py), so the raw total is the weights alone.
  const json e = envelope("checkpointSize",
                          R"({"model":{"tensors":[{"name":"w","shape":[1073741824,2147483648]}]},
                              "optimizer":"sgd","format":"raw"})");
  REQUIRE(e["ok"] == true);
  CHECK(e["result"]["totalBytes"].get<uint64_t>() == (1ULL << 63));
  bool listed = false;
  for (const auto& w : e["result"]["inexact"])
    if (w["field"] == "totalBytes") listed = w["exact"] == "9223372036854775808";
  CHECK(listed);
  // 2^31 x 2^31 = 2^62 elements x 4 B = 2^64 B: refused (it used to wrap to 0).
  const json over = envelope("checkpointSize",
                             R"({"model":{"tensors":[{"name":"w","shape":[2147483648,2147483648]}]},
                                 "optimizer":"sgd","format":"raw"})");
  CHECK(over["ok"] == false);
  CHECK(over["error"]["code"] == "too_large");
}
