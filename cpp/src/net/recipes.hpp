// The recipes of the vision and speech families: one function per family records the network
// on a Graph (parameters and, when recording, the ops of one training forward for a batch of
// settings().micro_batch inputs). Sources are cited in each recipe's file.
#pragma once
#include <string>

#include "net/graph.hpp"
#include "net/ops.hpp"
#include "trainmem/net.hpp"

namespace trainmem {
namespace net {

using Recipe = void (*)(Graph&, const NetSpec&);
// The recipe of a family; null when unknown.
Recipe recipe_of(const std::string& family);

// "a.b" (b alone when a is empty).
std::string dot(const std::string& a, const std::string& b);
// A value's shape with one dimension replaced.
Shape with(Shape s, size_t dim, uint64_t v);

// torchvision 0.14 (pytorch/vision torchvision/models/*.py)
void tv_resnet(Graph& g, const NetSpec& n);
void tv_vit(Graph& g, const NetSpec& n);
void tv_convnext(Graph& g, const NetSpec& n);
void tv_swin(Graph& g, const NetSpec& n);
void tv_efficientnet(Graph& g, const NetSpec& n);
void tv_mobilenet_v3(Graph& g, const NetSpec& n);
void tv_densenet(Graph& g, const NetSpec& n);

// HuggingFace transformers (commits cited in each file)
void hf_vit(Graph& g, const NetSpec& n);   // vit, deit, dinov2
void hf_clip(Graph& g, const NetSpec& n);  // clip, siglip and their single towers
void hf_convnext(Graph& g, const NetSpec& n);
void hf_resnet(Graph& g, const NetSpec& n);
void hf_swin(Graph& g, const NetSpec& n);
void hf_segformer(Graph& g, const NetSpec& n);
void hf_whisper(Graph& g, const NetSpec& n);
void hf_wav2vec2(Graph& g, const NetSpec& n);

// torchvision's classification head and loss: avgpool done, x [B, C] -> fc -> cross-entropy.
V classify(Graph& g, const std::string& mod, V x, uint64_t classes);

}  // namespace net
}  // namespace trainmem
