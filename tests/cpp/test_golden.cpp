// Runs tests/fixtures/golden.json (shared with the JS suites) against the native core.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {
json load_golden() {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/golden.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// Looks up a dotted path ("breakdown.weights", "tensors.0.name") in a result.
const json* lookup(const json& root, const std::string& path) {
  const json* cur = &root;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (cur->is_array()) {
      const size_t i = std::stoul(part);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else if (cur->is_object() && cur->contains(part)) {
      cur = &(*cur)[part];
    } else {
      return nullptr;
    }
  }
  return cur;
}
}  // namespace

TEST_CASE("golden vectors: results", "[golden]") {
  const json golden = load_golden();
  for (const auto& c : golden["cases"]) {
    const std::string name = c["name"];
    INFO(name);
    const json env = json::parse(trainmem::call(c["function"], c["request"].dump()));
    INFO(env.dump().substr(0, 2000));
    REQUIRE(env["ok"] == true);
    const double tol = c.value("tolerance", 0.0);
    for (auto it = c["expect"].begin(); it != c["expect"].end(); ++it) {
      INFO("path " << it.key());
      const json* got = lookup(env["result"], it.key());
      REQUIRE(got != nullptr);
      if (it->is_number() && tol == 0.0 && it->is_number_integer()) {
        CHECK(got->get<double>() == it->get<double>());
        if (got->is_number_integer()) CHECK(got->get<uint64_t>() == it->get<uint64_t>());
      } else if (it->is_number()) {
        const double want = it->get<double>();
        CHECK(std::fabs(got->get<double>() - want) <= tol * std::fabs(want) + 1e-12);
      } else {
        CHECK(*got == *it);
      }
    }
  }
}

TEST_CASE("golden vectors: errors name their field", "[golden]") {
  const json golden = load_golden();
  for (const auto& c : golden["errors"]) {
    INFO(c["name"].get<std::string>());
    const json env = json::parse(trainmem::call(c["function"], c["request"].dump()));
    INFO(env.dump());
    REQUIRE(env["ok"] == false);
    CHECK(env["error"]["code"] == c["code"]);
    CHECK(env["error"]["field"] == c["field"]);
    CHECK(!env["error"]["message"].get<std::string>().empty());
    if (c.contains("minimumBudgetBytes"))
      CHECK(env["error"]["minimumBudgetBytes"] == c["minimumBudgetBytes"]);
    else
      CHECK(!env["error"].contains("minimumBudgetBytes"));
  }
}
