// LoRA / QLoRA activations vs real PyTorch: tests/fixtures/torch_lora.json was measured with
// torch 1.13 (CPU) by tools/measure_lora.py (saved_tensors_hooks, storages counted once, PEFT's
// lora.Linear and bitsandbytes' Linear4bit rebuilt from their source, CUDA autocast's fp32 ops
// applied). Not compared: 0-dim tensors (wrapped Python scalars, CPU-side on a CUDA run) and the
// 16-bit weight copies autocast makes (compared with kept_weight_casts instead).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>

#include "io/device_presets.hpp"
#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/peak_memory.hpp"

using trainmem::json;
using namespace trainmem;

ModelDescription fixture_model(const json& c);  // test_activations.cpp

namespace {

const json& lora_fixture() {
  static const json fx = [] {
    std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/torch_lora.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return fx;
}

// The module names PEFT's targets match in one block of each fixture model (HF's names).
std::vector<std::string> block_modules(const std::string& kind, const std::string& targets) {
  static const std::map<std::string, std::map<std::string, std::vector<std::string>>> names = {
      {"llama",
       {{"qv", {"self_attn.q_proj", "self_attn.v_proj"}},
        {"all",
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}},
        {"mlp", {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}}}},
      {"gpt2",
       {{"qv", {"attn.c_attn"}},
        {"all", {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}},
        {"mlp", {"mlp.c_fc", "mlp.c_proj"}}}},
      {"bert",
       {{"qv", {"attention.self.query", "attention.self.value"}},
        {"all",
         {"attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "intermediate.dense", "output.dense"}}}},
      // PEFT's default {q, v} adapts the cross-attention's q and v too (suffix match); the
      // decoder's cross-attention modules are added by t5_modules
      {"t5",
       {{"qv", {"layer.0.SelfAttention.q", "layer.0.SelfAttention.v"}},
        {"all",
         {"layer.0.SelfAttention.q", "layer.0.SelfAttention.k", "layer.0.SelfAttention.v",
          "layer.0.SelfAttention.o"}}}}};
  return names.at(kind).at(targets);
}

// A T5 block's adapted modules (modeling_t5.py names: layer.0 self-attention, layer.1 the
// decoder's cross-attention, then the feed-forward).
std::vector<std::string> t5_modules(const std::string& targets, bool decoder, bool gated) {
  std::vector<std::string> m = block_modules("t5", targets);
  const std::string ff = decoder ? "layer.2.DenseReluDense." : "layer.1.DenseReluDense.";
  const std::vector<std::string> proj = targets == "qv"
                                            ? std::vector<std::string>{"q", "v"}
                                            : std::vector<std::string>{"q", "k", "v", "o"};
  if (decoder)
    for (const auto& p : proj) m.push_back("layer.1.EncDecAttention." + p);
  if (targets == "all") {
    for (const char* w : gated ? std::vector<const char*>{"wi_0", "wi_1", "wo"}
                               : std::vector<const char*>{"wi", "wo"})
      m.push_back(ff + w);
  }
  return m;
}

// A measured case as the core's request: the fixture's model, its shapes, dtypes and LoRA.
struct Case {
  ModelDescription model;
  activations::Settings s;
};

Case to_case(const json& fx, const json& c) {
  Case k;
  const std::string kind = c["kind"];
  json config = fx["configs"][kind];
  if (c.contains("configOverride")) config.update(c["configOverride"]);
  k.model = fixture_model(json{{"kind", kind}, {"config", config}});
  activations::Settings& s = k.s;
  s.micro_batch = c["microBatch"];
  s.seq_len = c["seqLen"];
  s.target_len = c.value("targetLen", 0);
  s.attention = activations::Attention::eager;
  s.runtime = peak::runtime_profile("pytorch-cpu", "runtime").traits;
  const bool bf16 = c["dtype"] == "bf16", ac = c["autocast"];
  s.precision = ac ? activations::Precision::amp_bf16
                   : (bf16 ? activations::Precision::bf16 : activations::Precision::fp32);
  const json& l = c["lora"];
  s.lora.enabled = true;
  s.lora.rank = l["rank"];
  s.lora.dropout = l["dropout"];
  s.lora.qlora = l.value("qlora", false);
  s.lora.base_dtype = bf16 ? DType::bf16 : DType::fp32;
  s.lora.embeddings_require_grad = c.value("inputRequiresGrad", false);
  const uint64_t E = k.model.arch.encoder_layers, blocks = k.model.arch.layers + E;
  s.lora.adapted.assign(blocks + 2, {});
  for (uint64_t i = 0; i < blocks; ++i) {
    const bool decoder = kind == "t5" && i >= E;
    const std::string prefix = kind != "t5" ? "model.layers." + std::to_string(i) + "."
                               : decoder    ? "decoder.block." + std::to_string(i - E) + "."
                                            : "encoder.block." + std::to_string(i) + ".";
    const std::vector<std::string> mods =
        kind == "t5" ? t5_modules(l["targets"], decoder, k.model.arch.gated_mlp)
                     : block_modules(kind, l["targets"]);
    for (const auto& m : mods) s.lora.adapted[i + 1].push_back(prefix + m);
  }
  return k;
}

// A region's measured tensors (a "sameAs" region is the one it names).
const json& region_tensors(const json& c, const std::string& name) {
  const json& r = c["regions"][name];
  return r.contains("sameAs") ? region_tensors(c, r["sameAs"]) : r["tensors"];
}

bool is_scalar(const json& t) { return t[2].empty(); }
bool is_weight_cast(const json& t) {
  const std::string by = t[4];
  // a linear's mm / addmm keeps its weight as mat2; autocast's fp32 LayerNorm its weight and bias
  for (const char* f : {"MmBackward0.mat2", "AddmmBackward0.mat2",
                        "NativeLayerNormBackward0.weight", "NativeLayerNormBackward0.bias"})
    if (by.find(f) != std::string::npos) return true;
  return false;
}
bool is_adapter(const json& t) {
  const std::string m = t[3];
  return m.find("lora_A") != std::string::npos || m.find("lora_B") != std::string::npos;
}

// The activations of a region: every kept storage but scalars and weight casts, in order.
std::vector<uint64_t> measured(const json& c, const std::string& region) {
  std::vector<uint64_t> v;
  if (!c["regions"].contains(region)) return v;
  for (const auto& t : region_tensors(c, region))
    if (!is_scalar(t) && !is_weight_cast(t)) v.push_back(t[0]);
  return v;
}

// The 16-bit copies of frozen weights a region keeps.
std::vector<uint64_t> measured_casts(const json& c, const std::string& region) {
  std::vector<uint64_t> v;
  if (!c["regions"].contains(region)) return v;
  for (const auto& t : region_tensors(c, region))
    if (is_weight_cast(t) && !is_adapter(t)) v.push_back(t[0]);
  std::sort(v.begin(), v.end());
  return v;
}

uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

}  // namespace

// What a measured region keeps of its input (the previous layer's output, `in` bytes): the
// input itself, or a copy in another dtype (flags written by tools/measure_lora.py).
struct InputKept {
  uint64_t itself = 0;       // bytes of the input's storage, when kept
  uint64_t widest_copy = 0;  // the largest copy kept
};

// What the measured regions of one chain layer keep of its input.
InputKept input_kept(const json& c, const std::vector<std::string>& regions) {
  InputKept k;
  for (const auto& region : regions) {
    if (!c["regions"].contains(region)) continue;
    for (const auto& t : region_tensors(c, region)) {
      if (t.size() < 6) continue;
      if (t[5] == "in") k.itself = t[0];
      if (t[5] == "in-copy") k.widest_copy = std::max<uint64_t>(k.widest_copy, t[0]);
    }
  }
  return k;
}

// The measured regions of each chain layer: the embeddings, the blocks (T5: the encoder's
// "eblock<i>", its last one with "dembed", where the encoder ends; the decoder's "dblock<i>"),
// the head.
std::vector<std::vector<std::string>> chain_regions(const ModelDescription& m) {
  std::vector<std::vector<std::string>> r = {{"embed"}};
  const uint64_t E = m.arch.encoder_layers;
  for (uint64_t i = 0; i < m.arch.layers + E; ++i) {
    if (E == 0)
      r.push_back({"block" + std::to_string(i)});
    else if (i + 1 == E)
      r.push_back({"eblock" + std::to_string(i), "dembed"});
    else
      r.push_back({i < E ? "eblock" + std::to_string(i) : "dblock" + std::to_string(i - E)});
  }
  r.push_back({"head"});
  return r;
}

uint64_t sum_over(const json& c, const std::vector<std::string>& regions, bool casts = false) {
  uint64_t s = 0;
  for (const auto& r : regions) s += sum(casts ? measured_casts(c, r) : measured(c, r));
  return s;
}

// T5: the encoder output, when an op of the decoder keeps it (the fixture counts it where the
// encoder ends, as the chain does).
uint64_t encoder_output_kept(const json& c, const std::vector<std::string>& regions) {
  for (const auto& region : regions) {
    if (!c["regions"].contains(region)) continue;
    for (const auto& t : region_tensors(c, region))
      if (t.size() >= 6 && t[5] == "enc-out") return t[0];
  }
  return 0;
}

TEST_CASE("LoRA activations: every layer's saved bytes as torch 1.13 keeps them",
          "[activations][lora]") {
  const json& fx = lora_fixture();
  int n = 0;
  for (const auto& c : fx["cases"]) {
    if (!c.contains("lora")) continue;
    ++n;
    INFO(c["name"].get<std::string>());
    const Case k = to_case(fx, c);
    const activations::ModelActivations a = activations::transformer_activations(k.model, k.s);
    const auto regions = chain_regions(k.model);
    REQUIRE(a.layers.size() == regions.size());
    for (size_t i = 0; i < a.layers.size(); ++i) {
      INFO(regions[i][0]);
      const activations::LayerActivations& l = a.layers[i];
      // The chain counts a layer's output with that layer (the head's: the loss scalar; where
      // T5's encoder ends, the encoder output too); the measurement counts it in the next layer,
      // where an op keeps it. A wider copy of the input (16-bit -> fp32) stands for it: the
      // chain counts the copy beyond the input. An input nothing keeps is still counted with the
      // previous layer (placement::Layer semantics); input_saved says so.
      const uint64_t in = i ? a.layers[i - 1].output_bytes : 0;
      const InputKept kept = input_kept(c, regions[i]);
      const uint64_t credit = !kept.itself && in && kept.widest_copy >= in ? in : 0;
      const uint64_t out = l.output_bytes - encoder_output_kept(c, regions[i]);
      CHECK(l.saved_bytes + kept.itself + credit == sum_over(c, regions[i]) + out);
      if (i) CHECK(l.input_saved == (kept.itself > 0 || credit > 0));
      // the copies of frozen weights (autocast) the graph keeps
      std::vector<uint64_t> casts = l.kept_weight_casts, want;
      for (const auto& r : regions[i])
        for (uint64_t b : measured_casts(c, r)) want.push_back(b);
      std::sort(casts.begin(), casts.end());
      std::sort(want.begin(), want.end());
      CHECK(casts == want);
    }
  }
  CHECK(n >= 90);
}

TEST_CASE("LoRA activations: the tensors one by one, in the order autograd keeps them",
          "[activations][lora]") {
  // For the allocation trace: each layer's `tensors` are what the measurement lists for its
  // region, in saving order, with the input dropped (or its wider copy counted beyond it) and the
  // output appended. T5's last encoder layer (where the encoder ends) is left out: there the
  // chain lists the encoder's block output before the encoder's end, the measurement after.
  const json& fx = lora_fixture();
  int layers = 0;
  for (const auto& c : fx["cases"]) {
    if (!c.contains("lora")) continue;
    INFO(c["name"].get<std::string>());
    const Case k = to_case(fx, c);
    const activations::ModelActivations a = activations::transformer_activations(k.model, k.s);
    const auto regions = chain_regions(k.model);
    for (size_t i = 0; i < a.layers.size(); ++i) {
      if (regions[i].size() > 1) continue;
      INFO(regions[i][0]);
      const uint64_t in = i ? a.layers[i - 1].output_bytes : 0;
      std::vector<uint64_t> want;
      bool itself = false;
      if (c["regions"].contains(regions[i][0]))
        for (const auto& t : region_tensors(c, regions[i][0]))
          itself = itself || (t.size() >= 6 && t[5] == "in");
      bool credited = itself;
      if (c["regions"].contains(regions[i][0]))
        for (const auto& t : region_tensors(c, regions[i][0])) {
          if (is_scalar(t) || is_weight_cast(t)) continue;
          const std::string flag = t.size() >= 6 ? t[5].get<std::string>() : "";
          if (flag == "in") continue;
          uint64_t b = t[0];
          if (flag == "in-copy" && !credited && in && b >= in) {
            b -= in;
            credited = true;
          }
          want.push_back(b);
        }
      want.push_back(a.layers[i].output_bytes);
      CHECK(a.layers[i].tensors == want);
      ++layers;
    }
  }
  CHECK(layers >= 400);
}

namespace {
// Llama 3 8B (h 4096, 32 heads, 8 kv heads of 128, i 14336), one sequence of 1,024 tokens, PEFT's
// default targets q_proj and v_proj, r 16, on torch 2.5 / CUDA (1-byte dropout masks, SDPA).
activations::Settings llama8b_lora(bool qlora, uint64_t seq = 1024) {
  activations::Settings s;
  s.micro_batch = 1;
  s.seq_len = seq;
  s.precision = activations::Precision::bf16;
  s.attention = activations::Attention::sdpa;
  s.runtime = peak::runtime_profile("pytorch-2.5-cuda", "runtime").traits;
  s.lora.enabled = true;
  s.lora.rank = 16;
  s.lora.dropout = 0.05;
  s.lora.qlora = qlora;
  s.lora.adapted.assign(34, {});
  for (int i = 0; i < 32; ++i)
    for (const char* m : {"q_proj", "v_proj"})
      s.lora.adapted[i + 1].push_back("model.layers." + std::to_string(i) + ".self_attn." + m);
  return s;
}
}  // namespace

TEST_CASE("LoRA activations: a Llama 3 8B block by hand", "[activations][lora]") {
  const ModelDescription m = model_from_preset("llama-3-8b", "model.preset");
  const activations::ModelActivations a =
      activations::transformer_activations(m, llama8b_lora(false));
  // T = 1,024 tokens; bf16 base, fp32 adapters; a block whose input requires grad (block 1):
  //   input_layernorm: x.to(fp32) T*h*4 = 16,777,216, counted beyond the bf16 input the chain
  //     counts with block 0: 8,388,608; rsqrt T*4 = 4,096 (torch 2.x: MeanBackward keeps no x^2)
  //   q_proj and v_proj adapters, each: PEFT's fp32 copy of the input, dropped out: its 1-byte
  //     mask T*h = 4,194,304 and the dropout output T*h*4 = 16,777,216 (lora_A keeps it for its
  //     weight), lora_A's output T*r*4 = 65,536 (lora_B keeps it)       -> 2 x 21,037,056
  //   the frozen q, k, v, o projections keep no input
  //   SDPA: q, k and v (after repeat_kv) T*4096*2 = 8,388,608 each, its output 8,388,608, the
  //     logsumexp 32*1024*4 = 131,072                                     -> 33,685,504
  //   post_attention_layernorm: x.to(fp32) 16,777,216 and rsqrt 4,096   -> 16,781,312
  //   SwiGLU with frozen gate, up and down: SiLU's input, SiLU's output and up's output,
  //     T*i*2 = 29,360,128 each (down_proj keeps no input)               -> 88,080,384
  //   block output T*h*2 = 8,388,608
  // total 8,392,704 + 42,074,112 + 33,685,504 + 16,781,312 + 88,080,384 + 8,388,608
  //     = 197,402,624 (the full fine-tuning recipe: 226,631,680 for the same block; the two
  //       dropped-out fp32 copies of the adapters' input cost most of what the frozen linears save)
  CHECK(a.layers[2].saved_bytes == 197402624);
  CHECK(a.layers[2].input_saved);
  // Block 0: the frozen embeddings' output does not require grad, so input_layernorm keeps
  // nothing, the adapters keep no mask (their dropout's input does not require grad) but their
  // dropout output and lora_A's output; k is frozen on an input without grad, but q requires
  // grad, so SDPA keeps all it keeps; the rest as in block 1 (post_attention_layernorm's input
  // is a new residual sum: its fp32 copy counts whole):
  //   2 x (16,777,216 + 65,536) + 33,685,504 + 16,781,312 + 88,080,384 + 8,388,608 = 180,621,312
  CHECK(a.layers[1].saved_bytes == 180621312);
  CHECK_FALSE(a.layers[1].input_saved);
  // the embeddings keep RoPE's cos and sin (bf16, 1024 x 128 each) beside their output
  CHECK(a.layers[0].saved_bytes == 2 * 1024 * 128 * 2 + 1024 * 4096 * 2);
  // the head: the final norm's fp32 copy beyond its input and rsqrt; the frozen lm_head keeps
  // no input; the loss as in full fine-tuning (HF: logits.float(), log_softmax's fp32 result
  // T*V*4 = 525,336,576, the int64 labels 8,192) and the 4-byte loss
  CHECK(a.layers[33].saved_bytes == 8388608 + 4096 + 525336576ULL + 8192 + 4);
  bool stated = false;
  for (const auto& s : a.assumptions)
    stated = stated || s.str().find("LoRA: the base is frozen") == 0;
  CHECK(stated);
}

TEST_CASE("QLoRA activations: the dequantized weight is a transient of each 4-bit linear",
          "[activations][lora]") {
  // bitsandbytes MatMul4Bit (0.49.2 autograd/_functions.py): forward F.linear(A,
  // dequantize_4bit(B).to(A.dtype).t()), ctx.tensors = (None, B): nothing kept; backward
  // grad_output @ dequantize_4bit(B): the bf16 weight again, only where A requires grad. The
  // fixture's emulation dequantized 21 times in the forward of 3 Llama blocks and 18 times in
  // the backward (block 0's q, k, v read an input without grad); "kbit-prepared" (embedding
  // output requires grad): 21 and 21.
  const ModelDescription m = model_from_preset("llama-3-8b", "model.preset");
  // 1,000 tokens: no activation transient has a weight's size
  const activations::ModelActivations q =
      activations::transformer_activations(m, llama8b_lora(true, 1000));
  const activations::ModelActivations l =
      activations::transformer_activations(m, llama8b_lora(false, 1000));
  // the 4-bit linears keep no more than the 16-bit ones: the same saved bytes
  for (size_t i = 0; i < q.layers.size(); ++i)
    CHECK(q.layers[i].saved_bytes == l.layers[i].saved_bytes);
  // q and o 4096 x 4096, k and v 1024 x 4096, gate, up, down 14336 x 4096, in bf16
  const std::vector<uint64_t> weights = {33554432,  8388608,   8388608,  33554432,
                                         117440512, 117440512, 117440512};
  auto dequantized = [&](const std::vector<activations::LayerActivations::TempGroup>& g) {
    std::vector<uint64_t> v;
    for (const auto& t : g)
      if (std::find(weights.begin(), weights.end(), t.bytes) != weights.end()) v.push_back(t.bytes);
    return v;
  };
  CHECK(dequantized(q.layers[2].forward_temps) == weights);
  CHECK(dequantized(q.layers[2].backward_temps).size() == 7);
  CHECK(dequantized(q.layers[1].forward_temps) == weights);
  CHECK(dequantized(q.layers[1].backward_temps).size() == 4);  // o, gate, up, down
  CHECK(dequantized(l.layers[2].forward_temps).empty());
  CHECK(dequantized(q.layers[33].forward_temps).empty());  // the head stays 16-bit
}

TEST_CASE("LoRA activations: settings it cannot model are errors or stated",
          "[activations][lora]") {
  const ModelDescription m = model_from_preset("llama-3-8b", "model.preset");
  activations::Settings s = llama8b_lora(false);
  s.lora.base_dtype = DType::int8;
  try {
    activations::transformer_activations(m, s);
    FAIL("no error");
  } catch (const RequestError& e) {
    CHECK(e.field() == "lora.baseDtype");
  }
  s = llama8b_lora(false);
  s.float8 = true;
  CHECK_THROWS_AS(activations::transformer_activations(m, s), RequestError);
  // a module the recipe does not have (the router of a mixture of experts) is said, not dropped
  s = llama8b_lora(false);
  s.lora.adapted[1].push_back("model.layers.0.block_sparse_moe.gate");
  const auto a = activations::transformer_activations(m, s);
  bool said = false;
  for (const auto& x : a.assumptions)
    said = said || x == "LoRA: the adapters on 1 modules are not modelled in the activations "
                        "(modules the recipe does not have, such as "
                        "'model.layers.0.block_sparse_moe.gate')";
  CHECK(said);
  // LoRA off: the full fine-tuning recipe, untouched
  s.lora.enabled = false;
  activations::Settings full = llama8b_lora(false);
  full.lora = activations::LoraSettings{};
  CHECK(activations::transformer_activations(m, s).total_saved_bytes ==
        activations::transformer_activations(m, full).total_saved_bytes);
}

TEST_CASE("LoRA activations: Phi-3's fused qkv_proj and gate_up_proj carry one adapter each",
          "[activations][lora]") {
  // modeling_phi3.py: Phi3Attention.qkv_proj and Phi3MLP.gate_up_proj are single linears, so
  // PEFT wraps each once: one fp32 copy of the input (bf16 base, fp32 adapter), one lora_A
  // output. Phi-3 mini: h 3,072; T = 1,024; r 16: block 1 keeps 1024*3072*4 + 1024*16*4 =
  // 12,648,448 B more with the adapter than without (its input requires grad either way).
  const ModelDescription m = model_from_preset("phi-3-mini-4k", "model.preset");
  activations::Settings s = llama8b_lora(false);
  s.lora.dropout = 0;
  const size_t L = m.arch.layers;
  s.lora.adapted.assign(L + 2, {});
  for (size_t i = 0; i < L; ++i) s.lora.adapted[i + 1] = {"self_attn.qkv_proj"};
  const uint64_t with = activations::transformer_activations(m, s).layers[2].saved_bytes;
  for (size_t i = 1; i < L; ++i) s.lora.adapted[i + 1].clear();
  const uint64_t without = activations::transformer_activations(m, s).layers[2].saved_bytes;
  CHECK(with - without == 12648448);
  for (size_t i = 0; i < L; ++i) s.lora.adapted[i + 1] = {"mlp.gate_up_proj"};
  const uint64_t mlp = activations::transformer_activations(m, s).layers[2].saved_bytes;
  CHECK(mlp - without == 12648448);
}
