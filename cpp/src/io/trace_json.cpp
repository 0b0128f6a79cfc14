// The `trace` form of the `model` field: a trace of one training step written by
// python/trainmem_trace (format: docs/trace.md), as an object or as its JSON text. Read like any
// request: every field is checked and an error names it ("model.trace.tensors[12].free"); sizes
// are bounded (limits below); indices must point where the format says (a tensor is freed after
// it is made, a layer's output is one of its tensors, the layers cover the forward in order).
#include "io/trace_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "io/json_fields.hpp"
#include "trainmem/limits.hpp"
#include "trainmem/traced_model.hpp"
#include "util/message_table.hpp"

namespace trainmem {
namespace {

using traced::Event;
using traced::Layer;
using traced::Op;
using traced::Poly;
using traced::Trace;

// Largest trace accepted (a 70B Llama's step is ~8k ops and ~20k storages).
constexpr size_t kMaxOps = 500000;
constexpr size_t kMaxStorages = 1000000;
constexpr size_t kMaxEvents = 2000000;
constexpr size_t kMaxModules = 200000;
constexpr size_t kMaxParamTensors = 200000;
constexpr int64_t kMaxCoefficient = 1LL << 53;  // exact in a JSON number
constexpr const char* kMonomials[6] = {"1", "b", "s", "bs", "ss", "bss"};

// The trace's element types: (name, bytes per element, floating point).
struct ElementType {
  const char* name;
  uint32_t bytes;
  bool floating;
};
constexpr ElementType kElementTypes[] = {
    {"float32", 4, true},   {"float64", 8, true},       {"float16", 2, true},
    {"bfloat16", 2, true},  {"float8_e4m3fn", 1, true}, {"float8_e5m2", 1, true},
    {"complex64", 8, true}, {"complex128", 16, true},   {"int64", 8, false},
    {"int32", 4, false},    {"int16", 2, false},        {"int8", 1, false},
    {"uint8", 1, false},    {"bool", 1, false},
};

const ElementType& element_type(const Obj& o, const char* key) {
  const std::string s = o.str(key, 32);
  for (const auto& e : kElementTypes)
    if (s == e.name) return e;
  std::vector<std::string> names;
  for (const auto& e : kElementTypes) names.emplace_back(e.name);
  o.one_of(key, names);  // throws, suggesting the closest
  return kElementTypes[0];
}

int64_t coefficient(const json& v, const std::string& path, uint32_t den) {
  if (!v.is_number())
    fail(code::kInvalidType, path, Message{"error.field.number", {{"field", path}}});
  const double x = v.get<double>() * den;
  if (!std::isfinite(x) || std::fabs(x) > static_cast<double>(kMaxCoefficient))
    fail(code::kOutOfRange, path, Message{"error.trace.coefRange", {{"field", path}}});
  return static_cast<int64_t>(std::llround(x));
}

// The smallest denominator (<= 64) that makes every coefficient whole, or 0.
uint32_t denominator(const json& v) {
  for (uint32_t d = 1; d <= 64; ++d) {
    bool whole = true;
    for (auto it = v.begin(); it != v.end() && whole; ++it) {
      if (!it->is_number()) return 1;  // the coefficient's own check reports it
      const double x = it->get<double>() * d;
      whole = std::isfinite(x) && std::fabs(x - std::round(x)) < 1e-6;
    }
    if (whole) return d;
  }
  return 0;
}

// A size: a number, or {monomial: coefficient} over 1, b, s, bs, ss, bss (s only with a
// sequence length).
Poly read_poly(const json& v, const std::string& path, bool has_seq) {
  Poly p;
  if (v.is_number()) {
    p.c[0] = coefficient(v, path, 1);
    if (p.c[0] < 0)
      fail(code::kOutOfRange, path, Message{"error.field.notNegative", {{"field", path}}});
    return p;
  }
  if (!v.is_object() || v.empty())
    fail(code::kInvalidType, path, Message{"error.trace.poly", {{"field", path}}});
  if (v.size() > 6) fail(code::kTooLarge, path, Message{"error.trace.terms", {{"field", path}}});
  p.den = denominator(v);
  if (p.den == 0) fail(code::kOutOfRange, path, Message{"error.trace.fraction", {{"field", path}}});
  for (auto it = v.begin(); it != v.end(); ++it) {
    int slot = -1;
    for (int i = 0; i < 6; ++i)
      if (it.key() == kMonomials[i]) slot = i;
    const std::string at = path + "." + it.key().substr(0, 16);
    if (slot < 0) fail(code::kUnknownKey, at, Message{"error.trace.term", {{"field", at}}});
    if (slot >= 2 && !has_seq)
      fail(code::kInconsistent, at, Message{"error.trace.noSeq", {{"field", at}}});
    p.c[slot] = coefficient(*it, at, p.den);
  }
  return p;
}

uint64_t index_of(const Obj& o, const char* key, uint64_t bound, const char* what) {
  const uint64_t v = o.u64(key, 0, kMaxExactJson);
  if (v >= bound)
    fail(code::kOutOfRange, o.field(key),
         Message{"error.trace.notOne",
                 {{"field", o.field(key)}, {"v", std::to_string(v)}, {"what", what}}});
  return v;
}

// An index below `bound`, or -1 (none).
int64_t index_or_none(const Obj& o, const char* key, uint64_t bound, const char* what) {
  const json& v = o.raw(key);
  if (v.is_number_integer() && v.get<int64_t>() == -1) return -1;
  return static_cast<int64_t>(index_of(o, key, bound, what));
}

// One of the tracer's notes: {code, params}, a code of the catalog's trace.note.* with a string
// for each of its parameters; or an older file's plain sentence, kept as the file's own text
// (trace.note.file), which a page shows as such.
Message read_note(const json& v, const std::string& at) {
  if (v.is_string()) return Message{"trace.note.file", {{"note", read_str(v, at, 2000)}}};
  if (!v.is_object())
    fail(code::kInvalidType, at,
         Message{"error.trace.noteType", {{"field", at}, {"type", json_type_name(v)}}});
  const Obj o(v, at);
  const std::string name = o.str("code", 64);
  const bool note = name.rfind("trace.note.", 0) == 0 && name != "trace.note.file";
  const char* tpl = note ? messages::find_template(name.c_str()) : nullptr;
  if (!tpl)
    fail(code::kUnknownValue, o.field("code"),
         Message{"error.trace.noteCode", {{"field", o.field("code")}, {"code", name}}});
  Message m{name, {}};
  const Obj params = o.obj("params");
  for (const char* p = std::strchr(tpl, '{'); p; p = std::strchr(p + 1, '{')) {
    const char* close = std::strchr(p, '}');
    if (!close) break;
    const std::string hole(p + 1, close);
    m.params.emplace_back(hole, params.str(hole.c_str(), 2000));
  }
  params.finish();
  o.finish();
  return m;
}

void read_header(const Obj& o, Trace* t) {
  const std::string format = o.str("format", 64);
  if (format != "trainmem-trace")
    fail(code::kUnknownValue, o.field("format"),
         Message{"error.trace.format", {{"field", o.field("format")}}});
  const uint64_t version = o.u64("version", 1, 1000);
  if (version != 1)
    fail(code::kUnsupported, o.field("version"),
         Message{"error.trace.version",
                 {{"field", o.field("version")}, {"version", std::to_string(version)}}});
  o.str_or("producer", "", 128);
  t->torch = o.str_or("torch", "unknown", 64);
  t->device = o.one_of("device", {"meta", "cpu", "cuda"});
  t->name = o.str_or("name", "traced model", 200);
  t->loss = o.str_or("loss", "", 64);
  const Obj sizes = o.obj("sizes");
  t->batch = sizes.u64("batch", 1, limits::kMaxMicroBatch);
  t->has_seq = sizes.has("seq");
  t->seq = t->has_seq ? sizes.u64("seq", 1, limits::kMaxSeqLen) : 0;
  if (sizes.has("probes")) sizes.raw("probes");  // what the tracer ran (informative)
  sizes.finish();
  if (o.has("notes")) {
    const json& n = o.array("notes", 1000);
    for (size_t i = 0; i < n.size(); ++i)
      t->notes.push_back(read_note(n[i], index_path(o.field("notes"), i)));
  }
}

// What the tracer says about one step: ops that ran on the CPU, sizes the probes contradicted.
void read_step_notes(const Obj& o, Trace* t) {
  if (o.has("fallbacks")) {
    const Obj fb = o.obj("fallbacks");
    if (fb.json_value().size() > 10000)
      fail(code::kTooLarge, fb.path(), Message{"error.field.tooLongPlain", {{"field", fb.path()}}});
    for (auto it = fb.json_value().begin(); it != fb.json_value().end(); ++it)
      fb.u64(it.key().c_str(), 0, kMaxExactJson);
  }
  if (o.has("inexact")) {
    const json& n = o.array("inexact", 100000);
    for (size_t i = 0; i < n.size(); ++i)
      Obj(n[i], index_path(o.field("inexact"), i));  // each an object (what the probes said)
    t->inexact = n.size();
  }
}

void read_inputs(const Obj& o, Trace* t) {
  const json& a = o.array("inputs", 1000);
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj in(a[i], index_path(o.field("inputs"), i));
    const json& shape = in.array("shape", 16);
    for (size_t k = 0; k < shape.size(); ++k)
      if (!(shape[k].is_string() && (shape[k] == "b" || shape[k] == "s")))
        read_u64(shape[k], index_path(in.field("shape"), k), 0, kMaxExactJson);
    t->dtypes_in.push_back(element_type(in, "dtype").name);
    t->inputs.push_back(read_poly(in.raw("bytes"), in.field("bytes"), t->has_seq));
    in.boolean_or("target", false);
    t->inputs_saved.push_back(in.boolean_or("saved", false));
    in.finish();
  }
}

// modules: [[name, type], ...]; returns their names.
std::vector<std::string> read_modules(const Obj& o) {
  const json& a = o.array("modules", kMaxModules);
  std::vector<std::string> names;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = index_path(o.field("modules"), i);
    if (!a[i].is_array() || a[i].size() != 2)
      fail(code::kInvalidType, at, Message{"error.trace.input", {{"field", at}}});
    names.push_back(read_str(a[i][0], index_path(at, 0), 512));
    read_str(a[i][1], index_path(at, 1), 256);
  }
  return names;
}

