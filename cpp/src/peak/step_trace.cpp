// The allocation trace of whole training steps (step_trace.hpp). The order of events follows
// what PyTorch does; each rule names its source. The layer-level semantics (which activations
// live when) are those of the placement simulator (placement_simulator.cpp), refined to one
// event per tensor.
#include "trainmem/step_trace.hpp"

#include <algorithm>
#include <cstdint>

namespace trainmem {
namespace trace {
namespace {

using allocator::Event;
using placement::Op;
using placement::OpKind;

class Builder {
 public:
  Builder(const StepSpec& s, Sink* sink) : s_(s), sink_(sink) {
    const size_t n = s.layers.size();
    saved_.assign(n, {});
    standalone_.assign(n + 1, 0);
    grad_of_.assign(n + 1, 0);
    casts_.assign(n, {});
    kept_.assign(n, {});
    casts_in_graph_.assign(n, false);
    offloaded_.assign(n, {});
    input_offloaded_.assign(n + 1, 0);
    size_t grads = 0;
    for (const auto& l : s.layers) grads += l.grads.size();
    grad_ids_.assign(grads, 0);
    buffered_.assign(grads, 0);
    tied_.assign(grads, 0);
    grad_base_.assign(n, 0);
    for (size_t i = 1; i < n; ++i) grad_base_[i] = grad_base_[i - 1] + s.layers[i - 1].grads.size();
    // a tied weight's first gradient waits in the input buffer when its second comes from a
    // backward that runs later (an earlier layer's)
    for (size_t i = 0; i < n; ++i)
      for (const auto& t : s.layers[i].tied_grads)
        if (t.user > i && t.user < n && t.slot < s.layers[t.user].grads.size())
          tied_[grad_base_[t.user] + t.slot] = 1;
    state_ids_.assign(s.params.size(), {});
    for (const auto& l : s.layers) any_skip_ = any_skip_ || !l.skips.empty();
  }

  Trace run() {
    if (!sink_) {
      t_.events.reserve(estimated_events());
      t_.parts.reserve(t_.events.capacity() / 2 + 1);
      t_.parts.push_back(Part::weights);  // ids count from 1: index 0 holds no allocation
    }
    mark(0, 0, "load", -1);
    // model.to("cuda"): one allocation per parameter tensor, in module order
    std::vector<uint64_t> loaded;  // (kept for the whole run: never freed)
    alloc_run(s_.weights, Part::weights, &loaded);
    // ZeRO mixed precision: the fp32 partitions are made when the engine wraps the optimizer
    // (deepspeed/runtime/zero/stage_1_and_2.py __init__: single_partition_of_fp32_groups)
    for (const auto& p : s_.params) alloc(p.master, Part::master_weights);
    // DistributedDataParallel(model): the Reducer allocates one flat buffer per bucket
    // (torch/csrc/distributed/c10d/reducer.cpp initialize_buckets)
    for (uint64_t b : s_.ddp_buckets) alloc(b, Part::ddp_buckets);
    for (uint64_t b : s_.reduce_buckets_held) alloc(b, Part::reduce_buckets);
    uint64_t batch = 0;
    bool workspace = false;
    for (uint32_t step = 1; step <= s_.steps; ++step) {
      current_step_ = step;
      // pipeline stages: the other in-flight micro-batches' activations (parallel.hpp)
      std::vector<uint64_t> in_flight;
      for (uint64_t b : s_.in_flight) in_flight.push_back(alloc(b, Part::saved));
      for (uint64_t micro = 1; micro <= s_.accumulation_steps; ++micro) {
        // the next batch is moved to the device while the previous one is still referenced
        const uint64_t next = alloc(s_.input_bytes, Part::batch);
        if (batch) free(batch);
        batch = next;
        standalone_[0] = batch;
        if (!workspace && s_.workspace_bytes) {
          // cuBLAS allocates its workspace through the caching allocator at the first matmul
          // (aten/src/ATen/cuda/CublasHandlePool.cpp getCUDABlasLtWorkspace /
          // getCurrentCUDABlasHandle)
          alloc(s_.workspace_bytes, Part::workspace);
          workspace = true;
        }
        micro_step(step, static_cast<uint32_t>(micro));
      }
      free_all(&in_flight);
      optimizer_step(step);
      zero_grad(step);
      // the step's code returns: the variables holding the model's outputs go
      free_all(&held_);
    }
    return std::move(t_);
  }

