// Tensors the step's code holds (StepSpec::held: a traced model's output kept in a variable):
// made as the forward ends, each micro-step's dropped when the next one's replace them (the loop
// rebinds `out = model(x)` after its forward), the last micro-step's after zero_grad (the
// measured step function returns). Counted by hand on a one-layer step.
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "trainmem/step_trace.hpp"

using namespace trainmem;

namespace {

// One layer saving 1,000 B, output 1,000 B, 7,000 B held; no weights or optimizer state.
trace::StepSpec held_step(uint64_t micro_steps) {
  trace::StepSpec s;
  trace::TraceLayer L;
  L.tensors = {1000};
  L.output_bytes = 1000;
  s.layers = {L};
  s.held = {7000};
  s.ops = {{placement::OpKind::kForwardAll, 0},
           {placement::OpKind::kLoss, 1},
           {placement::OpKind::kBackward, 0}};
  s.impl = trace::OptimizerImpl::fused;
  s.accumulation_steps = micro_steps;
  s.steps = 2;
  return s;
}

// Per 7,000 B allocation: the index of the mark (phase) it is made in and freed in.
struct Life {
  std::string made, gone;
};

std::vector<Life> lives_of_held(const trace::Trace& t) {
  std::map<uint64_t, size_t> open;  // id -> index into out
  std::vector<Life> out;
  size_t mark = 0;
  for (size_t k = 0; k < t.events.size(); ++k) {
    while (mark + 1 < t.marks.size() && t.marks[mark + 1].event <= k) ++mark;
    const auto& e = t.events[k];
    if (e.kind == allocator::Event::kAlloc && e.size == 7000) {
      open[e.id] = out.size();
      out.push_back({t.marks[mark].phase, ""});
    } else if (e.kind == allocator::Event::kFree && open.count(e.id)) {
      out[open[e.id]].gone = t.marks[mark].phase;
      open.erase(e.id);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("held tensors live from the loss to the step's end", "[allocator][trace]") {
  const auto lives = lives_of_held(trace::build(held_step(1)));
  REQUIRE(lives.size() == 2);  // one per optimizer step
  for (const Life& l : lives) {
    CHECK(l.made == "loss");
    CHECK(l.gone == "zero_grad");  // after optimizer.step() and zero_grad
  }
}

TEST_CASE("a micro-step's held tensors go when the next micro-step's are made",
          "[allocator][trace]") {
  const auto lives = lives_of_held(trace::build(held_step(3)));
  REQUIRE(lives.size() == 6);  // 3 micro-steps x 2 steps
  for (size_t i = 0; i < lives.size(); ++i) {
    CHECK(lives[i].made == "loss");
    // the first two of each step are replaced at the next micro-step's loss
    CHECK(lives[i].gone == (i % 3 == 2 ? "zero_grad" : "loss"));
  }
}
