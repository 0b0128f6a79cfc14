// config.json of the vision and speech families (and torchvision builders) -> model descriptions.
#pragma once
#include <memory>
#include <string>

#include "io/request.hpp"
#include "trainmem/model.hpp"
#include "trainmem/net.hpp"

namespace trainmem {

// model_type values read here: torchvision, vit, deit, dinov2, clip, clip_vision_model,
// clip_text_model, siglip, convnext, resnet, swin, segformer, whisper, wav2vec2.
bool is_net_model_type(const std::string& type);
// Reads the config into a NetSpec and builds the description from it (m.arch.net set).
void build_net_config(const Obj& c, const std::string& type, const std::string& arch_override,
                      ModelDescription& m);
// (Re)builds the tensors, buffers and architecture of `m` from `spec` (a request's imageSize or
// numClasses change the spec of a shared description: the caller passes a copy).
void rebuild_net(std::shared_ptr<const NetSpec> spec, ModelDescription* m);

}  // namespace trainmem
