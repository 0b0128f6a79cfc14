// The request fields of diffusion networks (io/diffusion_request.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// For a diffusion network (model.diffusion): imageSize (pixels: a number, or [height, width])
// gives the request its own copy of the description with that image; seqLen is the text
// tokens (the pipeline's default when absent; refused for class-conditioned DiT). Returns false
// (reading nothing) for other models. Throws RequestError naming the field.
bool read_diffusion_fields(const Obj& req, std::shared_ptr<const ModelDescription>* model,
                           uint64_t* seq_len);

// LoRA's target modules when the request names none: for a diffusion network those of
// diffusers' DreamBooth LoRA scripts; for gptj, falcon and phi PEFT's defaults; empty for other
// models (peak's table of PEFT's defaults applies).
std::vector<std::string> diffusion_lora_targets(const ModelDescription& m);

}  // namespace trainmem