 private:
  // An estimate of the trace's length on the high side (61k for the 44k events of the
  // Llama-2-70B bench), so that the event vector is allocated once instead of grown by doubling
  // and copying.
  size_t estimated_events() const {
    const size_t n = s_.layers.size();
    // per layer (index n: the loss): the events of a forward op besides its tensors (one event
    // each when saved, two under no_grad) and of its backward
    std::vector<size_t> forward(n + 1, 4), backward(n + 1, 4), tensors(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      const TraceLayer& L = s_.layers[i];
      size_t f = 4 + L.cast_weights.size(), b = 6 + L.tensors.size() + 2 * L.grads.size();
      for (const auto& g : L.forward_temps) f += 2 * g.pieces;
      for (const auto& g : L.backward_temps) b += 2 * g.pieces;
      forward[i] = f;
      backward[i] = b + L.cast_weights.size();
      tensors[i] = L.tensors.size();
    }
    size_t micro = 4 + 2 * s_.held.size();
    for (const Op& op : s_.ops) {
      const size_t i = std::min<size_t>(op.layer, n);
      if (op.kind == OpKind::kBackward)
        micro += backward[i];
      else
        micro += forward[i] + tensors[i] * (op.kind == OpKind::kForwardAll ? 1 : 2);
    }
    size_t optimizer = 4;
    for (const auto& p : s_.params) optimizer += 2 * (p.state.size() + s_.temp_copies + 1);
    const size_t steps = s_.steps, acc = static_cast<size_t>(s_.accumulation_steps);
    size_t grads = 0;
    for (const auto& l : s_.layers) grads += l.grads.size();
    return s_.weights.size() + 4 +
           steps * (acc * micro + optimizer + grads + 2 * s_.in_flight.size());
  }

  uint64_t bytes_of(uint64_t id) const { return id < bytes_of_.size() ? bytes_of_[id] : 0; }
  uint64_t alloc(uint64_t bytes, Part part, uint32_t stream = 0) {
    if (bytes == 0) return 0;
    const uint64_t id = ++next_id_;
    if (s_.offload_activations) {
      if (bytes_of_.size() <= id) bytes_of_.resize(id + 1, 0);
      bytes_of_[id] = bytes;
    }
    ++events_;
    if (sink_) {
      sink_->alloc(id, bytes, part);
      return id;
    }
    t_.parts.push_back(part);
    t_.events.push_back({Event::kAlloc, stream, id, bytes});
    return id;
  }
  void free(uint64_t& id) {
    if (!id) return;
    if (s_.offload_activations && id < bytes_of_.size()) bytes_of_[id] = 0;
    if (sink_) {
      events_ += sink_->free(id);
    } else {
      ++events_;
      t_.events.push_back({Event::kFree, 0, id, 0});
    }
    id = 0;
  }
  // Allocations one after the other that free_all frees together: with a sink, one id for
  // them all (Sink::alloc_run), else one each. `ids` gets one id (none when `bytes` is empty).
  void alloc_run(const std::vector<uint64_t>& bytes, Part part, std::vector<uint64_t>* ids) {
    if (!sink_) {
      for (uint64_t b : bytes) ids->push_back(alloc(b, part));
      return;
    }
    if (bytes.empty()) return;
    std::vector<uint64_t>& run = run_;
    run.clear();
    for (uint64_t b : bytes)
      if (b) run.push_back(b);
    if (run.empty()) {
      ids->push_back(0);
      return;
    }
    const uint64_t id = ++next_id_;
    events_ += run.size();
    sink_->alloc_run(id, run.data(), run.size(), part);
    ids->push_back(id);
  }
  void mark(uint32_t step, uint32_t micro, const char* phase, int32_t layer) {
    if (sink_) sink_->mark();
    Mark m;
    m.event = static_cast<uint32_t>(events_);
    m.step = step;
    m.micro_step = micro;
    m.phase = phase;
    m.layer = layer;
    t_.marks.push_back(std::move(m));
  }

