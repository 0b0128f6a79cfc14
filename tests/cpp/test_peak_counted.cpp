// Without the allocator's replay and without the timeline, peak memory counts the step trace
// as it is built (no list of events; a run of allocations freed together counted as one). The
// listed trace, which the timeline still reads, is counted event by event: both must give the
// same figures, breakdown, peak location and number of events.
#include <catch2/catch.hpp>
#include <string>

#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

namespace {
peak::Result evaluate(json req, bool timeline, uint64_t steps) {
  req["simulateAllocator"] = false;
  req["timeline"] = timeline;
  peak::Request r = peak::parse_request(req);
  r.answer.search_max_micro_batch = false;
  r.training.accumulation_steps = steps;  // (the accumulation planner's candidates)
  return peak::evaluate(r);
}

void same_count(const json& req, uint64_t steps = 1) {
  INFO(req.dump() << ", accumulation steps " << steps);
  const peak::Result listed = evaluate(req, true, steps);
  const peak::Result counted = evaluate(req, false, steps);
  REQUIRE(!listed.timeline.empty());
  CHECK(counted.timeline.empty());
  json a = peak::to_json(listed, false), b = peak::to_json(counted, false);
  CHECK(a.dump() == b.dump());
  CHECK(counted.trace_events == listed.trace_events);
  CHECK(counted.peak_phase == listed.peak_phase);
  CHECK(counted.peak_layer == listed.peak_layer);
}

json llama(const char* preset, uint64_t micro, const char* ckpt) {
  return {{"model", {{"preset", preset}}},
          {"microBatch", micro},
          {"seqLen", 256},
          {"precision", "amp-bf16"},
          {"optimizer", "adamw"},
          {"checkpointing", ckpt},
          {"gpu", "a100-80gb"}};
}
}  // namespace

TEST_CASE("peak: the trace counted as it is built agrees with the listed trace", "[peak][trace]") {
  SECTION("autocast copies, accumulation, checkpointing, each optimizer implementation") {
    for (const char* ckpt : {"none", "full"})
      for (const char* impl : {"foreach", "for-loop", "fused"}) {
        json r = llama("llama-2-7b", 2, ckpt);
        r["optimizerImplementation"] = impl;
        same_count(r, 3);
        same_count(r, 1);
      }
  }
  SECTION("fp32 and fp16 autocast, a tied head, the CPU runtime, power-of-two rounding") {
    json r = llama("gpt2", 4, "none");
    r["precision"] = "fp32";
    same_count(r);
    r["precision"] = "amp-fp16";
    same_count(r);
    r["runtime"] = "pytorch-cpu";
    r.erase("gpu");
    same_count(r);
    json p = llama("gpt2", 3, "full");
    p["allocator"] = "roundup_power2_divisions:4";
    same_count(p);
  }
  SECTION("a MoE model with expert parallelism, ZeRO-3 and LoRA") {
    json moe = llama("mixtral-8x7b", 1, "full");
    moe["expertParallel"] = 8;
    moe["dataParallel"] = 8;
    same_count(moe);
    json z3 = llama("llama-2-7b", 2, "full");
    z3["zeroStage"] = 3;
    z3["dataParallel"] = 8;
    same_count(z3);
    json lora = llama("llama-2-7b", 2, "none");
    lora["lora"] = {{"rank", 16}};
    same_count(lora);
  }
}
