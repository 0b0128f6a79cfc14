// Diffusion pipelines (peakMemory's model.pipeline): the VAE encoder's working set under no_grad
// against torch 1.13 (tools/measure_pipeline.py -> tests/fixtures/torch_pipeline.json), the
// text encoders' parameter counts against their configs, what the frozen parts add to a step,
// DreamBooth's prior preservation, and the refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/model.hpp"
#include "trainmem/pipeline.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

json call(const std::string& fn, const json& req) {
  return json::parse(trainmem::call(fn, req.dump()));
}

json sdxl_lora(const json& pipeline) {
  json p = pipeline;
  p["denoiser"] = {{"preset", "sdxl-base-unet"}};
  return {{"model", {{"pipeline", p}}}, {"imageSize", 1024},     {"microBatch", 1},
          {"precision", "amp-bf16"},    {"lora", {{"rank", 4}}}, {"gpu", "rtx-4090"},
          {"timeline", false}};
}

}  // namespace

TEST_CASE("pipeline: the VAE encoder's working set matches torch 1.13 within 1 %", "[pipeline]") {
  const json fx = load_fixture("torch_pipeline.json");
  REQUIRE(fx["cases"].size() >= 4);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const ModelDescription m = model_from_config(Obj(c["config"], "model.config"), "");
    REQUIRE(m.diffusion);
    CHECK(m.params == c["params"].get<uint64_t>());
    const uint64_t px = c["image"];
    const double predicted = static_cast<double>(
        diffusion::vae_encode_bytes(*m.diffusion, c["batch"], px, px, 4, true, true));
    const double measured = c["encodeBytes"];
    INFO("measured " << measured << " predicted " << predicted);
    CHECK(std::fabs(predicted - measured) <= 0.01 * measured);
  }
}

TEST_CASE("pipeline: the text encoders' parameter counts follow from their configs", "[pipeline]") {
  // CLIPTextModel: token (49,408) and position (77) embeddings, per layer q, k, v, out_proj
  // with biases, two LayerNorms, fc1 and fc2; the final LayerNorm; SDXL's second encoder adds
  // text_projection (h x h, no bias). T5EncoderModel: shared embedding (32,128), per layer q, k,
  // v, o (no bias), two T5LayerNorms, wi_0, wi_1, wo; the first layer's relative bias (32 x
  // heads); the final norm.
  auto clip = [](uint64_t h, uint64_t layers, uint64_t ff, bool proj) {
    const uint64_t layer = 4 * (h * h + h) + 4 * h + (h * ff + ff) + (ff * h + h);
    return 49408 * h + 77 * h + layers * layer + 2 * h + (proj ? h * h : 0);
  };
  CHECK(diffusion::text_encoder_preset("clip-vit-large-patch14")->params ==
        clip(768, 12, 3072, false));
  CHECK(diffusion::text_encoder_preset("clip-vit-h-14")->params == clip(1024, 23, 4096, false));
  CHECK(diffusion::text_encoder_preset("clip-vit-bigG-14")->params == clip(1280, 32, 5120, true));
  const uint64_t t5 =
      32128ull * 4096 + 24 * (4 * 4096ull * 4096 + 2 * 4096 + 3 * 4096ull * 10240) + 32 * 64 + 4096;
  CHECK(diffusion::text_encoder_preset("t5-v1_1-xxl-encoder")->params == t5);
  CHECK(diffusion::text_encoder_preset("clip-vit-large-patch14")->params == 123060480);
}

