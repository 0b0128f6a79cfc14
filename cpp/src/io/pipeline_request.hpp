// peakMemory's model.pipeline (io/pipeline_request.cpp): reading it, and the result's
// `pipeline` block.
#pragma once
#include <memory>

#include <nlohmann/json.hpp>

#include "io/request.hpp"
#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/pipeline.hpp"

namespace trainmem {

// `model` (an Obj at "model") holds only `pipeline`: {denoiser, vae, textEncoders, precomputed,
// priorPreservation}. Returns the denoiser's description with the pipeline attached (its own
// copy). Throws RequestError naming the field.
std::shared_ptr<const ModelDescription> read_pipeline(const Obj& model);

// The result's `pipeline`: each part (role, name, params, dtype, bytes, resident, encodes,
// loraRank), residentBytes, the text encoders' LoRA parameters and activations, the encode's
// working set and which part it is, the samples a step runs.
nlohmann::json pipeline_json(const peak::Request& rq);

}  // namespace trainmem
