#include "trainmem/advise.hpp"

#include <algorithm>
#include <cmath>

#include "trainmem/accumulation.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/step_work.hpp"

namespace trainmem {
namespace advise {

const char* status_name(Status s) {
  switch (s) {
    case Status::fits:
      return "fits";
    case Status::tight:
      return "tight";
    case Status::does_not_fit:
      return "doesNotFit";
    case Status::no_device:
      break;
  }
  return "noDevice";
}

uint64_t margin_bytes(uint64_t capacity, double fraction, uint64_t bytes) {
  if (bytes > 0) return std::min(bytes, capacity);
  if (!(fraction > 0)) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(capacity) * fraction));
}

Verdict judge(const peak::Request& run, const peak::Result& result, uint64_t margin) {
  Verdict v;
  v.nvidia_smi = result.simulated;
  v.used_bytes = result.simulated ? result.device_used_bytes : result.peak_bytes;
  if (!result.has_device || run.runtime.gpu_memory_bytes == 0) return v;
  v.capacity_bytes = run.runtime.gpu_memory_bytes;
  v.margin_bytes = std::min(margin, v.capacity_bytes);
  v.headroom_bytes = static_cast<int64_t>(v.capacity_bytes) - static_cast<int64_t>(v.used_bytes);
  // The core's own verdict says whether the run fits the GPU (a simulated run can run out of
  // memory below the capacity: fragmentation); the margin only asks for more left free.
  if (!result.fits)
    v.status = Status::does_not_fit;
  else if (v.headroom_bytes < static_cast<int64_t>(v.margin_bytes))
    v.status = Status::tight;
  else
    v.status = Status::fits;
  return v;
}

Timing step_time(const peak::Request& run, const peak::Result& result, const peak::Gpu* preset) {
  Timing t;
  t.global_batch =
      run.training.micro_batch * run.training.accumulation_steps * run.parallelism.data;
  if (run.runtime.gpu_id.empty() || !preset) {
    t.not_timed = Text("advise.time.customGpu", {});
    return t;
  }
  if (run.parallelism.tensor > 1) {
    t.not_timed = Text("advise.time.tensorParallel", {});
    return t;
  }
  if (run.parallelism.pipeline.stages > 1) {
    t.not_timed = Text("advise.time.pipeline", {});
    return t;
  }
  const peak::Gpu& gpu = *preset;
  const auto [dtype, tflops] = step_work::matmul_peak(run.training.precision, gpu.tflops);
  t.throughput_precision = dtype;
  if (!(tflops > 0)) {
    t.not_timed = Text("advise.time.noTflops", {});
    return t;
  }
  const step_work::Work w = step_work::of(run, result);
  time_model::Device device;
  device.peak_flops = tflops * 1e12;
  device.memory_bandwidth = gpu.memory_bandwidth;
  // The recomputed share of the forward, as the planner takes it: known for none, full and the
  // attention core; from the placement engine's plan for the others (else an upper bound).
  const vocab::Strategy strategy = run.training.checkpointing.strategy;
  bool known = true;
  double recompute = accumulation::recompute_flops_per_token(w.flops, strategy, &known);
  if (!known && result.forward_flops > 0) {
    recompute = w.flops.total * result.recompute_flops / result.forward_flops;
    known = true;
  }
  t.recompute_upper_bound = !known;
  time_model::StepInputs in;
  in.micro_batch = run.training.micro_batch;
  in.accumulation_steps = run.training.accumulation_steps;
  in.data_parallel = run.parallelism.data;
  in.seq_len = run.model.is_mlp ? 1 : run.training.seq_len;
  in.recompute_flops_per_token = recompute;
  in.optimizer_bytes = run.parallelism.zero.offload_optimizer ? 0.0 : w.optimizer_bytes;
  in.allreduce_bytes = w.gradient_bytes;
  t.optimizer_on_cpu = run.parallelism.zero.offload_optimizer;
  t.time = time_model::estimate_step(w.flops, in, device, time_model::Knobs{});
  t.timed = true;
  return t;
}

namespace {

bool is_adam(vocab::Optimizer o) {
  return o == vocab::Optimizer::adam || o == vocab::Optimizer::adamw;
}

bool transformer(const peak::Request& run) {
  return !run.model.is_mlp && run.model.description().has_architecture();
}

}  // namespace

