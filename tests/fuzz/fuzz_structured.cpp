// Structured fuzzing of the bounded-work paths (issue "bounded work"): the byte fuzzer
// (fuzz_call.cpp) is capped at 16 KB of request text, which never reaches a 2,000-layer chain
// or a 100,000-layer one. Here the input bytes are parameters (FuzzedDataProvider): a chain's
// length (up to the 100,000-layer limit, skewed to small) and its layers' shape, a strategy,
// a budget as a fraction of the plan that stores everything, slots, k, segments, snapshots,
// frontier and timeline; or an accumulation planner request (model preset, target batch,
// sequence length, GPU, precision, ranks). Each request must give a result or one of the
// stable error codes (never `internal`); a plan with a budget must fit it; libFuzzer's
// -timeout catches any request that does not end (run.sh gives each input 10 s under ASan).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "trainmem/api.hpp"
#include "trainmem/error.hpp"
#include "trainmem/vocabulary.hpp"

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

[[noreturn]] void finding(const char* what, const std::string& request, const std::string& out) {
  std::fprintf(stderr, "FINDING: %s\nrequest: %s\nout: %s\n", what, request.substr(0, 1500).c_str(),
               out.substr(0, 1500).c_str());
  std::abort();
}

// Chain length: mostly small (where exhaustive-like searches are exact), sometimes at the
// sizes the issue measured (400, 1,000, 2,000), rarely up to the 100,000-layer limit.
uint32_t chain_length(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      return p.ConsumeIntegralInRange<uint32_t>(1000, 100000);
    case 1:
    case 2:
      return p.ConsumeIntegralInRange<uint32_t>(100, 2500);
    default:
      return p.ConsumeIntegralInRange<uint32_t>(1, 64);
  }
}

std::string chain_json(FuzzedDataProvider& p, uint32_t n, double* all_peak) {
  // Layer shapes: uniform (the issue's), seeded random, with huge sizes, or with zeros.
  const int shape = p.ConsumeIntegralInRange<int>(0, 3);
  uint64_t seed = p.ConsumeIntegral<uint64_t>() | 1;
  const uint64_t scale = shape == 2 ? (uint64_t{1} << 40) : 1u << p.ConsumeIntegralInRange(0, 20);
  auto rnd = [&seed](uint64_t m) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;  // xorshift64
    return m ? seed % m : 0;
  };
  std::string s = "{\"inputBytes\":" + std::to_string(rnd(64) * scale) + ",\"layers\":[";
  double total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t out = 10, saved = 20, ft = 0, bt = 0, f = 1, b = 2;
    if (shape != 0) {
      out = (shape == 3 ? rnd(2) : 1 + rnd(64)) * scale;
      saved = out + (shape == 3 ? rnd(2) : rnd(128)) * scale;
      ft = rnd(16) * scale;
      bt = rnd(32) * scale;
      f = rnd(5);
      b = rnd(9);
    }
    total += static_cast<double>(saved + ft + bt);
    s += std::string(i ? "," : "") + "{\"forwardCost\":" + std::to_string(f) +
         ",\"backwardCost\":" + std::to_string(b) + ",\"outputBytes\":" + std::to_string(out) +
         ",\"savedBytes\":" + std::to_string(saved) +
         ",\"forwardTempBytes\":" + std::to_string(ft) +
         ",\"backwardTempBytes\":" + std::to_string(bt) + "}";
  }
  *all_peak = total;
  return s + "]}";
}