  // A forward group is a chain of pointwise ops: each piece is made from the one before, which
  // is then freed (eager attention: scores = q k^T; scores / sqrt(d); + mask; softmax), so two
  // pieces coexist at a time; the last lives until tensor `at` has been made from it.
  void temps_at(const std::vector<activations::LayerActivations::TempGroup>& groups, size_t at,
                std::vector<uint64_t>* live) {
    for (const auto& g : groups) {
      if (g.at != at) continue;
      uint64_t prev = alloc(g.bytes, Part::op_transients);
      for (uint32_t p = 1; p < g.pieces + (g.pieces > 1 ? 1 : 0); ++p) {
        const uint64_t cur = alloc(g.bytes, Part::op_transients);
        free(prev);
        prev = cur;
      }
      live->push_back(prev);
    }
  }
  // ZeRO-3 / FSDP: a unit's parameters are gathered before its forward or backward runs and
  // freed after it, so they coexist with its ops and transients: FSDP's pre-/post-forward and
  // pre-/post-backward hooks unshard and reshard (torch/distributed/fsdp/_fully_shard/
  // _fsdp_state.py @ 1fd469d0); DeepSpeed's coordinator fetch_sub_module / release_sub_module
  // (deepspeed/runtime/zero/partitioned_param_coordinator.py).
  // (TraceLayer::gather_stream: a unit's gathers on a stream of their own, after the shared ones)
  void gather(const std::vector<uint64_t>& units, std::vector<uint64_t>* ids,
              const TraceLayer* layer = nullptr) {
    for (size_t k = 0; k < units.size(); ++k) {
      const bool own = layer && k >= layer->gather_shared;
      ids->push_back(alloc(units[k], Part::gathered, own ? layer->gather_stream : 0));
    }
  }
  void free_all(std::vector<uint64_t>* ids) {
    for (auto& id : *ids) free(id);
    ids->clear();
  }

  // torch.autocast casts each matmul weight once per forward and caches the copy until the
  // outermost autocast region exits (autocast_mode.cpp cached_cast; clear_cache on exit); a
  // backward node that saved it keeps it to that layer's backward. A weight that is not a
  // leaf requiring grad (a frozen base) is cast per op: under no_grad the copy goes after the
  // op, with grad enabled the matmul's backward keeps it (it needs it for the input gradient).
  void cast_weights(size_t i, bool in_graph) {
    if (!casts_[i].empty()) return;
    const TraceLayer& L = s_.layers[i];
    if (!L.casts_cached && !in_graph) {
      for (uint64_t b : L.cast_weights) {
        uint64_t copy = alloc(b, Part::autocast_copies);
        free(copy);
      }
      return;
    }
    alloc_run(L.cast_weights, Part::autocast_copies, &casts_[i]);
    casts_in_graph_[i] = in_graph;
  }

  // F_all: every tensor the layer saves, with its transients around the op that makes them.
  void forward_all(size_t i, bool recompute) {
    const TraceLayer& L = s_.layers[i];
    // the recomputation takes the cached outputs into its graph: modelled as freeing the
    // cache before the layer's tensors are made again (the same sizes, so the same blocks)
    free_all(&kept_[i]);
    // a kept concatenation becomes the recomputation's first saved tensor
    if (any_skip_) free(sk_.cat[i]);
    std::vector<uint64_t>& gathered = fwd_gathered_;
    gather(recompute ? L.gather_recompute : L.gather_forward, &gathered, &L);
    cast_weights(i, true);
    std::vector<uint64_t>& live = fwd_live_;
    for (size_t k = 0; k < L.tensors.size(); ++k) {
      temps_at(L.forward_temps, k, &live);
      saved_[i].push_back(alloc(L.tensors[k], Part::saved));
      free_all(&live);
    }
    temps_at(L.forward_temps, L.tensors.size(), &live);
    free_all(&live);
    free_all(&gathered);
    if (any_skip_ && !sk_.consumed[i]) {  // the skipped outputs it read are needed no more
      for (const auto& k : L.skips) unpin(k.from + 1);
      sk_.consumed[i] = 1;
    }
    // no op kept the input: the previous layer's output (its last saved tensor, when it ran with
    // autograd too) goes now, not at that layer's backward; in the first forward a standalone
    // input too (no checkpoint keeps it: this layer is not in a segment)
    if (!L.input_saved && i > 0 && !saved_[i - 1].empty() && !s_.offload_activations)
      release(i, &saved_[i - 1].back());
    else if (!L.input_saved && i > 0 && any_skip_ && !recompute)
      release(i, &standalone_[i]);
  }

