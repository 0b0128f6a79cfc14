// Diffusion models (diffusers configs): tensor lists against diffusers' modules
// (tests/fixtures/diffusers_tensors.json, tools/dump_diffusers.py), parameter counts against the
// published ones (the presets' publishedParams), and refusals that name the field.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "io/device_presets.hpp"
#include "io/model_json.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/api.hpp"
#include "trainmem/diffusion.hpp"
#include "trainmem/model.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/placement.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

json load_fixture(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

// 64-bit FNV-1a of "name:d0,d1;" for every parameter tensor in order (tools/dump_diffusers.py).
std::string tensors_hash(const ModelDescription& m) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto feed = [&](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001B3ull;
    }
  };
  for (const auto& t : m.tensors) {
    std::string line = t.name + ":";
    for (size_t i = 0; i < t.shape.size(); ++i) line += (i ? "," : "") + std::to_string(t.shape[i]);
    feed(line + ";");
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

ModelDescription build(const json& config) {
  Obj c(config, "model.config");
  c.null_as_absent();  // as io/model_json.cpp reads a config.json: null is unset
  return model_from_config(c, "");
}

json call(const std::string& fn, const json& req) {
  return json::parse(trainmem::call(fn, req.dump()));
}

}  // namespace

TEST_CASE("diffusion: tensor lists equal diffusers' state_dict", "[diffusion]") {
  const json fx = load_fixture("diffusers_tensors.json");
  REQUIRE(fx["cases"].size() >= 12);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const ModelDescription m = build(c["config"]);
    CHECK(m.params == c["params"].get<uint64_t>());
    CHECK(m.tensors.size() == c["tensors"].get<size_t>());
    CHECK(tensors_hash(m) == c["tensorsHash"].get<std::string>());
    CHECK(m.module_count == c["modules"].get<uint64_t>());
    CHECK(m.module_name_bytes == c["moduleNameBytes"].get<uint64_t>());
    size_t persistent = 0;
    for (const auto& b : m.buffers) {
      if (!b.persistent) continue;
      REQUIRE(persistent < c["buffers"].size());
      CHECK(b.name == c["buffers"][persistent]["name"].get<std::string>());
      CHECK(b.shape == c["buffers"][persistent]["shape"].get<std::vector<uint64_t>>());
      ++persistent;
    }
    CHECK(persistent == c["buffers"].size());
  }
}

TEST_CASE("diffusion: presets reproduce the published parameter counts", "[diffusion]") {
  // SD 1.5 UNet 859,520,964, SDXL UNet 2,567,463,684, FLUX.1-dev 11,901,408,320, ... (each data
  // file cites where its count is published)
  int checked = 0;
  for (const char* id :
       {"sd-1.5-unet", "sd-2.1-unet", "sdxl-base-unet", "sd3-medium-transformer",
        "flux-1-dev-transformer", "flux-1-schnell-transformer", "sd-vae", "flux-vae"}) {
    INFO(id);
    const json r = call("describeModel", {{"model", {{"preset", id}}}});
    REQUIRE(r["ok"] == true);
    REQUIRE(r["result"].contains("publishedParams"));
    CHECK(r["result"]["params"] == r["result"]["publishedParams"]);
    ++checked;
  }
  CHECK(checked == 8);
  const json sdxl = call("describeModel", {{"model", {{"preset", "sdxl-base-unet"}}}});
  CHECK(sdxl["result"]["params"] == 2567463684ull);
  CHECK(sdxl["result"]["tensors"].size() == 1680);
}

