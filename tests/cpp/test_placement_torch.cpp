// The placement memory model against real PyTorch (tests/fixtures/torch_placement.json, written
// by tools/measure_placement.py with PyTorch 1.13 CPU): the bytes kept for the backward at the
// end of the forward pass must equal storedBytes exactly.
//
// Mapping from the measured modules to chains. Per layer, savedBytes counts the tensors its
// operations save for backward (PyTorch tools/autograd/derivatives.yaml), except its input
// (counted as the previous layer's output), and includes its output:
// - Linear + ReLU block: Linear saves its input (and weight, a parameter); ReLU saves its
//   result, the block output. savedBytes = outputBytes = batch x width_out x 4.
// - Linear + GELU block: GELU saves its input, the Linear output; the block output is the
//   next layer's input. savedBytes = 2 x batch x width_out x 4.
// - GPT-2-shaped model: chain input = token ids (int64); layer "embed" (wte(ids) + wpe(pos)):
//   the embedding saves its indices: the position ids (seq x 8 bytes) + output b x s x e x 4;
//   each block, checkpointed: outputBytes b x s x e x 4 (its saved tensors are not kept);
//   layer "head": LayerNorm saves input (the last block's output), mean and rstd (b x s fp32
//   each); the tied LM head saves its input (b x s x e x 4); output logits b x s x vocab x 4.
#include <catch2/catch.hpp>

#include <fstream>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/placement.hpp"

using namespace trainmem::placement;
using trainmem::json;

namespace {
json fixture() {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_placement.json");
  REQUIRE(in.good());
  return json::parse(in);
}

Layer layer(uint64_t out, uint64_t saved) {
  Layer L;
  L.forward_cost = 1;
  L.backward_cost = 2;
  L.output_bytes = out;
  L.saved_bytes = saved;
  return L;
}
}  // namespace

TEST_CASE("placement: stored bytes equal PyTorch's under checkpoint_sequential",
          "[placement][torch]") {
  int mlp = 0, gpt = 0;
  const json fx = fixture();
  for (const json& c : fx["cases"]) {
    if (c["kind"] == "mlp") {
      const uint64_t b = c["batch"], bytes = c["dtypeBytes"];
      const auto widths = c["widths"].get<std::vector<uint64_t>>();
      const bool gelu = c["activation"] == "gelu";
      Chain chain;
      chain.input_bytes = b * widths[0] * bytes;
      for (size_t i = 1; i < widths.size(); ++i) {
        const uint64_t out = b * widths[i] * bytes;
        chain.layers.push_back(layer(out, gelu ? 2 * out : out));
      }
      StrategyRequest q;
      q.strategy = trainmem::vocab::Strategy::sequential;
      q.segments = c["segments"];
      const PlanResult r = plan(chain, q);
      INFO(c.dump());
      CHECK(r.stored_bytes == c["measuredBytes"].get<uint64_t>());
      ++mlp;
    } else if (c["kind"] == "gpt2-every-block-checkpointed") {
      const json& g = c["config"];
      const uint64_t b = g["batch"], s = g["seq"], e = g["embd"], V = g["vocab"], n = g["layers"];
      const uint64_t h = b * s * e * 4;
      Chain chain;
      chain.input_bytes = b * s * 8;                // token ids, int64
      chain.layers.push_back(layer(h, s * 8 + h));  // embed: position ids + output
      for (uint64_t i = 0; i < n; ++i) chain.layers.push_back(layer(h, 3 * h));         // blocks
      chain.layers.push_back(layer(b * s * V * 4, 2 * b * s * 4 + h + b * s * V * 4));  // head
      StrategyRequest q;
      q.strategy = trainmem::vocab::Strategy::manual;
      q.manual = {};
      for (uint32_t i = 1; i <= n; ++i) q.manual.push_back({i, i});  // every block
      const PlanResult r = plan(chain, q);
      CHECK(r.stored_bytes == c["measuredBytes"].get<uint64_t>());
      ++gpt;
    }
  }
  CHECK(mlp == 15);
  CHECK(gpt == 1);
}
