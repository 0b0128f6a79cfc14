// The work of one optimizer step that the time model needs, shared by the accumulation planner
// and advise: the FLOPs of the model (time_model.hpp), the bytes the optimizer step reads and
// writes, the gradient bytes all-reduced, and the GPU's dense peak for the precision's matmuls.
#pragma once
#include <cstdint>
#include <utility>

#include "trainmem/peak_memory.hpp"
#include "trainmem/time_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace step_work {

// The dtype the matmuls run in and the GPU's dense peak for it (TFLOP/s; 0: not listed).
// Autocast runs matmuls in 16 bits; fp32 runs them in fp32 (PyTorch >= 1.12 disables TF32
// for matmuls by default: torch.backends.cuda.matmul.allow_tf32 = False).
std::pair<const char*, double> matmul_peak(vocab::Precision precision, const peak::DenseTflops& t);

struct Work {
  time_model::ForwardFlops flops;  // per token (an MLP chain: per sample)
  double optimizer_bytes = 0;      // read and written by one optimizer step
  double gradient_bytes = 0;       // all-reduced once per optimizer step
  bool model_has_batchnorm = false;
  bool model_may_have_batchnorm = false;  // a bare parameter count says nothing either way
};

// The work of `run` at its sequence length, from its evaluation `first` (trainable parameters;
// an MLP chain's forward FLOPs). Throws RequestError(unsupported, "model") when the FLOPs
// cannot be known.
Work of(const peak::Request& run, const peak::Result& first);

}  // namespace step_work
}  // namespace trainmem