  // F_ck / F_n under torch.no_grad: each intermediate is freed once the next op has read it;
  // only the output is kept (torch/utils/checkpoint.py runs the segment without autograd).
  void forward_nograd(size_t i, bool drop_input, bool recompute) {
    const TraceLayer& L = s_.layers[i];
    if (any_skip_ && !recompute) {
      if (!drop_input) sk_.seg_first = static_cast<uint32_t>(i);  // F_ck starts a segment
      sk_.segment[i] = sk_.seg_first;
    }
    std::vector<uint64_t>& gathered = fwd_gathered_;
    gather(recompute ? L.gather_recompute : L.gather_forward, &gathered, &L);
    cast_weights(i, false);
    std::vector<uint64_t>& live = fwd_live_;
    uint64_t prev = 0;
    for (size_t k = 0; k + 1 < L.tensors.size(); ++k) {
      temps_at(L.forward_temps, k, &live);
      uint64_t cur = alloc(L.tensors[k], Part::op_transients);
      free_all(&live);
      free(prev);
      prev = cur;
    }
    temps_at(L.forward_temps, L.tensors.size() ? L.tensors.size() - 1 : 0, &live);
    if (kept_[i].empty())
      for (uint64_t b : L.selective_kept) kept_[i].push_back(alloc(b, Part::boundaries));
    standalone_[i + 1] = alloc(L.output_bytes, Part::boundaries);
    free_all(&live);
    free(prev);
    free_all(&gathered);
    if (any_skip_ && !recompute) read_skips_nograd(i, !drop_input);
    if (drop_input && i > 0) release(i, &standalone_[i]);
  }

  // ---- skip connections (TraceLayer::skips): a[k] (the output of layer k - 1) is pinned by
  // the layers that read it through a skip; a free of a pinned a[k] waits for its last reader.
  void release(size_t k, uint64_t* id) {
    if (!*id) return;
    if (any_skip_ && sk_.pins[k]) {
      sk_.held[k].push_back(*id);
      *id = 0;
      return;
    }
    free(*id);
  }
  void unpin(size_t k) {
    if (sk_.pins[k] == 0 || --sk_.pins[k] > 0) return;
    free_all(&sk_.held[k]);
  }
  // A no-grad forward inside a segment: the skips from the same segment are read and made
  // again by its recomputation; those from before it stay pinned (the checkpoint keeps them as
  // inputs) until the recomputation. A segment that starts by concatenating keeps the
  // concatenation instead of its input and skips (diffusers: torch.cat outside the checkpoint).
  void read_skips_nograd(size_t i, bool starts) {
    const TraceLayer& L = s_.layers[i];
    if (L.skips.empty()) return;
    if (starts && L.concat_input) {
      uint64_t cat = i > 0 ? s_.layers[i - 1].output_bytes : 0;
      for (const auto& k : L.skips) cat += s_.layers[k.from].output_bytes;
      sk_.cat[i] = alloc(cat, Part::boundaries);
      for (const auto& k : L.skips) unpin(k.from + 1);
      sk_.consumed[i] = 1;
      if (i > 0) release(i, &standalone_[i]);
      return;
    }
    for (const auto& k : L.skips)
      if (k.from >= sk_.segment[i]) unpin(k.from + 1);
  }
  // Each micro-step: every skip pins its producer's output; no segments yet.
  void reset_skips() {
    const size_t n = s_.layers.size();
    sk_.pins.assign(n + 1, 0);
    sk_.held.assign(n + 1, {});
    sk_.pending.assign(n + 1, {});
    sk_.grad_in.assign(n + 1, 0);
    sk_.consumed.assign(n, 0);
    sk_.segment.assign(n, static_cast<uint32_t>(n));
    sk_.cat.assign(n, 0);
    sk_.seg_first = 0;
    for (const auto& l : s_.layers)
      for (const auto& k : l.skips) ++sk_.pins[k.from + 1];
  }
  // At the loss: a skip inside one checkpointed segment is read again by the recomputation,
  // which makes its producer's output again: pinned once more.
  void repin_for_recompute() {
    const size_t n = s_.layers.size();
    for (size_t c = 0; c < n; ++c) {
      if (sk_.segment[c] == n) continue;
      bool again = false;
      for (const auto& k : s_.layers[c].skips)
        if (k.from >= sk_.segment[c]) {
          ++sk_.pins[k.from + 1];
          again = true;
        }
      if (again) sk_.consumed[c] = 0;
    }
  }

  void loss() {
    const size_t n = s_.layers.size();
    if (any_skip_) repin_for_recompute();
    // the model's outputs the step's code holds, made as the forward ends; those of the
    // micro-step before go when its variable is bound to the new ones (`out = model(x)`)
    std::vector<uint64_t>& fresh = fwd_live_;
    for (uint64_t b : s_.held) fresh.push_back(alloc(b, Part::boundaries));
    free_all(&held_);
    held_.swap(fresh);
    // the autocast region (HF Trainer: forward and loss) ends here: casts no graph holds go
    for (size_t i = 0; i < n; ++i)
      if (!casts_in_graph_[i]) free_all(&casts_[i]);
    std::vector<uint64_t>& gathered = fwd_gathered_;
    gather(s_.gather_loss, &gathered);
    free(standalone_[n]);
    grad_of_[n] =
        alloc(s_.layers.empty() ? 0 : s_.layers.back().output_bytes, Part::activation_grads);
    free_all(&gathered);
  }

