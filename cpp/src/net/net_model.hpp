// Vision and speech networks (trainmem/net.hpp) as model descriptions and activations.
#pragma once
#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"
#include "trainmem/net.hpp"

namespace trainmem {
namespace net {

// The parameter tensors, buffers and module counts of the network (appended to m); returns
// the number of chain layers (stem, blocks, head).
size_t describe(const NetSpec& spec, ModelDescription* m);
// The activations of one training forward for the settings' batch (m.arch.net set).
activations::ModelActivations activations(const ModelDescription& m,
                                          const activations::Settings& s);
// Tokens per sample of the network's blocks where they are one number (ViT family: patches +
// class and extra tokens); 1 otherwise.
uint64_t sequence_tokens(const NetSpec& n);
// torchvision builders by name (resnet50, vit_b_16, ...): fills the spec; false if unknown.
bool torchvision_spec(const std::string& arch, NetSpec* n);
// The builder names torchvision_spec knows (for error messages).
const std::vector<std::string>& torchvision_names();

}  // namespace net
}  // namespace trainmem
