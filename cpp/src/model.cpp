#include "trainmem/model.hpp"

#include "trainmem/calculators.hpp"

namespace trainmem {

uint64_t TensorSpec::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = checked_mul(n, d, name);
  return n;
}
uint64_t BufferSpec::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = checked_mul(n, d, name);
  return n;
}

// Largest accepted parameter count: 1e15 (README "Numeric limits").
constexpr uint64_t kMaxParams = 1000000000000000ULL;

ModelDescription parse_model(const Obj& model) {
  ModelDescription m;
  m.source = "params";
  m.params = model.u64("params", 1, kMaxParams);
  m.trainable_params = m.params;
  model.finish({"preset", "config", "tensors", "buffers"});
  return m;
}

nlohmann::json describe_model(const ModelDescription& m) {
  return {{"source", m.source}, {"params", m.params}, {"trainableParams", m.trainable_params}};
}

json describe_model_json(const json& request) {
  Obj req(request, "");
  ModelDescription m = parse_model(req.obj("model"));
  req.finish();
  return describe_model(m);
}

}  // namespace trainmem
