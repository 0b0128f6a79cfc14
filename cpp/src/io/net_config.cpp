// config.json of the vision and speech families -> NetSpec -> the exact parameter list
// (net/net_model.hpp). torchvision models have no config.json: their "config" is the builder's
// name and arguments, {"model_type": "torchvision", "architecture": "resnet50",
// "num_classes": 1000, "image_size": 224} (the presets are such configs).
#include "io/net_config.hpp"

#include <memory>

#include "io/json_fields.hpp"
#include "net/net_model.hpp"
#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxImage = 1u << 14;  // pixels per side
constexpr uint64_t kMaxClasses = 1u << 24;
constexpr uint64_t kMaxDim = 1u << 20;
constexpr uint64_t kMaxLayers = 1000;

void read_torchvision(const Obj& c, const std::string& arch_override, NetSpec* n) {
  const std::string arch =
      arch_override.empty() ? c.str("architecture", 64) : arch_override.substr(0, 64);
  if (!arch_override.empty()) c.mark_used("architecture");
  if (!net::torchvision_spec(arch, n)) {
    std::string list;
    const char* sep = " ";
    for (const auto& x : net::torchvision_names()) {
      list += sep + x;
      sep = ", ";
    }
    fail(code::kUnknownValue,
         arch_override.empty() ? c.field("architecture") : "model.architecture",
         Message{"error.net.torchvision", {{"arch", arch}, {"list", list}}});
  }
  n->num_classes = c.u64_or("num_classes", 1000, 1, kMaxClasses);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
}

// architectures[0] (or the override) among the classes modelled for the type; `fallback` when
// the config names none.
std::string pick_class(const Obj& c, const std::string& override_arch,
                       std::initializer_list<const char*> allowed, const char* fallback) {
  std::string arch = fallback;
  if (c.has("architectures")) {
    const json& a = c.array("architectures", 16);
    if (!a.empty() && a[0].is_string()) arch = a[0].get<std::string>().substr(0, 128);
  } else {
    c.mark_used("architectures");
  }
  if (!override_arch.empty()) arch = override_arch.substr(0, 128);
  std::string list;
  for (const char* x : allowed) {
    if (arch == x) return arch;
    list += std::string(list.empty() ? " " : ", ") + x;
  }
  fail(code::kUnsupported, override_arch.empty() ? c.field("architectures") : "model.architecture",
       Message{"error.net.architecture", {{"arch", arch}, {"list", list}}});
}

// num_labels, or the size of id2label (PretrainedConfig's default: 2)
uint64_t labels_of(const Obj& c) {
  if (c.has("num_labels")) return c.u64("num_labels", 1, kMaxClasses);
  if (c.has("id2label") && c.raw("id2label").is_object() && !c.raw("id2label").empty())
    return c.raw("id2label").size();
  c.mark_used("id2label");
  return 2;
}