TEST_CASE("diffusion: configs outside the modelled layouts are refused by field", "[diffusion]") {
  json c = load_fixture("diffusers_tensors.json")["cases"][0]["config"];
  auto err = [&](const json& cfg) {
    const json r = call("describeModel", {{"model", {{"config", cfg}}}});
    REQUIRE(r["ok"] == false);
    return r["error"];
  };
  json a = c;
  a["class_embed_type"] = "projection";
  CHECK(err(a)["field"] == "model.config.class_embed_type");
  a = c;
  a["down_block_types"][0] = "AttnDownBlock2D";
  CHECK(err(a)["field"] == "model.config.down_block_types[0]");
  a = c;
  a["layers_per_block"] = json::array({1, 2});
  CHECK(err(a)["field"] == "model.config.layers_per_block");
  a = c;
  a["_class_name"] = "UNet3DConditionModel";
  CHECK(err(a)["field"] == "model.config._class_name");
  a = c;
  a["norm_num_groups"] = 7;
  CHECK(err(a)["field"] == "model.config.norm_num_groups");
}

namespace {

// The activation settings of a measured case (tools/measure_diffusion.py, torch 1.13 CPU, fp32,
// diffusers' eager AttnProcessor / the math path of SDPA).
activations::Settings measured_settings(const json& c, const diffusion::Net& net) {
  activations::Settings s;
  s.micro_batch = c["microBatch"];
  s.seq_len = c["textLen"];
  // the fixture gives the latent side: in pixels, times the VAE's factor (8)
  s.image_height = s.image_width = c["latent"].get<uint64_t>() * net.vae_scale;
  s.attention = activations::Attention::eager;
  s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
  return s;
}

// diffusers' gradient_checkpointing: every checkpointable unit its own segment.
std::vector<placement::Segment> diffusers_segments(const activations::ModelActivations& a) {
  std::vector<placement::Segment> segs;
  for (uint32_t i = 0; i < a.layers.size(); ++i)
    if (a.layers[i].checkpointable && i > 0 && i + 1 < a.layers.size()) segs.push_back({i, i});
  return segs;
}

}  // namespace

TEST_CASE("diffusion: saved and stored bytes match torch 1.13 within 1 %", "[diffusion]") {
  const json fx = load_fixture("torch_diffusion.json");
  REQUIRE(fx["cases"].size() >= 10);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const ModelDescription m = build(c["config"]);
    REQUIRE(m.diffusion);
    const activations::ModelActivations acts =
        activations::transformer_activations(m, measured_settings(c, *m.diffusion));
    const placement::Chain chain = activations::to_chain(acts);
    const bool ckpt = c.value("checkpoint", false);
    const placement::PlanResult plan = placement::evaluate(
        chain, ckpt ? diffusers_segments(acts) : std::vector<placement::Segment>{});
    // activations without the batch: the hooks' saved bytes less the saved inputs, or the bytes
    // the profiler saw allocated from the forward's start to the loss (the loss scalar included)
    const double predicted = static_cast<double>(plan.stored_bytes - acts.input_bytes);
    // torch 1.13's non-reentrant checkpoint keeps torch.get_rng_state() per call: the CPU
    // generator's 5,056 bytes, host memory that a GPU run does not count against the device
    double measured = c["storedBytes"].get<double>() -
                      5056.0 * static_cast<double>(ckpt ? diffusers_segments(acts).size() : 0);
    if (!ckpt) {
      const json& by = c["savedBytesByRegion"];
      measured = c["savedBytes"].get<double>() - by.value("input", 0.0) + 4;
    }
    INFO("measured " << measured << " predicted " << predicted);
    CHECK(std::fabs(predicted - measured) <= 0.01 * measured);
  }
}