TEST_CASE("pipeline: SDXL LoRA with its frozen VAE and text encoders", "[pipeline]") {
  const json r = call("peakMemory", sdxl_lora(json::object()));
  INFO(r.dump().substr(0, 800));
  REQUIRE(r["ok"] == true);
  const json& p = r["result"]["pipeline"];
  REQUIRE(p["parts"].size() == 3);
  // train_dreambooth_lora_sdxl.py: the VAE in fp32, the text encoders in the weight dtype
  CHECK(p["parts"][0]["role"] == "vae");
  CHECK(p["parts"][0]["dtype"] == "fp32");
  CHECK(p["parts"][0]["bytes"] == 83653863ull * 4);
  CHECK(p["parts"][1]["dtype"] == "bf16");
  CHECK(p["parts"][2]["params"] == 694659840ull);
  CHECK(p["parts"][1]["resident"] == true);  // the UNet scripts keep them on the device
  CHECK(p["parts"][1]["encodes"] == false);  // prompt embeddings precomputed
  CHECK(p["residentBytes"] == 83653863ull * 4 + (123060480ull + 694659840ull) * 2);
  CHECK(p["encodePart"] == "vae");
  // the same denoiser alone: the pipeline adds at least its resident parts
  json alone = sdxl_lora(json::object());
  alone["model"] = {{"preset", "sdxl-base-unet"}};
  const json a = call("peakMemory", alone);
  REQUIRE(a["ok"] == true);
  CHECK(r["result"]["peakBytes"].get<uint64_t>() >=
        a["result"]["peakBytes"].get<uint64_t>() + p["residentBytes"].get<uint64_t>());
  CHECK(r["result"]["trainableParams"] == a["result"]["trainableParams"]);
  // cached latents and no text encoders on the device: the denoiser's step alone again
  const json bare = call("peakMemory", sdxl_lora({{"precomputed", {{"latents", true}}},
                                                  {"vae", false},
                                                  {"textEncoders", json::array()}}));
  REQUIRE(bare["ok"] == true);
  CHECK(bare["result"]["peakBytes"] == a["result"]["peakBytes"]);
}

TEST_CASE("pipeline: prior preservation, text encoder LoRA, the encode's peak", "[pipeline]") {
  const json one = call("peakMemory", sdxl_lora(json::object()));
  const json two = call("peakMemory", sdxl_lora({{"priorPreservation", true}}));
  REQUIRE(two["ok"] == true);
  CHECK(two["result"]["pipeline"]["samplesPerStep"] == 2);
  CHECK(two["result"]["peakBytes"].get<uint64_t>() > one["result"]["peakBytes"].get<uint64_t>());
  CHECK(two["result"]["maxMicroBatch"].get<uint64_t>() <=
        one["result"]["maxMicroBatch"].get<uint64_t>());
  // --train_text_encoder: LoRA on the CLIP encoders' q, k, v, out_proj (rank 4)
  const json te =
      call("peakMemory", sdxl_lora({{"textEncoders",
                                     {{{"preset", "clip-vit-large-patch14"}, {"train", "lora"}},
                                      {{"preset", "clip-vit-bigG-14"}, {"train", "lora"}}}}}));
  REQUIRE(te["ok"] == true);
  const uint64_t te_lora = 4 * (2 * 768) * 4 * 12 + 4 * (2 * 1280) * 4 * 32;
  CHECK(te["result"]["pipeline"]["textEncoderLoraParams"] == te_lora);
  CHECK(te["result"]["trainableParams"].get<uint64_t>() ==
        one["result"]["trainableParams"].get<uint64_t>() + te_lora);
  // a small DiT at a large image in fp32: encoding the batch is the step's peak
  const json enc =
      call("peakMemory", {{"model", {{"pipeline", {{"denoiser", {{"preset", "dit-xl-2-256"}}}}}}},
                          {"imageSize", 2048},
                          {"microBatch", 4},
                          {"lora", {{"rank", 4}}},
                          {"checkpointing", {{"strategy", "full"}}},
                          {"timeline", false}});
  INFO(enc.dump().substr(0, 600));
  REQUIRE(enc["ok"] == true);
  CHECK(enc["result"]["peakPhase"] == "encode");
}

