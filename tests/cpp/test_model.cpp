// Model descriptions: tensor lists from HF configs, tensor-list validation, presets.
// Expected values are hand calculations from the cited modeling files or published counts.
#include <catch2/catch.hpp>

#include "trainmem/api.hpp"
#include "trainmem/model.hpp"

using trainmem::json;

namespace {
json describe(const json& model) {
  const json env = json::parse(trainmem::call("describeModel", json{{"model", model}}.dump()));
  INFO(env.dump().substr(0, 800));
  REQUIRE(env["ok"] == true);
  return env["result"];
}
json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  REQUIRE(env["ok"] == false);
  return env["error"];
}
}  // namespace

TEST_CASE("T5-small: encoder-decoder with shared, tied embeddings", "[model]") {
  // Hand count (modeling_t5.py): shared 32128x512 = 16,449,536; encoder block: q,k,v,o
  // 4x512x512 + wi,wo 2x512x2048 + 2 norms 1024 = 3,146,752 (x6) + relative bias 32x8 +
  // final norm 512; decoder block adds cross-attention 1,048,576 and a third norm:
  // 4,195,840 (x6) + 256 + 512. Total 60,506,624 (= the published t5-small count).
  const json d = describe({{"preset", "t5-small"}});
  CHECK(d["params"] == 60506624);
  CHECK(d["layers"] == 6);
  CHECK(d["encoderLayers"] == 6);
  CHECK(d["tensors"][1]["name"] == "encoder.embed_tokens.weight");
  CHECK(d["tensors"][1]["tiedTo"] == "shared.weight");
  CHECK(d["tensors"].back()["name"] == "lm_head.weight");
}

TEST_CASE("Mixtral: experts as separate tensors, router per layer", "[model]") {
  const json d = describe({{"preset", "mixtral-8x7b"}});
  // per layer: q,k,v,o + gate + 8 experts x (w1,w2,w3) + 2 norms = 31; + embed, norm, head
  CHECK(d["tensors"].size() == 32 * 31 + 3);
  CHECK(d["numExperts"] == 8);
  CHECK(d["expertsPerToken"] == 2);
  CHECK(d["tensors"][5]["name"] == "model.layers.0.block_sparse_moe.gate.weight");
  CHECK(d["tensors"][5]["shape"] == json::array({8, 4096}));
}

TEST_CASE("Qwen2: q/k/v carry biases, o_proj does not; tied small model", "[model]") {
  const json d = describe({{"preset", "qwen2.5-0.5b"}});
  CHECK(d["tensors"][2]["name"] == "model.layers.0.self_attn.q_proj.bias");
  CHECK(d["tensors"][2]["shape"] == json::array({896}));
  CHECK(d["tensors"][4]["name"] == "model.layers.0.self_attn.k_proj.bias");
  CHECK(d["tensors"][4]["shape"] == json::array({128}));  // 2 KV heads x 64
  CHECK(d["tensors"].back()["tiedTo"] == "model.embed_tokens.weight");
  CHECK(d["tiedEmbeddings"] == true);
}

TEST_CASE("Llama buffers: rotary inv_freq is not persistent", "[model]") {
  const json d = describe({{"preset", "llama-2-7b"}});
  REQUIRE(d["buffers"].size() == 1);
  CHECK(d["buffers"][0]["name"] == "model.rotary_emb.inv_freq");
  CHECK(d["buffers"][0]["persistent"] == false);
  CHECK(d["buffers"][0]["numel"] == 64);  // head_dim 128 / 2
  CHECK(d["tensors"].size() == 291);      // 32 x 9 + embed, norm, lm_head
}

TEST_CASE("BertForMaskedLM: no pooler, decoder tied to word embeddings", "[model]") {
  json cfg = {{"model_type", "bert"},
              {"hidden_size", 768},
              {"num_hidden_layers", 12},
              {"num_attention_heads", 12},
              {"intermediate_size", 3072},
              {"vocab_size", 30522},
              {"architectures", {"BertForMaskedLM"}}};
  // BertModel 109,482,240 - pooler (768x768 + 768 = 590,592) + head transform (590,592)
  // + LayerNorm 1,536 + prediction bias 30,522 = 109,514,298.
  const json d = describe({{"config", cfg}});
  CHECK(d["params"] == 109514298);
}