void read_ops(const Obj& o, size_t modules, Trace* t) {
  const json& a = o.array("ops", kMaxOps);
  t->ops.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj op(a[i], index_path(o.field("ops"), i));
    Op x;
    x.name = op.str("op", 128);
    x.module = index_or_none(op, "module", modules, "modules");
    if (op.has("flops")) x.flops = read_poly(op.raw("flops"), op.field("flops"), t->has_seq);
    op.boolean_or("fallback", false);
    op.finish();
    t->ops.push_back(std::move(x));
  }
}

void read_tensors(const Obj& o, Trace* t) {
  const json& a = o.array("tensors", kMaxStorages);
  t->tensors.reserve(a.size());
  const uint64_t n_ops = t->ops.size();
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj x(a[i], index_path(o.field("tensors"), i));
    traced::Tensor s;
    s.bytes = read_poly(x.raw("bytes"), x.field("bytes"), t->has_seq);
    const ElementType& e = element_type(x, "dtype");
    s.element_bytes = e.bytes;
    s.floating = e.floating;
    s.mask = x.boolean_or("mask", false);
    s.backward = x.boolean_or("backward", false);
    if (s.backward) {
      for (const char* k : {"op", "free", "saved"})
        if (x.has(k))
          fail(code::kInconsistent, x.field(k),
               Message{"error.trace.backwardForward", {{"field", x.field(k)}, {"k", k}}});
    } else {
      s.op = static_cast<int64_t>(index_of(x, "op", n_ops, "ops"));
      if (x.has("free")) {
        const uint64_t f = x.u64("free", 0, kMaxExactJson);
        if (f <= static_cast<uint64_t>(s.op) || f > n_ops)
          fail(code::kInconsistent, x.field("free"),
               Message{"error.trace.freeOrder",
                       {{"field", x.field("free")},
                        {"op", std::to_string(s.op)},
                        {"nOps", std::to_string(n_ops)}}});
        s.free = static_cast<int64_t>(f);
      }
      s.saved = x.boolean_or("saved", false);
    }
    x.finish();
    t->tensors.push_back(s);
  }
}