  // .grad: AccumulateGrad steals the incoming gradient when .grad is None and otherwise adds
  // it in place, the incoming tensor then being freed (torch/csrc/autograd/functions/
  // accumulate_grad.h accumulateGrad).
  void produce_grad(size_t index, uint64_t bytes) {
    if (tied_[index]) {  // the first of a tied weight's two: held in the input buffer
      buffered_[index] = alloc(bytes, Part::gradients);
      return;
    }
    make_grad(index, bytes);
    produce_grad_hook();
  }
  void produce_grad_hook() {
    // DeepSpeed ZeRO-1/2: the first gradient hook of the backward allocates the buckets
    if (ipg_live_.empty())
      for (uint64_t b : s_.reduce_buckets_per_backward)
        ipg_live_.push_back(alloc(b, Part::reduce_buckets));
  }
  void make_grad(size_t index, uint64_t bytes) {
    const bool added =
        s_.grads_are_bucket_views || (!s_.optimizer_in_backward && grad_ids_[index] != 0);
    if (added && sink_) {  // accumulate_grad frees it at once: a transient for the sink
      if (bytes == 0) return;
      ++next_id_;
      events_ += 2;
      sink_->transient(bytes, Part::op_transients);
      return;
    }
    accumulate_grad(index, alloc(bytes, added ? Part::op_transients : Part::gradients));
  }
  // AccumulateGrad on the incoming gradient `id`: stolen as the .grad when there is none, else
  // added into it in place and freed
  void accumulate_grad(size_t index, uint64_t id) {
    if (s_.grads_are_bucket_views) {
      free(id);  // copied into its bucket view
      return;
    }
    if (s_.optimizer_in_backward) {
      step_one(index, current_step_ == 1);
      free(id);  // optimizer.zero_grad(set_to_none=True) inside the hook
      return;
    }
    if (grad_ids_[index] == 0)
      grad_ids_[index] = id;
    else
      free(id);
  }

  // A tied weight's second gradient arrives (tied_grads): the engine sums it with the first,
  // which waited in the input buffer (torch/csrc/autograd/input_buffer.cpp accumulate: torch
  // 1.13's `old_var + var` for two dense tensors, a third tensor; later `old_var.add_(var)`
  // when the buffer holds the last reference, can_accumulate_inplace), then AccumulateGrad
  // takes the sum.
  void sum_tied(size_t index, uint64_t bytes) {
    uint64_t incoming = alloc(bytes, Part::op_transients);
    uint64_t first = buffered_[index];
    buffered_[index] = 0;
    if (!first) {  // no first gradient waited: added to the .grad as it comes
      free(incoming);
      return;
    }
    if (!s_.input_buffer_in_place) {
      const uint64_t sum = alloc(bytes, Part::gradients);
      free(first);
      first = sum;
    }
    free(incoming);
    produce_grad_hook();
    accumulate_grad(index, first);
  }