std::vector<Candidate> candidates(const peak::Request& run, const Options& options) {
  std::vector<Candidate> out;
  const bool adapters = run.model.lora.enabled;
  const bool full = !adapters;
  const bool fine_tune = full && !options.from_scratch;
  const auto add = [&out](Candidate c) { out.push_back(std::move(c)); };
  const std::string base = options.lora_base_dtype;
  const auto with_base = [&base](Patch p) {
    if (!base.empty()) p.lora_base_dtype = base;
    return p;
  };
  if (transformer(run) && run.training.checkpointing.strategy != vocab::Strategy::full) {
    Patch p;
    p.checkpointing = "full";
    add({"checkpointing", p});
  }
  if (run.training.micro_batch > 1) {
    Patch p;
    p.micro_batch = 1;
    p.accumulation_steps = run.training.accumulation_steps * run.training.micro_batch;
    add({"micro-batch-1", p});
  }
  const bool bf16_ok = run.runtime.gpu_bf16;
  if (run.training.precision == vocab::Precision::fp32) {
    Patch p;
    p.precision = bf16_ok ? "amp-bf16" : "amp-fp16";
    add({"mixed-precision", p});
  }
  if (full && bf16_ok && run.training.precision != vocab::Precision::bf16) {
    Patch p;
    p.precision = "bf16";
    add({"bf16", p});
    if (transformer(run) && run.training.checkpointing.strategy != vocab::Strategy::full) {
      p.checkpointing = "full";
      add({"bf16-checkpointing", p});
    }
  }
  if (full && is_adam(run.training.optimizer.type) && !has_byte_states(run.training.optimizer)) {
    Patch p;
    p.optimizer =
        run.training.optimizer.type == vocab::Optimizer::adamw ? "adamw-8bit" : "adam-8bit";
    add({"adam-8bit", p});
  }
  // PyTorch 2's foreach step holds a temporary as large as the optimizer state.
  if (full && run.training.optimizer_implementation == vocab::OptimizerImpl::foreach &&
      simple_state_copies(run.training.optimizer) > 0 && run.runtime.profile.is_cuda()) {
    Patch p;
    p.optimizer_implementation = "for-loop";
    add({"for-loop", p});
  }
  if (full && !(run.parallelism.zero.offload_optimizer && run.parallelism.zero.stage >= 1)) {
    Patch p;
    p.zero_stage = std::max<uint32_t>(run.parallelism.zero.stage, 2);
    p.offload_optimizer = true;
    add({"zero2-offload", p});
  }
  if (fine_tune && transformer(run)) {
    Patch p;
    p.lora_rank = 16;
    add({"lora", with_base(p), 1, true});
    p.qlora = true;
    add({"qlora", with_base(p), 1, true});
  } else if (adapters && !run.model.lora.qlora) {
    Patch p;
    p.lora_rank = run.model.lora.rank;
    p.qlora = true;
    add({"qlora", with_base(p)});
  }
  {
    Patch p;
    p.tensor_parallel = 2 * run.parallelism.tensor;
    add({"tensor-parallel", p, 2 * run.parallelism.tensor * run.parallelism.data});
  }
  const uint64_t dp = std::max<uint64_t>(8, run.parallelism.data);
  if (run.parallelism.zero.stage != 3 || run.parallelism.data < 8) {
    Patch p;
    p.zero_stage = 3;
    p.data_parallel = dp;
    add({"zero3", p, dp * run.parallelism.tensor});
  }
  return out;
}

void rank(std::vector<Change>* changes) {
  const auto fits = [](const Change& c) { return c.verdict.status == Status::fits; };
  const auto tight = [](const Change& c) { return c.verdict.status == Status::tight; };
  std::stable_sort(changes->begin(), changes->end(), [&](const Change& a, const Change& b) {
    if (fits(a) != fits(b)) return fits(a);
    if (tight(a) != tight(b)) return tight(a);
    if (!fits(a) && !tight(a)) return a.verdict.used_bytes < b.verdict.used_bytes;
    const bool a1 = a.candidate.gpus == 1, b1 = b.candidate.gpus == 1;
    if (a1 != b1) return a1;
    if (a.candidate.changes_method != b.candidate.changes_method) return b.candidate.changes_method;
    // a step whose optimizer runs on the CPU is not timed whole: after those that are
    const auto whole = [](const Change& c) { return c.timing.timed && !c.timing.optimizer_on_cpu; };
    if (whole(a) != whole(b)) return whole(a);
    if (whole(a)) return a.timing.time.step_seconds < b.timing.time.step_seconds;
    return false;
  });
}

}  // namespace advise
}  // namespace trainmem