void read_layers(const Obj& o, Trace* t) {
  const json& a = o.array("layers", limits::kMaxChainLayers);
  if (a.empty())
    fail(code::kOutOfRange, o.field("layers"),
         Message{"error.field.oneLayer", {{"field", o.field("layers")}}});
  uint64_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj x(a[i], index_path(o.field("layers"), i));
    Layer l;
    l.name = x.str("name", 512);
    l.start = x.u64("start", 0, kMaxExactJson);
    l.end = x.u64("end", 0, kMaxExactJson);
    if (l.start != at || l.end <= l.start || l.end > t->ops.size())
      fail(code::kInconsistent, x.field("start"),
           Message{"error.trace.layerStart",
                   {{"field", x.path()},
                    {"at", std::to_string(at)},
                    {"size", std::to_string(t->ops.size())}}});
    l.output = index_of(x, "output", t->tensors.size(), "tensors");
    const traced::Tensor& out = t->tensors[l.output];
    if (out.backward || out.op >= static_cast<int64_t>(l.end))
      fail(code::kInconsistent, x.field("output"),
           Message{"error.trace.layerOutput", {{"field", x.field("output")}}});
    x.finish();
    at = l.end;
    t->layers.push_back(std::move(l));
  }
  if (at != t->ops.size())
    fail(code::kInconsistent, o.field("layers"),
         Message{"error.trace.cover",
                 {{"field", o.field("layers")},
                  {"at", std::to_string(at)},
                  {"size", std::to_string(t->ops.size())}}});
}

