#include "pipeline/pipeline_peak.hpp"

#include <algorithm>

#include "trainmem/error.hpp"
#include "trainmem/model.hpp"
#include "trainmem/quantization.hpp"

namespace trainmem {
namespace pipeline {
namespace {

uint64_t weight_dtype_bytes(vocab::Precision p) { return p == vocab::Precision::fp32 ? 4 : 2; }

uint64_t batch_of(const peak::Request& rq) {
  const diffusion::Pipeline& p = *rq.model.description().pipeline;
  return rq.training.micro_batch * (p.prior_preservation ? 2 : 1);
}

void add_source(peak::Line* l, const Text& what) { l->source.then_all(what); }

// The encode before the forward: what is held then (weights, frozen parts, the optimizer's
// state; gradients only between micro-steps of an accumulation or without set_to_none), the
// batch's pixels and the largest encode's working set. The peak when it is larger.
void encode_peak(const peak::Request& rq, const diffusion::PipelineCost& c, peak::Result* r) {
  if (!c.encode_peak_bytes) return;
  const bool grads_held = rq.training.accumulation_steps > 1 || !rq.training.set_to_none;
  const uint64_t held = r->weights.bytes + r->master_weights.bytes + r->optimizer_state.bytes +
                        (grads_held ? r->gradients.bytes : 0);
  const uint64_t at = held + c.pixel_bytes + c.encode_peak_bytes;
  if (at <= r->allocated_peak_bytes) return;
  if (r->simulated) {
    const uint64_t over = at - std::min(at, r->reserved_peak_bytes);
    r->reserved_peak_bytes += over;
    r->device_used_bytes += over;
  }
  r->allocated_peak_bytes = at;
  r->peak_bytes = at + r->runtime.bytes;
  r->peak_phase = "encode";
  r->peak_layer = -1;
  if (!grads_held) r->gradients.bytes = 0;
  r->activations.bytes = 0;
  r->temporaries.bytes = c.pixel_bytes + c.encode_peak_bytes;
  r->temporaries.source = Text("pipe.encode", {{"part", c.encode_peak_part}});
}

void apply(const peak::Request& rq, const diffusion::PipelineCost& c, peak::Result* r) {
  const uint64_t lora_w = c.lora_params * 4;
  const uint64_t extra = c.resident_bytes + c.lora_state_bytes + c.text_activation_bytes;
  r->allocated_peak_bytes += extra;
  r->peak_bytes += extra;
  if (r->simulated) {
    r->reserved_peak_bytes += extra;
    r->device_used_bytes += extra;
  }
  for (auto& t : r->timeline) {
    t.total_bytes += extra;
    t.activation_bytes += c.text_activation_bytes;
  }
  r->weights.bytes += c.resident_bytes + lora_w;
  add_source(&r->weights, Text("pipe.weights", {}));
  r->gradients.bytes += lora_w;
  r->optimizer_state.bytes += c.lora_params * 8;
  r->activations.bytes += c.text_activation_bytes;
  r->trainable_params += c.lora_params;
  encode_peak(rq, c, r);
  for (const auto& a : rq.model.description().pipeline->assumptions) r->assumptions.push_back(a);
  for (const auto& a : c.assumptions) r->assumptions.push_back(a);
}

// A GPTQ / AWQ base under LoRA: the settings peft supports with it.
void check_quantized(const peak::Request& rq) {
  const std::string what = rq.model.description().quantization->method == "gptq" ? "GPTQ" : "AWQ";
  if (!rq.model.lora.enabled)
    fail(code::kUnsupported, "lora", Message{"error.quant.needsLora", {{"what", what}}});
  if (rq.model.lora.qlora)
    fail(code::kInconsistent, "lora.qlora", Message{"error.quant.qlora", {{"what", what}}});
  if (rq.parallelism.zero.stage == 3 || rq.parallelism.fsdp.enabled || rq.parallelism.tensor > 1)
    fail(code::kUnsupported,
         rq.parallelism.fsdp.enabled      ? "fsdp"
         : rq.parallelism.zero.stage == 3 ? "zeroStage"
                                          : "tensorParallel",
         Message{"error.quant.replicated", {{"what", what}}});
}

// The packed weights in place of the 16-bit base: the weights line and every figure that
// holds it move by the difference.
void quantized_weights(const peak::Request& rq, peak::Result* r) {
  const ModelDescription& m = rq.model.description();
  const uint64_t exact = quantized_weight_bytes(m, 2) + r->trainable_params * 4;
  const int64_t delta = static_cast<int64_t>(exact) - static_cast<int64_t>(r->weights.bytes);
  auto shift = [delta](uint64_t* v) {
    *v = static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(*v) + delta));
  };
  r->weights.bytes = exact;
  add_source(&r->weights, m.quantization->method == "gptq" ? Text("quant.weights.gptq", {})
                                                           : Text("quant.weights.awq", {}));
  shift(&r->peak_bytes);
  shift(&r->allocated_peak_bytes);
  if (r->simulated) {
    shift(&r->reserved_peak_bytes);
    shift(&r->device_used_bytes);
  }
  for (auto& t : r->timeline) shift(&t.total_bytes);
}

void judge(const peak::Request& rq, peak::Result* r) {
  if (rq.runtime.gpu_memory_bytes == 0) return;
  const uint64_t judged = r->simulated ? r->device_used_bytes : r->peak_bytes;
  r->fits = judged <= rq.runtime.gpu_memory_bytes && r->ooms == 0;
  r->headroom_bytes =
      static_cast<int64_t>(rq.runtime.gpu_memory_bytes) - static_cast<int64_t>(judged);
}

}  // namespace

