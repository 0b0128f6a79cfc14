// Model descriptions: tensor lists from HF configs, tensor-list validation, presets.
// Expected values are hand calculations from the cited modeling files or published counts.
#include <algorithm>

#include <catch2/catch.hpp>

#include "io/model_json.hpp"
#include "io/request.hpp"
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

namespace {
const json* find_tensor(const json& d, const std::string& name) {
  for (const auto& t : d["tensors"])
    if (t["name"] == name) return &t;
  return nullptr;
}
json shape_of(const json& d, const std::string& name) {
  const json* t = find_tensor(d, name);
  INFO(name);
  REQUIRE(t != nullptr);
  return (*t)["shape"];
}
}  // namespace

TEST_CASE("Gemma 2: four norms per layer, head_dim 256, tied embeddings", "[model]") {
  // modeling_gemma2.py: Gemma2DecoderLayer has input/post_attention/pre_feedforward/
  // post_feedforward RMSNorms; q_proj is hidden -> heads x head_dim (8 x 256 = 2048).
  const json d = describe({{"preset", "gemma-2-2b"}});
  CHECK(d["params"] == 2614341888ULL);  // published (safetensors total)
  CHECK(shape_of(d, "model.layers.0.self_attn.q_proj.weight") == json::array({2048, 2304}));
  CHECK(shape_of(d, "model.layers.0.self_attn.k_proj.weight") == json::array({1024, 2304}));
  CHECK(find_tensor(d, "model.layers.25.pre_feedforward_layernorm.weight") != nullptr);
  CHECK(find_tensor(d, "model.layers.25.post_feedforward_layernorm.weight") != nullptr);
  // per layer 4 attention + 3 MLP + 4 norms = 11; + embed, final norm, lm_head
  CHECK(d["tensors"].size() == 26 * 11 + 3);
  CHECK(d["tensors"].back()["tiedTo"] == "model.embed_tokens.weight");
  CHECK(d["activation"] == "gelu_pytorch_tanh");
}

TEST_CASE("Gemma 3 text: q_norm and k_norm of head_dim, a local rotary embedding", "[model]") {
  const json d = describe({{"preset", "gemma-3-1b"}});
  CHECK(d["params"] == 999885952);  // published (safetensors total)
  CHECK(shape_of(d, "model.layers.0.self_attn.q_norm.weight") == json::array({256}));
  CHECK(shape_of(d, "model.layers.0.self_attn.k_norm.weight") == json::array({256}));
  CHECK(shape_of(d, "model.layers.0.self_attn.k_proj.weight") == json::array({256, 1152}));
  CHECK(d["buffers"].size() == 2);
  CHECK(d["buffers"][1]["name"] == "model.rotary_emb_local.inv_freq");
}

TEST_CASE("Phi-3 / Phi-4: fused qkv_proj and gate_up_proj", "[model]") {
  // modeling_phi3.py: qkv_proj out = heads x head_dim + 2 x kv_heads x head_dim; gate_up_proj
  // out = 2 x intermediate_size.
  const json mini = describe({{"preset", "phi-3-mini-4k"}});
  CHECK(mini["params"] == 3821079552ULL);
  CHECK(mini["tensors"][1]["name"] == "model.layers.0.self_attn.o_proj.weight");
  CHECK(shape_of(mini, "model.layers.0.self_attn.qkv_proj.weight") ==
        json::array({3 * 3072, 3072}));
  CHECK(shape_of(mini, "model.layers.0.mlp.gate_up_proj.weight") == json::array({16384, 3072}));
  const json phi4 = describe({{"preset", "phi-4"}});
  CHECK(phi4["params"] == 14659507200ULL);
  // 40 heads of 128 + 2 x 10 KV heads of 128 = 7,680
  CHECK(shape_of(phi4, "model.layers.39.self_attn.qkv_proj.weight") == json::array({7680, 5120}));
}

TEST_CASE("Qwen3: q_norm / k_norm over head_dim 128", "[model]") {
  const json d = describe({{"preset", "qwen3-8b"}});
  CHECK(d["params"] == 8190735360ULL);
  CHECK(shape_of(d, "model.layers.0.self_attn.q_norm.weight") == json::array({128}));
  CHECK(find_tensor(d, "model.layers.0.self_attn.q_proj.bias") == nullptr);
}