  // B(i): the input gradient, then the saved tensors freed in reverse creation order as the
  // nodes run (the engine releases a node's saved variables after it runs: torch/csrc/autograd/
  // engine.cpp, release_variables), the layer's .grad tensors among them, the transients per
  // region; finally the gradient of the output and a standalone input are freed.
  // A backward group with `at` = a belongs to the region of saved tensors [a, next): it is
  // made when the walk enters that region (all of the region's tensors still alive: the
  // gradients of an op's outputs exist while its inputs are read) and freed when the walk
  // leaves it below a.
  static size_t region_entry(const std::vector<activations::LayerActivations::TempGroup>& groups,
                             uint32_t at, size_t nt) {
    size_t next = nt;
    for (const auto& g : groups)
      if (g.at > at && g.at < next) next = g.at;
    return next == 0 ? 0 : std::min(next, nt) - 1;
  }
  void backward(size_t i, size_t grad_base) {
    const TraceLayer& L = s_.layers[i];
    const uint64_t input_bytes = i == 0 ? 0 : s_.layers[i - 1].output_bytes;
    uint64_t dinput = alloc(input_bytes, Part::activation_grads);
    std::vector<uint64_t>& live = bwd_live_;
    const size_t nt = saved_[i].size(),
                 ng = L.grads.size() - std::min<size_t>(L.late_grads, L.grads.size());
    size_t produced = 0;
    std::vector<uint64_t>& gathered = bwd_gathered_;
    gather(L.gather_backward, &gathered, &L);
    if (nt == 0)
      for (const auto& g : L.backward_temps)
        for (uint32_t p = 0; p < g.pieces; ++p) live.push_back(alloc(g.bytes, Part::op_transients));
    // each group's region entry, worked out once per backward (not per saved tensor)
    std::vector<size_t>& entry = bwd_entry_;
    entry.clear();
    for (const auto& g : L.backward_temps) {
      const size_t e = region_entry(L.backward_temps, g.at, nt);
      entry.push_back(nt == 0 || std::min<size_t>(g.at, nt - 1) > e ? SIZE_MAX : e);
    }
    for (size_t w = 0; w < nt; ++w) {
      const size_t k = nt - 1 - w;
      // entering a region: its transients replace the last region's
      bool entered = false;
      for (size_t q = 0; q < L.backward_temps.size(); ++q) {
        const auto& g = L.backward_temps[q];
        if (entry[q] != k) continue;
        if (!entered) free_all(&live);
        entered = true;
        for (uint32_t p = 0; p < g.pieces; ++p) live.push_back(alloc(g.bytes, Part::op_transients));
      }
      const size_t want = (w + 1) * ng / nt;
      for (; produced < want; ++produced) {
        const size_t j = ng - 1 - produced;
        produce_grad(grad_base + j, L.grads[j]);
      }
      free(saved_[i][k]);
    }
    for (; produced < ng; ++produced)
      produce_grad(grad_base + ng - 1 - produced, L.grads[ng - 1 - produced]);
    for (size_t j = ng; j < L.grads.size(); ++j) produce_grad(grad_base + j, L.grads[j]);
    for (const auto& t : L.tied_grads)
      if (t.user < s_.layers.size()) sum_tied(grad_base_[t.user] + t.slot, t.bytes);
    free_all(&live);
    free_all(&gathered);
    saved_[i].clear();
    free_all(&casts_[i]);
    if (any_skip_ && sk_.grad_in[i + 1]) {
      // a concatenating layer's input gradient is a view of the concatenation's gradient,
      // which lives until the skip's gradient is summed
      sk_.pending[sk_.grad_in[i + 1]].push_back(grad_of_[i + 1]);
      grad_of_[i + 1] = 0;
      sk_.grad_in[i + 1] = 0;
    }
    free(grad_of_[i + 1]);
    if (i > 0) free(standalone_[i]);
    if (any_skip_) skip_gradients(i, &dinput);
    grad_of_[i] = i > 0 ? dinput : 0;
    if (i == 0) free(dinput);
  }

  // B(i) of a skip's reader sends a gradient to the skipped output a[from + 1], kept until
  // B(from + 1) makes that tensor's other gradient; the engine then sums the two into a new
  // tensor (torch/csrc/autograd/input_buffer.cpp InputBuffer::add: out of place when the
  // buffer cannot be stolen).
  void skip_gradients(size_t i, uint64_t* dinput) {
    const TraceLayer& L = s_.layers[i];
    if (i > 0 && !sk_.pending[i].empty()) {
      const uint64_t sum = alloc(s_.layers[i - 1].output_bytes, Part::activation_grads);
      free(*dinput);
      free_all(&sk_.pending[i]);
      *dinput = sum;
    }
    for (const auto& k : L.skips) {
      sk_.pending[k.from + 1].push_back(alloc(k.grad_bytes, Part::activation_grads));
      if (L.concat_input && i > 0) sk_.grad_in[i] = k.from + 1;
    }
  }