TEST_CASE("tensor list: tied tensors once, trainable flag, modules inferred", "[model]") {
  const json d =
      describe({{"tensors",
                 {{{"name", "emb.weight"}, {"shape", {10, 4}}},
                  {{"name", "blk.lin.weight"}, {"shape", {4, 4}}, {"trainable", false}},
                  {{"name", "head.weight"}, {"shape", {10, 4}}, {"tiedTo", "emb.weight"}}}}});
  CHECK(d["params"] == 56);
  CHECK(d["trainableParams"] == 40);
  CHECK(d["storedTensors"] == 2);
  CHECK(d["modules"] == 5);  // "", emb, blk, blk.lin, head
}

TEST_CASE("tensor list errors name the element", "[model]") {
  json e =
      error_of("describeModel", {{"model", {{"tensors", {{{"name", "a"}, {"shape", {-1}}}}}}}});
  CHECK(e["field"] == "model.tensors[0].shape[0]");
  e = error_of(
      "describeModel",
      {{"model",
        {{"tensors",
          {{{"name", "a"}, {"shape", {2}}}, {{"name", "b"}, {"shape", {3}}, {"tiedTo", "a"}}}}}}});
  CHECK(e["field"] == "model.tensors[1].shape");
  e = error_of(
      "describeModel",
      {{"model",
        {{"tensors", {{{"name", "a"}, {"shape", {2}}}, {{"name", "a"}, {"shape", {2}}}}}}}});
  CHECK(e["code"] == "inconsistent");
  e = error_of("describeModel", {{"model",
                                  {{"config",
                                    {{"model_type", "gpt2"},
                                     {"n_embd", 64},
                                     {"n_layer", 2},
                                     {"n_head", 4},
                                     {"vocab_size", 0},
                                     {"n_positions", 8}}}}}});
  CHECK(e["field"] == "model.config.vocab_size");
}

TEST_CASE("pasted config keeps unknown HF keys, rejects unknown model keys", "[model]") {
  json cfg = {{"model_type", "gpt2"}, {"n_embd", 64},
              {"n_layer", 2},         {"n_head", 4},
              {"vocab_size", 100},    {"n_positions", 16},
              {"bos_token_id", 0},    {"task_specific_params", {{"x", 1}}}};
  // wte 6,400 + wpe 1,024 + 2 x (12x64x64 + 13x64 = 49,984) + ln_f 128 = 107,520
  CHECK(describe({{"config", cfg}})["params"] == 107520);
  const json e = error_of("describeModel", {{"model", {{"config", cfg}, {"confg", 1}}}});
  CHECK(e["field"] == "model.confg");
}

TEST_CASE("presets list models with their published counts and other data files", "[model]") {
  const json env = json::parse(trainmem::call("presets", "{}"));
  REQUIRE(env["ok"] == true);
  const json& models = env["result"]["models"];
  CHECK(models.size() >= 20);
  for (const auto& m : models) {
    INFO(m["id"].get<std::string>());
    if (m.contains("publishedParams")) CHECK(m["params"] == m["publishedParams"]);
    CHECK(!m["source"].get<std::string>().empty());
  }
  CHECK(env["result"].contains("gpus"));
  CHECK(env["result"].contains("examples"));
}

TEST_CASE("model: T5's encoder and decoder blocks are blocks of their own", "[model]") {
  // "encoder.block.5.layer.1.DenseReluDense.wo.weight": block 5, sub-layer 1 (T5Block holds
  // T5LayerSelfAttention, [T5LayerCrossAttention,] T5LayerFF as layer.0..2; modeling_t5.py);
  // the decoder's blocks follow the encoder's 6 (t5-small: num_layers = num_decoder_layers = 6).
  const json req = {{"preset", "t5-small"}};
  const trainmem::Obj o(req, "model");
  const trainmem::ModelDescription m = trainmem::parse_model(o);
  int64_t enc5 = -2, dec0 = -2, shared = -2;
  for (const auto& t : m.tensors) {
    if (t.name == "encoder.block.5.layer.1.DenseReluDense.wo.weight") enc5 = t.block;
    if (t.name == "decoder.block.0.layer.1.EncDecAttention.q.weight") dec0 = t.block;
    if (t.name == "shared.weight") shared = t.block;
  }
  CHECK(enc5 == 5);
  CHECK(dec0 == 6);
  CHECK(shared == -1);
}
