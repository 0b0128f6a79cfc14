// Activation model vs real PyTorch: tests/fixtures/torch_activations.json was measured with
// torch 1.13 (CPU) by tools/measure_activations.py (saved_tensors_hooks, storages deduplicated).
// Goal (issue 4): within 2 %.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/placement.hpp"

using trainmem::json;
using namespace trainmem;

namespace {

json load(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

// Builds the architecture of a fixture case's hand-built model (tools/tm_torch_models.py).
ModelDescription fixture_model(const json& c) {
  ModelDescription m;
  m.source = "config";
  const std::string kind = c["kind"];
  const json& k = c["config"];
  Architecture& a = m.arch;
  a.model_type = kind;
  if (kind == "gpt2") {
    a.layers = k["n_layer"];
    a.hidden = k["n_embd"];
    a.heads = k["n_head"];
    a.intermediate = 4 * a.hidden;
    a.vocab = k["vocab_size"];
    a.max_positions = k["n_positions"];
    a.activation = "gelu_new";
    a.hidden_dropout = k["resid_pdrop"];
    a.attention_dropout = k["attn_pdrop"];
    a.tied_embeddings = true;
  } else if (kind == "bert") {
    a.layers = k["num_hidden_layers"];
    a.hidden = k["hidden_size"];
    a.heads = k["num_attention_heads"];
    a.intermediate = k["intermediate_size"];
    a.vocab = k["vocab_size"];
    a.max_positions = k["max_position_embeddings"];
    a.activation = "gelu";
    a.hidden_dropout = k["hidden_dropout_prob"];
    a.attention_dropout = k["attention_probs_dropout_prob"];
    a.num_labels = k["num_labels"];
    a.encoder_only = true;
  } else {
    a.layers = k["num_hidden_layers"];
    a.hidden = k["hidden_size"];
    a.heads = k["num_attention_heads"];
    a.kv_heads = k["num_key_value_heads"];
    a.intermediate = k["intermediate_size"];
    a.vocab = k["vocab_size"];
    a.activation = "silu";
    a.gated_mlp = true;
    a.norm = "rmsnorm";
  }
  a.head_dim = a.hidden / a.heads;
  m.params = 1;
  return m;
}

activations::Settings cpu_settings(const json& c) {
  activations::Settings s;
  s.micro_batch = c["microBatch"];
  s.seq_len = c.value("seqLen", 1);
  s.precision = c.value("dtype", "fp32") == "bf16" ? activations::Precision::bf16
                                                   : activations::Precision::fp32;
  s.attention = activations::Attention::eager;
  s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
  return s;
}

TEST_CASE("activations: saved-for-backward bytes match torch 1.13 within 2 %", "[activations]") {
  const json fx = load("torch_activations.json");
  REQUIRE(fx["cases"].size() >= 10);
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    const activations::Settings s = cpu_settings(c);
    activations::ModelActivations acts;
    if (c["kind"] == "mlp") {
      activations::MlpSpec mlp;
      for (const auto& v : c["sizes"]) mlp.sizes.push_back(v);
      acts = activations::mlp_activations(mlp, s);
    } else {
      acts = activations::transformer_activations(fixture_model(c), s);
    }
    const placement::Chain chain = activations::to_chain(acts);
    std::vector<placement::Segment> segs;
    if (c.contains("checkpoint")) {
      if (c["checkpoint"].is_object()) {
        // torch.utils.checkpoint.checkpoint_sequential: k = n // s; first s - 1 segments
        const uint32_t n = static_cast<uint32_t>(chain.layers.size());
        const uint32_t sg = c["checkpoint"]["sequential"], k = n / sg;
        for (uint32_t i = 0; i + 1 < sg; ++i) segs.push_back({i * k, i * k + k - 1});
      } else {
        for (uint32_t i = 1; i + 1 < chain.layers.size(); ++i) segs.push_back({i, i});
      }
    }
    const placement::PlanResult plan = placement::evaluate(chain, segs);
    const double measured = c["savedBytes"].get<double>();
    // the loss scalar (4 bytes) is the chain's last output, not a saved tensor
    const double predicted = static_cast<double>(plan.stored_bytes) - (c["kind"] == "mlp" ? 0 : 4);
    INFO("measured " << measured << " predicted " << predicted);
    CHECK(std::fabs(predicted - measured) <= 0.02 * measured);
  }
}

TEST_CASE("activations: Korthikanti et al. per-layer formula", "[activations]") {
  // sbh(34 + 5as/h): s=2048, b=1, h=12288, a=96 (GPT-3 175B, the paper's Table 2 model):
  // 2048*12288*(34 + 5*96*2048/12288) = 25,165,824 * 114 = 2,868,903,936 bytes
  CHECK(activations::korthikanti_layer_bytes(2048, 1, 12288, 96, 1, false, false) ==
        Approx(2868903936.0));
  // selective recompute drops 5as/h: 25,165,824 * 34
  CHECK(activations::korthikanti_layer_bytes(2048, 1, 12288, 96, 1, false, true) ==
        Approx(855638016.0));
  // t = 8 without sequence parallel: sbh(10 + 24/8 + 5as/(8h)) = 25,165,824 * (13 + 10) =
  // 578,813,952
  CHECK(activations::korthikanti_layer_bytes(2048, 1, 12288, 96, 8, false, false) ==
        Approx(578813952.0));
  // with sequence parallel: sbh(34 + 80)/8 = 358,612,992
  CHECK(activations::korthikanti_layer_bytes(2048, 1, 12288, 96, 8, true, false) ==
        Approx(358612992.0));
}

TEST_CASE("activations: a GPT-2 block in 16-bit with 1-byte masks is close to Korthikanti's count",
          "[activations]") {
  // Korthikanti's ops (native GELU, fused qkv, 1-byte masks, 16-bit) are HF GPT-2 with
  // activation "gelu" under pure bf16 on CUDA except two things the paper does not count: LayerNorm
  // statistics (4 x s*b fp32 = 16sb) and the block output is counted once (the next block's
  // input: the paper counts the LN input, 2sbh, in the same layer). Hand count of the derived
  // recipe: 2sbh x (ln1 out, q, k, v, proj in, ln2 in, fc in, out) = 16sbh, masks 2sbh,
  // GELU 8sbh x 2 = 16sbh -> 34sbh; attention 2+1+2 = 5as^2b.
  ModelDescription m;
  m.arch.model_type = "gpt2";
  m.arch.layers = 1;
  m.arch.hidden = 1024;
  m.arch.heads = 16;
  m.arch.intermediate = 4096;
  m.arch.vocab = 1000;
  m.arch.activation = "gelu";
  m.arch.hidden_dropout = 0.1;
  m.arch.attention_dropout = 0.1;
  activations::Settings s;
  s.micro_batch = 2;
  s.seq_len = 512;
  s.precision = activations::Precision::bf16;
  s.attention = activations::Attention::eager;
  const auto acts = activations::transformer_activations(m, s);
  const double sb = 2.0 * 512, sbh = sb * 1024;
  const double expected = 34 * sbh + 5.0 * 16 * 512 * 512 * 2 + 16 * sb;
  CHECK(static_cast<double>(acts.layers[1].saved_bytes) == Approx(expected));
}

TEST_CASE("newer decoders take the Llama recipe with their attention width", "[activations]") {
  activations::Settings s;
  s.micro_batch = 2;
  s.seq_len = 128;
  s.precision = activations::Precision::bf16;
  auto qkv = [](const activations::ModelActivations& a) {
    for (const auto& t : a.layers[1].saved)
      if (t.name.rfind("q, k, v", 0) == 0) return t.bytes;
    return uint64_t{0};
  };
  // Gemma 2 2B: 8 heads x head_dim 256 = 2,048 (not the hidden size 2,304): SDPA keeps q, k, v
  // of T x 2,048 in bf16 each (repeat_kv expands k, v to all heads before SDPA).
  const ModelDescription g = model_from_preset("gemma-2-2b", "model.preset");
  const activations::ModelActivations ga = activations::transformer_activations(g, s);
  CHECK(ga.recipe == "llama");
  CHECK(qkv(ga) == 3ULL * 2 * 128 * 2048 * 2);
  // DeepSeek-V3: 128 heads x qk_head_dim 192 = 24,576; the MLP of 8 routed + 1 shared expert
  // of 2,048 per token: SwiGLU keeps 4 tensors of T x 9 x 2,048.
  const ModelDescription d = model_from_preset("deepseek-v3", "model.preset");
  const activations::ModelActivations da = activations::transformer_activations(d, s);
  CHECK(qkv(da) == 3ULL * 2 * 128 * 24576 * 2);
  uint64_t swiglu = 0;
  for (const auto& t : da.layers[1].saved)
    if (t.name.rfind("SwiGLU", 0) == 0) swiglu = t.bytes;
  CHECK(swiglu == 4ULL * 2 * 128 * 9 * 2048 * 2);
  bool said = false;
  for (const auto& a : da.assumptions)
    said = said || a.find("latent attention") != std::string::npos;
  CHECK(said);
}