  // ---- activation offloading: a queue of saved tensors still on the GPU, oldest first
  struct Stashed {
    size_t layer;
    size_t slot;  // index into saved_[layer]; SIZE_MAX: the layer's kept input
  };
  void stash(size_t layer, size_t slot, uint64_t bytes) {
    if (bytes < s_.offload_min_bytes) return;
    stash_.push_back({layer, slot});
    while (stash_.size() > s_.offload_stash) {
      const Stashed o = stash_.front();
      stash_.erase(stash_.begin());
      if (o.slot == SIZE_MAX) {
        input_offloaded_[o.layer] = bytes_of(standalone_[o.layer]);
        free(standalone_[o.layer]);
      } else {
        offloaded_[o.layer].push_back({o.slot, bytes_of(saved_[o.layer][o.slot])});
        free(saved_[o.layer][o.slot]);
      }
    }
  }
  void offload_saved(size_t i) {
    if (!s_.offload_activations) return;
    for (size_t k = 0; k < saved_[i].size(); ++k) stash(i, k, s_.layers[i].tensors[k]);
  }
  void offload_input(size_t i) {
    if (!s_.offload_activations || i == 0 || !standalone_[i]) return;
    stash(i, SIZE_MAX, bytes_of(standalone_[i]));
  }
  // the backward copies a layer's tensors back before its first node runs
  void bring_back(size_t i) {
    if (!s_.offload_activations) return;
    for (const auto& o : offloaded_[i]) saved_[i][o.first] = alloc(o.second, Part::saved);
    offloaded_[i].clear();
    if (input_offloaded_[i]) {
      standalone_[i] = alloc(input_offloaded_[i], Part::boundaries);
      input_offloaded_[i] = 0;
    }
  }

  void micro_step(uint32_t step, uint32_t micro) {
    stash_.clear();
    if (any_skip_) reset_skips();
    const std::vector<size_t>& grad_base = grad_base_;
    bool backward_started = false;
    for (const Op& op : s_.ops) {
      const int32_t layer = op.kind == OpKind::kLoss ? -1 : static_cast<int32_t>(op.layer);
      switch (op.kind) {
        case OpKind::kForwardAll:
          mark(step, micro, backward_started ? "recompute" : "forward", layer);
          if (backward_started) bring_back(op.layer);
          forward_all(op.layer, backward_started);
          if (!backward_started) offload_saved(op.layer);
          break;
        case OpKind::kForwardCheck:
        case OpKind::kForwardNoGrad:
          mark(step, micro, backward_started ? "recompute" : "forward", layer);
          if (backward_started) bring_back(op.layer);
          forward_nograd(op.layer, op.kind == OpKind::kForwardNoGrad, backward_started);
          // a checkpointed segment keeps its input: that is what the first forward saves
          if (!backward_started && op.kind == OpKind::kForwardCheck) offload_input(op.layer);
          break;
        case OpKind::kLoss:
          mark(step, micro, "loss", -1);
          loss();
          backward_started = true;
          break;
        case OpKind::kBackward:
          mark(step, micro, "backward", layer);
          bring_back(op.layer);
          backward(op.layer, grad_base[op.layer]);
          break;
      }
    }
    free_all(&ipg_live_);  // the backward's epilogue releases the gradient buckets
  }

  // One parameter's step (its own optimizer): lazy state at its first step, then temporaries.
  void step_one(size_t j, bool first) {
    if (first) init_state(j);
    if (s_.impl == OptimizerImpl::fused) return;
    const uint32_t copies = s_.impl == OptimizerImpl::foreach ? s_.foreach_lists : s_.temp_copies;
    std::vector<uint64_t>& live = step_live_;
    for (uint32_t c = 0; c < copies; ++c)
      live.push_back(alloc(s_.params[j].temp_bytes, Part::optimizer_temps));
    free_all(&live);
  }

  // lazy state: zeros_like per state entry at the parameter's first step (torch/optim/adamw.py
  // _init_group; sgd.py momentum_buffer = clone(grad))
  void init_state(size_t j) {
    for (uint64_t b : s_.params[j].state) state_ids_[j].push_back(alloc(b, Part::optimizer_state));
  }

  // _multi_tensor_*: _init_group first, then list ops per dtype group; _foreach_sqrt allocates
  // one result per tensor, all live until _foreach_addcdiv_ (torch/optim/adamw.py
  // _multi_tensor_adamw)
  void foreach_step(bool first) {
    if (first && sink_ && !s_.params.empty()) {  // one run: the states are never freed
      step_bytes_.clear();
      for (const auto& p : s_.params)
        step_bytes_.insert(step_bytes_.end(), p.state.begin(), p.state.end());
      alloc_run(step_bytes_, Part::optimizer_state, &state_ids_[0]);
    } else if (first) {
      for (size_t j = 0; j < s_.params.size(); ++j) init_state(j);
    }
    uint32_t groups = 0;
    for (const auto& p : s_.params) groups = std::max<uint32_t>(groups, p.group + 1u);
    for (uint32_t g = 0; g < groups; ++g) {
      std::vector<uint64_t>& lists = step_live_;
      std::vector<uint64_t>& bytes = step_bytes_;
      bytes.clear();
      for (uint32_t c = 0; c < s_.foreach_lists; ++c)
        for (const auto& p : s_.params)
          if (p.group == g) bytes.push_back(p.temp_bytes);
      alloc_run(bytes, Part::optimizer_temps, &lists);
      free_all(&lists);
    }
  }

