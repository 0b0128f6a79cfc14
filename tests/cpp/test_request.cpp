// The strict request reader: field paths, ranges, suggestions.
#include <catch2/catch.hpp>
#include <functional>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using namespace trainmem;

namespace {
std::string error_field(const std::function<void()>& f, std::string* code_out = nullptr) {
  try {
    f();
  } catch (const RequestError& e) {
    if (code_out) *code_out = e.code();
    return e.field();
  }
  return "<no error>";
}
}  // namespace

TEST_CASE("integers: whole JSON floats are accepted, fractions and negatives are not") {
  const json j = json::parse(R"({"a": 1e9, "b": 2.5, "c": -1, "d": 18446744073709551615})");
  Obj o(j, "req");
  CHECK(o.u64("a") == 1000000000ULL);
  std::string c;
  CHECK(error_field([&] { o.u64("b"); }, &c) == "req.b");
  CHECK(c == "not_integer");
  CHECK(error_field([&] { o.u64("c"); }, &c) == "req.c");
  CHECK(c == "out_of_range");
  CHECK(o.u64("d") == 18446744073709551615ULL);
}

TEST_CASE("unknown keys are rejected with the closest known key") {
  const json j = json::parse(R"({"microBatch": 1, "seqlen": 5})");
  Obj o(j, "");
  o.u64("microBatch");
  o.u64_or("seqLen", 1);
  try {
    o.finish();
    FAIL("expected an error");
  } catch (const RequestError& e) {
    CHECK(e.code() == "unknown_key");
    CHECK(e.field() == "seqlen");
    CHECK(std::string(e.what()).find("seqLen") != std::string::npos);
  }
}

TEST_CASE("checked arithmetic refuses to wrap") {
  CHECK(checked_mul(1ULL << 32, 1ULL << 31, "x") == (1ULL << 63));
  CHECK_THROWS_AS(checked_mul(1ULL << 32, 1ULL << 32, "x"), RequestError);
  CHECK_THROWS_AS(checked_add(UINT64_MAX, 1, "x"), RequestError);
}

TEST_CASE("the API never throws and reports bad JSON as data") {
  const json bad = json::parse(call("checkpointSize", "{not json"));
  CHECK(bad["ok"] == false);
  CHECK(bad["error"]["code"] == "invalid_json");
  const json unknown = json::parse(call("checkpointsize", "{}"));
  CHECK(unknown["error"]["code"] == "unknown_function");
  std::string deep(200, '[');
  CHECK(json::parse(call("checkpointSize", deep))["error"]["code"] == "too_large");
}
