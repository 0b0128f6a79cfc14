// The allocation trace of a chain with a skip connection (a diffusion UNet's up block reading a
// down block's output): the skipped output lives until its reader has run with autograd, the
// reader's gradient for it until the backward of the layer after its producer (where the two
// gradients are summed into a new tensor: torch/csrc/autograd/input_buffer.cpp), and a
// concatenating reader's input gradient (a view of torch.cat's one gradient) as long. Live bytes
// after each op counted by hand below; the same memory model as the placement simulator
// (placement_simulator.cpp), checked against torch 1.13 in test_diffusion.cpp.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "trainmem/step_trace.hpp"

using namespace trainmem;
using placement::OpKind;

namespace {

// Live bytes after each op of the first micro-step, keyed "phase layer" (no weights, gradients
// or optimizer state: only activations and their gradients).
std::map<std::string, uint64_t> live_after(const trace::Trace& t) {
  std::map<uint64_t, uint64_t> size_of;
  std::map<std::string, uint64_t> out;
  uint64_t live = 0;
  size_t m = 0;
  std::string current;
  for (size_t k = 0; k <= t.events.size(); ++k) {
    while (m < t.marks.size() && t.marks[m].event == k) {
      if (!current.empty() && !out.count(current)) out[current] = live;
      const auto& mk = t.marks[m];
      current = mk.phase + " " + std::to_string(mk.layer);
      ++m;
    }
    if (k == t.events.size()) break;
    const auto& e = t.events[k];
    if (e.kind == allocator::Event::kAlloc) {
      size_of[e.id] = e.size;
      live += e.size;
    } else if (e.kind == allocator::Event::kFree) {
      live -= size_of[e.id];
      size_of.erase(e.id);
    }
  }
  if (!current.empty() && !out.count(current)) out[current] = live;
  return out;
}

// Layers 0..4 with outputs 1000, 2000, 4000, 8000 and 10 B, each saving only its output; layer
// 1 keeps nothing of its input; layer 3 reads layer `from`'s output through a skip.
trace::StepSpec chain(bool skip, uint32_t from, bool concat) {
  trace::StepSpec s;
  const uint64_t out[] = {1000, 2000, 4000, 8000, 10};
  for (uint64_t b : out) {
    trace::TraceLayer L;
    L.tensors = {b};
    L.output_bytes = b;
    s.layers.push_back(L);
  }
  s.layers[1].input_saved = false;
  if (skip) s.layers[3].skips = {{from, out[from]}};
  s.layers[3].concat_input = concat;
  s.impl = trace::OptimizerImpl::fused;
  s.steps = 1;
  return s;
}

std::vector<placement::Op> plain() {
  std::vector<placement::Op> ops;
  for (uint32_t i = 0; i < 5; ++i) ops.push_back({OpKind::kForwardAll, i});
  ops.push_back({OpKind::kLoss, 5});
  for (uint32_t i = 5; i-- > 0;) ops.push_back({OpKind::kBackward, i});
  return ops;
}

}  // namespace

TEST_CASE("a skipped output lives until its reader ran; its gradient until it is summed",
          "[allocator][trace][skips]") {
  trace::StepSpec without = chain(false, 0, false);
  without.ops = plain();
  const auto a = live_after(trace::build(without));
  trace::StepSpec with = chain(true, 0, false);
  with.ops = plain();
  const auto b = live_after(trace::build(with));
  // layer 1 keeps nothing of a1 (1000): freed after its forward, unless layer 3 reads it later
  CHECK(a.at("forward 1") == 2000);
  CHECK(b.at("forward 1") == 1000 + 2000);
  CHECK(b.at("forward 2") == 1000 + 2000 + 4000);
  CHECK(b.at("forward 3") == 2000 + 4000 + 8000);  // read: a1 goes
  CHECK(a.at("forward 3") == b.at("forward 3"));
  // B(3) sends a1 its gradient (1000), kept through B(2) until B(1) makes a1's other one
  CHECK(a.at("backward 3") == 2000 + 4000 + 4000);  // saved 1, 2 and d3
  CHECK(b.at("backward 3") == 2000 + 4000 + 4000 + 1000);
  CHECK(b.at("backward 2") == 2000 + 2000 + 1000);  // saved 1, d2, the skip's gradient
  CHECK(b.at("backward 1") == 1000);                // the sum replaces both
  CHECK(a.at("backward 1") == 1000);
}

TEST_CASE("a concatenating reader's input gradient lives with the skip's",
          "[allocator][trace][skips]") {
  trace::StepSpec s = chain(true, 0, true);
  s.ops = plain();
  const auto b = live_after(trace::build(s));
  // d3 (4000) is a view of torch.cat's gradient (d3 and a1's, 5000 B): it stays until B(1)
  CHECK(b.at("backward 2") == 2000 + 2000 + 1000 + 4000);
  CHECK(b.at("backward 1") == 1000);
}

TEST_CASE("a skipped output inside a checkpointed segment waits for its reader",
          "[allocator][trace][skips]") {
  // layers 1-2 checkpointed (no-grad forward, recomputed in the backward); layer 3 reads a2
  // (layer 1's output, 2000 B), which the segment's no-grad forward would drop after layer 2
  auto ops = [] {
    std::vector<placement::Op> o = {
        {OpKind::kForwardAll, 0}, {OpKind::kForwardCheck, 1}, {OpKind::kForwardNoGrad, 2},
        {OpKind::kForwardAll, 3}, {OpKind::kForwardAll, 4},   {OpKind::kLoss, 5},
        {OpKind::kBackward, 4},   {OpKind::kBackward, 3},     {OpKind::kForwardAll, 1},
        {OpKind::kForwardAll, 2}, {OpKind::kBackward, 2},     {OpKind::kBackward, 1},
        {OpKind::kBackward, 0}};
    return o;
  };
  trace::StepSpec without = chain(false, 1, false);
  without.ops = ops();
  trace::StepSpec with = chain(true, 1, false);
  with.ops = ops();
  const auto a = live_after(trace::build(without));
  const auto b = live_after(trace::build(with));
  CHECK(a.at("forward 2") == 1000 + 4000);  // a1 (the checkpoint's input) and a3
  CHECK(b.at("forward 2") == 1000 + 2000 + 4000);
  CHECK(b.at("forward 3") == 1000 + 4000 + 8000);  // read with autograd: a2 goes
}
