// Parameter counts of DINOv2, DeiT, SigLIP, SegFormer and wav2vec2 configs: each against a hand
// count from the modules of transformers' modeling file (the tensors each module creates, listed
// below), and that count against the figure its model card or paper publishes (rounded there).
#include <catch2/catch.hpp>

#include <cmath>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

uint64_t params_of(const json& config) {
  const json env =
      json::parse(trainmem::call("describeModel", json{{"model", {{"config", config}}}}.dump()));
  INFO(env.dump().substr(0, 600));
  REQUIRE(env["ok"] == true);
  return env["result"]["params"].get<uint64_t>();
}

// nn.Linear(i, o) with bias; nn.LayerNorm(d).
constexpr uint64_t linear(uint64_t i, uint64_t o) { return i * o + o; }
constexpr uint64_t norm(uint64_t d) { return 2 * d; }

// A pre-norm encoder block of width d and MLP width f (ViTLayer, DeiTLayer, SiglipEncoderLayer,
// Wav2Vec2EncoderLayer): two LayerNorms, query/key/value/output projections, two MLP linears.
constexpr uint64_t block(uint64_t d, uint64_t f) {
  return 2 * norm(d) + 4 * linear(d, d) + linear(d, f) + linear(f, d);
}

// Whether a count rounds to a published figure: |count - published| <= half a unit.
bool rounds_to(uint64_t count, double published, double unit) {
  return std::abs(static_cast<double>(count) - published) <= unit / 2;
}

}  // namespace

TEST_CASE("DINOv2 ViT-B/14 counts as Dinov2Model builds it", "[vision][counts]") {
  // facebook/dinov2-base config.json: hidden 768, 12 layers, 12 heads, mlp_ratio 4, patch 14,
  // image_size 518 (modeling_dinov2.py: Dinov2Embeddings with cls_token, mask_token, a position
  // table of 1 + (518 / 14)^2 rows and a 14 x 14 patch conv; Dinov2Layer adds two LayerScale
  // vectors to the pre-norm block; a final LayerNorm)
  const json c = {{"model_type", "dinov2"},    {"architectures", {"Dinov2Model"}},
                  {"hidden_size", 768},        {"num_hidden_layers", 12},
                  {"num_attention_heads", 12}, {"mlp_ratio", 4},
                  {"patch_size", 14},          {"image_size", 518},
                  {"layerscale_value", 1.0},   {"use_swiglu_ffn", false}};
  const uint64_t d = 768;
  const uint64_t hand =
      d + d + (1 + 37 * 37) * d + (3 * 14 * 14 * d + d) + 12 * (block(d, 4 * d) + 2 * d) + norm(d);
  CHECK(hand == 86580480);
  CHECK(params_of(c) == hand);
  // the model card's "86.6M params" (huggingface.co/facebook/dinov2-base, safetensors metadata);
  // the paper's ViT-B/14: 86 M (Oquab et al. 2023)
  CHECK(rounds_to(hand, 86.6e6, 0.1e6));
}

TEST_CASE("DeiT-B distilled counts as DeiTForImageClassificationWithTeacher builds it",
          "[vision][counts]") {
  // facebook/deit-base-distilled-patch16-224: hidden 768, 12 layers, 12 heads, MLP 3072,
  // patch 16 at 224 px, 1000 classes (modeling_deit.py: DeiTEmbeddings with cls and distillation
  // tokens, 196 + 2 positions and no mask token for a classifier; two heads, cls_classifier and
  // distillation_classifier)
  const json c = {
      {"model_type", "deit"},      {"architectures", {"DeiTForImageClassificationWithTeacher"}},
      {"hidden_size", 768},        {"num_hidden_layers", 12},
      {"num_attention_heads", 12}, {"intermediate_size", 3072},
      {"image_size", 224},         {"patch_size", 16},
      {"num_labels", 1000}};
  const uint64_t d = 768;
  const uint64_t hand =
      2 * d + 198 * d + (3 * 16 * 16 * d + d) + 12 * block(d, 3072) + norm(d) + 2 * linear(d, 1000);
  CHECK(hand == 87338192);
  CHECK(params_of(c) == hand);
  // facebookresearch/deit README: deit_base_distilled_patch16_224, 87 M parameters
  CHECK(rounds_to(hand, 87e6, 1e6));
}

