// The allocation trace around a sharded unit (ZeRO-3, FSDP): its gathered parameters are
// allocated before the unit's forward or backward ops and freed after them, so the live bytes
// at a unit's busiest op are its gathered parameters + its saved tensors so far + the op's
// transients (FSDP unshards in its pre-forward hook and reshards in its post-forward hook,
// torch/distributed/fsdp/_fully_shard/_fsdp_state.py @ 1fd469d0). Counted by hand below.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "trainmem/step_trace.hpp"

using namespace trainmem;

namespace {
// The most bytes live at once in the events from `first` on (the weights are loaded before).
uint64_t live_peak(const trace::Trace& t, size_t first) {
  std::map<uint64_t, uint64_t> size_of;
  uint64_t live = 0, most = 0;
  for (size_t k = 0; k < t.events.size(); ++k) {
    const auto& e = t.events[k];
    if (e.kind == allocator::Event::kAlloc) {
      size_of[e.id] = e.size;
      live += e.size;
    } else if (e.kind == allocator::Event::kFree) {
      live -= size_of[e.id];
      size_of.erase(e.id);
    }
    if (k >= first) most = std::max(most, live);
  }
  return most;
}

// One layer: it saves A (1,000 B) and makes a 5,000 B transient just before; G = 100,000 B
// gathered. No weights, no gradients, no optimizer state: the forward's live bytes are then
// only these (and the loss's output gradient, 1,000 B, after the forward).
trace::StepSpec one_layer(uint64_t gathered) {
  trace::StepSpec s;
  trace::TraceLayer L;
  if (gathered) L.gather_forward = L.gather_backward = {gathered};
  L.tensors = {1000};
  L.output_bytes = 1000;
  L.forward_temps = {{0, 1, 5000}};
  s.layers = {L};
  s.ops = {{placement::OpKind::kForwardAll, 0},
           {placement::OpKind::kLoss, 1},
           {placement::OpKind::kBackward, 0}};
  s.impl = trace::OptimizerImpl::fused;
  s.steps = 1;
  return s;
}
}  // namespace

TEST_CASE("a gathered unit lives through its forward ops and their transients",
          "[allocator][trace][fsdp]") {
  // without a gather: the transient (5,000) and the saved tensor (1,000) coexist: 6,000 B
  CHECK(live_peak(trace::build(one_layer(0)), 0) == 6000);
  // with it: 100,000 + 5,000 + 1,000, all at the op that saves the tensor
  CHECK(live_peak(trace::build(one_layer(100000)), 0) == 106000);
}

TEST_CASE("a gathered unit is freed once its backward has run", "[allocator][trace][fsdp]") {
  const trace::Trace t = trace::build(one_layer(100000));
  // the gather is allocated once for the forward and once for the backward: two allocations
  // of 100,000 B, and every one of them freed again
  size_t allocs = 0, freed = 0;
  std::map<uint64_t, uint64_t> size_of;
  for (const auto& e : t.events) {
    if (e.kind == allocator::Event::kAlloc) {
      size_of[e.id] = e.size;
      allocs += e.size == 100000;
    } else if (e.kind == allocator::Event::kFree) {
      freed += size_of[e.id] == 100000;
    }
  }
  CHECK(allocs == 2);
  CHECK(freed == 2);
}