void read_backward(const Obj& o, Trace* t) {
  const json& a = o.array("backward", kMaxEvents);
  t->backward.reserve(a.size());
  // 0: not yet allocated (backward tensors) / alive; 1: allocated; 2: freed
  std::vector<uint8_t> state(t->tensors.size(), 0);
  for (size_t i = 0; i < t->tensors.size(); ++i)
    if (!t->tensors[i].backward) state[i] = t->tensors[i].free >= 0 ? 2 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = index_path(o.field("backward"), i);
    if (!a[i].is_array() || a[i].size() != 2 || !a[i][0].is_string())
      fail(code::kInvalidType, at, Message{"error.trace.event", {{"field", at}}});
    const std::string kind = a[i][0].get<std::string>();
    Event e;
    const std::string idx_at = index_path(at, 1);
    if (kind == "n") {
      e.kind = 'n';
      e.index = a[i][1].is_number_integer() && a[i][1].get<int64_t>() == -1
                    ? -1
                    : static_cast<int64_t>(read_u64(a[i][1], idx_at, 0, t->ops.size() - 1));
    } else if (kind == "a" || kind == "f") {
      e.kind = kind[0];
      const uint64_t k =
          read_u64(a[i][1], idx_at, 0, t->tensors.empty() ? 0 : t->tensors.size() - 1);
      if (t->tensors.empty())
        fail(code::kOutOfRange, idx_at, Message{"error.trace.noTensors", {{"field", idx_at}}});
      const bool ok = e.kind == 'a' ? t->tensors[k].backward && state[k] == 0 : state[k] == 1;
      if (!ok)
        fail(code::kInconsistent, idx_at,
             Message{e.kind == 'a' ? "error.trace.allocOnce" : "error.trace.freeOnce",
                     {{"field", idx_at}}});
      state[k] = e.kind == 'a' ? 1 : 2;
      e.index = static_cast<int64_t>(k);
    } else {
      fail(code::kUnknownValue, index_path(at, 0),
           Message{"error.trace.eventKind", {{"field", index_path(at, 0)}}});
    }
    t->backward.push_back(e);
  }
}

std::vector<uint64_t> read_shape(const Obj& x) {
  const json& a = x.array("shape", 8);
  std::vector<uint64_t> shape;
  for (size_t k = 0; k < a.size(); ++k)
    shape.push_back(read_u64(a[k], index_path(x.field("shape"), k), 0, kMaxExactJson));
  return shape;
}

DType read_param_dtype(const Obj& x) {
  DType d;
  if (!parse_dtype(x.str("dtype", 32), &d)) x.one_of("dtype", dtype_names(), &dtype_spellings());
  return d;
}