diffusion::PipelineCost cost(const peak::Request& rq) {
  const ModelDescription& m = rq.model.description();
  diffusion::Pipeline p = *m.pipeline;
  const diffusion::Net& net = *m.diffusion;
  for (auto& part : p.parts) {
    if (part.dtype.empty()) part.dtype_bytes = weight_dtype_bytes(rq.training.precision);
    if (part.role != "vae" && part.lora_rank == ~uint64_t{0})
      part.lora_rank = rq.model.lora.enabled ? rq.model.lora.rank : 4;
  }
  diffusion::CostSettings s;
  s.batch = batch_of(rq);
  const uint64_t side = net.sample_size * net.vae_scale;
  s.image_height = net.image_height ? net.image_height : side;
  s.image_width = net.image_width ? net.image_width : s.image_height;
  s.eager = rq.training.attention == activations::Attention::eager;
  s.cpu = !rq.runtime.profile.is_cuda();
  s.lora_dropout = rq.model.lora.enabled ? rq.model.lora.dropout : 0.0;
  diffusion::PipelineCost c = diffusion::pipeline_cost(p, s);
  if (p.prior_preservation)
    c.assumptions.push_back(Text("pipe.assume.prior", {{"samples", std::to_string(s.batch)}}));
  return c;
}

peak::Result evaluate(const peak::Request& rq) {
  const ModelDescription& m = rq.model.description();
  if (m.quantization) check_quantized(rq);
  peak::Request q = rq;
  if (m.pipeline) q.training.micro_batch = batch_of(rq);
  peak::Result r = peak::evaluate(q);
  if (m.quantization) quantized_weights(rq, &r);
  if (m.pipeline) apply(rq, cost(rq), &r);
  judge(rq, &r);
  return r;
}

bool adjusted(const peak::Request& rq) {
  return !rq.model.is_mlp &&
         (rq.model.description().pipeline || rq.model.description().quantization);
}

peak::Result evaluate_any(const peak::Request& rq) {
  return adjusted(rq) ? pipeline::evaluate(rq) : peak::evaluate(rq);
}

// The largest micro-batch (instance images) whose step, encode included, fits the device.
peak::Result compute(const peak::Request& rq) {
  peak::Result r = pipeline::evaluate(rq);
  if (!r.has_device || !rq.answer.search_max_micro_batch) return r;
  auto fits = [&](uint64_t b) {
    peak::Request q = rq;
    q.training.micro_batch = b;
    return pipeline::evaluate(q).fits;
  };
  uint64_t lo = 0, hi = 1;
  while (hi <= (uint64_t{1} << 20) && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  r.max_micro_batch = lo;
  return r;
}

}  // namespace pipeline
}  // namespace trainmem