std::string placement_request(FuzzedDataProvider& p) {
  static const char* kStrategies[] = {"none",   "every-k",     "block",   "sequential",
                                      "sqrt",   "chen-greedy", "revolve", "optimal-single-level",
                                      "optimal"};
  const uint32_t n = chain_length(p);
  double all = 0;
  std::string r = "{\"chain\":" + chain_json(p, n, &all);
  const std::string st = kStrategies[p.ConsumeIntegralInRange<int>(0, 8)];
  r += ",\"strategy\":\"" + st + "\"";
  const double fraction = p.ConsumeFloatingPointInRange<double>(0.0, 1.2);
  const uint64_t budget = static_cast<uint64_t>(all * fraction) + 1;
  if (st == "chen-greedy" || st == "optimal-single-level" || st == "optimal")
    r += ",\"budgetBytes\":" + std::to_string(std::min<uint64_t>(budget, uint64_t{1} << 53));
  if (st == "optimal" && p.ConsumeBool())
    r += ",\"slots\":" + std::to_string(p.ConsumeIntegralInRange<uint32_t>(1, 5000));
  if (st == "every-k" || st == "block")
    r += ",\"k\":" + std::to_string(p.ConsumeIntegralInRange<uint32_t>(st == "block" ? 0 : 1, n));
  if (st == "sequential")
    r += ",\"segments\":" + std::to_string(p.ConsumeIntegralInRange<uint32_t>(1, n));
  if (st == "revolve")
    r += ",\"snapshots\":" + std::to_string(p.ConsumeIntegralInRange<uint32_t>(1, 64));
  if (p.ConsumeBool()) r += ",\"frontier\":true";
  if (p.ConsumeBool()) r += ",\"timeline\":false";
  return r + "}";
}

std::string planner_request(FuzzedDataProvider& p) {
  static const char* kModels[] = {"gpt2",        "llama-3.1-8b",      "deepseek-v3", "mixtral-8x7b",
                                  "llama-2-70b", "bert-base-uncased", "t5-small"};
  static const char* kGpus[] = {"h100-80gb", "a100-40gb", "t4", "rtx-4090"};
  static const char* kPrecisions[] = {"fp32", "amp-bf16", "amp-fp16", "bf16"};
  std::string r = "{\"model\":{\"preset\":\"" +
                  std::string(kModels[p.ConsumeIntegralInRange<int>(0, 6)]) + "\"}";
  r += ",\"targetGlobalBatch\":" +
       std::to_string(p.ConsumeIntegralInRange<uint64_t>(1, uint64_t{1} << 31));
  r += ",\"seqLen\":" + std::to_string(uint64_t{1} << p.ConsumeIntegralInRange<int>(0, 24));
  r += ",\"gpu\":\"" + std::string(kGpus[p.ConsumeIntegralInRange<int>(0, 3)]) + "\"";
  r += ",\"precision\":\"" + std::string(kPrecisions[p.ConsumeIntegralInRange<int>(0, 3)]) + "\"";
  if (p.ConsumeBool())
    r += ",\"dataParallel\":" + std::to_string(p.ConsumeIntegralInRange<uint64_t>(1, 1 << 20));
  if (p.ConsumeBool()) r += ",\"zeroStage\":" + std::to_string(p.ConsumeIntegralInRange(0, 3));
  if (p.ConsumeBool()) r += ",\"checkpointing\":\"full\"";
  return r + "}";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  const bool plan = p.ConsumeIntegralInRange<int>(0, 9) < 8;
  const std::string fn = plan ? "placement" : "accumulation";
  const std::string request = plan ? placement_request(p) : planner_request(p);
  const std::string out = trainmem::call(fn, request);
  json e;
  try {
    e = json::parse(out);
  } catch (const std::exception&) {
    finding("envelope is not JSON", request, out);
  }
  static const std::set<std::string> codes = [] {
    std::set<std::string> c;
    for (const auto& t : trainmem::vocab::kErrorCodes)
      if (std::string(t.name) != trainmem::code::kInternal) c.insert(t.name);
    return c;
  }();
  if (!e.value("ok", false)) {
    const std::string c = e["error"].value("code", "");
    if (!codes.count(c)) finding("internal or unknown error code", request, out);
    return 0;
  }
  const json& r = e["result"];
  if (r.contains("fits") && r["fits"].is_boolean() && !r["fits"].get<bool>() &&
      r.value("strategy", "") != "none" && r.value("strategy", "") != "sqrt")
    finding("a budgeted plan that does not fit its budget", request, out);
  return 0;
}
