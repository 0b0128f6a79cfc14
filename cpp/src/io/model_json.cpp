// The `model` field of every request: a parameter count, a preset, a HuggingFace config.json,
// or an explicit tensor list — parsed into one ModelDescription; and the describeModel result.
#include "io/model_json.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "io/calculators.hpp"
#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"
#include "io/json_rows.hpp"
#include "io/model_count.hpp"
#include "io/trace_json.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {

using limits::kMaxParams;  // 1e15 (README "Numeric limits")
// Largest accepted tensor list (a 70B model has ~700 tensors; MoE models a few thousand).
constexpr size_t kMaxTensors = 200000;

namespace {

DType read_dtype_field(const Obj& o, const char* key, DType fallback) {
  if (!o.has(key)) {
    o.mark_used(key);
    return fallback;
  }
  DType t;
  if (!parse_dtype(o.str(key, 32), &t)) o.one_of(key, dtype_names(), &dtype_spellings());
  return t;
}

std::vector<uint64_t> read_shape(const Obj& o, const char* key) {
  const json& a = o.array(key, 8);
  std::vector<uint64_t> shape;
  for (size_t i = 0; i < a.size(); ++i)
    shape.push_back(read_u64(a[i], index_path(o.field(key), i), 0, kMaxExactJson));
  return shape;
}

ModelDescription parse_tensor_list(const Obj& model) {
  ModelDescription m;
  m.source = "tensors";
  m.name = model.str_or("name", "custom model", 200);
  const json& arr = model.array("tensors", kMaxTensors);
  if (arr.empty())
    fail(code::kOutOfRange, model.field("tensors"),
         Message{"error.tensors.empty", {{"field", model.field("tensors")}}});
  std::map<std::string, size_t> index;  // (std::map: no hash table code in the module)
  m.tensors.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    Obj t(arr[i], index_path(model.field("tensors"), i));
    TensorSpec s;
    s.name = t.str("name", 512);
    if (s.name.empty())
      fail(code::kOutOfRange, t.field("name"),
           Message{"error.field.empty", {{"field", t.field("name")}}});
    s.shape = read_shape(t, "shape");
    s.dtype = read_dtype_field(t, "dtype", DType::fp32);
    s.trainable = t.boolean_or("trainable", true);
    if (t.has("tiedTo")) {
      s.tied_to = t.str("tiedTo", 512);
      auto it = index.find(s.tied_to);
      if (it == index.end())
        fail(code::kInconsistent, t.field("tiedTo"),
             Message{"error.tensors.tiedTo",
                     {{"field", t.field("tiedTo")}, {"tiedTo", s.tied_to.substr(0, 64)}}});
      if (m.tensors[it->second].shape != s.shape)
        fail(code::kInconsistent, t.field("shape"),
             Message{"error.tensors.tiedShape", {{"field", t.field("shape")}}});
      // Tie to the storage owner (a chain a -> b -> c stores once).
      if (!m.tensors[it->second].tied_to.empty()) s.tied_to = m.tensors[it->second].tied_to;
    } else {
      t.mark_used("tiedTo");
    }
    t.finish();
    if (!index.emplace(s.name, m.tensors.size()).second)
      fail(code::kInconsistent, t.field("name"),
           Message{"error.tensors.repeats",
                   {{"field", t.field("name")}, {"name", s.name.substr(0, 64)}}});
    m.tensors.push_back(std::move(s));
  }
  if (model.has("buffers")) {
    const json& b = model.array("buffers", kMaxTensors);
    for (size_t i = 0; i < b.size(); ++i) {
      Obj t(b[i], index_path(model.field("buffers"), i));
      BufferSpec s;
      s.name = t.str("name", 512);
      s.shape = read_shape(t, "shape");
      s.dtype = read_dtype_field(t, "dtype", DType::fp32);
      s.persistent = t.boolean_or("persistent", true);
      t.finish();
      m.buffers.push_back(std::move(s));
    }
  } else {
    model.mark_used("buffers");
  }
  if (model.has("modules")) {
    const json& mods = model.array("modules", kMaxTensors);
    m.module_count = mods.size();
    for (size_t i = 0; i < mods.size(); ++i)
      m.module_name_bytes += read_str(mods[i], index_path(model.field("modules"), i), 512).size();
    if (m.module_count == 0)
      fail(code::kOutOfRange, model.field("modules"),
           Message{"error.modules.root", {{"field", model.field("modules")}}});
  } else {
    model.mark_used("modules");
  }
  finalize_tensors(&m);
  if (m.params == 0)
    fail(code::kOutOfRange, model.field("tensors"),
         Message{"error.tensors.noParams", {{"field", model.field("tensors")}}});
  return m;
}

}  // namespace

// Every key of the `model` object (parse_model and parse_model_shared refuse any other).
static const std::initializer_list<const char*> kModelKeys = {
    "params", "preset", "config", "tensors", "buffers", "modules",      "architecture",
    "name",   "layers", "hidden", "heads",   "vocab",   "intermediate", "trace"};

namespace {
json parse_config_text(const std::string& text, const std::string& field) {
  json parsed;
  try {
    parsed = parse_request(text);
  } catch (const RequestError& e) {
    fail_in(field, e);
  }
  if (!parsed.is_object())
    fail(code::kInvalidType, field, Message{"error.model.oneObject", {{"field", field}}});
  return parsed;
}
}  // namespace

