// The placement memory model by hand (docs/placement.md states it), the PyTorch/Megatron/Chen
// strategies from their sources, and Rotor's published-style check.
#include <catch2/catch.hpp>

#include <string>

#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"
#include "trainmem/error.hpp"
#include "trainmem/model.hpp"
#include "trainmem/placement.hpp"

using namespace trainmem::placement;
using trainmem::json;

namespace {

Layer layer(double f, double b, uint64_t out, uint64_t saved, uint64_t ft = 0, uint64_t bt = 0) {
  Layer L;
  L.forward_cost = f;
  L.backward_cost = b;
  L.output_bytes = out;
  L.saved_bytes = saved;
  L.forward_temp_bytes = ft;
  L.backward_temp_bytes = bt;
  return L;
}

Chain three_layers() {
  Chain c;
  c.input_bytes = 10;
  c.layers = {layer(1, 2, 4, 6, 1, 2), layer(2, 4, 3, 5, 0, 1), layer(3, 6, 2, 2)};
  return c;
}

Chain uniform(size_t n, uint64_t unit) {
  Chain c;
  c.input_bytes = unit;
  for (size_t i = 0; i < n; ++i) c.layers.push_back(layer(1, 1, unit, unit));
  return c;
}

std::vector<std::pair<uint32_t, uint32_t>> pairs(const std::vector<Segment>& s) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& g : s) out.emplace_back(g.first, g.last);
  return out;
}

using P = std::vector<std::pair<uint32_t, uint32_t>>;

P segments_of(const Chain& c, const StrategyRequest& req) {
  return pairs(plan(c, req).checkpointed);
}

P sequential(size_t n, uint32_t s) {
  StrategyRequest q;
  q.strategy = trainmem::vocab::Strategy::sequential;
  q.segments = s;
  return segments_of(uniform(n, 1), q);
}

json call(const json& req) { return json::parse(trainmem::call("placement", req.dump())); }

}  // namespace

TEST_CASE("placement model: store everything, by hand", "[placement]") {
  // Hand walk of the stated model: input 10 live throughout; F_all adds savedBytes (+ forward
  // temp at its peak); the loss adds the output gradient (2); B(i) frees saved + incoming
  // gradient and adds the gradient of its input.
  // Fwd: 10+6+1=17 (live 16), 16+5=21 (21), 21+2=23 (23); loss 23, then 25;
  // B2: 25 (live 25-2-2+3=24); B1: 24+1=25 (live 24-5-3+4=20); B0: 20+2=22.
  const PlanResult r = evaluate(three_layers(), {});
  CHECK(r.stored_bytes == 23);
  CHECK(r.peak_bytes == 25);
  CHECK(r.recompute_cost == 0);
  CHECK(r.total_cost == 18);
  REQUIRE(r.timeline.size() == 7);
  const uint64_t want[] = {17, 21, 23, 23, 25, 25, 22};
  for (size_t i = 0; i < 7; ++i) CHECK(r.timeline[i].live_bytes == want[i]);
}

TEST_CASE("placement model: a checkpointed segment keeps its input and output", "[placement]") {
  // checkpointed [0,1]: F_ck0: 10+4+1=15 (live 14); F_n1: 14+3=17, frees a1 (live 13);
  // F_all2: 13+2=15 (15) -> stored 15 = input 10 + segment output 3 + saved 2.
  // loss 15 -> 17; B2: 17, frees saved 2, grad 2, the segment output 3, adds grad 3 -> 13;
  // recompute F_all0: 13+6+1=20 (19), F_all1: 19+5=24 (24); B1: 25 (20); B0: 22.
  const PlanResult r = evaluate(three_layers(), {{0, 1}});
  CHECK(r.stored_bytes == 15);
  CHECK(r.peak_bytes == 25);
  CHECK(r.recompute_cost == 3);
  CHECK(r.total_cost == 21);
  const uint64_t want[] = {15, 17, 15, 15, 17, 20, 24, 25, 22};
  REQUIRE(r.timeline.size() == 9);
  for (size_t i = 0; i < 9; ++i) CHECK(r.timeline[i].live_bytes == want[i]);
  CHECK(r.timeline[5].phase == "recompute");
  CHECK(r.plan == std::vector<std::string>{"checkpoint", "drop", "store"});
}

TEST_CASE("sequential: PyTorch checkpoint_sequential segments", "[placement]") {
  // torch/utils/checkpoint.py (1.13): segment_size = n // segments;
  // for start in range(0, segment_size * (segments - 1), segment_size): checkpoint
  // start..start+segment_size-1; the rest runs plainly.
  CHECK(sequential(10, 3) == P{{0, 2}, {3, 5}});
  CHECK(sequential(10, 4) == P{{0, 1}, {2, 3}, {4, 5}});
  CHECK(sequential(10, 1).empty());
  CHECK(sequential(4, 4) == P{{0, 0}, {1, 1}, {2, 2}});
  const json chain = {
      {"inputBytes", 1},
      {"layers",
       json::array(
           {{{"forwardCost", 1}, {"backwardCost", 1}, {"outputBytes", 1}, {"savedBytes", 1}}})}};
  const json e = call({{"chain", chain}, {"strategy", "sequential"}, {"segments", 2}});
  CHECK(e["ok"] == false);
  CHECK(e["error"]["code"] == "out_of_range");
  CHECK(e["error"]["field"] == "segments");
}