// ViTConfig / DeiTConfig / Dinov2Config (configuration_*.py defaults for absent keys).
void read_vit(const Obj& c, const std::string& type, const std::string& ov, NetSpec* n) {
  n->family = type;
  const bool dino = type == "dinov2";
  n->hidden = c.u64_or("hidden_size", 768, 1, kMaxDim);
  n->layers = c.u64_or("num_hidden_layers", 12, 1, kMaxLayers);
  n->heads = c.u64_or("num_attention_heads", 12, 1, kMaxDim);
  if (n->hidden % n->heads != 0)
    fail(code::kInconsistent, c.field("num_attention_heads"),
         Message{"error.net.headsHidden", {{"field", c.field("num_attention_heads")}}});
  n->intermediate = dino ? static_cast<uint64_t>(n->hidden * c.num_or("mlp_ratio", 4, 0.01, 64))
                         : c.u64_or("intermediate_size", 3072, 1, kMaxDim);
  n->act = c.str_or("hidden_act", "gelu", 64);
  n->dropout = c.num_or("hidden_dropout_prob", 0.0, 0, 1);
  n->attention_dropout = c.num_or("attention_probs_dropout_prob", 0.0, 0, 1);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
  n->patch = c.u64_or("patch_size", dino ? 14 : 16, 1, kMaxImage);
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->qkv_bias = c.boolean_or("qkv_bias", true);
  if (dino) {
    n->drop_path = c.num_or("drop_path_rate", 0.0, 0, 1);
    n->swiglu = c.boolean_or("use_swiglu_ffn", false);
    n->mask_token = c.boolean_or("use_mask_token", true);
    c.num_or("layerscale_value", 1.0, -1e9, 1e9);
    n->variant = pick_class(c, ov, {"Dinov2Model", "Dinov2ForImageClassification"}, "Dinov2Model");
  } else if (type == "deit") {
    n->extra_tokens = 1;
    n->variant = pick_class(
        c, ov, {"DeiTModel", "DeiTForImageClassification", "DeiTForImageClassificationWithTeacher"},
        "DeiTModel");
  } else {
    n->variant = pick_class(c, ov, {"ViTModel", "ViTForImageClassification"}, "ViTModel");
  }
  const bool head = n->variant.find("For") != std::string::npos;
  n->num_classes = head ? labels_of(c) : 0;
  if (!head) c.mark_used("num_labels");
  n->pooler = n->variant == "ViTModel" || n->variant == "DeiTModel";
  if (n->variant == "DeiTForImageClassificationWithTeacher")
    n->extra_tokens = 1;  // (a DeiT class: the distillation token)
}

// A CLIP / SigLIP vision config (CLIPVisionConfig / SiglipVisionConfig defaults).
void read_vision_tower(const Obj& c, bool sig, NetSpec* n) {
  n->hidden = c.u64_or("hidden_size", 768, 1, kMaxDim);
  n->intermediate = c.u64_or("intermediate_size", 3072, 1, kMaxDim);
  n->layers = c.u64_or("num_hidden_layers", 12, 1, kMaxLayers);
  n->heads = c.u64_or("num_attention_heads", 12, 1, kMaxDim);
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
  n->patch = c.u64_or("patch_size", sig ? 16 : 32, 1, kMaxImage);
  n->act = c.str_or("hidden_act", sig ? "gelu_pytorch_tanh" : "quick_gelu", 64);
  n->attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  if (n->hidden % n->heads != 0)
    fail(code::kInconsistent, c.field("num_attention_heads"),
         Message{"error.net.headsHidden", {{"field", c.field("num_attention_heads")}}});
  if (sig && !c.boolean_or("vision_use_head", true))
    fail(code::kUnsupported, c.field("vision_use_head"), Message{"error.net.visionHead", {}});
}

// A CLIP / SigLIP text config (CLIPTextConfig / SiglipTextConfig defaults).
void read_text_tower(const Obj& c, bool sig, NetSpec* n) {
  n->text_vocab = c.u64_or("vocab_size", sig ? 32000 : 49408, 1, 1u << 24);
  n->text_hidden = c.u64_or("hidden_size", sig ? 768 : 512, 1, kMaxDim);
  n->text_intermediate = c.u64_or("intermediate_size", sig ? 3072 : 2048, 1, kMaxDim);
  n->text_layers = c.u64_or("num_hidden_layers", 12, 1, kMaxLayers);
  n->text_heads = c.u64_or("num_attention_heads", sig ? 12 : 8, 1, kMaxDim);
  n->text_positions = c.u64_or("max_position_embeddings", sig ? 64 : 77, 1, 1u << 20);
  n->text_act = c.str_or("hidden_act", sig ? "gelu_pytorch_tanh" : "quick_gelu", 64);
  if (sig) n->projection = c.u64_or("projection_size", n->text_hidden, 1, kMaxDim);
  if (n->text_hidden % n->text_heads != 0)
    fail(code::kInconsistent, c.field("num_attention_heads"),
         Message{"error.net.headsHidden", {{"field", c.field("num_attention_heads")}}});
  n->seq = n->text_positions;
}