  void optimizer_step(uint32_t step) {
    mark(step, static_cast<uint32_t>(s_.accumulation_steps), "optimizer", -1);
    if (s_.optimizer_in_backward) return;  // every parameter stepped in the backward
    const bool first = step == 1;
    uint64_t partition = alloc(s_.step_grad_partition, Part::grad_partition);
    if (s_.impl == OptimizerImpl::foreach) {
      foreach_step(first);
    } else {
      for (size_t j = 0; j < s_.params.size(); ++j) {
        if (first) init_state(j);
        if (s_.impl == OptimizerImpl::fused) continue;
        // _single_tensor_adamw: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps):
        // the sqrt and the quotient coexist, then the quotient lives to addcdiv_
        std::vector<uint64_t>& live = step_live_;
        step_bytes_.assign(s_.temp_copies, s_.params[j].temp_bytes);
        alloc_run(step_bytes_, Part::optimizer_temps, &live);
        free_all(&live);
      }
    }
    free(partition);
  }

  void zero_grad(uint32_t step) {
    mark(step, static_cast<uint32_t>(s_.accumulation_steps), "zero_grad", -1);
    // Optimizer.zero_grad(set_to_none=True) drops every .grad (the default since torch 2.0);
    // set_to_none=False zeroes them in place and they stay allocated (torch/optim/optimizer.py)
    if (s_.set_to_none)
      for (auto& g : grad_ids_) free(g);
  }

  const StepSpec& s_;
  Sink* sink_;  // null: the events go to t_
  Trace t_;
  uint64_t events_ = 0;  // events made so far
  // scratch lists of live ids, reused: the forward's, the backward's (which may step a
  // parameter's optimizer inside it), the optimizer's
  std::vector<uint64_t> fwd_live_, fwd_gathered_, bwd_live_, bwd_gathered_, step_live_;
  std::vector<uint64_t> step_bytes_, run_;  // alloc_run's lists of bytes
  std::vector<size_t> bwd_entry_;           // backward(): each temporary group's region entry
  std::vector<uint64_t> held_;              // the ids of StepSpec::held now live
  std::vector<uint64_t> ipg_live_;          // the ids of StepSpec::reduce_buckets_per_backward
  uint64_t next_id_ = 0;
  std::vector<Stashed> stash_;
  std::vector<std::vector<std::pair<size_t, uint64_t>>> offloaded_;
  std::vector<uint64_t> input_offloaded_;
  // offloading: each live id's bytes, 0 once freed (ids count up from 1). Size: a vector, not
  // an unordered_map (its hash table and __next_prime were 3 KB of the page's core).
  std::vector<uint64_t> bytes_of_;
  uint32_t current_step_ = 0;
  std::vector<std::vector<uint64_t>> saved_, casts_, state_ids_, kept_;
  std::vector<bool> casts_in_graph_;
  // skip connections: pins and held frees per a[k], skip gradients waiting for B(k), the skip
  // a concatenating layer's input gradient belongs to, per layer whether its skips were read,
  // its checkpointed segment's first layer (n: none) and its kept concatenation
  struct SkipState {
    std::vector<uint32_t> pins;
    std::vector<std::vector<uint64_t>> held, pending;
    std::vector<size_t> grad_in;
    std::vector<uint8_t> consumed;
    std::vector<uint32_t> segment;
    std::vector<uint64_t> cat;
    uint32_t seg_first = 0;
  };
  bool any_skip_ = false;
  SkipState sk_;
  std::vector<uint64_t> standalone_, grad_of_, grad_ids_;
  // per trainable tensor: the id of a tied weight's first gradient waiting in the engine's
  // input buffer (0: none), and whether it is tied; per layer: its first grad's index
  std::vector<uint64_t> buffered_;
  std::vector<uint8_t> tied_;
  std::vector<size_t> grad_base_;
};

}  // namespace

Trace build(const StepSpec& spec) { return Builder(spec, nullptr).run(); }

Trace build_into(const StepSpec& spec, Sink* sink) { return Builder(spec, sink).run(); }

}  // namespace trace
}  // namespace trainmem
