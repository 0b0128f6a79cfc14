// The `checkpointSize` function at the edge: reads the request into a CheckpointRequest,
// computes (checkpoint/checkpoint_size.cpp) and writes the CheckpointResult.
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "io/calculators.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/optimizer_json.hpp"
#include "io/quantized_config.hpp"
#include "io/request.hpp"
#include "trainmem/checkpoint_size.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

using vocab::CheckpointFormat;

bool read_dtype(const Obj& o, const char* key, DType* out) {
  if (!o.has(key)) {
    o.mark_used(key);
    return false;
  }
  const std::string s = o.str(key, 32);
  if (!parse_dtype(s, out))
    o.one_of(key, dtype_names(), &dtype_spellings());  // throws with a suggestion
  return true;
}

CheckpointRequest read_request(const json& request) {
  {
    // Unknown keys first (a typo such as "modle" is reported as itself, not as a missing
    // model): mark every accepted key, and finish() names the first other one.
    const Obj pre(request, "");
    for (const char* k : {"model", "optimizer", "weightDtype", "stateDtype", "masterWeights",
                          "format", "includeOptimizer", "fileName", "maxShardBytes"})
      pre.mark_used(k);
    pre.finish();
  }
  Obj req(request, "");
  CheckpointRequest r;
  r.model = parse_model(req.obj("model"));
  r.format = vocab::find(vocab::kCheckpointFormats,
                         req.one_of_or("format", vocab::names(vocab::kCheckpointFormats), "raw"))
                 ->value;
  const bool safetensors = r.format == CheckpointFormat::safetensors;
  r.include_optimizer = req.boolean_or("includeOptimizer", !safetensors);
  if (r.include_optimizer || req.has("optimizer"))
    r.opt = parse_optimizer(req, "optimizer");
  else
    req.mark_used("optimizer");
  r.has_weight_dtype = read_dtype(req, "weightDtype", &r.weight);
  if (r.model.quantization) {  // GPTQ / AWQ: the packed buffers as the file holds them
    if (r.has_weight_dtype)
      fail(code::kInconsistent, "weightDtype", Message{"error.checkpoint.weightDtype", {}});
    r.model = packed_state_dict(r.model);
  }
  r.master = req.boolean_or("masterWeights", false);
  r.has_state_dtype = read_dtype(req, "stateDtype", &r.state);
  r.file_name = req.str_or("fileName", safetensors ? "model.safetensors" : "checkpoint.pt", 256);
  r.max_shard_bytes = req.u64_or("maxShardBytes", 0, 0, UINT64_MAX);
  req.finish();
  if (safetensors && r.include_optimizer)
    fail(code::kInconsistent, "includeOptimizer", Message{"error.checkpoint.includeOptimizer", {}});
  if (r.max_shard_bytes && !safetensors)
    fail(code::kUnsupported, "maxShardBytes", Message{"error.checkpoint.maxShard", {}});
  return r;
}

json simple_json(const SimpleCheckpoint& s) {
  json out;
  put(out, "totalBytes", s.total_bytes);
  json breakdown = json::object();
  put(breakdown, "weights", s.weights);
  put(breakdown, "masterWeights", s.master_weights);
  put(breakdown, "optimizerState", s.optimizer_state);
  put(out, "breakdown", std::move(breakdown));
  put(out, "copies", s.copies);
  put(out, "bytesPerParam", s.bytes_per_param);
  put(out, "formula", Text("size.simple.formula", {}));
  if (s.factored) put(out, "note", Text("size.simple.adafactor", {}));
  return out;
}

// Names and values of a result's fields that are plain byte counts.
struct Field {
  const char* key;
  uint64_t value;
};
json fields(std::initializer_list<Field> list) {
  json o = json::object();
  for (const Field& f : list) put(o, f.key, f.value);
  return o;
}

json container_json(const CheckpointResult& r) {
  const ContainerSize& c = r.container;
  if (r.format == CheckpointFormat::torch)
    return fields({{"pickleBytes", c.pickle_bytes},
                   {"records", c.records},
                   {"alignmentPaddingBytes", c.padding_bytes},
                   {"overheadBytes", c.overhead_bytes},
                   {"payloadBytes", c.payload_bytes}});
  return fields({{"headerBytes", c.pickle_bytes},
                 {"alignmentPaddingBytes", c.padding_bytes},
                 {"overheadBytes", c.overhead_bytes},
                 {"shards", r.shards}});
}

json files_json(const std::vector<CheckpointFile>& files) {
  json out = json::array();
  for (const CheckpointFile& f : files) {
    json file = json::object();
    put(file, "name", f.name);
    if (f.sharded) put(file, "tensors", f.tensors);
    put(file, "bytes", f.bytes);
    out.push_back(std::move(file));
  }
  return out;
}

json per_state_json(const std::map<std::string, uint64_t>& m) {
  json o = json::object();
  for (const auto& kv : m) put(o, kv.first.c_str(), kv.second);
  return o;
}

Text formula(CheckpointFormat f) {
  switch (f) {
    case CheckpointFormat::raw:
      return Text("size.formula.sum", {});
    case CheckpointFormat::torch:
      return Text("size.formula.torch", {});
    case CheckpointFormat::safetensors:
      break;
  }
  return Text("size.formula.safetensors", {});
}

json result_json(const CheckpointResult& r) {
  json out;
  put(out, "totalBytes", r.total_bytes);
  put(out, "format", vocab::name_for(vocab::kCheckpointFormats, r.format));
  json breakdown = fields({{"weights", r.bytes(CheckpointCategory::weights)},
                           {"buffers", r.bytes(CheckpointCategory::buffers)},
                           {"masterWeights", r.bytes(CheckpointCategory::master_weights)},
                           {"optimizerState", r.bytes(CheckpointCategory::optimizer_state)},
                           {"container", r.container_bytes}});
  put(out, "breakdown", std::move(breakdown));
  put(out, "optimizerStates", per_state_json(r.state_bytes));
  put(out, "optimizerStateElements", per_state_json(r.state_elements));
  put(out, "params", r.params);
  put(out, "trainableParams", r.trainable_params);
  put(out, "bytesPerParam", r.bytes_per_param);
  if (r.include_optimizer) put(out, "optimizer", optimizer_name(r.opt));
  put(out, "weightDtype", dtype_name(r.weight_dtype));
  put(out, "includeOptimizer", r.include_optimizer);
  if (r.format != CheckpointFormat::raw) put(out, "container", container_json(r));
  if (!r.files.empty()) put(out, "files", files_json(r.files));
  put(out, "differenceFromSimple",
      static_cast<double>(r.total_bytes) - static_cast<double>(r.simple.total_bytes));
  put(out, "simple", simple_json(r.simple));
  put(out, "exact", r.exact);
  put(out, "notes", r.notes);
  put(out, "formula", formula(r.format));
  return out;
}

}  // namespace

json checkpoint_size_json(const json& request) {
  return result_json(checkpoint_size(read_request(request)));
}

}  // namespace trainmem