// CLIPConfig / SiglipConfig (text_config + vision_config) or one tower's config.
void read_clip(const Obj& c, const std::string& type, const std::string& ov, NetSpec* n) {
  const bool sig = type.rfind("siglip", 0) == 0;
  n->family = sig ? "siglip" : "clip";
  if (type == "clip" || type == "siglip") {
    n->vision = n->text = true;
    const json empty = json::object();
    const Obj vc =
        c.has("vision_config") ? c.obj("vision_config") : Obj(empty, c.field("vision_config"));
    const Obj tc = c.has("text_config") ? c.obj("text_config") : Obj(empty, c.field("text_config"));
    for (auto it = vc.json_value().begin(); it != vc.json_value().end(); ++it)
      vc.mark_used(it.key());
    for (auto it = tc.json_value().begin(); it != tc.json_value().end(); ++it)
      tc.mark_used(it.key());
    read_vision_tower(vc, sig, n);
    read_text_tower(tc, sig, n);
    if (!sig) n->projection = c.u64_or("projection_dim", 512, 1, kMaxDim);
    n->variant =
        pick_class(c, ov, {sig ? "SiglipModel" : "CLIPModel"}, sig ? "SiglipModel" : "CLIPModel");
    return;
  }
  const bool vision = type.find("vision") != std::string::npos;
  n->vision = vision;
  n->text = !vision;
  if (vision) {
    read_vision_tower(c, sig, n);
    n->projection = c.u64_or("projection_dim", 512, 1, kMaxDim);
    n->variant = sig ? pick_class(c, ov, {"SiglipVisionModel"}, "SiglipVisionModel")
                     : pick_class(c, ov, {"CLIPVisionModel", "CLIPVisionModelWithProjection"},
                                  "CLIPVisionModel");
  } else {
    read_text_tower(c, sig, n);
    if (!sig) n->projection = c.u64_or("projection_dim", 512, 1, kMaxDim);
    n->variant =
        sig ? pick_class(c, ov, {"SiglipTextModel"}, "SiglipTextModel")
            : pick_class(c, ov, {"CLIPTextModel", "CLIPTextModelWithProjection"}, "CLIPTextModel");
  }
}

// A list of sizes (hidden_sizes, depths, ...): `fallback` when absent.
std::vector<uint64_t> sizes_of(const Obj& c, const char* key, std::vector<uint64_t> fallback,
                               uint64_t max) {
  if (!c.has(key)) {
    c.mark_used(key);
    return fallback;
  }
  const json& a = c.array(key, 64);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(read_u64(a[i], index_path(c.field(key), i), 1, max));
  if (out.empty())
    fail(code::kOutOfRange, c.field(key),
         Message{"error.field.notEmpty", {{"field", c.field(key)}}});
  return out;
}

// Stages from hidden_sizes + depths (equal lengths).
void read_stages(const Obj& c, std::vector<uint64_t> widths, std::vector<uint64_t> depths,
                 NetSpec* n) {
  widths = sizes_of(c, "hidden_sizes", widths, kMaxDim);
  depths = sizes_of(c, "depths", depths, kMaxLayers);
  if (widths.size() != depths.size())
    fail(code::kInconsistent, c.field("depths"),
         Message{"error.net.depthsHidden", {{"field", c.field("depths")}}});
  for (size_t i = 0; i < widths.size(); ++i) {
    NetStage s;
    s.width = widths[i];
    s.depth = depths[i];
    n->stages.push_back(s);
  }
  n->hidden = widths.back();
}