TEST_CASE("SigLIP base patch16-224 counts as SiglipModel builds it", "[vision][counts]") {
  // google/siglip-base-patch16-224: text and vision towers of width 768, 12 layers, MLP 3072;
  // text: 32,000 tokens, 64 positions, a final LayerNorm and a 768 x 768 head; vision: a 16 x 16
  // patch conv, 196 positions, post_layernorm and the attention-pooling head
  // (SiglipMultiheadAttentionPoolingHead: probe, nn.MultiheadAttention, LayerNorm, MLP);
  // logit_scale and logit_bias (modeling_siglip.py)
  const json tower = {{"hidden_size", 768},
                      {"intermediate_size", 3072},
                      {"num_attention_heads", 12},
                      {"num_hidden_layers", 12}};
  json text = tower, vision = tower;
  text["vocab_size"] = 32000;
  text["max_position_embeddings"] = 64;
  vision["image_size"] = 224;
  vision["patch_size"] = 16;
  const json c = {{"model_type", "siglip"},
                  {"architectures", {"SiglipModel"}},
                  {"text_config", text},
                  {"vision_config", vision}};
  const uint64_t d = 768, f = 3072;
  const uint64_t text_tower = 32000 * d + 64 * d + 12 * block(d, f) + norm(d) + linear(d, d);
  const uint64_t pool_head =
      d + (3 * d * d + 3 * d) + linear(d, d) + norm(d) + linear(d, f) + linear(f, d);
  const uint64_t vision_tower =
      (3 * 16 * 16 * d + d) + 196 * d + 12 * block(d, f) + norm(d) + pool_head;
  const uint64_t hand = text_tower + vision_tower + 2;
  CHECK(hand == 203155970);
  CHECK(params_of(c) == hand);
  // the model card's "203M params" (huggingface.co/google/siglip-base-patch16-224)
  CHECK(rounds_to(hand, 203e6, 1e6));
}

TEST_CASE("SegFormer-B0 on ADE20K counts as SegformerForSemanticSegmentation builds it",
          "[vision][counts]") {
  // nvidia/segformer-b0-finetuned-ade-512-512: MiT-b0 (widths 32, 64, 160, 256; two blocks a
  // stage; reduction ratios 8, 4, 2, 1; patch kernels 7, 3, 3, 3), 150 classes, decoder 256
  // (modeling_segformer.py: SegformerOverlapPatchEmbeddings = conv + LayerNorm; a block =
  // two LayerNorms, query/key/value/output, the reduction conv (kernel = stride = ratio) with
  // its LayerNorm when ratio > 1, Mix-FFN = dense, 3 x 3 depthwise conv, dense; a LayerNorm after
  // each stage; the decode head: one linear per stage, a 1 x 1 fuse conv without bias, batch
  // norm, a 1 x 1 classifier conv)
  const json c = {{"model_type", "segformer"},
                  {"architectures", {"SegformerForSemanticSegmentation"}},
                  {"num_labels", 150}};
  const uint64_t widths[4] = {32, 64, 160, 256}, ratio[4] = {8, 4, 2, 1}, kernel[4] = {7, 3, 3, 3};
  uint64_t hand = 0, in = 3, linears = 0;
  for (int s = 0; s < 4; ++s) {
    const uint64_t C = widths[s], r = ratio[s], k = kernel[s];
    uint64_t blk =
        2 * norm(C) + 4 * linear(C, C) + linear(C, 4 * C) + (4 * C * 9 + 4 * C) + linear(4 * C, C);
    if (r > 1) blk += r * r * C * C + C + norm(C);
    hand += (k * k * in * C + C) + norm(C) + 2 * blk + norm(C);
    linears += linear(C, 256);
    in = C;
  }
  hand += linears + 4 * 256 * 256 + 2 * 256 + (256 * 150 + 150);
  CHECK(hand == 3752694);
  CHECK(params_of(c) == hand);
  // the paper's SegFormer-B0 on ADE20K: 3.8 M parameters (Xie et al. 2021, the ADE20K comparison)
  CHECK(rounds_to(hand, 3.8e6, 0.1e6));
}

