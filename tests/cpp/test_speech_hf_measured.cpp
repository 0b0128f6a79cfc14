// HF speech configs vs real PyTorch: tests/fixtures/hf_speech.json was measured with torch 1.13
// (CPU) by tools/measure_hf_speech.py on re-implementations of transformers'
// WhisperForConditionalGeneration and Wav2Vec2ForCTC (tools/tm_hf_speech.py, op for op as the
// eager modeling code runs them): the saved-for-backward bytes of one forward and the peak of
// one steady-state step, at two batch sizes and two target lengths each. Goals (issue "every
// deep network"): saved bytes within 1 %, step peaks within 5 %.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "io/device_presets.hpp"
#include "net/ops.hpp"
#include "test_support.hpp"

using tm_test::load_fixture;
using trainmem::json;

namespace {

// The peakMemory request of a fixture case: the Hub config, eager attention on the CPU runtime
// (the measured modules' BartAttention path), fp32, zero_grad(set_to_none=True) as the
// script's steps, the decoder tokens / CTC labels as targetLen, wav2vec2's audio as seqLen.
json request_for(const json& c) {
  json r = {{"model", {{"config", c["config"]}}},
            {"microBatch", c["microBatch"]},
            {"optimizer", c["optimizer"]},
            {"precision", "fp32"},
            {"attention", "eager"},
            {"runtime", "pytorch-cpu"},
            {"zeroGradSetToNone", true},
            {"timeline", false},
            {"targetLen", c["targetLen"]}};
  if (c.contains("seqLen")) r["seqLen"] = c["seqLen"];
  return r;
}

}  // namespace

TEST_CASE("HF Whisper and wav2vec2: saved bytes within 1 %, step peaks within 5 % of torch",
          "[speech][hf]") {
  const json fx = load_fixture("hf_speech.json");
  REQUIRE(fx["cases"].size() >= 8);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const json res = tm_test::peak_result(request_for(c));
    CHECK(res["params"].get<double>() == c["params"].get<double>());
    const double saved = c["savedBytes"].get<double>();
    const double stored = res["storedActivationBytes"].get<double>();
    INFO("saved: measured " << saved << " predicted " << stored);
    CHECK(std::fabs(stored - saved) <= 0.01 * saved);
    const double peak = c["peakBytes"].get<double>();
    const double predicted = res["allocatedPeakBytes"].get<double>();
    INFO("peak: measured " << peak << " predicted " << predicted);
    CHECK(std::fabs(predicted - peak) <= 0.05 * peak);
  }
}

// tests/fixtures/torch_conv_scratch.json (tools/measure_conv_scratch.py): every allocation made
// in the backward of a convolution on torch 1.13 (CPU): 24 1-D shapes and 8 2-D patch
// embeddings, 1 or 2 threads. The rule of the pytorch-cpu runtime (its
// convolutionWeightGradScratch, threads set to the case's) must be the largest of them exactly
// where it predicts a scratch; where it predicts none, nothing beyond the gradients and buffers
// of the input's, weight's or column buffer's size is made.
TEST_CASE("CPU runtime: a long-kernel convolution's weight-gradient scratch as measured",
          "[speech][conv]") {
  const json fx = load_fixture("torch_conv_scratch.json");
  REQUIRE(fx["cases"].size() >= 20);
  trainmem::peak::Runtime rt = trainmem::peak::runtime_profile("pytorch-cpu", "runtime");
  size_t with_scratch = 0;
  for (const auto& c : fx["cases"]) {
    INFO(c.dump());
    rt.traits.conv_scratch_threads = c["threads"].get<uint32_t>();
    const uint64_t cin = c["channels"], cout = c["outChannels"], g = c["groups"], k = c["kernel"],
                   out = c["outLength"];
    const bool two = c["dims"] == 2;
    const trainmem::net::Shape kernel = two ? trainmem::net::Shape{k, k} : trainmem::net::Shape{k},
                               spatial =
                                   two ? trainmem::net::Shape{out, out} : trainmem::net::Shape{out};
    const uint64_t predicted =
        trainmem::net::conv_weight_grad_scratch(rt.traits, cin, cout, g, kernel, spatial, 4);
    const uint64_t columns = cin / g * k * (two ? k * out * out : out) * 4;
    const auto& a = c["allocations"];
    const uint64_t largest = *std::max_element(a.begin(), a.end());
    if (predicted > 0) {
      ++with_scratch;
      CHECK(largest == predicted);  // the scratch is the backward's largest allocation
    } else {
      // none: nothing beyond the gradients and the im2col / reorder buffers of its size
      CHECK(largest <= std::max<uint64_t>({c["weightBytes"].get<uint64_t>(),
                                           c["inputBytes"].get<uint64_t>(), 2 * columns + 128}));
    }
  }
  CHECK(with_scratch >= 25);
}

TEST_CASE("speech on a GPU runtime says its step peak is checked on CPU only", "[speech]") {
  const json fx = load_fixture("hf_speech.json");
  for (const auto& c : fx["cases"]) {
    json r = request_for(c);
    r["runtime"] = "pytorch-2.1-cuda";
    const json res = tm_test::peak_result(r);
    bool said = false;
    for (const auto& a : res["assumptions"])
      said = said || a.get<std::string>().find(
                         ": the step peak is checked against PyTorch 1.13 "
                         "on CPU only") != std::string::npos;
    CHECK(said);
    CHECK(res["messages"].dump().find("net.assume.speech.gpu") != std::string::npos);
    // Whisper's tied head: torch 2.x sums its two gradients in place, from the source only
    const bool tied = c["config"]["model_type"] == "whisper";
    CHECK((res["messages"].dump().find("peak.assume.tied.inPlace") != std::string::npos) == tied);
  }
}