TEST_CASE("Qwen3-MoE: router and experts; mlp_only_layers and decoder_sparse_step", "[model]") {
  const json d = describe({{"preset", "qwen3-30b-a3b"}});
  CHECK(d["params"] == 30532122624ULL);
  CHECK(shape_of(d, "model.layers.0.mlp.gate.weight") == json::array({128, 2048}));
  CHECK(shape_of(d, "model.layers.47.mlp.experts.127.down_proj.weight") ==
        json::array({2048, 768}));
  CHECK(d["intermediate"] == 768);
  // A small config by hand (Qwen3MoeDecoderLayer: sparse when the layer is not in
  // mlp_only_layers and (i + 1) % decoder_sparse_step == 0): 4 layers, step 2, layer 3 dense.
  // Sparse layer 1: gate 4x16 = 64 + 4 experts x 3 x 16x8 = 1,536 -> 1,600. Dense layers 0, 2,
  // 3: 3 x 16x32 = 1,536 each. Attention (4 heads, 2 KV, head_dim 4): q 16x16 + k, v 2 x 16x8
  // + o 16x16 = 768, q_norm, k_norm 8, layer norms 32: 808 per layer. Embed 50x16 = 800,
  // untied lm_head 800, final norm 16. Total 4 x 808 + 1,600 + 3 x 1,536 + 1,616 = 3,232 + 1,600
  // + 4,608 + 1,616 = 11,056.
  json cfg = {{"model_type", "qwen3_moe"}, {"hidden_size", 16},          {"num_hidden_layers", 4},
              {"num_attention_heads", 4},  {"num_key_value_heads", 2},   {"head_dim", 4},
              {"intermediate_size", 32},   {"moe_intermediate_size", 8}, {"num_experts", 4},
              {"num_experts_per_tok", 2},  {"decoder_sparse_step", 2},   {"mlp_only_layers", {3}},
              {"vocab_size", 50}};
  const json s = describe({{"config", cfg}});
  CHECK(s["params"] == 11056);
  CHECK(find_tensor(s, "model.layers.1.mlp.experts.3.up_proj.weight") != nullptr);
  CHECK(find_tensor(s, "model.layers.3.mlp.up_proj.weight") != nullptr);
  cfg["mlp_only_layers"] = {7};
  CHECK(error_of("describeModel", {{"model", {{"config", cfg}}}})["field"] ==
        "model.config.mlp_only_layers[0]");
}

TEST_CASE("DeepSeek-V3: MLA, fine-grained and shared experts, by hand", "[model]") {
  // modeling_deepseek_v3.py with the deepseek-ai/DeepSeek-V3 config:
  //   embed_tokens + lm_head: 2 x 129,280 x 7,168 = 1,853,358,080
  //   attention per layer: q_a_proj 7,168 x 1,536 = 11,010,048; q_a_layernorm 1,536;
  //     q_b_proj 1,536 x (128 x (128 + 64)) = 37,748,736; kv_a_proj_with_mqa 7,168 x (512 + 64)
  //     = 4,128,768; kv_a_layernorm 512; kv_b_proj 512 x (128 x (128 + 128)) = 16,777,216;
  //     o_proj (128 x 128) x 7,168 = 117,440,512  -> 187,107,328
  //   layer norms 2 x 7,168 = 14,336
  //   dense MLP (first_k_dense_replace = 3 layers): 3 x 7,168 x 18,432 = 396,361,728
  //   MoE (58 layers): 256 experts x 3 x 7,168 x 2,048 = 11,274,289,152; shared expert
  //     3 x 7,168 x 2,048 = 44,040,192; router weight 256 x 7,168 = 1,835,008
  //     -> 11,320,164,352 (+ the e_score_correction_bias buffer, 256, not a parameter)
  //   final norm 7,168
  const uint64_t attn = 11010048ULL + 1536 + 37748736 + 4128768 + 512 + 16777216 + 117440512;
  CHECK(attn == 187107328ULL);
  const uint64_t dense = attn + 14336 + 396361728ULL;
  const uint64_t moe = attn + 14336 + 11274289152ULL + 44040192ULL + 1835008ULL;
  const uint64_t total = 3 * dense + 58 * moe + 1853358080ULL + 7168;
  CHECK(total == 671026404352ULL);
  const json d = describe({{"preset", "deepseek-v3"}});
  CHECK(d["params"] == total);
  // with the 58 x 256 correction biases: the main model's 671,026,419,200 checkpoint tensors
  uint64_t persistent = 0;
  for (const auto& b : d["buffers"])
    if (b["persistent"] == true) persistent += b["numel"].get<uint64_t>();
  CHECK(persistent == 58 * 256);
  CHECK(d["params"].get<uint64_t>() + persistent == 671026419200ULL);
  CHECK(shape_of(d, "model.layers.0.self_attn.kv_b_proj.weight") == json::array({32768, 512}));
  CHECK(shape_of(d, "model.layers.2.mlp.gate_proj.weight") == json::array({18432, 7168}));
  CHECK(shape_of(d, "model.layers.3.mlp.shared_experts.gate_proj.weight") ==
        json::array({2048, 7168}));
  CHECK(d["headDim"] == 192);
  CHECK(d["sharedExperts"] == 1);
}