TEST_CASE("wav2vec2-base-960h counts as Wav2Vec2ForCTC builds it", "[vision][counts]") {
  // facebook/wav2vec2-base-960h: seven feature convolutions of 512 channels without bias
  // (kernels 10, 3, 3, 3, 3, 2, 2), GroupNorm(512, 512) after the first, the feature projection
  // (LayerNorm 512, Linear 512 -> 768), masked_spec_embed (mask_time_prob 0.05), the positional
  // conv (768 -> 768, kernel 128, 16 groups, weight_norm: weight_v and weight_g of 128) with its
  // LayerNorm, 12 post-norm layers of 768 with MLP 3072, the CTC head 768 -> 32
  // (modeling_wav2vec2.py)
  const json c = {{"model_type", "wav2vec2"},
                  {"architectures", {"Wav2Vec2ForCTC"}},
                  {"vocab_size", 32},
                  {"mask_time_prob", 0.05}};
  const uint64_t d = 768;
  const uint64_t features = 10 * 512 + 2 * 512 + 4 * (3 * 512 * 512) + 2 * (2 * 512 * 512);
  const uint64_t projection = norm(512) + linear(512, d);
  const uint64_t pos_conv = d * (d / 16) * 128 + 128 + d;
  const uint64_t hand =
      features + projection + d + pos_conv + norm(d) + 12 * block(d, 3072) + linear(d, 32);
  CHECK(hand == 94396320);
  CHECK(params_of(c) == hand);
  // the model card's "94.4M params" (huggingface.co/facebook/wav2vec2-base-960h); the paper's
  // BASE: 95 M (Baevski et al. 2020)
  CHECK(rounds_to(hand, 94.4e6, 0.1e6));
}

TEST_CASE("HF ConvNeXt-T and Swin-T count as torchvision's published weights", "[vision][counts]") {
  // transformers' ConvNextForImageClassification and SwinForImageClassification build the
  // modules of torchvision's convnext_tiny and swin_t tensor for tensor (modeling_convnext.py:
  // stem conv + LayerNorm, downsampling LayerNorm + 2x2 conv, 7x7 depthwise conv, LayerNorm, two
  // pointwise linears, layer scale, final LayerNorm, classifier; modeling_swin.py: patch conv +
  // LayerNorm, query/key/value as three linears where torchvision fuses them, the relative
  // position bias table, patch merging without bias); torchvision publishes their exact counts
  // (torchvision/models/convnext.py ConvNeXt_Tiny_Weights meta "num_params": 28,589,128;
  // swin_transformer.py Swin_T_Weights "num_params": 28,288,354).
  json labels = json::object();
  for (int i = 0; i < 1000; ++i) labels[std::to_string(i)] = "c" + std::to_string(i);
  const json convnext = {{"architectures", {"ConvNextForImageClassification"}},
                         {"model_type", "convnext"},
                         {"num_channels", 3},
                         {"patch_size", 4},
                         {"num_stages", 4},
                         {"hidden_sizes", {96, 192, 384, 768}},
                         {"depths", {3, 3, 9, 3}},
                         {"hidden_act", "gelu"},
                         {"image_size", 224},
                         {"id2label", labels}};
  CHECK(params_of(convnext) == 28589128);
  const json swin = {{"architectures", {"SwinForImageClassification"}},
                     {"model_type", "swin"},
                     {"image_size", 224},
                     {"patch_size", 4},
                     {"num_channels", 3},
                     {"embed_dim", 96},
                     {"depths", {2, 2, 6, 2}},
                     {"num_heads", {3, 6, 12, 24}},
                     {"window_size", 7},
                     {"mlp_ratio", 4.0},
                     {"qkv_bias", true},
                     {"hidden_act", "gelu"},
                     {"id2label", labels}};
  CHECK(params_of(swin) == 28288354);
}