TEST_CASE("diffusion: step peaks match torch 1.13 within 5 %", "[diffusion]") {
  // The measured cases at the configs' sample_size (imageSize left to its default): a whole
  // training step (forward, diffusers' loss, backward, AdamW for-loop step) on runtime
  // pytorch-cpu, diffusers' gradient checkpointing as manual single-unit segments.
  const json fx = load_fixture("torch_diffusion.json");
  int checked = 0;
  for (const auto& c : fx["cases"]) {
    const ModelDescription m = build(c["config"]);
    if (c["latent"].get<uint64_t>() != m.diffusion->sample_size ||
        m.diffusion->patch == 2 && m.diffusion->cls == "FluxTransformer2DModel")
      continue;
    INFO(c["name"].get<std::string>());
    json req = {{"model", {{"config", c["config"]}}},
                {"microBatch", c["microBatch"]},
                {"runtime", "pytorch-cpu"},
                {"attention", "eager"},
                {"optimizer", "adamw"},
                {"zeroGradSetToNone", true}};  // the script's zero_grad(set_to_none=True)
    if (m.diffusion->text_dim) req["seqLen"] = c["textLen"];
    size_t segments = 0;
    if (c.value("checkpoint", false)) {
      const activations::ModelActivations a =
          activations::transformer_activations(m, measured_settings(c, *m.diffusion));
      json list = json::array();
      for (const auto& s : diffusers_segments(a)) list.push_back({s.first, s.last});
      segments = list.size();
      req["checkpointing"] = {{"strategy", "manual"}, {"checkpointed", list}};
    }
    const json r = call("peakMemory", req);
    INFO(r.dump().substr(0, 600));
    REQUIRE(r["ok"] == true);
    // the checkpoints' host RNG states (5,056 bytes each) are part of the CPU measurement
    const double measured = c["peakBytes"].get<double>() - 5056.0 * static_cast<double>(segments);
    const double predicted = r["result"]["allocatedPeakBytes"].get<double>();
    INFO("measured " << measured << " predicted " << predicted << " at " << r["result"]["peakPhase"]
                     << " (measured " << c["peakPhase"] << ")");
    CHECK(std::fabs(predicted - measured) <= 0.05 * measured);
    CHECK(r["result"]["params"] == c["params"]);
    ++checked;
  }
  CHECK(checked >= 7);
}

TEST_CASE("diffusion: LoRA on diffusers' DreamBooth targets, rows per module",
          "[diffusion][lora]") {
  // lora without targetModules: train_dreambooth_lora_sdxl.py's UNet targets (to_k, to_q, to_v,
  // to_out.0), _sd3.py's and _flux.py's lists; trainable parameters r x (in + out) per adapted
  // nn.Linear, as PEFT counts them on the rebuilt modules (tools/dump_diffusers.py)
  const json fx = load_fixture("diffusers_tensors.json");
  int checked = 0;
  for (const auto& c : fx["cases"]) {
    if (!c.contains("loraParamsPerRank")) continue;
    INFO(c["name"].get<std::string>());
    json req = {{"model", {{"config", c["config"]}}}, {"microBatch", 1}, {"lora", {{"rank", 4}}}};
    const json r = call("peakMemory", req);
    INFO(r.dump().substr(0, 400));
    REQUIRE(r["ok"] == true);
    CHECK(r["result"]["trainableParams"] == 4 * c["loraParamsPerRank"].get<uint64_t>());
    ++checked;
  }
  CHECK(checked >= 15);
  // SD 1.5's UNet at rank 4: 797,184 trainable parameters (diffusers' LoRA training docs)
  const json sd =
      call("peakMemory",
           {{"model", {{"preset", "sd-1.5-unet"}}}, {"microBatch", 1}, {"lora", {{"rank", 4}}}});
  CHECK(sd["result"]["trainableParams"] == 797184);
  // the rows LoRA's activations follow: a cross-attention's k reads the text tokens, its q the
  // image tokens at the unit's resolution, time_emb_proj one row per sample
  const ModelDescription m = build(fx["cases"][0]["config"]);
  activations::Settings s;
  s.micro_batch = 2;
  s.seq_len = 7;
  const activations::ModelActivations a = activations::transformer_activations(m, s);
  bool seen_block = false;
  for (const auto& l : a.layers) {
    if (l.name.rfind("transformer block", 0) != 0) continue;
    seen_block = true;
    CHECK(activations::linear_rows(l, "down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_k",
                                   0) == 2 * 7);
    CHECK(activations::linear_rows(l, "down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_q",
                                   0) == l.tokens);
    CHECK(l.tokens % 2 == 0);
  }
  CHECK(seen_block);
  for (const auto& l : a.layers)
    if (l.name.rfind("resnet", 0) == 0)
      CHECK(activations::linear_rows(l, "x.time_emb_proj", 0) == 2);
}

