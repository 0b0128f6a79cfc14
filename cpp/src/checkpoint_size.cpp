// Checkpoint size, seed 003: size = parameters x copies per parameter x bytes per copy.
#include <string>
#include <vector>

#include "trainmem/calculators.hpp"
#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/request.hpp"

namespace trainmem {
namespace {

struct OptimizerCopies {
  const char* name;
  uint32_t copies;  // state copies per parameter (seed 003; torch/optim/*.py)
};
// Seed 003: SGD keeps no state, Adam two moments. torch/optim: SGD momentum_buffer,
// Adagrad sum, RMSprop square_avg; Lion (Chen et al. 2023) one moment.
const OptimizerCopies kCopies[] = {
    {"sgd", 0},  {"sgd-momentum", 1}, {"adam", 2},    {"adamw", 2},
    {"lion", 1}, {"adagrad", 1},      {"rmsprop", 1},
};

DType read_dtype(const Obj& o, const std::string& key, DType fallback) {
  if (!o.has(key)) {
    o.mark_used(key);
    return fallback;
  }
  const std::string s = o.str(key, 32);
  DType t;
  if (!parse_dtype(s, &t)) o.one_of(key, dtype_names());  // throws with a suggestion
  return t;
}

}  // namespace

json checkpoint_size_json(const json& request) {
  Obj req(request, "");
  ModelDescription model = parse_model(req.obj("model"));
  std::vector<std::string> names;
  for (const auto& c : kCopies) names.emplace_back(c.name);
  const std::string optimizer = req.one_of("optimizer", names);
  const DType weight = read_dtype(req, "weightDtype", DType::fp32);
  const bool master = req.boolean_or("masterWeights", false);
  // Default state dtype: PyTorch keeps states in the parameter dtype; with an fp32 master
  // copy (mixed precision) states are fp32 (seed 003).
  const DType state = read_dtype(req, "stateDtype", master ? DType::fp32 : weight);
  req.finish();

  uint32_t copies = 0;
  for (const auto& c : kCopies)
    if (optimizer == c.name) copies = c.copies;
  const uint64_t n = model.params;
  const uint64_t weights = dtype_bytes_for(weight, n);
  const uint64_t masters = master ? dtype_bytes_for(DType::fp32, n) : 0;
  const uint64_t states = checked_mul(copies, dtype_bytes_for(state, n), "model.params");
  const uint64_t total =
      checked_add(checked_add(weights, masters, "model.params"), states, "model.params");
  json out;
  out["totalBytes"] = total;
  out["breakdown"] = {{"weights", weights}, {"masterWeights", masters}, {"optimizerState", states}};
  out["bytesPerParam"] = n ? static_cast<double>(total) / static_cast<double>(n) : 0.0;
  out["params"] = n;
  out["formula"] = "params x copies x bytes per copy (seed 003)";
  return out;
}

}  // namespace trainmem
