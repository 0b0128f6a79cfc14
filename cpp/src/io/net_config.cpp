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

}  // namespace

bool is_net_model_type(const std::string& type) { return type == "torchvision"; }

void build_net_config(const Obj& c, const std::string& type, const std::string& arch_override,
                      ModelDescription& m) {
  auto spec = std::make_shared<NetSpec>();
  if (type == "torchvision") read_torchvision(c, arch_override, spec.get());
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
