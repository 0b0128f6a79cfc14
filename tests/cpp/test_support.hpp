// Helpers the Catch2 tests share: fixtures under tests/fixtures/, calls into the core's JSON
// API (trainmem::call) and small readers of its results.
#pragma once
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"

namespace tm_test {

using trainmem::json;

// A measured fixture (tests/fixtures/<name>), parsed.
inline json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

// The whole envelope ({ok, result} or {ok, error}) of one API call.
inline json envelope(const char* fn, const json& req) {
  return json::parse(trainmem::call(fn, req.dump()));
}

// The result of a call that must succeed (the envelope is printed when it does not).
inline json result_of(const char* fn, const json& req) {
  const json env = envelope(fn, req);
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}
inline json peak_result(const json& req) { return result_of("peakMemory", req); }
inline json peak_envelope(const json& req) { return envelope("peakMemory", req); }

// The error of a call that must fail.
inline json error_of(const char* fn, const json& req) {
  const json env = envelope(fn, req);
  REQUIRE(env["ok"] == false);
  return env["error"];
}

// `base` with the fields of `extra` set over it.
inline json with(json base, const json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) base[it.key()] = it.value();
  return base;
}

// The timeline point of a phase and chain layer (timeline: true).
inline const json& timeline_point(const json& r, const char* phase, int layer) {
  for (const auto& p : r["timeline"])
    if (p["phase"] == phase && p["layer"] == layer) return p;
  FAIL("no timeline point " << phase << " " << layer);
  return r;
}

}  // namespace tm_test