// ConvNextConfig / ResNetConfig (configuration_*.py defaults).
void read_convnet(const Obj& c, const std::string& type, const std::string& ov, NetSpec* n) {
  n->family = type;
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
  if (type == "convnext") {
    n->patch = c.u64_or("patch_size", 4, 1, kMaxImage);
    read_stages(c, {96, 192, 384, 768}, {3, 3, 9, 3}, n);
    n->act = c.str_or("hidden_act", "gelu", 64);
    n->layer_scale = c.num_or("layer_scale_init_value", 1e-6, -1e9, 1e9) > 0;
    n->drop_path = c.num_or("drop_path_rate", 0.0, 0, 1);
    n->variant =
        pick_class(c, ov, {"ConvNextModel", "ConvNextForImageClassification"}, "ConvNextModel");
  } else {
    n->stem = c.u64_or("embedding_size", 64, 1, kMaxDim);
    read_stages(c, {256, 512, 1024, 2048}, {3, 4, 6, 3}, n);
    const std::string lt = c.one_of_or("layer_type", {"bottleneck", "basic"}, "bottleneck");
    for (auto& s : n->stages) s.expand = lt == "bottleneck" ? 4 : 1;
    n->act = c.str_or("hidden_act", "relu", 64);
    n->groups = c.boolean_or("downsample_in_first_stage", false) ? 2 : 1;
    if (c.boolean_or("downsample_in_bottleneck", false))
      fail(code::kUnsupported, c.field("downsample_in_bottleneck"),
           Message{"error.net.bottleneck", {}});
    n->variant = pick_class(c, ov, {"ResNetModel", "ResNetForImageClassification"}, "ResNetModel");
  }
  const bool head = n->variant.find("For") != std::string::npos;
  n->num_classes = head ? labels_of(c) : 0;
}

// SwinConfig (configuration_swin.py defaults).
void read_swin(const Obj& c, const std::string& ov, NetSpec* n) {
  n->family = "swin";
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
  n->stem = c.u64_or("embed_dim", 96, 1, kMaxDim);
  const std::vector<uint64_t> depths = sizes_of(c, "depths", {2, 2, 6, 2}, kMaxLayers);
  const std::vector<uint64_t> heads = sizes_of(c, "num_heads", {3, 6, 12, 24}, kMaxDim);
  if (heads.size() != depths.size())
    fail(code::kInconsistent, c.field("num_heads"),
         Message{"error.net.headsDepths", {{"field", c.field("num_heads")}}});
  const uint64_t patch = c.u64_or("patch_size", 4, 1, kMaxImage);
  n->patch = c.u64_or("window_size", 7, 1, kMaxImage);
  n->width_mult = c.num_or("mlp_ratio", 4.0, 0.01, 64);  // intermediate = int(mlp_ratio * dim)
  for (size_t i = 0; i < depths.size(); ++i) {
    NetStage s;
    s.depth = depths[i];
    s.heads = heads[i];
    s.width = n->stem << i;
    s.kernel = patch;
    if (s.width % s.heads != 0)
      fail(code::kInconsistent, c.field("num_heads"),
           Message{"error.net.headsWidth", {{"field", c.field("num_heads")}}});
    n->stages.push_back(s);
  }
  n->hidden = n->stem << (depths.size() - 1);
  n->act = c.str_or("hidden_act", "gelu", 64);
  n->dropout = c.num_or("hidden_dropout_prob", 0.0, 0, 1);
  n->attention_dropout = c.num_or("attention_probs_dropout_prob", 0.0, 0, 1);
  n->drop_path = c.num_or("drop_path_rate", 0.1, 0, 1);
  n->qkv_bias = c.boolean_or("qkv_bias", true);
  if (c.boolean_or("use_absolute_embeddings", false))
    fail(code::kUnsupported, c.field("use_absolute_embeddings"),
         Message{"error.net.absoluteEmbeddings", {}});
  n->variant = pick_class(c, ov, {"SwinModel", "SwinForImageClassification"}, "SwinModel");
  n->num_classes = n->variant == "SwinModel" ? 0 : labels_of(c);
}