TEST_CASE("diffusion: the accumulation planner and placement take a diffusion network",
          "[diffusion]") {
  // the planner needs no seqLen for a UNet (its text tokens default to 77) and counts its
  // work per image: a micro-step of b images costs 3 x the recipe's forward FLOPs per image
  // (backward = 2 x forward, Kaplan et al. 2020), its peak is peakMemory's at that micro-batch
  const json plan = call("accumulation", {{"model", {{"preset", "sd-1.5-unet"}}},
                                          {"gpu", "rtx-4090"},
                                          {"precision", "amp-bf16"},
                                          {"imageSize", 512},
                                          {"targetGlobalBatch", 8}});
  INFO(plan.dump().substr(0, 600));
  REQUIRE(plan["ok"] == true);
  const json peak = call("peakMemory", {{"model", {{"preset", "sd-1.5-unet"}}},
                                        {"gpu", "rtx-4090"},
                                        {"precision", "amp-bf16"},
                                        {"imageSize", 512},
                                        {"microBatch", 1},
                                        {"gradientAccumulationSteps", 8},
                                        {"timeline", false},
                                        // the planner replays the allocator only where the
                                        // verdict needs it; this row's figure is the count's
                                        {"simulateAllocator", false}});
  REQUIRE(peak["ok"] == true);
  // the chain's forward cost (FLOPs) as placement reports it for one image
  const json one = call("placement", {{"model", {{"preset", "sd-1.5-unet"}}},
                                      {"imageSize", 512},
                                      {"microBatch", 1},
                                      {"strategy", "none"}});
  REQUIRE(one["ok"] == true);
  bool seen = false;
  for (const auto& row : plan["result"]["comparison"]["rows"]) {
    if (row["microBatch"] != 1 || row["checkpointing"] != "none" || row["accumulationSteps"] != 8)
      continue;
    seen = true;
    CHECK(row["peakBytes"] == peak["result"]["peakBytes"]);
    CHECK(row["time"]["flopsPerMicroStep"].get<double>() ==
          Approx(3 * one["result"]["forwardCost"].get<double>()).epsilon(1e-9));
  }
  CHECK(seen);
  // placement builds the UNet's chain (skips included) from the model and imageSize
  const json pl = call("placement", {{"model", {{"preset", "sd-1.5-unet"}}},
                                     {"imageSize", 256},
                                     {"microBatch", 1},
                                     {"strategy", "sqrt"}});
  REQUIRE(pl["ok"] == true);
  const json big = call("placement", {{"model", {{"preset", "sd-1.5-unet"}}},
                                      {"imageSize", 512},
                                      {"microBatch", 1},
                                      {"strategy", "sqrt"}});
  REQUIRE(big["ok"] == true);
  // 4 x the pixels: every image-sized activation 4 x (attention's scores 16 x)
  CHECK(big["result"]["peakActivationBytes"].get<double>() >
        3.9 * pl["result"]["peakActivationBytes"].get<double>());
  const json revolve = call("placement", {{"model", {{"preset", "sd-1.5-unet"}}},
                                          {"microBatch", 1},
                                          {"strategy", "revolve"},
                                          {"budgetBytes", 1000000000}});
  REQUIRE(revolve["ok"] == false);
  CHECK(revolve["error"]["field"] == "strategy");
  // the single-level optimum's recurrence leaves out the skipped tensors a segment outlives
  const json single = call("placement", {{"model", {{"preset", "sd-1.5-unet"}}},
                                         {"imageSize", 256},
                                         {"microBatch", 1},
                                         {"strategy", "optimal-single-level"},
                                         {"budgetBytes", 400000000}});
  REQUIRE(single["ok"] == false);
  CHECK(single["error"]["field"] == "strategy");
}