TEST_CASE("pipeline: parts that do not fit together are refused by field", "[pipeline]") {
  auto field_of = [](const json& req) {
    const json r = call("peakMemory", req);
    REQUIRE(r["ok"] == false);
    return r["error"]["field"].get<std::string>();
  };
  auto with = [](const json& pipeline) {
    return json{{"model", {{"pipeline", pipeline}}}, {"microBatch", 1}};
  };
  CHECK(field_of(with({{"denoiser", {{"preset", "sd-vae"}}}})) == "model.pipeline.denoiser");
  CHECK(field_of(with({{"denoiser", {{"preset", "sd-1.5-unet"}}},
                       {"vae", {{"preset", "flux-vae"}}}})) == "model.pipeline.vae");
  CHECK(field_of(
            with({{"denoiser", {{"preset", "flux-1-dev-transformer"}}},
                  {"textEncoders", {{{"preset", "t5-v1_1-xxl-encoder"}, {"train", "lora"}}}}})) ==
        "model.pipeline.textEncoders[0].train");
  CHECK(field_of(with({{"denoiser", {{"preset", "sd-1.5-unet"}}}, {"vae", false}})) ==
        "model.pipeline.vae");
  CHECK(field_of(with({{"denoiser", {{"preset", "sd-1.5-unet"}}},
                       {"textEncoders", {{{"preset", "clip-l"}}}}})) ==
        "model.pipeline.textEncoders[0].preset");
}

TEST_CASE("GPTQ and AWQ bases under LoRA: the packed layouts", "[quantization]") {
  // Llama-2-7B with TheBloke/Llama-2-7B-GPTQ's quantization_config (4 bits, groups of 128, no
  // act-order): AutoGPTQ's QuantLinear per block linear (in -> out): qweight int32
  // [in / 8, out], qzeros int32 [in / 128, out / 8], scales fp16 [in / 128, out], g_idx int32
  // [in]; the embeddings, norms and lm_head in fp16.
  const json preset = call("describeModel", {{"model", {{"preset", "llama-2-7b"}}}});
  REQUIRE(preset["ok"] == true);
  json config = load_fixture("../../cpp/data/models/llama-2-7b.json")["config"];
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4},   {"group_size", 128},
                                   {"desc_act", false},      {"sym", true}, {"damp_percent", 0.1}};
  auto linear = [](uint64_t in, uint64_t out) {
    return in / 8 * out * 4 + in / 128 * (out / 8) * 4 + in / 128 * out * 2 + in * 4;
  };
  const uint64_t per_layer = 4 * linear(4096, 4096) + 2 * linear(4096, 11008) + linear(11008, 4096);
  const uint64_t quantized = 32 * (4 * 4096ull * 4096 + 3 * 4096ull * 11008);
  const uint64_t params = preset["result"]["params"];
  const uint64_t expected = 32 * per_layer + (params - quantized) * 2;
  json req = {{"model", {{"config", config}}}, {"microBatch", 1},       {"seqLen", 512},
              {"precision", "amp-fp16"},       {"lora", {{"rank", 8}}}, {"timeline", false}};
  const json r = call("peakMemory", req);
  INFO(r.dump().substr(0, 600));
  REQUIRE(r["ok"] == true);
  const uint64_t adapters = r["result"]["trainableParams"].get<uint64_t>() * 4;
  CHECK(r["result"]["breakdown"]["weights"]["bytes"] == expected + adapters);
  CHECK(expected > 3800000000ull);  // the 3.9 GB the repository's safetensors hold
  CHECK(expected < 3950000000ull);
  // AWQ's GEMM layout: qweight int32 [in, out / 8], no g_idx
  config["quantization_config"] = {{"quant_method", "awq"},
                                   {"bits", 4},
                                   {"group_size", 128},
                                   {"version", "gemm"},
                                   {"zero_point", true}};
  req["model"]["config"] = config;
  const json a = call("peakMemory", req);
  REQUIRE(a["ok"] == true);
  const uint64_t awq_per_layer =
      per_layer - 4 * 4096 * 4 - 2 * 4096 * 4 - 11008 * 4;  // the same words without g_idx
  CHECK(a["result"]["breakdown"]["weights"]["bytes"] ==
        32 * awq_per_layer + (params - quantized) * 2 + adapters);
  // what cannot apply is refused by field
  req.erase("lora");
  const json full = call("peakMemory", req);
  REQUIRE(full["ok"] == false);
  CHECK(full["error"]["field"] == "lora");
  config["quantization_config"]["version"] = "gemv";
  const json gemv = call("describeModel", {{"model", {{"config", config}}}});
  REQUIRE(gemv["ok"] == false);
  CHECK(gemv["error"]["field"] == "model.config.quantization_config.version");
}

