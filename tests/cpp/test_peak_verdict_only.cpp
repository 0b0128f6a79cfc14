// The verdict-only evaluation (the maxMicroBatch search and the accumulation planner read only
// the verdict, the byte figures and the breakdown) skips the allocator's replay under the
// device's limit when the tensors alone exceed it. It must give the same verdict and figures as
// the full evaluation, which replays under the limit and then, out of memory, without it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "io/peak_json.hpp"
#include "io/request.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

namespace {
peak::Result evaluate(const json& req, bool verdict_only) {
  peak::Request r = peak::parse_request(req);
  r.answer.search_max_micro_batch = false;
  r.answer.verdict_only = verdict_only;
  return peak::evaluate(r);
}

void same_figures(const json& req) {
  INFO(req.dump());
  const peak::Result full = evaluate(req, false);
  const peak::Result fast = evaluate(req, true);
  CHECK(fast.fits == full.fits);
  CHECK(fast.simulated == full.simulated);
  CHECK((fast.ooms > 0) == (full.ooms > 0));
  CHECK(fast.peak_bytes == full.peak_bytes);
  CHECK(fast.device_used_bytes == full.device_used_bytes);
  CHECK(fast.reserved_peak_bytes == full.reserved_peak_bytes);
  CHECK(fast.allocated_peak_bytes == full.allocated_peak_bytes);
  CHECK(fast.headroom_bytes == full.headroom_bytes);
  CHECK(fast.weights.bytes == full.weights.bytes);
  CHECK(fast.gradients.bytes == full.gradients.bytes);
  CHECK(fast.optimizer_state.bytes == full.optimizer_state.bytes);
  CHECK(fast.activations.bytes == full.activations.bytes);
  CHECK(fast.temporaries.bytes == full.temporaries.bytes);
  CHECK(fast.runtime.bytes == full.runtime.bytes);
}

json llama(uint64_t micro, const char* ckpt, const char* gpu) {
  return {{"model", {{"preset", "llama-2-7b"}}},
          {"microBatch", micro},
          {"seqLen", 512},
          {"precision", "amp-bf16"},
          {"optimizer", "adamw"},
          {"checkpointing", ckpt},
          {"gpu", gpu},
          {"timeline", false}};
}
}  // namespace

TEST_CASE("peak: the verdict-only evaluation agrees with the full one", "[peak][allocator]") {
  SECTION("tensors alone exceed the device: AdamW on 7B parameters does not fit in 80 GB") {
    for (uint64_t m : {1, 8, 32}) same_figures(llama(m, "none", "a100-80gb"));
    same_figures(llama(4, "full", "a100-80gb"));
  }
  SECTION("fits: LoRA on 7B in 80 GB, and GPT-2 on a 24 GB card") {
    json lora = llama(4, "full", "a100-80gb");
    lora["lora"] = {{"rank", 16}};
    same_figures(lora);
    same_figures({{"model", {{"preset", "gpt2"}}},
                  {"microBatch", 8},
                  {"seqLen", 1024},
                  {"precision", "amp-fp16"},
                  {"optimizer", "adamw"},
                  {"gpu", "rtx-4090"},
                  {"timeline", false}});
  }
  SECTION("near the limit, with a split limit and garbage collection") {
    for (uint64_t m : {8, 16, 24}) {
      json r = {{"model", {{"preset", "gpt2-medium"}}},
                {"microBatch", m},
                {"seqLen", 1024},
                {"precision", "amp-fp16"},
                {"optimizer", "adamw"},
                {"gpu", "v100-16gb"},
                {"timeline", false}};
      same_figures(r);
      r["allocator"] = "max_split_size_mb:128,garbage_collection_threshold:0.6";
      same_figures(r);
    }
  }
  SECTION("out of memory from the cache's overhead alone: bert-large, 15 x 496 tokens, V100") {
    json r = {{"model", {{"preset", "bert-large-uncased"}}},
              {"seqLen", 496},
              {"precision", "amp-fp16"},
              {"optimizer", "adamw"},
              {"gpu", "v100-16gb"},
              {"timeline", false}};
    // The case this section is for: the tensors fit under what the allocator may reserve
    // (16 GiB less the V100's context) while the cached blocks do not.
    for (uint64_t m : {14, 15}) {
      r["microBatch"] = m;
      same_figures(r);
    }
    const peak::Result full = evaluate(r, false);
    CHECK(full.ooms > 0);
    CHECK(full.allocated_peak_bytes <= 17179869184ull - full.runtime.bytes);
  }
  SECTION("paged optimizer states (managed memory outside the allocator), two ranks") {
    json r = llama(2, "full", "rtx-4090");
    r["optimizer"] = "paged-adamw-8bit";
    r["dataParallel"] = 2;
    r["zeroStage"] = 2;
    same_figures(r);
  }
}
