// peakMemory with what the core's step does not hold itself: a GPTQ / AWQ base's packed weights
// (trainmem/quantization.hpp) in place of its 16-bit ones, and a diffusion pipeline
// (model.pipeline, trainmem/pipeline.hpp): the denoiser's
// step from peak::evaluate, then the frozen parts held through it, the text encoders' LoRA
// state and activations, and the encode before the forward (the VAE's encoder and the text
// encoders under no_grad), which is the step's peak when it outgrows the rest.
#pragma once
#include "trainmem/peak_memory.hpp"
#include "trainmem/pipeline.hpp"

namespace trainmem {
namespace pipeline {

// The parts' costs for this request (dtypes resolved: "" = the precision's weight dtype).
diffusion::PipelineCost cost(const peak::Request& rq);
// peak::evaluate / peak::compute of the request's model with its pipeline; the micro-batch is
// the instance images (prior preservation runs twice as many samples).
peak::Result evaluate(const peak::Request& rq);
peak::Result compute(const peak::Request& rq);
// Whether the request's model needs evaluate() (a pipeline, or a GPTQ / AWQ base).
bool adjusted(const peak::Request& rq);
// evaluate() for those, peak::evaluate() for any other.
peak::Result evaluate_any(const peak::Request& rq);

}  // namespace pipeline
}  // namespace trainmem