TEST_CASE("GPTQ checkpoint size: the packed state_dict as the file holds it", "[quantization]") {
  // TheBloke/Llama-2-7B-GPTQ's model.safetensors: AutoGPTQ's QuantLinear buffers per block
  // linear (qweight int32 [in / 8, out], qzeros int32 [in / 128, out / 8], scales fp16
  // [in / 128, out], g_idx int32 [in]), the embeddings, norms and lm_head in fp16 (the
  // repository lists the file at 3.9 GB)
  json config = load_fixture("../../cpp/data/models/llama-2-7b.json")["config"];
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4},   {"group_size", 128},
                                   {"desc_act", false},      {"sym", true}, {"damp_percent", 0.1}};
  auto linear = [](uint64_t in, uint64_t out) {
    return in / 8 * out * 4 + in / 128 * (out / 8) * 4 + in / 128 * out * 2 + in * 4;
  };
  const uint64_t per_layer = 4 * linear(4096, 4096) + 2 * linear(4096, 11008) + linear(11008, 4096);
  const uint64_t rest = 2 * 32000ull * 4096 + 4096 + 32 * 2 * 4096;  // embed, lm_head, norms
  const json r =
      call("checkpointSize", {{"model", {{"config", config}}}, {"format", "safetensors"}});
  INFO(r.dump().substr(0, 600));
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["breakdown"]["weights"] == 32 * per_layer + rest * 2);
  CHECK(r["result"]["totalBytes"].get<uint64_t>() > 3850000000ull);
  CHECK(r["result"]["totalBytes"].get<uint64_t>() < 3950000000ull);
  // the packed dtypes are the model's: weightDtype cannot change them
  const json w =
      call("checkpointSize",
           {{"model", {{"config", config}}}, {"format", "safetensors"}, {"weightDtype", "fp32"}});
  REQUIRE(w["ok"] == false);
  CHECK(w["error"]["field"] == "weightDtype");
}

TEST_CASE("LoRA's default targets for the decoder families PEFT maps", "[llm-families][lora]") {
  // Falcon-7B, r = 16 on PEFT's default query_key_value (4544 -> 4672, 32 blocks):
  // "trainable params: 4,718,592" as PEFT prints it in the QLoRA Falcon-7B fine-tuning guides;
  // by hand 32 x 16 x (4544 + 4672)
  const json f = call("peakMemory", {{"model", {{"preset", "falcon-7b"}}},
                                     {"microBatch", 1},
                                     {"seqLen", 128},
                                     {"lora", {{"rank", 16}}},
                                     {"timeline", false}});
  INFO(f.dump().substr(0, 400));
  REQUIRE(f["ok"] == true);
  CHECK(f["result"]["trainableParams"] == 4718592);
  CHECK(4718592 == 32 * 16 * (4544 + 4672));
  // GPT-J-6B: q_proj, v_proj (4096 -> 4096, 28 blocks); Phi-2: q_proj, v_proj, fc1, fc2
  // (2560 -> 2560, 2560 -> 10240, 10240 -> 2560, 32 blocks)
  const json gj = call("peakMemory", {{"model", {{"preset", "gpt-j-6b"}}},
                                      {"microBatch", 1},
                                      {"seqLen", 128},
                                      {"lora", {{"rank", 8}}},
                                      {"timeline", false}});
  REQUIRE(gj["ok"] == true);
  CHECK(gj["result"]["trainableParams"] == 28ull * 2 * 8 * (4096 + 4096));
  const json ph = call("peakMemory", {{"model", {{"preset", "phi-2"}}},
                                      {"microBatch", 1},
                                      {"seqLen", 128},
                                      {"lora", {{"rank", 8}}},
                                      {"timeline", false}});
  REQUIRE(ph["ok"] == true);
  CHECK(ph["result"]["trainableParams"] == 32ull * 8 * (2 * (2560 + 2560) + 2 * (2560 + 10240)));
}
