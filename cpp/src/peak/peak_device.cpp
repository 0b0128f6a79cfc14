// The caching-allocator simulation of whole training steps: the request's model, schedule and
// optimizer become an allocation trace (step_trace.cpp), which runs through the simulator of
// PyTorch's CUDA caching allocator (caching_allocator.cpp). What nvidia-smi shows is the
// allocator's reserve plus the CUDA context (docs/allocator.md).
#include "peak/peak_device.hpp"
#include "io/request.hpp"

#include <algorithm>
#include <cmath>

#include "trainmem/caching_allocator.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/step_trace.hpp"

namespace trainmem {
namespace peak {
namespace device {
namespace {

using placement::Op;
using placement::OpKind;

// Parameter tensors (numel, 2-D?) per chain layer: embeddings first, blocks, the rest last
// (peak_memory.cpp layout_of's assignment).
struct ParamTensor {
  uint64_t numel = 0;
  bool matrix = false;
  TensorSpec spec;
};

std::vector<std::vector<ParamTensor>> params_per_layer(const Request& rq,
                                                       const activations::ModelActivations& acts) {
  const size_t nl = acts.layers.size();
  std::vector<std::vector<ParamTensor>> out(nl);
  if (rq.is_mlp) {
    for (size_t i = 0; i < nl && i + 1 < rq.mlp.sizes.size(); ++i) {
      TensorSpec w{"weight", {rq.mlp.sizes[i + 1], rq.mlp.sizes[i]}};
      out[i].push_back({w.numel(), true, w});
      if (rq.mlp.bias) {
        TensorSpec b{"bias", {rq.mlp.sizes[i + 1]}};
        out[i].push_back({b.numel(), false, b});
      }
    }
    return out;
  }
  const ModelDescription& m = rq.model();
  const size_t blocks = nl >= 2 ? nl - 2 : 0;
  if (m.has_tensors()) {
    bool seen_block = false;
    for (const auto& t : m.tensors) {
      if (!t.tied_to.empty()) continue;
      size_t slot;
      if (t.block >= 0 && static_cast<size_t>(t.block) < blocks) {
        slot = static_cast<size_t>(t.block) + 1;
        seen_block = true;
      } else if (t.embedding || !seen_block) {
        slot = 0;
      } else {
        slot = nl - 1;
      }
      out[slot].push_back({t.numel(), t.shape.size() == 2 && !t.embedding, t});
    }
    return out;
  }
  // a parameter count only: one tensor per layer (the split of layout_of)
  const Architecture& a = m.arch;
  const uint64_t emb = std::min(a.vocab * a.hidden, m.params);
  const uint64_t head = a.tied_embeddings ? 0 : emb;
  const uint64_t rest = m.params > emb + head ? m.params - emb - head : 0;
  out[0].push_back({emb, false, TensorSpec{"embeddings", {emb}}});
  for (size_t i = 1; i + 1 < nl; ++i)
    out[i].push_back({rest / blocks, true, TensorSpec{"block", {rest / blocks}}});
  const uint64_t last = m.params - emb - (blocks ? rest / blocks * blocks : 0);
  if (last) out[nl - 1].push_back({last, true, TensorSpec{"head", {last}}});
  return out;
}

// One micro-step's schedule: the plan's own op sequence (multi-level strategies) or the
// single-level one torch.utils.checkpoint runs.
std::vector<Op> schedule_of(const placement::Chain& chain, const placement::PlanResult& plan) {
  if (!plan.scheduled)
    fail(code::kInternal, "", "internal error: a plan without its schedule cannot be simulated");
  if (plan.schedule.empty()) return placement::single_level_ops(chain, plan.checkpointed);
  return plan.schedule;
}

uint64_t div_round(double bytes, uint64_t divisor) {
  return static_cast<uint64_t>(std::llround(bytes / static_cast<double>(divisor)));
}

// Temporaries of optimizer.step() per parameter, in copies of the parameter (state dtype).
uint32_t optimizer_temp_copies(const OptimizerSpec& o, vocab::OptimizerImpl impl) {
  using vocab::Optimizer;
  const Optimizer name = o.type;
  // torchao low-bit AdamW: a compiled per-tensor step (torchao/optim/adam.py), see peak_memory
  if (impl == vocab::OptimizerImpl::fused || name == Optimizer::adam_8bit ||
      name == Optimizer::sgd || is_torchao_low_bit(o))
    return 0;
  if (name == Optimizer::adam || name == Optimizer::adamw) {
    // transformers.AdamW: denom = exp_avg_sq.sqrt().add_(eps) (optimization.py); torch's
    // _single_tensor_adamw: (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps);
    // _multi_tensor_adamw: one _foreach_sqrt list (torch/optim/adamw.py)
    return impl == vocab::OptimizerImpl::for_loop ? 2 : 1;
  }
  // std = square_avg.sqrt() etc.
  if (name == Optimizer::adagrad || name == Optimizer::rmsprop) return 1;
  return 2;  // lion (update = exp_avg.clone()...), adafactor (grad**2 + eps, update)
}

// `managed` receives the bytes held outside the caching allocator (paged optimizer states).
trace::StepSpec build_spec(const Request& rq, const activations::ModelActivations& acts,
                           const placement::Chain& chain, const placement::PlanResult& plan,
                           const Facts& f, uint64_t* managed) {
  trace::StepSpec s;
  uint64_t& paged_bytes = *managed;
  paged_bytes = 0;
  const size_t nl = acts.layers.size();
  const auto params = params_per_layer(rq, acts);
  s.input_bytes = acts.input_bytes;
  const bool amp = rq.precision == activations::Precision::amp_fp16 ||
                   rq.precision == activations::Precision::amp_bf16;
  const uint64_t lora_rank = rq.lora.rank;
  for (size_t i = 0; i < nl; ++i) {
    const auto& la = acts.layers[i];
    trace::TraceLayer L;
    L.tensors = la.tensors;
    if (L.tensors.empty() && la.saved_bytes) L.tensors.push_back(la.saved_bytes);
    L.output_bytes = la.output_bytes;
    L.forward_temps = la.forward_temps;
    L.backward_temps = la.backward_temps;
    if (chain.layers[i].selective)
      L.selective_kept = activations::selective_keep(la, rq.checkpointing.save).tensors;
    // layers without per-tensor transients: the layer's lump as one piece
    if (L.forward_temps.empty() && la.forward_temp_bytes)
      L.forward_temps.push_back({0, 1, la.forward_temp_bytes});
    if (L.backward_temps.empty() && la.backward_temp_bytes) {
      const uint64_t dinput = i > 0 ? acts.layers[i - 1].output_bytes : 0;
      if (la.backward_temp_bytes > dinput)
        L.backward_temps.push_back({0, 1, la.backward_temp_bytes - dinput});
    }
    for (const auto& p : params[i]) {
      if (!f.offload_params)
        s.weights.push_back(div_round(p.numel * f.weight_bytes_per_param, f.weight_divisor));
      if (amp && p.matrix && i > 0 && !f.weights_gathered_16bit)
        L.cast_weights.push_back(div_round(p.numel * 2.0, 1));
      if (rq.lora.enabled || !p.spec.trainable) continue;
      L.grads.push_back(f.offload_grads ? 0 : p.numel * f.grad_bytes_per_param / f.grad_divisor);
      trace::OptimizerParam op;
      if (!f.offload_optimizer) {
        for (const auto& st : optimizer_state(rq.optimizer, p.spec, f.state_dtype)) {
          if (st.kind != StateKind::tensor || st.shape.empty()) continue;
          // paged (bitsandbytes get_state_buffer): >= 100,000 values go to managed memory
          if (rq.optimizer.paged && st.numel() >= 100000) {
            paged_bytes += st.bytes() / f.state_divisor;
            continue;
          }
          op.state.push_back(st.bytes() / f.state_divisor);
        }
        if (f.master_bytes_per_param)
          op.state.push_back(p.numel * f.master_bytes_per_param / f.state_divisor);
        op.temp_bytes = p.numel * f.state_width / f.state_divisor;
      }
      s.params.push_back(std::move(op));
    }
    if (rq.lora.enabled && i < f.lora_io.size()) {
      for (const auto& io : f.lora_io[i]) {
        for (const TensorSpec& t : {TensorSpec{"lora_A", {lora_rank, io.first}},
                                    TensorSpec{"lora_B", {io.second, lora_rank}}}) {
          s.weights.push_back(t.numel() * 4);
          L.grads.push_back(t.numel() * 4);
          trace::OptimizerParam op;
          for (const auto& st : optimizer_state(rq.optimizer, t, DType::fp32))
            if (st.kind == StateKind::tensor && !st.shape.empty()) op.state.push_back(st.bytes());
          op.temp_bytes = t.numel() * 4;
          s.params.push_back(std::move(op));
        }
      }
    }
    s.layers.push_back(std::move(L));
  }
  s.ops = schedule_of(chain, plan);
  s.temp_copies =
      f.offload_optimizer ? 0 : optimizer_temp_copies(rq.optimizer, rq.optimizer_implementation);
  s.impl = rq.optimizer_implementation == vocab::OptimizerImpl::foreach
               ? trace::OptimizerImpl::foreach
           : (rq.optimizer_implementation == vocab::OptimizerImpl::fused ||
              rq.optimizer.type == vocab::Optimizer::adam_8bit || is_torchao_low_bit(rq.optimizer))
               ? trace::OptimizerImpl::fused
               : trace::OptimizerImpl::for_loop;
  // Micro-steps after the second repeat the same allocations (the .grad tensors exist from the
  // first on): three per optimizer step reach the allocator's steady state.
  s.accumulation_steps = std::min<uint64_t>(rq.accumulation_steps, 3);
  s.set_to_none = rq.set_to_none;
  s.workspace_bytes = rq.runtime.workspace_bytes;
  s.per_layer_extra = f.zero_gather_bytes;
  s.steps = 3;
  s.optimizer_in_backward = rq.optimizer_in_backward;
  s.offload_activations = rq.offload_activations;
  if (rq.data_parallel > 1 && rq.zero_stage == 0 && !rq.fsdp.enabled) {
    // torch/nn/parallel/distributed.py: buckets of bucket_cap_mb (25 MiB), the first of
    // dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), filled with the parameters in reverse order
    std::vector<uint64_t> grads;
    for (const auto& L : s.layers) grads.insert(grads.end(), L.grads.begin(), L.grads.end());
    uint64_t cap = 1ull << 20, cur = 0;
    for (size_t k = grads.size(); k-- > 0;) {
      cur += grads[k];
      if (cur >= cap) {
        s.ddp_buckets.push_back(cur);
        cur = 0;
        cap = rq.ddp_bucket_bytes;
      }
    }
    if (cur) s.ddp_buckets.push_back(cur);
    s.grads_are_bucket_views = rq.ddp_gradient_as_bucket_view;
  }
  return s;
}

const trace::Mark& mark_of(const trace::Trace& t, size_t event) {
  // the last mark at or before the event (marks are in event order)
  size_t lo = 0, hi = t.marks.size();
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    (t.marks[mid].event <= event ? lo : hi) = mid;
  }
  return t.marks[lo];
}

void replay(const Request& rq, const trace::Trace& t, uint32_t steps, bool limited,
            uint64_t managed, Result* r);

// NCCL's buffers (ProcessGroupNCCL, runtime profile) when the run is distributed.
uint64_t nccl_bytes(const Request& rq) {
  const bool distributed = rq.data_parallel > 1 || rq.tensor_parallel > 1;
  return distributed && !rq.runtime_overhead_set ? rq.runtime.nccl_bytes : 0;
}

// What the allocator may reserve on the device: its memory less the CUDA context, NCCL and
// managed memory (paged optimizer states take device memory outside the allocator); 0 (no
// limit) when those leave nothing.
uint64_t allocator_capacity(const Request& rq, uint64_t managed) {
  const uint64_t context =
      rq.runtime_overhead_set ? rq.runtime_overhead_bytes : rq.runtime.context_bytes;
  const uint64_t outside = context + nccl_bytes(rq) + managed;
  return rq.gpu_memory_bytes > outside ? rq.gpu_memory_bytes - outside : 0;
}

}  // namespace

void simulate(const Request& rq, const activations::ModelActivations& acts,
              const placement::Chain& chain, const placement::PlanResult& plan, const Facts& f,
              Result* r) {
  uint64_t managed = 0;
  const trace::StepSpec spec = build_spec(rq, acts, chain, plan, f, &managed);
  const trace::Trace t = trace::build(spec);
  Result unlimited;
  bool have_unlimited = false;
  if (rq.verdict_only) {
    // The unlimited run first: when its allocated bytes alone exceed what the allocator may
    // reserve, the limited run must run out of memory (reserved >= allocated), so only the
    // unlimited run's figures are needed. (Its events are the limited run's up to the OOM.)
    unlimited = *r;
    replay(rq, t, spec.steps, false, managed, &unlimited);
    have_unlimited = true;
    const uint64_t cap = allocator_capacity(rq, managed);
    if (cap != 0 && unlimited.allocated_peak_bytes > cap) {
      *r = std::move(unlimited);
      r->ooms = 1;  // the limited run stops at its first OOM
      return;
    }
  }
  replay(rq, t, spec.steps, true, managed, r);
  if (r->ooms == 0) return;
  // Out of memory on the device: what the run would need is the same trace on an unlimited
  // device (deviceUsedBytes); the OOM stays in the result (fits = false).
  // (replay sets the simulation's fields only; the OOM count and the retries stay the
  // limited run's)
  if (!have_unlimited) {
    unlimited = *r;
    replay(rq, t, spec.steps, false, managed, &unlimited);
  } else {
    unlimited.ooms = r->ooms;
    unlimited.assumptions = r->assumptions;
  }
  unlimited.alloc_retries = r->alloc_retries;
  *r = std::move(unlimited);
}

namespace {
// One run of the trace (of `steps` optimizer steps); `limited`: the device's capacity bounds the
// reserve (OOM retry, OOM).
void replay(const Request& rq, const trace::Trace& t, uint32_t steps, bool limited,
            uint64_t managed, Result* r) {
  allocator::Config cfg = rq.allocator;
  const uint64_t context =
      rq.runtime_overhead_set ? rq.runtime_overhead_bytes : rq.runtime.context_bytes;
  const uint64_t nccl = nccl_bytes(rq);
  if (limited) {
    const uint64_t cap = allocator_capacity(rq, managed);
    if (cap != 0) cfg.capacity_bytes = cap;
  }
  allocator::CachingAllocator alloc(cfg);
  uint64_t best_reserved = 0, step1_alloc = 0, steady_alloc = 0, step1_reserved = 0;
  size_t best_event = 0;
  size_t mark = 0;  // the mark of event e (marks are in event order)
  for (size_t e = 0; e < t.events.size(); ++e) {
    while (mark + 1 < t.marks.size() && t.marks[mark + 1].event <= e) ++mark;
    const auto& ev = t.events[e];
    if (ev.kind == allocator::Event::kAlloc) {
      if (!alloc.malloc(ev.id, ev.size, ev.stream)) {
        if (r->ooms == 0) {
          const trace::Mark& m = mark_of(t, e);
          r->assumptions.push_back("the simulated allocator ran out of memory in step " +
                                   std::to_string(m.step) + " (" + m.phase + ")");
        }
        ++r->ooms;
        break;
      }
    } else if (ev.kind == allocator::Event::kFree) {
      alloc.free(ev.id);
    } else {
      alloc.empty_cache();
    }
    const allocator::Stats& st = alloc.stats();
    const trace::Mark& m = t.marks[mark];
    if (m.step <= 1) {
      step1_alloc = std::max(step1_alloc, st.allocated_bytes);
      step1_reserved = std::max(step1_reserved, st.reserved_bytes);
    } else {
      steady_alloc = std::max(steady_alloc, st.allocated_bytes);
    }
    if (st.reserved_bytes > best_reserved) {
      best_reserved = st.reserved_bytes;
      best_event = e;
    }
  }
  const allocator::Stats& st = alloc.stats();
  r->simulated = true;
  r->steps_simulated = steps;
  r->reserved_peak_bytes = st.peak_reserved_bytes;
  r->allocated_peak_bytes = st.peak_allocated_bytes;
  // the cache's overhead at the peak: reserved beyond what tensors ever needed at once
  r->fragmentation_bytes =
      st.peak_reserved_bytes - std::min(st.peak_reserved_bytes, st.peak_allocated_bytes);
  r->largest_request_bytes = st.largest_request_bytes;
  r->first_step_allocated_bytes = step1_alloc;
  r->first_step_reserved_bytes = step1_reserved;
  r->steady_allocated_bytes = steady_alloc;
  r->alloc_retries = st.num_alloc_retries;
  r->segments = alloc.segments().size();
  r->nccl_bytes = nccl;
  const trace::Mark& m = mark_of(t, best_event);
  r->reserved_peak_step = m.step;
  r->reserved_peak_phase = m.phase;
  r->reserved_peak_layer = m.layer;
  // nvidia-smi: the allocator's segments plus what the driver holds outside it
  r->device_used_bytes = r->reserved_peak_bytes + context + nccl + managed;
  r->managed_bytes = managed;
}
}  // namespace

}  // namespace device
}  // namespace peak
}  // namespace trainmem
