// config.json of the vision and speech families -> NetSpec -> the exact parameter list
// (net/net_model.hpp). torchvision models have no config.json: their "config" is the builder's
// name and arguments, {"model_type": "torchvision", "architecture": "resnet50",
// "num_classes": 1000, "image_size": 224} (the presets are such configs).
#include "io/net_config.hpp"

#include <memory>

#include "io/json_fields.hpp"
#include "net/net_model.hpp"
#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {
namespace {

constexpr uint64_t kMaxImage = 1u << 14;  // pixels per side
constexpr uint64_t kMaxClasses = 1u << 24;
constexpr uint64_t kMaxDim = 1u << 20;
constexpr uint64_t kMaxLayers = 1000;

void read_torchvision(const Obj& c, const std::string& arch_override, NetSpec* n) {
  const std::string arch =
      arch_override.empty() ? c.str("architecture", 64) : arch_override.substr(0, 64);
  if (!arch_override.empty()) c.mark_used("architecture");
  if (!net::torchvision_spec(arch, n)) {
    std::string msg = "torchvision builder \"" + arch + "\" is not modelled; expected one of:";
    const char* sep = " ";
    for (const auto& x : net::torchvision_names()) {
      msg += sep + x;
      sep = ", ";
    }
    fail(code::kUnknownValue,
         arch_override.empty() ? c.field("architecture") : "model.architecture", msg);
  }
  n->num_classes = c.u64_or("num_classes", 1000, 1, kMaxClasses);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
}

// architectures[0] (or the override) among the classes modelled for the type; `fallback` when
// the config names none.
std::string pick_class(const Obj& c, const std::string& override_arch,
                       std::initializer_list<const char*> allowed, const char* fallback) {
  std::string arch = fallback;
  if (c.has("architectures")) {
    const json& a = c.array("architectures", 16);
    if (!a.empty() && a[0].is_string()) arch = a[0].get<std::string>().substr(0, 128);
  } else {
    c.mark_used("architectures");
  }
  if (!override_arch.empty()) arch = override_arch.substr(0, 128);
  std::string list;
  for (const char* x : allowed) {
    if (arch == x) return arch;
    list += std::string(list.empty() ? " " : ", ") + x;
  }
  fail(code::kUnsupported, override_arch.empty() ? c.field("architectures") : "model.architecture",
       {"architecture \"", arch, "\" is not modelled; expected one of:", list});
}

// num_labels, or the size of id2label (PretrainedConfig's default: 2)
uint64_t labels_of(const Obj& c) {
  if (c.has("num_labels")) return c.u64("num_labels", 1, kMaxClasses);
  if (c.has("id2label") && c.raw("id2label").is_object() && !c.raw("id2label").empty())
    return c.raw("id2label").size();
  c.mark_used("id2label");
  return 2;
}

// ViTConfig / DeiTConfig / Dinov2Config (configuration_*.py defaults for absent keys).
void read_vit(const Obj& c, const std::string& type, const std::string& ov, NetSpec* n) {
  n->family = type;
  const bool dino = type == "dinov2";
  n->hidden = c.u64_or("hidden_size", 768, 1, kMaxDim);
  n->layers = c.u64_or("num_hidden_layers", 12, 1, kMaxLayers);
  n->heads = c.u64_or("num_attention_heads", 12, 1, kMaxDim);
  if (n->hidden % n->heads != 0)
    fail(code::kInconsistent, c.field("num_attention_heads"),
         {c.field("num_attention_heads"), " must divide hidden_size"});
  n->intermediate = dino ? static_cast<uint64_t>(n->hidden * c.num_or("mlp_ratio", 4, 0.01, 64))
                         : c.u64_or("intermediate_size", 3072, 1, kMaxDim);
  n->act = c.str_or("hidden_act", "gelu", 64);
  n->dropout = c.num_or("hidden_dropout_prob", 0.0, 0, 1);
  n->attention_dropout = c.num_or("attention_probs_dropout_prob", 0.0, 0, 1);
  n->image_size = n->config_image = c.u64_or("image_size", 224, 1, kMaxImage);
  n->patch = c.u64_or("patch_size", dino ? 14 : 16, 1, kMaxImage);
  n->channels = c.u64_or("num_channels", 3, 1, 1024);
  n->qkv_bias = c.boolean_or("qkv_bias", true);
  if (dino) {
    n->drop_path = c.num_or("drop_path_rate", 0.0, 0, 1);
    n->swiglu = c.boolean_or("use_swiglu_ffn", false);
    n->mask_token = c.boolean_or("use_mask_token", true);
    c.num_or("layerscale_value", 1.0, -1e9, 1e9);
    n->variant = pick_class(c, ov, {"Dinov2Model", "Dinov2ForImageClassification"}, "Dinov2Model");
  } else if (type == "deit") {
    n->extra_tokens = 1;
    n->variant = pick_class(
        c, ov, {"DeiTModel", "DeiTForImageClassification", "DeiTForImageClassificationWithTeacher"},
        "DeiTModel");
  } else {
    n->variant = pick_class(c, ov, {"ViTModel", "ViTForImageClassification"}, "ViTModel");
  }
  const bool head = n->variant.find("For") != std::string::npos;
  n->num_classes = head ? labels_of(c) : 0;
  if (!head) c.mark_used("num_labels");
  n->pooler = n->variant == "ViTModel" || n->variant == "DeiTModel";
  if (n->variant == "DeiTForImageClassificationWithTeacher")
    n->extra_tokens = 1;  // (a DeiT class: the distillation token)
}

}  // namespace

bool is_net_model_type(const std::string& type) {
  for (const char* t : {"torchvision", "vit", "deit", "dinov2"})
    if (type == t) return true;
  return false;
}

void build_net_config(const Obj& c, const std::string& type, const std::string& arch_override,
                      ModelDescription& m) {
  auto spec = std::make_shared<NetSpec>();
  if (type == "torchvision")
    read_torchvision(c, arch_override, spec.get());
  else if (type == "vit" || type == "deit" || type == "dinov2")
    read_vit(c, type, arch_override, spec.get());
  rebuild_net(std::move(spec), &m);
}

void rebuild_net(std::shared_ptr<const NetSpec> spec, ModelDescription* m) {
  m->tensors.clear();
  m->buffers.clear();
  m->module_count = 0;
  m->module_name_bytes = 0;
  const size_t chain = net::describe(*spec, m);
  Architecture& a = m->arch;
  a.layers = chain >= 2 ? chain - 2 : 0;  // the blocks between the stem and the head
  a.hidden = spec->hidden;
  a.heads = spec->heads;
  a.intermediate = spec->intermediate;
  a.num_labels = spec->num_classes;
  a.encoder_only = true;
  a.net = std::move(spec);
  if (m->architecture.empty()) m->architecture = a.net->variant;
  finalize_tensors(m);
}

}  // namespace trainmem