TEST_CASE("diffusion: LoRA's adapters keep their saves at the rows each linear reads",
          "[diffusion][lora]") {
  // SD 1.5's UNet at 512 px (latent 64), 2 samples, fp32, DreamBooth's targets (to_q, to_k,
  // to_v, to_out.0 of attn1 and attn2 in its 16 transformer blocks: 5 at 64 x 64 latent tokens
  // with 320 channels, 5 at 32 x 32 with 640, 5 at 16 x 16 with 1280, the mid block's at 8 x 8
  // with 1280); attn2's to_k and to_v read the 77 text tokens of 768 features. PEFT's
  // lora.Linear keeps lora_A's output (rank 4, fp32) and, with lora_dropout, the dropped-out
  // input (fp32) and its mask (CUDA: 1 byte): by hand per sample
  const uint64_t img = 5 * 4096 + 5 * 1024 + 5 * 256 + 64;  // rows of one linear
  const uint64_t rows = 6 * img + 16 * 2 * 77;              // 164,128
  const uint64_t in = 6 * (5 * 4096 * 320 + 5 * 1024 * 640 + 5 * 256 * 1280 + 64 * 1280) +
                      16 * 2 * 77 * 768;  // rows x in_features
  auto stored = [](const json& lora) {
    json req = {{"model", {{"preset", "sd-1.5-unet"}}},
                {"microBatch", 2},
                {"imageSize", 512},
                {"precision", "fp32"},
                {"timeline", false}};
    if (!lora.is_null()) req["lora"] = lora;
    const json r = call("peakMemory", req);
    REQUIRE(r["ok"] == true);
    return r["result"]["storedActivationBytes"].get<uint64_t>();
  };
  const uint64_t full = stored(nullptr);
  CHECK(stored({{"rank", 4}, {"dropout", 0}}) - full == 2 * rows * 4 * 4);
  CHECK(stored({{"rank", 4}, {"dropout", 0.05}}) - full == 2 * (rows * 4 * 4 + in * (4 + 1)));
}

TEST_CASE("diffusion: imageSize is read as for a vision network, with the same words",
          "[diffusion][vision]") {
  // one reader (io/image_size.cpp): a malformed imageSize gets the same field and sentence from
  // a UNet as from torchvision's ResNet-50; the UNet's sides start at 8 pixels (one latent pixel
  // of the VAE's factor 8)
  auto refusal = [](const char* preset, const json& size) {
    return call("peakMemory", {{"model", {{"preset", preset}}},
                               {"microBatch", 1},
                               {"precision", "fp32"},
                               {"imageSize", size}})["error"];
  };
  for (const json& bad : {json::array({512, 512, 3}), json("large")}) {
    const json u = refusal("sd-1.5-unet", bad);
    const json v = refusal("torchvision/resnet50", bad);
    CHECK(u["field"] == "imageSize");
    CHECK(u["message"] == v["message"]);
  }
  CHECK(refusal("sd-1.5-unet", 4)["field"] == "imageSize");
  CHECK(refusal("sd-1.5-unet", json::array({512, 4}))["field"] == "imageSize[1]");
  // [height, width] and one side read alike: 512 x 512 as [512, 512]
  auto stored = [](const json& size) {
    return call("peakMemory", {{"model", {{"preset", "sd-1.5-unet"}}},
                               {"microBatch", 1},
                               {"precision", "fp32"},
                               {"timeline", false},
                               {"imageSize", size}})["result"]["storedActivationBytes"];
  };
  CHECK(stored(json::array({512, 512})) == stored(512));
}
