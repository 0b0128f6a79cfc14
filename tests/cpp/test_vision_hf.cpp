// HF vision and speech config.json files (as the Hub serves them, the fields that shape the
// tensors copied) against the parameter counts their model pages publish (safetensors
// metadata): google/vit-base-patch16-224 86,567,656; openai/clip-vit-base-patch32 151,277,313;
// microsoft/resnet-50 25,557,032; openai/whisper-tiny 37,760,640.
#include <catch2/catch.hpp>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  REQUIRE(env["ok"] == false);
  return env["error"];
}

// id2label of an ImageNet head: 1000 entries (num_labels is their count)
json imagenet_labels() {
  json l = json::object();
  for (int i = 0; i < 1000; ++i) l[std::to_string(i)] = "class " + std::to_string(i);
  return l;
}

json vit_base() {
  return {{"model_type", "vit"},
          {"architectures", {"ViTForImageClassification"}},
          {"hidden_size", 768},
          {"num_hidden_layers", 12},
          {"num_attention_heads", 12},
          {"intermediate_size", 3072},
          {"hidden_act", "gelu"},
          {"hidden_dropout_prob", 0.0},
          {"attention_probs_dropout_prob", 0.0},
          {"image_size", 224},
          {"patch_size", 16},
          {"num_channels", 3},
          {"qkv_bias", true},
          {"layer_norm_eps", 1e-12},
          {"id2label", imagenet_labels()}};
}

json clip_b32() {
  return {{"model_type", "clip"},
          {"architectures", {"CLIPModel"}},
          {"projection_dim", 512},
          {"logit_scale_init_value", 2.6592},
          {"text_config",
           {{"hidden_size", 512},
            {"intermediate_size", 2048},
            {"num_attention_heads", 8},
            {"num_hidden_layers", 12},
            {"vocab_size", 49408},
            {"max_position_embeddings", 77},
            {"hidden_act", "quick_gelu"}}},
          {"vision_config",
           {{"hidden_size", 768},
            {"intermediate_size", 3072},
            {"num_attention_heads", 12},
            {"num_hidden_layers", 12},
            {"image_size", 224},
            {"patch_size", 32},
            {"hidden_act", "quick_gelu"}}}};
}

json resnet_50() {
  return {{"model_type", "resnet"}, {"architectures", {"ResNetForImageClassification"}},
          {"embedding_size", 64},   {"hidden_sizes", {256, 512, 1024, 2048}},
          {"depths", {3, 4, 6, 3}}, {"layer_type", "bottleneck"},
          {"hidden_act", "relu"},   {"downsample_in_first_stage", false},
          {"num_channels", 3},      {"id2label", imagenet_labels()}};
}

json whisper_tiny() {
  return {{"model_type", "whisper"},
          {"architectures", {"WhisperForConditionalGeneration"}},
          {"d_model", 384},
          {"encoder_layers", 4},
          {"decoder_layers", 4},
          {"encoder_attention_heads", 6},
          {"decoder_attention_heads", 6},
          {"encoder_ffn_dim", 1536},
          {"decoder_ffn_dim", 1536},
          {"vocab_size", 51865},
          {"num_mel_bins", 80},
          {"max_source_positions", 1500},
          {"max_target_positions", 448},
          {"activation_function", "gelu"},
          {"dropout", 0.0},
          {"attention_dropout", 0.0},
          {"activation_dropout", 0.0},
          {"scale_embedding", false},
          {"tie_word_embeddings", true}};
}

json peak_request(const json& config) {
  return {{"model", {{"config", config}}},
          {"microBatch", 2},
          {"optimizer", "adamw"},
          {"precision", "amp-bf16"},
          {"gpu", "a100-40gb"}};
}

}  // namespace

TEST_CASE("HF vision and speech configs reproduce their published parameter counts", "[vision]") {
  CHECK(call("describeModel", {{"model", {{"config", vit_base()}}}})["params"] == 86567656);
  CHECK(call("describeModel", {{"model", {{"config", clip_b32()}}}})["params"] == 151277313);
  CHECK(call("describeModel", {{"model", {{"config", resnet_50()}}}})["params"] == 25557032);
  CHECK(call("describeModel", {{"model", {{"config", whisper_tiny()}}}})["params"] == 37760640);
}

TEST_CASE("HF vision and speech configs answer peakMemory", "[vision]") {
  for (const json& c : {vit_base(), resnet_50()}) {
    const json r = call("peakMemory", peak_request(c));
    CHECK(r["breakdown"]["activations"]["bytes"].get<double>() >= 0);
    CHECK(r["storedActivationBytes"].get<double>() > 0);
  }
  // ViT-B/16 at 224 px reads 197 tokens (196 patches + [CLS]); at 384 px 577. Under SDPA (the
  // CUDA default) every saved tensor of the blocks is linear in the tokens; the head reads [CLS]
  // alone: the saved bytes scale as 577 / 197 within 1 %
  json big = peak_request(vit_base());
  big["imageSize"] = 384;
  const double s224 = call("peakMemory", peak_request(vit_base()))["storedActivationBytes"];
  const double s384 = call("peakMemory", big)["storedActivationBytes"];
  CHECK(s384 == Approx(s224 * 577.0 / 197.0).epsilon(0.01));
  // CLIP reads both: the text tower's tokens are seqLen (at most its 77 positions)
  json clip = peak_request(clip_b32());
  clip["seqLen"] = 77;
  CHECK(call("peakMemory", clip)["params"] == 151277313);
  clip["seqLen"] = 78;
  CHECK(error_of("peakMemory", clip)["field"] == "seqLen");
  // Whisper: the decoder's tokens are targetLen (at most max_target_positions, 448)
  json w = peak_request(whisper_tiny());
  w["targetLen"] = 448;
  const double t448 = call("peakMemory", w)["storedActivationBytes"];
  w["targetLen"] = 100;
  CHECK(call("peakMemory", w)["storedActivationBytes"].get<double>() < t448);
  w["targetLen"] = 449;
  CHECK(error_of("peakMemory", w)["field"] == "targetLen");
  w.erase("targetLen");
  w["seqLen"] = 1000;  // the encoder reads exactly 3000 mel frames
  CHECK(error_of("peakMemory", w)["field"] == "seqLen");
}