// One parameter registration as the TensorSpec the calculators read; its chain layer in *layer.
TensorSpec read_parameter(const Obj& x, const Trace& t, size_t modules, int64_t* layer) {
  TensorSpec s;
  s.name = x.str("name", 512);
  if (s.name.empty())
    fail(code::kOutOfRange, x.field("name"),
         Message{"error.field.empty", {{"field", x.field("name")}}});
  s.shape = read_shape(x);
  s.dtype = read_param_dtype(x);
  const bool requires_grad = x.boolean("requiresGrad");
  const bool gradient = x.boolean_or("gradient", requires_grad);
  // a parameter the backward never reached has no .grad and no optimizer state
  s.trainable = requires_grad && gradient;
  index_or_none(x, "module", modules, "modules");
  *layer = index_or_none(x, "layer", t.layers.size(), "layers");
  const std::string kind = x.one_of_or("kind", {"linear", "conv1d", "embedding", "other"}, "other");
  if (kind == "linear" || kind == "conv1d")
    s.linear = kind == "linear" ? LinearKind::linear : LinearKind::conv1d;
  if ((kind == "linear" || kind == "conv1d") && s.shape.size() != 2)
    fail(code::kInconsistent, x.field("kind"),
         Message{"error.trace.linear", {{"field", x.field("kind")}}});
  s.embedding = kind == "embedding";
  return s;
}

void read_parameters(const Obj& o, const Trace& t, size_t modules, ModelDescription* m,
                     std::vector<uint64_t>* layer_params) {
  const json& a = o.array("parameters", kMaxParamTensors);
  const size_t nl = t.layers.size();
  std::map<std::string, size_t> index;
  std::vector<std::pair<int64_t, TensorSpec>> rows;
  uint64_t unused = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj x(a[i], index_path(o.field("parameters"), i));
    int64_t layer = -1;
    TensorSpec s = read_parameter(x, t, modules, &layer);
    if (x.has("tiedTo")) {
      s.tied_to = x.str("tiedTo", 512);
      const auto it = index.find(s.tied_to);
      if (it == index.end() || rows[it->second].second.shape != s.shape)
        fail(code::kInconsistent, x.field("tiedTo"),
             Message{"error.trace.tied", {{"field", x.field("tiedTo")}}});
    }
    x.finish();
    if (!index.emplace(s.name, rows.size()).second)
      fail(code::kInconsistent, x.field("name"),
           Message{"error.trace.repeats", {{"field", x.field("name")}}});
    if (layer < 0) layer = static_cast<int64_t>(nl) - 1;  // never used: with the head
    if (s.tied_to.empty() && !s.trainable && x.boolean("requiresGrad")) unused += s.numel();
    rows.emplace_back(layer, std::move(s));
  }
  // Chain layer = block + 1 (peak memory's parameter layout): the stem's first, the head's last.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  layer_params->assign(nl, 0);
  for (auto& r : rows) {
    r.second.block = r.first - 1;
    if (r.first == 0) r.second.embedding = true;  // (placed with the stem whatever its name)
    const uint64_t n = r.second.numel();
    if (r.second.tied_to.empty()) {
      m->params = checked_add(m->params, n, "model.trace.parameters");
      if (r.second.trainable)
        m->trainable_params = checked_add(m->trainable_params, n, "model.trace.parameters");
      (*layer_params)[static_cast<size_t>(r.first)] += n;
    }
    m->tensors.push_back(std::move(r.second));
  }
  if (unused > 0)
    m->assumptions.push_back(Text("trace.assume.unused", {{"count", std::to_string(unused)}}));
}

void read_buffers(const Obj& o, ModelDescription* m) {
  const json& a = o.array("buffers", kMaxParamTensors);
  for (size_t i = 0; i < a.size(); ++i) {
    const Obj x(a[i], index_path(o.field("buffers"), i));
    BufferSpec b;
    b.name = x.str("name", 512);
    b.shape = read_shape(x);
    b.dtype = read_param_dtype(x);
    b.persistent = x.boolean_or("persistent", true);
    x.finish();
    m->buffers.push_back(std::move(b));
  }
}

// The step's own fields (the top level, or one dtype variant).
void read_step(const Obj& o, size_t modules, Trace* t) {
  read_step_notes(o, t);
  read_inputs(o, t);
  read_ops(o, modules, t);
  read_tensors(o, t);
  read_layers(o, t);
  read_backward(o, t);
}