// SegformerConfig (configuration_segformer.py defaults: MiT-b0).
void read_segformer(const Obj& c, const std::string& ov, NetSpec* n) {
  n->family = "segformer";
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->image_size = n->config_image = c.u64_or("image_size", 512, 1, kMaxImage);
  const uint64_t blocks = c.u64_or("num_encoder_blocks", 4, 1, 16);
  const auto depths = sizes_of(c, "depths", {2, 2, 2, 2}, kMaxLayers);
  const auto sr = sizes_of(c, "sr_ratios", {8, 4, 2, 1}, kMaxImage);
  const auto hidden = sizes_of(c, "hidden_sizes", {32, 64, 160, 256}, kMaxDim);
  const auto patch = sizes_of(c, "patch_sizes", {7, 3, 3, 3}, kMaxImage);
  const auto stride = sizes_of(c, "strides", {4, 2, 2, 2}, kMaxImage);
  const auto heads = sizes_of(c, "num_attention_heads", {1, 2, 5, 8}, kMaxDim);
  const auto mlp = sizes_of(c, "mlp_ratios", {4, 4, 4, 4}, 64);
  for (const auto* v : {&depths, &sr, &hidden, &patch, &stride, &heads, &mlp})
    if (v->size() != blocks)
      fail(code::kInconsistent, c.field("num_encoder_blocks"),
           Message{"error.net.encoderBlocks", {{"field", c.field("num_encoder_blocks")}}});
  for (uint64_t i = 0; i < blocks; ++i) {
    NetStage s;
    s.depth = depths[i];
    s.width = hidden[i];
    s.heads = heads[i];
    s.kernel = patch[i];
    s.stride = stride[i];
    s.expand = mlp[i];
    s.extra = sr[i];
    if (s.width % s.heads != 0)
      fail(code::kInconsistent, c.field("num_attention_heads"),
           Message{"error.net.headsStages", {{"field", c.field("num_attention_heads")}}});
    n->stages.push_back(s);
  }
  n->hidden = hidden.back();
  n->act = c.str_or("hidden_act", "gelu", 64);
  n->dropout = c.num_or("hidden_dropout_prob", 0.0, 0, 1);
  n->attention_dropout = c.num_or("attention_probs_dropout_prob", 0.0, 0, 1);
  n->classifier_dropout = c.num_or("classifier_dropout_prob", 0.1, 0, 1);
  n->drop_path = c.num_or("drop_path_rate", 0.1, 0, 1);
  n->intermediate = c.u64_or("decoder_hidden_size", 256, 1, kMaxDim);
  if (!c.boolean_or("reshape_last_stage", true))
    fail(code::kUnsupported, c.field("reshape_last_stage"), Message{"error.net.reshapeLast", {}});
  n->variant = pick_class(
      c, ov,
      {"SegformerModel", "SegformerForSemanticSegmentation", "SegformerForImageClassification"},
      "SegformerModel");
  n->num_classes = n->variant == "SegformerModel" ? 0 : labels_of(c);
}

