// Networks described op by op (vision and speech): what a recipe needs to build the exact
// parameter list of a torchvision model or a HuggingFace vision / speech config, and to derive
// its activations op by op for a given batch and image size. The recipes live in cpp/src/net/;
// docs/models.md lists the families and how each was checked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainmem {

// One stage of a multi-stage network (ResNet, ConvNeXt, Swin, SegFormer, EfficientNet rows).
struct NetStage {
  uint64_t depth = 1;   // blocks in the stage
  uint64_t width = 0;   // output channels / hidden size
  uint64_t heads = 0;   // attention heads (Swin, SegFormer)
  uint64_t kernel = 3;  // convolution kernel (EfficientNet, MobileNet) / patch size (SegFormer)
  uint64_t stride = 1;  // first block's stride
  uint64_t expand = 1;  // expansion: MBConv expand ratio, mlp ratio, bottleneck width
  uint64_t extra = 0;   // family-specific: MobileNetV3 expanded size, SegFormer sr ratio
  bool se = false;      // squeeze-and-excitation (MobileNetV3, EfficientNet)
  std::string act;      // the stage's activation where it varies (MobileNetV3: RE / HS)
};

// A network's recipe and its hyperparameters. Which fields a family reads is stated at its
// recipe (cpp/src/net/*.cpp).
struct NetSpec {
  std::string family;  // recipe: "tv_resnet", "tv_vit", ..., "vit", "swin", "whisper", ...
  std::string
      variant;  // torchvision builder ("resnet50") or HF class ("ViTForImageClassification")
  uint64_t image_size = 224;    // input height = width (pixels); speech: mel frames / samples
  uint64_t config_image = 224;  // the size the parameters were built for (position tables)
  uint64_t channels = 3;        // input channels (speech: mel bins)
  uint64_t num_classes = 0;     // classification head outputs; 0: no head
  uint64_t patch = 16;          // patch size (ViT family), window (Swin)
  uint64_t hidden = 0, layers = 0, heads = 0, intermediate = 0;
  uint64_t decoder_layers = 0, vocab = 0, target_positions = 0;  // encoder-decoder (Whisper)
  uint64_t stem = 0;                                             // stem width
  uint64_t groups = 1, base_width = 64;       // ResNeXt / wide ResNet (torchvision)
  uint64_t growth = 0, bn_size = 0;           // DenseNet
  double width_mult = 1.0, depth_mult = 1.0;  // EfficientNet
  std::vector<NetStage> stages;
  double dropout = 0, attention_dropout = 0, drop_path = 0, classifier_dropout = 0;
  std::string act = "gelu";  // hidden activation (HF hidden_act)
  bool qkv_bias = true;
  bool layer_scale = false;
  bool pooler = false;        // HF *Model pooler / CLIP projection
  uint64_t projection = 0;    // CLIP / SigLIP projection_dim
  uint64_t extra_tokens = 0;  // DeiT distillation token, DINOv2 register tokens
  bool text = false;          // CLIP / SigLIP text tower present
  bool vision = true;         // reads images (CLIP / SigLIP: a vision tower is present)
  bool audio = false;         // reads audio (Whisper: mel frames; wav2vec2: samples)
  uint64_t text_hidden = 0, text_layers = 0, text_heads = 0, text_intermediate = 0;
  uint64_t text_vocab = 0, text_positions = 0;
  std::string text_act;
  uint64_t seq = 0;             // text tokens of a text tower (seqLen; its positions when absent)
  bool tied_head = false;       // the LM head shares the token embedding (tie_word_embeddings)
  bool swiglu = false;          // DINOv2 use_swiglu_ffn
  bool mask_token = false;      // DINOv2 use_mask_token (a parameter, unused in training)
  bool image_size_set = false;  // the request gave imageSize
};

}  // namespace trainmem