// variants: {"bfloat16": {inputs, ops, tensors, layers, backward, fallbacks, inexact}}: the step
// with the model in bfloat16, its chain of as many layers as the float32 step's.
void read_variants(const Obj& v, size_t modules, Trace* t) {
  if (v.has("bfloat16")) {
    const Obj h = v.obj("bfloat16");
    auto half = std::make_shared<Trace>();
    half->name = t->name;
    half->torch = t->torch;
    half->device = t->device;
    half->loss = t->loss;
    half->batch = t->batch;
    half->seq = t->seq;
    half->has_seq = t->has_seq;
    half->notes = t->notes;
    half->layer_params = t->layer_params;
    half->dtype = "bfloat16";
    read_step(h, modules, half.get());
    if (half->layers.size() != t->layers.size())
      fail(code::kInconsistent, h.field("layers"),
           Message{"error.trace.float32Layers",
                   {{"field", h.field("layers")}, {"size", std::to_string(t->layers.size())}}});
    h.finish();
    t->half = std::move(half);
  }
  v.finish();
}

}  // namespace

ModelDescription model_from_trace(const Obj& model) {
  json text_form;
  const json* tj = &model.raw("trace");
  if (tj->is_string()) {
    // the file's text: read as strictly as a request (depth, size, duplicate keys), errors
    // naming the field inside it
    try {
      text_form = parse_request(tj->get<std::string>());
    } catch (const RequestError& e) {
      fail_in(model.field("trace"), e);
    }
    tj = &text_form;
  }
  const Obj o(*tj, model.field("trace"));
  auto t = std::make_shared<Trace>();
  read_header(o, t.get());
  const std::vector<std::string> modules = read_modules(o);
  read_step(o, modules.size(), t.get());
  ModelDescription m;
  m.source = "trace";
  m.name = t->name;
  read_parameters(o, *t, modules.size(), &m, &t->layer_params);
  read_buffers(o, &m);
  if (m.params == 0)
    fail(code::kOutOfRange, o.field("parameters"),
         Message{"error.trace.noParams", {{"field", o.field("parameters")}}});
  for (const auto& p : m.tensors)
    if (p.tied_to.empty() && (p.dtype == DType::fp32 || p.dtype == DType::bf16 ||
                              p.dtype == DType::fp16 || p.dtype == DType::fp64)) {
      m.dtype = p.dtype;
      break;
    }
  t->dtype = m.dtype == DType::bf16   ? "bfloat16"
             : m.dtype == DType::fp16 ? "float16"
             : m.dtype == DType::fp64 ? "float64"
                                      : "float32";
  m.module_count = modules.size();
  for (const auto& n : modules) m.module_name_bytes += n.size();
  if (o.has("variants")) read_variants(o.obj("variants"), modules.size(), t.get());
  o.finish();
  m.trace = std::move(t);
  return m;
}

// The tracer's notes as sentences with their codes (an older file's own text as it was).
static std::vector<Text> note_texts(const std::vector<Message>& notes) {
  return std::vector<Text>(notes.begin(), notes.end());
}

json trace_description_json(const traced::Trace& t) {
  json out = json::object();
  put(out, "torch", t.torch);
  put(out, "device", t.device);
  put(out, "tracedBatch", t.batch);
  if (t.has_seq) put(out, "tracedSeqLen", t.seq);
  put(out, "ops", static_cast<uint64_t>(t.ops.size()));
  json layers = json::array();
  for (size_t i = 0; i < t.layers.size(); ++i) {
    json l = json::object();
    put(l, "name", t.layers[i].name);
    put(l, "params", i < t.layer_params.size() ? t.layer_params[i] : 0);
    put(l, "ops", t.layers[i].end - t.layers[i].start);
    layers.push_back(std::move(l));
  }
  put(out, "layers", std::move(layers));
  put(out, "inexactSizes", t.inexact);
  put(out, "notes", note_texts(t.notes));
  return out;
}

json trace_summary_json(const traced::Trace& t, const activations::Settings& s) {
  const traced::StepSummary sum = traced::step_summary(t, s);
  json out = json::object();
  put(out, "name", t.name);
  put(out, "torch", t.torch);
  put(out, "device", t.device);
  put(out, "tracedBatch", t.batch);
  if (t.has_seq) put(out, "tracedSeqLen", t.seq);
  put(out, "layers", static_cast<uint64_t>(t.layers.size()));
  put(out, "ops", static_cast<uint64_t>(t.ops.size()));
  put(out, "savedBytes", sum.saved_bytes);
  put(out, "heldBytes", sum.held_bytes);
  put(out, "inputBytes", sum.input_bytes);
  put(out, "inexactSizes", t.inexact);
  put(out, "notes", note_texts(t.notes));
  return out;
}

}  // namespace trainmem
