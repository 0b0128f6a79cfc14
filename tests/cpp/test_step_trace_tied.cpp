// A tied weight's two gradients (the head's first, the embedding's second) meet in the
// autograd engine's input buffer before AccumulateGrad runs once: torch 1.13 sums them out of
// place (torch/csrc/autograd/input_buffer.cpp accumulate: old_var + var, a third tensor), later
// lines in place into the first (can_accumulate_inplace: old_var.add_(var)). Counted by hand on
// a three-layer step whose 1,000 B gradients dwarf its 10 B activations.
#include <catch2/catch.hpp>

#include <map>

#include "trainmem/step_trace.hpp"

using namespace trainmem;

namespace {

// Layer 0 the embedding (its weight's second gradient), layer 1 a block saving 10 B, layer 2
// the head (the tied weight's first gradient, made after its saved tensors are read).
trace::StepSpec tied_step(bool in_place, uint64_t micro_steps) {
  trace::StepSpec s;
  trace::TraceLayer emb, block, head;
  emb.output_bytes = block.output_bytes = head.output_bytes = 10;
  block.tensors = {10};
  head.grads = {1000};
  head.late_grads = 1;
  emb.tied_grads = {{2, 0, 1000}};
  s.layers = {emb, block, head};
  s.ops = {{placement::OpKind::kForwardAll, 0}, {placement::OpKind::kForwardAll, 1},
           {placement::OpKind::kForwardAll, 2}, {placement::OpKind::kLoss, 3},
           {placement::OpKind::kBackward, 2},   {placement::OpKind::kBackward, 1},
           {placement::OpKind::kBackward, 0}};
  s.params = {trace::OptimizerParam{}};
  s.impl = trace::OptimizerImpl::fused;
  s.input_buffer_in_place = in_place;
  s.accumulation_steps = micro_steps;
  s.steps = 2;
  return s;
}

uint64_t peak_of(const trace::Trace& t) {
  std::map<uint64_t, uint64_t> live;
  uint64_t now = 0, peak = 0;
  for (const auto& e : t.events) {
    if (e.kind == allocator::Event::kAlloc) {
      live[e.id] = e.size;
      now += e.size;
    } else if (live.count(e.id)) {
      now -= live[e.id];
      live.erase(e.id);
    }
    peak = std::max(peak, now);
  }
  return peak;
}

}  // namespace

TEST_CASE("a tied weight's gradients: summed out of place on torch 1.13, in place later",
          "[allocator][trace]") {
  // one micro-step, .grad None: the first waits (1,000), the second arrives (1,000), the sum
  // (1,000) exists before both go; in place, the first holds the sum
  const uint64_t out = peak_of(trace::build(tied_step(false, 1)));
  const uint64_t in = peak_of(trace::build(tied_step(true, 1)));
  CHECK(out >= 3000);
  CHECK(out < 3100);
  CHECK(in >= 2000);
  CHECK(in < 2100);
  // a second micro-step: the .grad (1,000) exists while both gradients and their sum do; the
  // sum is then added into it
  const uint64_t out2 = peak_of(trace::build(tied_step(false, 2)));
  const uint64_t in2 = peak_of(trace::build(tied_step(true, 2)));
  CHECK(out2 >= 4000);
  CHECK(out2 < 4100);
  CHECK(in2 >= 3000);
  CHECK(in2 < 3100);
}