ModelDescription parse_model(const Obj& model) {
  static const char* kForms[] = {"params", "preset", "config", "tensors", "trace"};
  int forms = 0;
  for (const char* f : kForms) forms += model.has(f) ? 1 : 0;
  if (forms == 0)
    fail(code::kMissingField, model.field("params"),
         Message{"error.model.needsOne", {{"field", model.path()}}});
  if (forms > 1)
    fail(code::kInconsistent, model.path(),
         Message{"error.model.onlyOne", {{"field", model.path()}}});
  if (!model.has("params"))
    for (const char* k : count_hint_keys())
      if (model.has(k))
        fail(code::kInconsistent, model.field(k),
             Message{"error.model.shapeWithParams", {{"field", model.field(k)}}});
  ModelDescription m;
  if (model.has("params")) {
    m.source = "params";
    m.params = model.u64("params", 1, kMaxParams);
    m.trainable_params = m.params;
    m.name = model.str_or("name", "", 200);
    read_count_hints(model, &m);  // layers / hidden / heads: an approximate shape
  } else if (model.has("preset")) {
    m = *shared_preset(model.str("preset", 128), model.field("preset"));
  } else if (model.has("config")) {
    const std::string arch = model.str_or("architecture", "", 128);
    if (model.raw("config").is_string()) {
      // config.json as the user's text: the strict reader checks it (duplicate keys,
      // non-finite numbers, depth) as it checks a request, naming the field inside it
      const json parsed =
          parse_config_text(model.raw("config").get<std::string>(), model.field("config"));
      m = model_from_config(Obj(parsed, model.field("config")).null_as_absent(), arch);
    } else {
      m = model_from_config(model.obj("config").null_as_absent(), arch);
    }
    m.source = "config";
  } else if (model.has("trace")) {
    m = model_from_trace(model);
  } else {
    m = parse_tensor_list(model);
  }
  model.finish(kModelKeys);
  return m;
}

std::shared_ptr<const ModelDescription> parse_model_shared(const Obj& model) {
  if (model.has("preset") && !model.has("params") && !model.has("config") &&
      !model.has("tensors")) {
    auto m = shared_preset(model.str("preset", 128), model.field("preset"));
    model.finish(kModelKeys);
    return m;
  }
  return std::make_shared<const ModelDescription>(parse_model(model));
}

namespace {

void put_architecture(const Architecture& a, json& out) {
  put(out, "modelType", a.model_type);
  put(out, "layers", a.layers);
  put(out, "hidden", a.hidden);
  put(out, "heads", a.heads);
  put(out, "kvHeads", a.kv_heads);
  put(out, "headDim", a.head_dim);
  put(out, "intermediate", a.intermediate);
  put(out, "vocab", a.vocab);
  put(out, "maxPositions", a.max_positions);
  put(out, "numExperts", a.num_experts);
  put(out, "expertsPerToken", a.experts_per_token);
  put(out, "gatedMlp", a.gated_mlp);
  put(out, "activation", a.activation);
  put(out, "norm", a.norm);
  put(out, "tiedEmbeddings", a.tied_embeddings);
  put(out, "encoderOnly", a.encoder_only);
  put(out, "encoderLayers", a.encoder_layers);
  put(out, "numLabels", a.num_labels);
  put(out, "hiddenDropout", a.hidden_dropout);
  put(out, "attentionDropout", a.attention_dropout);
  put(out, "sharedExperts", a.shared_experts);
}

// The fields a parameter tensor and a buffer share.
template <class Spec>
void put_tensor_fields(const Spec& t, json& e) {
  put(e, "name", t.name);
  put(e, "shape", t.shape);
  put(e, "dtype", dtype_name(t.dtype));
  put(e, "numel", t.numel());
}

}  // namespace

// describeModel's result: the description with its tensors, buffers and architecture.
nlohmann::json describe_model(const ModelDescription& m) {
  json out;
  put(out, "source", m.source);
  if (!m.preset_id.empty()) put(out, "presetId", m.preset_id);
  put(out, "name", m.name);
  put(out, "params", m.params);
  put(out, "trainableParams", m.trainable_params);
  if (m.published_params) put(out, "publishedParams", m.published_params);
  if (!m.source_note.empty()) put(out, "sourceNote", m.source_note);
  if (!m.architecture.empty()) put(out, "architecture", m.architecture);
  put(out, "tensors", object_rows(m.tensors, [](const TensorSpec& t, json& e) {
        put_tensor_fields(t, e);
        if (!t.tied_to.empty()) put(e, "tiedTo", t.tied_to);
        if (!t.trainable) put(e, "trainable", false);
      }));
  const auto stored = std::count_if(m.tensors.begin(), m.tensors.end(),
                                    [](const TensorSpec& t) { return t.tied_to.empty(); });
  put(out, "storedTensors", static_cast<uint64_t>(stored));
  put(out, "buffers", object_rows(m.buffers, [](const BufferSpec& b, json& e) {
        put_tensor_fields(b, e);
        put(e, "persistent", b.persistent);
      }));
  put_architecture(m.arch, out);
  put(out, "modules", m.module_count);
  put(out, "assumptions", m.assumptions);
  if (m.trace) put(out, "trace", trace_description_json(*m.trace));
  return out;
}

json describe_model_json(const json& request) {
  Obj req(request, "");
  ModelDescription m = parse_model(req.obj("model"));
  req.finish();
  return describe_model(m);
}

}  // namespace trainmem