TEST_CASE("mT5 (mt0-large): T5's layout, gated-gelu, untied head", "[model]") {
  // PEFT README (Getting started), bigscience/mt0-large with LoRA r=8: "trainable params:
  // 2359296 || all params: 1231940608", so the base model has 1,231,940,608 - 2,359,296 =
  // 1,229,581,312 parameters.
  json cfg = {{"model_type", "mt5"},
              {"architectures", {"MT5ForConditionalGeneration"}},
              {"d_model", 1024},
              {"d_ff", 2816},
              {"d_kv", 64},
              {"num_heads", 16},
              {"num_layers", 24},
              {"num_decoder_layers", 24},
              {"vocab_size", 250112},
              {"feed_forward_proj", "gated-gelu"},
              {"tie_word_embeddings", false}};
  const json d = describe({{"config", cfg}});
  CHECK(d["params"] == 1229581312ULL);
  CHECK(find_tensor(d, "decoder.block.0.layer.2.DenseReluDense.wi_1.weight") != nullptr);
}

TEST_CASE("a model_type without a recipe: generic decoder, said in every result", "[model]") {
  const json cfg = {{"model_type", "internlm2"},
                    {"hidden_size", 64},
                    {"num_hidden_layers", 2},
                    {"num_attention_heads", 4},
                    {"intermediate_size", 128},
                    {"vocab_size", 100},
                    {"architectures", {"InternLM2ForCausalLM"}}};
  const std::string said =
      "model_type 'internlm2' has no exact recipe: parameters and activations from a generic "
      "Llama-style decoder; approximate";
  const json d = describe({{"config", cfg}});
  CHECK(d["architecture"] == "InternLM2ForCausalLM");
  REQUIRE(d["assumptions"].size() == 1);
  CHECK(d["assumptions"][0] == said);
  auto ok = [](const char* fn, const json& req) {
    const json env = json::parse(trainmem::call(fn, req.dump()));
    INFO(env.dump().substr(0, 600));
    REQUIRE(env["ok"] == true);
    return env["result"];
  };
  const json peak =
      ok("peakMemory", {{"model", {{"config", cfg}}}, {"microBatch", 1}, {"seqLen", 16}});
  CHECK(std::find(peak["assumptions"].begin(), peak["assumptions"].end(), said) !=
        peak["assumptions"].end());
  const json ck = ok("checkpointSize", {{"model", {{"config", cfg}}}, {"optimizer", "adamw"}});
  CHECK(std::find(ck["notes"].begin(), ck["notes"].end(), said) != ck["notes"].end());
  // an exact recipe says nothing of the kind
  CHECK(describe({{"preset", "qwen3-8b"}})["assumptions"].empty());
}

TEST_CASE("model: a config.json given as text is read strictly, naming the field inside it",
          "[model]") {
  // JSON.parse would keep the last n_embd; the core's reader refuses the duplicate
  const std::string dup =
      R"({"model_type":"gpt2","n_layer":2,"n_head":2,"n_embd":8,"vocab_size":16,"n_positions":8,"n_embd":16})";
  json env =
      json::parse(trainmem::call("describeModel", json({{"model", {{"config", dup}}}}).dump()));
  REQUIRE(env["ok"] == false);
  CHECK(env["error"]["field"] == "model.config.n_embd");
  // the same text without the duplicate is the model: GPT-2 with n_embd 8, 2 layers, vocab 16,
  // 8 positions: wte 128 + wpe 64 + 2 x (ln 16 + attn 8x24+24 + proj 64+8 + ln 16 + fc 8x32+32 +
  // proj 32x8+8) + ln_f 16 = 192 + 2 x 872 + 16 = 1,952 parameters
  const std::string ok =
      R"({"model_type":"gpt2","n_layer":2,"n_head":2,"n_embd":8,"vocab_size":16,"n_positions":8})";
  env = json::parse(trainmem::call("describeModel", json({{"model", {{"config", ok}}}}).dump()));
  REQUIRE(env["ok"] == true);
  CHECK(env["result"]["params"] == 1952);
  env = json::parse(trainmem::call("describeModel", json({{"model", {{"config", "[1]"}}}}).dump()));
  CHECK(env["error"]["field"] == "model.config");
}