TEST_CASE("every-k, block, sqrt: Megatron and Chen segment rules", "[placement]") {
  StrategyRequest q;
  q.strategy = trainmem::vocab::Strategy::every_k;  // Megatron uniform: chunks of k from the first,
                                                    // all checkpointed
  q.k = 4;
  CHECK(segments_of(uniform(10, 1), q) == P{{0, 3}, {4, 7}, {8, 9}});
  q.strategy =
      trainmem::vocab::Strategy::block;  // Megatron block: the first k layers, each on its own
  q.k = 3;
  CHECK(segments_of(uniform(10, 1), q) == P{{0, 0}, {1, 1}, {2, 2}});
  q.strategy =
      trainmem::vocab::Strategy::sqrt;  // Chen: floor(sqrt(n)) segments, first n mod k one longer
  CHECK(segments_of(uniform(10, 1), q) == P{{0, 3}, {4, 6}, {7, 9}});
  CHECK(segments_of(uniform(16, 1), q) == P{{0, 3}, {4, 7}, {8, 11}, {12, 15}});
  // Chen's claim: sqrt costs one extra forward pass.
  const PlanResult r = plan(uniform(16, 1), q);
  CHECK(r.recompute_cost == 16);
}

TEST_CASE("chen-greedy: Alg. 3 by hand", "[placement]") {
  // outputs 1..6, savedBytes 4, 4, 4, 4, 5, 6. B = 8: temp 4, 8, 12 > 8 -> split at layer 2
  // (x += 3, y = 12); then 4, 9 > 8 -> split at layer 4 (x += 5, y stays 12); then 6, end.
  // Segments [0,2], [3,4], [5,5]; x = 8, y = 12.
  Chain c;
  c.input_bytes = 1;
  const uint64_t saved[] = {4, 4, 4, 4, 5, 6};
  for (uint64_t i = 0; i < 6; ++i) c.layers.push_back(layer(1, 2, i + 1, saved[i]));
  StrategyRequest q;
  q.strategy = trainmem::vocab::Strategy::chen_greedy;
  q.greedy_bytes = 8;
  PlanResult r = plan(c, q);
  CHECK(pairs(r.checkpointed) == P{{0, 2}, {3, 4}, {5, 5}});
  CHECK(fact_value(r.details, "x") == 8);
  CHECK(fact_value(r.details, "y") == 12);
  // B = 1 (every layer exceeds it): every layer is a split, y = the largest layer (6).
  q.greedy_bytes = 1;
  r = plan(c, q);
  CHECK(r.checkpointed.size() == 6);
  CHECK(fact_value(r.details, "x") == 21);
  CHECK(fact_value(r.details, "y") == 6);
  // B = 100: no split; one segment recomputed entirely, y = 4+4+4+4+5+6 = 27.
  q.greedy_bytes = 100;
  r = plan(c, q);
  CHECK(pairs(r.checkpointed) == P{{0, 5}});
  CHECK(fact_value(r.details, "y") == 27);
}

TEST_CASE("optimal: Rotor check on a uniform 4-layer chain", "[placement]") {
  // fwd = bwd = 1, output = saved = 1, no temporaries, loss cost 0; memory counts the input.
  // memory 4 -> 13, 5 -> 10, >= 6 -> 8, 3 -> infeasible (issue 5; Beaumont et al. 2019).
  for (uint64_t unit : {uint64_t{1}, uint64_t{1} << 30}) {
    StrategyRequest q;
    q.strategy = trainmem::vocab::Strategy::optimal;
    const std::pair<uint64_t, double> want[] = {{4, 13}, {5, 10}, {6, 8}, {7, 8}, {40, 8}};
    for (const auto& w : want) {
      q.budget_bytes = w.first * unit;
      const PlanResult r = plan(uniform(4, unit), q);
      INFO("budget " << q.budget_bytes);
      CHECK(r.total_cost == w.second);
      CHECK(r.peak_bytes <= q.budget_bytes);
      CHECK(fact_value(r.details, "predictedTotalCost") == w.second);
    }
    q.budget_bytes = 3 * unit;
    try {
      plan(uniform(4, unit), q);
      FAIL("expected infeasible");
    } catch (const trainmem::RequestError& e) {
      CHECK(e.code() == "infeasible");
      CHECK(e.field() == "budgetBytes");
      CHECK(std::string(e.what()).find("minimum feasible budgetBytes is " +
                                       std::to_string(4 * unit)) != std::string::npos);
    }
  }
}

TEST_CASE("placement: the model form plans on the peak-memory activation chain", "[placement]") {
  // Wiring check: with no checkpointing, storedBytes is the activation model's total (h3's
  // activations.hpp, calibrated there against torch 1.13).
  const json r = call(
      {{"model", {{"preset", "gpt2"}}}, {"microBatch", 2}, {"seqLen", 128}, {"timeline", false}});
  REQUIRE(r["ok"] == true);
  // index.d.ts: the timeline is absent with `timeline: false`, present by default.
  CHECK_FALSE(r["result"].contains("timeline"));
  const json with_tl = call({{"model", {{"preset", "gpt2"}}}, {"microBatch", 2}, {"seqLen", 128}});
  REQUIRE(with_tl["ok"] == true);
  CHECK(with_tl["result"]["timeline"].is_array());
  CHECK_FALSE(with_tl["result"]["timeline"].empty());
  const json mj = {{"preset", "gpt2"}};
  const trainmem::ModelDescription m = trainmem::parse_model(trainmem::Obj(mj, "model"));
  trainmem::activations::Settings set;
  set.micro_batch = 2;
  set.seq_len = 128;
  const auto acts = trainmem::activations::transformer_activations(m, set);
  CHECK(r["result"]["storedBytes"].get<uint64_t>() == acts.total_saved_bytes);
  CHECK(r["result"]["plan"].size() == acts.layers.size());
  const json e = call({{"model", {{"preset", "gpt2"}}}, {"seqLen", 128}});
  CHECK(e["error"]["field"] == "microBatch");
}
