// The whole model under LoRA / QLoRA: which linears of each chain layer are adapted (by the
// model's module names), the frozen embeddings, the blocks (lora_recipes.cpp) and the head with
// its loss. Measured: tests/fixtures/torch_lora.json (tools/measure_lora.py).
#include <algorithm>
#include <utility>

#include "activations/lora_recipes.hpp"
#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace activations {
namespace lora {

namespace {

struct RoleName {
  const char* module;  // a dotted suffix of the module's name
  uint32_t roles;
};

// The linears of each recipe by the names HF transformers gives them (modeling_llama.py and the
// Llama-style decoders, Mixtral's experts w1 / w3 / w2, Phi-3's fused qkv_proj / gate_up_proj;
// modeling_gpt2.py Conv1D and modeling_gpt_neox.py; modeling_bert.py). More specific first.
const std::vector<RoleName>& role_names(const std::string& recipe) {
  static const std::vector<RoleName> llama = {{"q_proj", kQ},
                                              {"k_proj", kK},
                                              {"v_proj", kV},
                                              {"o_proj", kO},
                                              {"qkv_proj", kQ | kK | kV},
                                              {"gate_proj", kGate},
                                              {"up_proj", kUp},
                                              {"gate_up_proj", kGate | kUp},
                                              {"down_proj", kDown},
                                              {"w1", kGate},
                                              {"w3", kUp},
                                              {"w2", kDown},
                                              {"lm_head", kHead}};
  static const std::vector<RoleName> gpt2 = {{"attn.c_attn", kQ | kK | kV},
                                             {"attn.c_proj", kO},
                                             {"mlp.c_fc", kUp},
                                             {"mlp.c_proj", kDown},
                                             {"attention.query_key_value", kQ | kK | kV},
                                             {"attention.dense", kO},
                                             {"mlp.dense_h_to_4h", kUp},
                                             {"mlp.dense_4h_to_h", kDown},
                                             {"lm_head", kHead},
                                             {"embed_out", kHead}};
  static const std::vector<RoleName> bert = {
      {"attention.self.query", kQ},   {"attention.self.key", kK},  {"attention.self.value", kV},
      {"attention.output.dense", kO}, {"intermediate.dense", kUp}, {"output.dense", kDown},
      {"pooler.dense", kPooler},      {"classifier", kClassifier}};
  static const std::vector<RoleName> t5 = {{"SelfAttention.q", kQ},
                                           {"SelfAttention.k", kK},
                                           {"SelfAttention.v", kV},
                                           {"SelfAttention.o", kO},
                                           {"EncDecAttention.q", kXQ},
                                           {"EncDecAttention.k", kXK},
                                           {"EncDecAttention.v", kXV},
                                           {"EncDecAttention.o", kXO},
                                           {"DenseReluDense.wi_0", kGate},
                                           {"DenseReluDense.wi_1", kUp},
                                           {"DenseReluDense.wi", kUp},
                                           {"DenseReluDense.wo", kDown},
                                           {"lm_head", kHead}};
  if (recipe == "gpt2") return gpt2;
  if (recipe == "bert") return bert;
  if (recipe == "t5") return t5;
  return llama;
}

// `a` ends with `b` at a boundary of dotted segments.
bool ends_with_segments(const std::string& a, const std::string& b) {
  if (a.size() < b.size() || a.compare(a.size() - b.size(), b.size(), b) != 0) return false;
  return a.size() == b.size() || a[a.size() - b.size() - 1] == '.';
}

// The roles a module name has in the recipe ("attention.output.dense" is not BERT's
// "output.dense"). A short name stands for every module it ends ("c_proj": both of GPT-2's).
uint32_t roles_of(const std::string& recipe, const std::string& name) {
  uint32_t r = 0;
  for (const auto& rn : role_names(recipe)) {
    const std::string m(rn.module);
    if (ends_with_segments(name, m)) return rn.roles;
    if (ends_with_segments(m, name)) r |= rn.roles;
  }
  return r;
}

uint32_t width_of(DType t, const char* field) {
  if (t == DType::fp32) return 4;
  if (t == DType::bf16 || t == DType::fp16) return 2;
  fail(code::kUnsupported, field,
       Message{"error.lora.dtype", {{"field", field}, {"value", dtype_name(t)}}});
}

Dtypes dtypes_of(const Settings& s) {
  Dtypes dt;
  const bool half = s.precision == Precision::bf16 || s.precision == Precision::fp16;
  dt.base = s.lora.base_dtype ? width_of(*s.lora.base_dtype, "lora.baseDtype") : (half ? 2 : 4);
  dt.adapter = width_of(s.lora.adapter_dtype, "lora.adapterDtype");
  dt.autocast = s.precision == Precision::amp_bf16 || s.precision == Precision::amp_fp16;
  dt.compute = dt.autocast ? 2 : dt.base;  // bnb_4bit_compute_dtype follows the run's 16-bit type
  dt.qlora = s.lora.qlora;
  return dt;
}

Dims dims_of(const Architecture& ar, const Settings& s) {
  Dims d;
  d.b = s.micro_batch;
  d.s = s.seq_len;
  d.T = checked_mul(d.b, d.s, "microBatch");
  d.h = ar.hidden;
  d.a = ar.heads;
  d.kv = ar.kv_heads ? ar.kv_heads : ar.heads;
  d.d = ar.head_dim ? ar.head_dim : ar.hidden / ar.heads;
  d.q = d.a * d.d;
  d.i = ar.intermediate ? ar.intermediate : 4 * ar.hidden;
  d.V = ar.vocab;
  d.sk = d.s;
  d.Tk = d.T;
  d.experts = ar.num_experts;
  d.k = ar.num_experts ? std::max<uint64_t>(1, ar.experts_per_token + ar.shared_experts) : 1;
  d.p_attn = s.dropout ? ar.attention_dropout : 0;
  d.p_hid = s.dropout ? ar.hidden_dropout : 0;
  return d;
}

// The frozen embeddings: EmbeddingBackward0 keeps its indices only for a weight gradient, so
// nothing is kept unless the output requires grad (enable_input_require_grads); then GPT-2's
// dropout keeps its mask and BERT's LayerNorm its input and statistics. Llama: RoPE's cos and
// sin, made here and kept by the blocks' products.
LayerActivations embeddings(const Ctx& c, const Dims& d, const std::string& recipe,
                            bool rope_kept) {
  LayerActivations e;
  e.name = "embeddings";
  Flow f(c.s, c.dt, d.T, &e);
  const uint32_t bw = c.dt.base;
  Val x = f.make(d.T * d.h, bw, c.s.lora.embeddings_require_grad);
  if (recipe == "llama" && rope_kept)
    for (const char* n : {"RoPE cos (shared by all layers)", "RoPE sin (shared by all layers)"})
      f.save(f.make(d.b * d.s * d.d, bw, false), n, "q * cos + rotate_half(q) * sin keep them");
  if (recipe == "bert") {
    x = layer_norm(f, f.add(x, f.make(d.T * d.h, bw, false)), "embeddings LayerNorm");
    x = f.dropout(x, d.p_hid, "embedding dropout mask");
  } else if (recipe == "gpt2") {
    x = f.dropout(f.add(x, f.make(d.T * d.h, bw, false)), d.p_hid, "embedding dropout mask");
  } else if (recipe == "t5") {
    x = f.dropout(x, d.p_hid, "embedding dropout mask");  // the relative bias keeps nothing
  }
  f.output(x, "embedding output", "read by the first block");
  f.finish();
  e.forward_flops = 2.0 * d.T * d.h;  // a gather (no matmul): nominal cost
  return e;
}

Precision loss_precision(const Settings& s, const Dtypes& dt) {
  if (dt.autocast) return s.precision;
  if (dt.base == 4) return Precision::fp32;
  return s.precision == Precision::fp16 ? Precision::fp16 : Precision::bf16;
}

void add_loss_scalar(LayerActivations* head, bool detail) {
  if (detail) head->saved.push_back({"loss (scalar)", 4, "the loss tensor"});
  head->saved_bytes += 4;
  head->tensors.push_back(4);
  head->output_bytes = 4;
}

// BertForSequenceClassification's head: pooler (dense on the first token, tanh), dropout,
// classifier, cross-entropy (CUDA autocast: log_softmax in fp32).
void bert_cls_head(Flow& f, const Ctx& c, const Dims& d, const Val& x, uint32_t roles) {
  const Val first{d.b * d.h, x.width, x.rg, x.id, false, 0};  // x[:, 0]: a view of x
  const Val pre = f.linear(first, lin(d.h, d.h, roles & kPooler, c, false, true), "pooler.dense");
  Val p = f.keeps_result(pre, pre.width, "pooler tanh output", "TanhBackward0 keeps its result");
  p = f.dropout(p, d.p_hid, "classifier dropout mask");
  const Val logits =
      f.linear(p, lin(d.h, c.ar.num_labels, roles & kClassifier, c, false, true), "classifier");
  const uint32_t lw = c.dt.autocast ? 4 : logits.width;
  f.keeps_result(logits, lw, "log_softmax output", "LogSoftmaxBackward0 keeps its result");
  if (logits.rg) f.save(f.make(d.b, 8, false), "labels (int64)", "NllLossBackward0 keeps them");
}

// The head: the final norm, the output projection (frozen; adapted when lm_head is a target),
// the loss. Its input requires grad once any block has an adapter.
LayerActivations head_layer(const Ctx& c, const Dims& d, const std::string& recipe, uint32_t roles,
                            bool in_rg, const ModelDescription& m) {
  LayerActivations h;
  h.name = "head";
  Dtypes hdt = c.dt;
  hdt.qlora = false;  // bitsandbytes keeps the output projection unquantized
  const Ctx hc{c.s, c.ar, hdt, c.eager, c.res, c.fused};
  if (recipe == "t5") {
    t5_head(hc, d, roles, in_rg, &h);
    append_lm_loss(m, c.s, loss_precision(c.s, c.dt), d.T, false, false, &h);
    add_loss_scalar(&h, c.s.detail);
    h.forward_flops = 2.0 * d.T * d.h * (d.V / c.s.tensor_parallel);
    return h;
  }
  Flow f(c.s, hdt, d.T, &h);
  const Val x = f.input(d.T * d.h, c.res, in_rg);
  if (recipe == "bert" && c.ar.num_labels > 0) {
    bert_cls_head(f, hc, d, x, roles);
    f.finish();
    add_loss_scalar(&h, c.s.detail);
    h.forward_flops = 2.0 * d.b * d.h * (d.h + c.ar.num_labels);
    return h;
  }
  const Val y = recipe == "llama" ? rms_norm(f, x, c.dt.base, "final norm")
                                  : layer_norm(f, x, "final LayerNorm");
  const uint64_t Vt = d.V / c.s.tensor_parallel;  // Megatron's vocab-parallel logits
  // Liger's fused loss reads the hidden states and the weight itself
  if (c.s.loss != Settings::Loss::liger_fused)
    f.linear(y, lin(d.h, Vt, roles & kHead, hc, true), "lm_head");
  f.finish();
  append_lm_loss(m, c.s, loss_precision(c.s, c.dt), d.T, true, false, &h);
  add_loss_scalar(&h, c.s.detail);
  h.forward_flops = 2.0 * d.T * d.h * Vt;
  return h;
}

// The adapted roles of each chain layer and the names no recipe module answers to.
std::vector<uint32_t> layer_roles(const Settings& s, const std::string& recipe, size_t layers,
                                  std::vector<std::string>* unknown) {
  std::vector<uint32_t> r(layers, 0);
  for (size_t i = 0; i < layers && i < s.lora.adapted.size(); ++i)
    for (const auto& n : s.lora.adapted[i]) {
      const uint32_t roles = roles_of(recipe, n);
      r[i] |= roles;
      if (!roles && std::find(unknown->begin(), unknown->end(), n) == unknown->end())
        unknown->push_back(n.substr(0, 80));
    }
  return r;
}

// Matmul FLOPs of one block's forward: 2 x tokens x the matmul parameters, QK^T and PV, and
// the adapters' 2 x tokens x r x (in + out).
double block_flops(const std::string& recipe, const Dims& d, uint64_t r, uint32_t roles, double t,
                   bool gated) {
  const double h = d.h, kvq = static_cast<double>(d.kv) * d.d;
  const bool llama = recipe == "llama", t5 = recipe == "t5";
  const double qkv = llama ? h * (d.q + 2 * kvq) : 3 * h * d.q, o = d.q * h;
  const double mlp = llama ? 3.0 * h * d.i * d.k : (t5 && gated ? 3.0 : 2.0) * h * d.i;
  double adapters = 0;
  const std::pair<uint32_t, double> io[] = {{kQ, h + d.q},   {kK, h + kvq},    {kV, h + kvq},
                                            {kO, d.q + h},   {kGate, h + d.i}, {kUp, h + d.i},
                                            {kDown, d.i + h}};
  for (const auto& p : io)
    if (roles & p.first) adapters += r * p.second;
  return (2.0 * d.T * (qkv + o + mlp + adapters) + 4.0 * d.b * d.s * d.sk * d.q) / t;
}

void lora_assumptions(const Settings& s, const Dtypes& dt, const std::vector<std::string>& unknown,
                      bool moe, std::vector<Text>* out) {
  out->push_back(Text("act.lora.frozen", {}));
  if (!s.lora.embeddings_require_grad) out->push_back(Text("act.lora.embeddings", {}));
  if (dt.qlora) out->push_back(Text("act.lora.qlora", {}));
  if (dt.autocast && dt.base == 4) out->push_back(Text("act.lora.autocast", {}));
  if (s.compiled) out->push_back(Text("act.lora.compile", {}));
  if (moe) out->push_back(Text("act.lora.moe", {}));
  if (!unknown.empty())
    out->push_back(Text("act.lora.unmodelled",
                        {{"count", std::to_string(unknown.size())}, {"module", unknown.front()}}));
}

}  // namespace

ModelActivations lora_activations(const ModelDescription& m, const Settings& s,
                                  const std::string& recipe) {
  const Architecture& ar = m.arch;
  if (s.float8) fail(code::kUnsupported, "float8", Message{"error.lora.float8", {}});
  const Dtypes dt = dtypes_of(s);
  const Dims d = dims_of(ar, s);
  // T5Attention computes its scores itself (no SDPA path in modeling_t5.py)
  const bool eager = s.attention == Attention::eager || recipe == "t5";
  const Ctx c{
      s, ar, dt, eager, recipe == "bert" && dt.autocast ? 4u : dt.base, ar.model_type == "phi3"};
  ModelActivations out;
  out.recipe = recipe;
  out.input_bytes = checked_mul(d.T, 8, "microBatch");  // int64 input_ids
  const bool t5 = recipe == "t5";
  const size_t E = t5 ? ar.encoder_layers : 0, L = ar.layers + E;
  std::vector<std::string> unknown;
  const std::vector<uint32_t> roles = layer_roles(s, recipe, L + 2, &unknown);
  // T5's decoder: its own length, its cross-attention's keys the encoder's tokens
  Dims dec = d;
  if (t5) {
    dec.s = dec.sk = s.target_len ? s.target_len : s.seq_len;
    dec.T = dec.Tk = checked_mul(d.b, dec.s, "microBatch");
  }
  Dims cross = dec;
  cross.sk = d.s;
  cross.Tk = d.T;
  const bool emb_rg = s.lora.embeddings_require_grad;
  bool rope_kept = false;
  EncoderOutput enc;
  std::vector<LayerActivations> blocks;
  auto build = [&](const Dims& bd, uint32_t r, bool in_rg, bool decoder, LayerActivations* l) {
    if (t5)
      t5_block(c, bd, decoder ? &cross : nullptr, enc, r, in_rg, l);
    else if (recipe == "gpt2")
      gpt2_block(c, bd, r, in_rg, l);
    else if (recipe == "bert")
      bert_block(c, bd, r, in_rg, l);
    else
      llama_block(c, bd, r, in_rg, l, &rope_kept);
    l->forward_flops =
        block_flops(recipe, bd, s.lora.rank, r, double(s.tensor_parallel), ar.gated_mlp);
    if (decoder) l->forward_flops += 4.0 * bd.b * bd.s * d.s * d.q / s.tensor_parallel;
    l->backward_temp_bytes += checked_mul(bd.T * d.h, c.res, "microBatch");  // the input's grad
  };
  // the encoder's blocks (or the only stack), then T5's decoder's
  bool rg = emb_rg, prev_rg = false;
  for (size_t li = 0; li < L; ++li) {
    const bool decoder = t5 && li >= E;
    if (decoder && li == E) rg = emb_rg;  // the decoder's embedding output, frozen
    const uint32_t r = roles[li + 1];
    LayerActivations l;
    const bool same = li > 0 && li != E && r == roles[li] && rg == prev_rg;
    if (same)
      l = blocks.back();  // the same roles and input state keep the same tensors
    else
      build(decoder ? dec : d, r, rg, decoder, &l);
    l.name = "block " + std::to_string(li);
    prev_rg = rg;
    rg = rg || r != 0;
    if (t5 && li + 1 == E) enc = t5_encoder_end(c, d, dec, rg, &l);
    blocks.push_back(std::move(l));
  }
  out.layers.push_back(embeddings(c, d, recipe, rope_kept));
  for (auto& b : blocks) out.layers.push_back(std::move(b));
  out.layers.push_back(head_layer(c, t5 ? dec : d, recipe, roles[L + 1], rg, m));
  out.total_saved_bytes = out.input_bytes;
  for (auto& l : out.layers) {
    if (l.forward_flops <= 0) l.forward_flops = 1;
    out.total_saved_bytes = checked_add(out.total_saved_bytes, l.saved_bytes, "microBatch");
  }
  out.korthikanti_layer_bytes = static_cast<uint64_t>(
      korthikanti_layer_bytes(d.s, d.b, d.h, d.a, s.tensor_parallel, s.sequence_parallel, false));
  lora_assumptions(s, dt, unknown, ar.num_experts > 0, &out.assumptions);
  return out;
}

}  // namespace lora
}  // namespace activations
}  // namespace trainmem