// WhisperConfig (configuration_whisper.py defaults: whisper-tiny's sizes).
void read_whisper(const Obj& c, const std::string& ov, NetSpec* n) {
  n->family = "whisper";
  n->vision = false;
  n->audio = true;
  n->vocab = c.u64_or("vocab_size", 51865, 1, 1u << 24);
  n->channels = c.u64_or("num_mel_bins", 80, 1, 4096);
  n->hidden = c.u64_or("d_model", 384, 1, kMaxDim);
  n->layers = c.u64_or("encoder_layers", 4, 1, kMaxLayers);
  n->heads = c.u64_or("encoder_attention_heads", 6, 1, kMaxDim);
  n->intermediate = c.u64_or("encoder_ffn_dim", 1536, 1, kMaxDim);
  n->decoder_layers = c.u64_or("decoder_layers", 4, 1, kMaxLayers);
  n->text_heads = c.u64_or("decoder_attention_heads", 6, 1, kMaxDim);
  n->text_intermediate = c.u64_or("decoder_ffn_dim", 1536, 1, kMaxDim);
  for (const char* k : {"encoder_attention_heads", "decoder_attention_heads"}) {
    const uint64_t h = std::string(k) == "encoder_attention_heads" ? n->heads : n->text_heads;
    if (n->hidden % h != 0)
      fail(code::kInconsistent, c.field(k),
           Message{"error.config.divideDModel", {{"field", c.field(k)}}});
  }
  const uint64_t src = c.u64_or("max_source_positions", 1500, 1, 1u << 20);
  n->image_size = n->config_image = 2 * src;  // the encoder reads exactly this many mel frames
  n->target_positions = c.u64_or("max_target_positions", 448, 1, 1u << 20);
  n->act = c.str_or("activation_function", "gelu", 64);
  n->dropout = c.num_or("dropout", 0.0, 0, 1);
  n->attention_dropout = c.num_or("attention_dropout", 0.0, 0, 1);
  n->classifier_dropout = c.num_or("activation_dropout", 0.0, 0, 1);
  n->tied_head = c.boolean_or("tie_word_embeddings", true);
  if (c.boolean_or("scale_embedding", false))
    fail(code::kUnsupported, c.field("scale_embedding"), Message{"error.net.scaleEmbedding", {}});
  n->variant = pick_class(c, ov, {"WhisperForConditionalGeneration", "WhisperModel"},
                          "WhisperForConditionalGeneration");
}

// Wav2Vec2Config (configuration_wav2vec2.py defaults: wav2vec2-base).
void read_wav2vec2(const Obj& c, const std::string& ov, NetSpec* n) {
  n->family = "wav2vec2";
  n->vision = false;
  n->audio = true;
  const auto dim = sizes_of(c, "conv_dim", {512, 512, 512, 512, 512, 512, 512}, kMaxDim);
  const auto stride = sizes_of(c, "conv_stride", {5, 2, 2, 2, 2, 2, 2}, 1024);
  const auto kernel = sizes_of(c, "conv_kernel", {10, 3, 3, 3, 3, 2, 2}, 1024);
  if (stride.size() != dim.size() || kernel.size() != dim.size())
    fail(code::kInconsistent, c.field("conv_dim"),
         Message{"error.net.convLengths", {{"field", c.field("conv_dim")}}});
  for (size_t i = 0; i < dim.size(); ++i) {
    NetStage s;
    s.width = dim[i];
    s.kernel = kernel[i];
    s.stride = stride[i];
    n->stages.push_back(s);
  }
  n->qkv_bias = c.boolean_or("conv_bias", false);  // (the feature convolutions' bias)
  n->pooler = c.one_of_or("feat_extract_norm", {"group", "layer"}, "group") == "group";
  n->act = c.str_or("hidden_act", "gelu", 64);
  const std::string fa = c.str_or("feat_extract_activation", "gelu", 64);
  if (fa != n->act)
    fail(code::kUnsupported, c.field("feat_extract_activation"),
         Message{"error.net.featActivation", {}});
  n->hidden = c.u64_or("hidden_size", 768, 1, kMaxDim);
  n->layers = c.u64_or("num_hidden_layers", 12, 1, kMaxLayers);
  n->heads = c.u64_or("num_attention_heads", 12, 1, kMaxDim);
  if (n->hidden % n->heads != 0)
    fail(code::kInconsistent, c.field("num_attention_heads"),
         Message{"error.net.headsHidden", {{"field", c.field("num_attention_heads")}}});
  n->intermediate = c.u64_or("intermediate_size", 3072, 1, kMaxDim);
  n->dropout = c.num_or("hidden_dropout", 0.1, 0, 1);
  n->attention_dropout = c.num_or("attention_dropout", 0.1, 0, 1);
  n->classifier_dropout = c.num_or("activation_dropout", 0.1, 0, 1);
  const double final_dropout = c.num_or("final_dropout", 0.1, 0, 1);
  n->extra_tokens = c.num_or("feat_proj_dropout", 0.0, 0, 1) > 0 ? 0 : 1;  // 1: no dropout there
  n->patch = c.u64_or("num_conv_pos_embeddings", 128, 1, 4096);
  n->groups = c.u64_or("num_conv_pos_embedding_groups", 16, 1, 4096);
  if (n->hidden % n->groups != 0)
    fail(code::kInconsistent, c.field("num_conv_pos_embedding_groups"),
         Message{"error.net.headsHidden", {{"field", c.field("num_conv_pos_embedding_groups")}}});
  n->layer_scale = c.boolean_or("do_stable_layer_norm", false);
  n->mask_token =
      c.num_or("mask_time_prob", 0.05, 0, 1) > 0 || c.num_or("mask_feature_prob", 0.0, 0, 1) > 0;
  n->vocab = c.u64_or("vocab_size", 32, 1, 1u << 24);
  if (c.boolean_or("add_adapter", false))
    fail(code::kUnsupported, c.field("add_adapter"), Message{"error.net.adapter", {}});
  n->variant = pick_class(c, ov, {"Wav2Vec2ForCTC", "Wav2Vec2Model"}, "Wav2Vec2Model");
  // the CTC head's dropout is final_dropout; the recipe reads it from classifier_dropout after
  // the feed-forward's activation_dropout: keep both
  n->width_mult = final_dropout;
  n->image_size = n->config_image = 16000;  // one second of 16 kHz audio unless seqLen says
}

}  // namespace

