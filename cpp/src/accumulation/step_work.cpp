#include "trainmem/step_work.hpp"

#include <string>

#include "trainmem/diffusion.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/traced_model.hpp"

namespace trainmem {
namespace step_work {

std::pair<const char*, double> matmul_peak(vocab::Precision precision, const peak::DenseTflops& t) {
  switch (precision) {
    case vocab::Precision::amp_fp16:
    case vocab::Precision::fp16:
      return {"fp16", t.fp16};
    case vocab::Precision::amp_bf16:
    case vocab::Precision::bf16:
      return {"bf16", t.bf16};
    case vocab::Precision::fp32:
      break;
  }
  return {"fp32", t.fp32};
}

Work of(const peak::Request& run, const peak::Result& first) {
  Work w;
  if (run.model.is_mlp) {
    w.flops.method = "mlp";
    // the evaluation's forward FLOPs are per micro-step: per sample here
    const double per_sample = first.forward_flops / static_cast<double>(run.training.micro_batch);
    w.flops.total = w.flops.blocks = per_sample;
    w.flops.layers = run.model.mlp.sizes.size() - 1;
  } else if (run.model.description().diffusion) {
    // a diffusion network: its recipes' FLOPs per sample (an image, not tokens)
    w.flops.method = "architecture";
    w.flops.total = w.flops.blocks =
        first.forward_flops / static_cast<double>(run.training.micro_batch);
    w.flops.layers = run.model.description().diffusion->units.size();
  } else if (run.model.description().trace) {
    // the traced ops' FLOPs (PyTorch's flop counter's formulas) per sample and token
    w.flops.method = "trace";
    const double tokens = static_cast<double>(run.training.micro_batch) *
                          static_cast<double>(run.training.seq_len > 0 ? run.training.seq_len : 1);
    w.flops.total = w.flops.blocks = first.forward_flops / tokens;
    w.flops.layers = run.model.description().trace->layers.size();
  } else {
    w.flops = time_model::forward_flops_per_token(run.model.description(), run.training.seq_len,
                                                  run.training.target_len);
  }
  // Optimizer traffic per step (weights in fp32 unless pure 16-bit: autocast keeps fp32
  // parameters and gradients).
  const bool pure16 = run.training.precision == vocab::Precision::bf16 ||
                      run.training.precision == vocab::Precision::fp16;
  const double wbytes = pure16 ? 2.0 : 4.0;
  const double sbytes = has_byte_states(run.training.optimizer) ? 1.0 : wbytes;
  const double trainable = static_cast<double>(first.trainable_params);
  w.optimizer_bytes = trainable * time_model::optimizer_bytes_per_param(
                                      simple_state_copies(run.training.optimizer), wbytes, sbytes);
  w.gradient_bytes = trainable * wbytes;
  bool has_bn = false;
  for (const auto& b : run.model.description().buffers)
    has_bn = has_bn || b.name.find("running_mean") != std::string::npos;
  w.model_has_batchnorm = has_bn;
  // Transformers normalise with LayerNorm/RMSNorm; an MLP chain has no norm; a bare parameter
  // count or a tensor list without buffers says nothing either way; a trace lists every buffer
  // (no running_mean: no BatchNorm).
  w.model_may_have_batchnorm =
      !has_bn && !run.model.is_mlp && !run.model.description().has_architecture() &&
      run.model.description().buffers.empty() && !run.model.description().trace;
  return w;
}

}  // namespace step_work
}  // namespace trainmem