bool is_net_model_type(const std::string& type) {
  for (const char* t : {"torchvision", "vit", "deit", "dinov2", "clip", "clip_vision_model",
                        "clip_text_model", "siglip", "siglip_vision_model", "siglip_text_model",
                        "convnext", "resnet", "swin", "segformer", "whisper", "wav2vec2"})
    if (type == t) return true;
  return false;
}

void build_net_config(const Obj& c, const std::string& type, const std::string& arch_override,
                      ModelDescription& m) {
  auto spec = std::make_shared<NetSpec>();
  if (type == "torchvision")
    read_torchvision(c, arch_override, spec.get());
  else if (type == "vit" || type == "deit" || type == "dinov2")
    read_vit(c, type, arch_override, spec.get());
  else if (type.rfind("clip", 0) == 0 || type.rfind("siglip", 0) == 0)
    read_clip(c, type, arch_override, spec.get());
  else if (type == "convnext" || type == "resnet")
    read_convnet(c, type, arch_override, spec.get());
  else if (type == "swin")
    read_swin(c, arch_override, spec.get());
  else if (type == "segformer")
    read_segformer(c, arch_override, spec.get());
  else if (type == "whisper")
    read_whisper(c, arch_override, spec.get());
  else if (type == "wav2vec2")
    read_wav2vec2(c, arch_override, spec.get());
  rebuild_net(std::move(spec), &m);
}

void rebuild_net(std::shared_ptr<const NetSpec> spec, ModelDescription* m) {
  m->tensors.clear();
  m->buffers.clear();
  m->module_count = 0;
  m->module_name_bytes = 0;
  const size_t chain = net::describe(*spec, m);
  Architecture& a = m->arch;
  a.layers = chain >= 2 ? chain - 2 : 0;  // the blocks between the stem and the head
  a.hidden = spec->hidden;
  a.heads = spec->heads;
  a.intermediate = spec->intermediate;
  a.num_labels = spec->num_classes;
  a.encoder_only = spec->decoder_layers == 0;
  if (spec->decoder_layers > 0) {  // encoder-decoder (Whisper): targetLen is the decoder's
    a.encoder_layers = spec->layers;
    a.layers = spec->decoder_layers;
    a.max_positions = spec->target_positions;
    a.vocab = spec->vocab;
  }
  a.net = std::move(spec);
  if (m->architecture.empty()) m->architecture = a.net->variant;
  finalize_tensors(m);
}

}  // namespace trainmem
