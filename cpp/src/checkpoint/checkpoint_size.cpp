// Checkpoint size: the exact bytes of a checkpoint from the model's tensors, the optimizer's
// real state layout (optimizer.cpp) and the container format (checkpoint_format_*.cpp), with
// seed 003's simple formula (params x copies x bytes per copy) beside it.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "io/calculators.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/optimizer_json.hpp"
#include "io/request.hpp"
#include "trainmem/checkpoint_format.hpp"
#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16 ||
         t == DType::fp8;
}

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

struct Request {
  ModelDescription model;
  OptimizerSpec opt;
  bool has_weight_dtype = false, has_state_dtype = false;
  DType weight = DType::fp32, state = DType::fp32;
  bool master = false;
  vocab::CheckpointFormat format = vocab::CheckpointFormat::raw;
  bool include_optimizer = true;
  std::string file_name = "checkpoint.pt";
  uint64_t max_shard_bytes = 0;
};

// Storage categories, in the order of kCategoryNames.
enum Category { kWeights, kBuffers, kMasterWeights, kOptimizerState, kCategories };
const char* const kCategoryNames[kCategories] = {"weights", "buffers", "masterWeights",
                                                 "optimizerState"};

struct Stored {  // one storage of the checkpoint (no strings: a 70B model has ~2,900)
  Category category;
  const char* state;  // state name for optimizer entries (a literal of optimizer.cpp)
  uint64_t bytes = 0;
  uint64_t numel = 0;
};

// Seed 003, as the foundation computed it: params x copies x bytes per copy.
json simple_formula(const Request& r) {
  const uint64_t n = r.model.params;
  const DType state = r.has_state_dtype ? r.state : (r.master ? DType::fp32 : r.weight);
  const uint64_t weights = dtype_bytes_for(r.weight, n);
  const uint64_t masters = r.master ? dtype_bytes_for(DType::fp32, n) : 0;
  uint32_t copies = r.include_optimizer ? simple_state_copies(r.opt) : 0;
  // 8-bit Adam: two 1-byte moments per parameter (Transformer Math 101: 8-bit Adam 2 B/param
  // of moments + the fp32 master copy in mixed precision).
  // torchao low-bit AdamW (torchao/optim): 1-byte codes (8-bit, fp8); the 4-bit pair is one byte
  const DType copy_dtype =
      r.opt.name == "adam-8bit" || is_torchao_low_bit(r.opt) ? DType::uint8 : state;
  const uint64_t states = checked_mul(copies, dtype_bytes_for(copy_dtype, n), "model.params");
  const uint64_t total =
      checked_add(checked_add(weights, masters, "model.params"), states, "model.params");
  json s;
  put(s, "totalBytes", total);
  json breakdown = json::object();
  put(breakdown, "weights", weights);
  put(breakdown, "masterWeights", masters);
  put(breakdown, "optimizerState", states);
  put(s, "breakdown", std::move(breakdown));
  put(s, "copies", 1 + copies + (r.master ? 1 : 0));
  put(s, "bytesPerParam", n ? static_cast<double>(total) / static_cast<double>(n) : 0.0);
  put(s, "formula", "params x copies x bytes per copy (the usual rule of thumb)");
  if (r.opt.name == "adafactor" || r.opt.name == "torch-adafactor")
    put(s, "note",
        "the rule of thumb gives Adafactor only as O(sqrt(N)); the exact value uses the shapes");
  return s;
}

}  // namespace

json checkpoint_size_json(const json& request) {
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
  Request r;
  r.model = parse_model(req.obj("model"));
  r.format = vocab::find(vocab::kCheckpointFormats,
                         req.one_of_or("format", vocab::names(vocab::kCheckpointFormats), "raw"))
                 ->value;
  r.include_optimizer =
      req.boolean_or("includeOptimizer", r.format != vocab::CheckpointFormat::safetensors);
  if (r.include_optimizer || req.has("optimizer"))
    r.opt = parse_optimizer(req, "optimizer");
  else
    req.mark_used("optimizer");
  r.has_weight_dtype = read_dtype(req, "weightDtype", &r.weight);
  r.master = req.boolean_or("masterWeights", false);
  r.has_state_dtype = read_dtype(req, "stateDtype", &r.state);
  r.file_name = req.str_or(
      "fileName",
      r.format == vocab::CheckpointFormat::safetensors ? "model.safetensors" : "checkpoint.pt",
      256);
  r.max_shard_bytes = req.u64_or("maxShardBytes", 0, 0, UINT64_MAX);
  req.finish();
  if (r.format == vocab::CheckpointFormat::safetensors && r.include_optimizer)
    fail(code::kInconsistent, "includeOptimizer",
         "includeOptimizer: safetensors files hold weights only (save the "
         "optimizer with torch.save)");
  if (r.max_shard_bytes && r.format != vocab::CheckpointFormat::safetensors)
    fail(code::kUnsupported, "maxShardBytes",
         "maxShardBytes: sharding is modelled for safetensors files only");

  ModelDescription& m = r.model;
  const bool count_only = !m.has_tensors();
  std::vector<std::string> notes = m.assumptions;  // e.g. a generic recipe's approximation
  if (count_only) {
    // A count is one flat tensor: per-tensor scalars (Adam `step`, Adafactor factors, the
    // pickle's per-tensor entries) cannot be known without the tensor list.
    TensorSpec t;
    t.name = "params";
    t.shape = {m.params};
    t.dtype = r.weight;
    m.tensors.push_back(t);
    m.module_count = 1;
    notes.push_back(
        "model given as a count: treated as one flat tensor; per-tensor state "
        "(e.g. Adam's step scalars) and container entries are approximate");
  }
  if (!r.has_weight_dtype) r.weight = m.tensors.front().dtype;

  // Storage table and the state_dict views.
  std::vector<StorageInfo> storages;
  std::vector<Stored> stored;
  storages.reserve(m.tensors.size() * 6 + m.buffers.size() + 2);
  stored.reserve(storages.capacity());
  auto add_storage = [&](DType dt, uint64_t numel, Category cat, const char* state) {
    StorageInfo s;
    s.dtype = dt;
    s.numel = numel;
    s.bytes = dtype_bytes_for(dt, numel);
    storages.push_back(s);
    stored.push_back({cat, state ? state : "", s.bytes, numel});
    return static_cast<int64_t>(storages.size() - 1);
  };
  TorchSaveInput in;
  in.file_name = r.file_name;
  in.module_count = m.module_count ? m.module_count : 1;
  in.module_name_bytes = m.module_name_bytes;
  in.wrap = r.include_optimizer;
  in.has_optimizer = r.include_optimizer;
  std::map<std::string, int64_t> storage_of;  // tied-to target name -> storage
  for (const auto& t : m.tensors)
    if (!t.tied_to.empty()) storage_of[t.tied_to] = -1;
  in.model.reserve(m.tensors.size() + m.buffers.size());
  std::vector<DType> eff(m.tensors.size());
  std::vector<SafetensorsEntry> st_entries;
  st_entries.reserve(m.tensors.size() + m.buffers.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorSpec& t = m.tensors[i];
    eff[i] = r.has_weight_dtype && is_float(t.dtype) ? r.weight : t.dtype;
    int64_t sid;
    if (t.tied_to.empty()) {
      sid = add_storage(eff[i], t.numel(), kWeights, nullptr);
      auto it = storage_of.find(t.name);  // only names that something ties to
      if (it != storage_of.end()) it->second = sid;
      st_entries.push_back({&t.name, &t.shape, eff[i]});
    } else {
      sid = storage_of.at(t.tied_to);
    }
    in.model.push_back({&t.name, &t.shape, eff[i], sid});
  }
  for (const auto& b : m.buffers) {
    if (!b.persistent) continue;  // not in state_dict()
    // module.to(dtype) casts floating buffers; integer counters keep their dtype.
    const DType dt = r.has_weight_dtype && is_float(b.dtype) ? r.weight : b.dtype;
    const int64_t sid = add_storage(dt, b.numel(), kBuffers, nullptr);
    in.model.push_back({&b.name, &b.shape, dt, sid});
    st_entries.push_back({&b.name, &b.shape, dt});
  }

  // Optimizer state, parameter by parameter (the order of model.parameters()).
  std::vector<std::vector<StateTensor>> states;
  std::vector<TensorSpec> fake_params;  // count-only Adafactor: a square-ish matrix estimate
  if (r.include_optimizer) {
    int64_t qmap[2] = {-1, -1};
    TensorSpec p;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      const TensorSpec& t = m.tensors[i];
      if (!t.tied_to.empty() || !t.trainable) continue;
      const DType state_dtype = r.has_state_dtype ? r.state : (r.master ? DType::fp32 : eff[i]);
      p = t;  // reuses the scratch tensor's buffers
      p.dtype = eff[i];
      if (count_only && (r.opt.name == "adafactor" || r.opt.name == "torch-adafactor")) {
        const uint64_t rows = static_cast<uint64_t>(std::ceil(std::sqrt(double(t.numel()))));
        p.shape = {rows, (t.numel() + rows - 1) / rows};
        notes.push_back("Adafactor on a count: factors estimated for one square matrix");
      }
      std::vector<StateTensor> s = optimizer_state(r.opt, p, state_dtype);
      if (count_only) {  // no per-tensor scalars for a bare count (seed 003 parity)
        std::vector<StateTensor> kept;
        for (auto& e : s)
          if (!(e.kind == StateKind::tensor && e.shape.empty()) && e.kind != StateKind::python_int)
            kept.push_back(e);
        s.swap(kept);
      }
      if (r.master) {
        StateTensor mw;
        mw.name = "fp32_master";
        mw.shape = t.shape;
        mw.dtype = DType::fp32;
        s.push_back(mw);
      }
      states.push_back(std::move(s));
    }
    in.optimizer_params = states.size();
    in.param_group = optimizer_param_group(r.opt);
    in.optimizer_state.resize(states.size());
    for (size_t i = 0; i < states.size(); ++i) {
      for (const StateTensor& e : states[i]) {
        int64_t sid = -1;
        const bool is_master = std::strcmp(e.name, "fp32_master") == 0;
        if (e.kind == StateKind::tensor) {
          sid =
              add_storage(e.dtype, e.numel(), is_master ? kMasterWeights : kOptimizerState, e.name);
        } else if (e.kind == StateKind::shared_tensor) {
          int64_t& q = qmap[std::strcmp(e.name, "qmap1") == 0 ? 0 : 1];
          if (q < 0) q = add_storage(e.dtype, e.numel(), kOptimizerState, e.name);
          sid = q;
        }
        in.optimizer_state[i].push_back({e.name, e.kind, &e.shape, e.dtype, sid});
      }
    }
  } else if (r.master) {
    for (size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].tied_to.empty() && m.tensors[i].trainable)
        add_storage(DType::fp32, m.tensors[i].numel(), kMasterWeights, "fp32_master");
    notes.push_back("masterWeights without the optimizer: counted as raw fp32 copies");
  }
  in.storages = std::move(storages);

  // Categories and per-state totals (raw payload).
  // Summed in arrays (a handful of distinct states), then named.
  uint64_t cat_bytes[kCategories] = {0, 0, 0, 0};
  struct StateSum {
    const char* name;
    uint64_t bytes, numel;
  };
  std::vector<StateSum> state_sums;
  uint64_t payload = 0;
  for (const auto& s : stored) {
    cat_bytes[s.category] = checked_add(cat_bytes[s.category], s.bytes, "checkpoint");
    if (s.category == kOptimizerState) {
      size_t k = 0;
      while (k < state_sums.size() && std::strcmp(state_sums[k].name, s.state) != 0) ++k;
      if (k == state_sums.size()) state_sums.push_back({s.state, 0, 0});
      state_sums[k].bytes = checked_add(state_sums[k].bytes, s.bytes, "checkpoint");
      state_sums[k].numel = checked_add(state_sums[k].numel, s.numel, "checkpoint");
    }
    payload = checked_add(payload, s.bytes, "checkpoint");
  }
  std::map<std::string, uint64_t> by_state, elements_by_state;
  for (const auto& e : state_sums) {
    by_state[e.name] = e.bytes;
    elements_by_state[e.name] = e.numel;
  }

  json out;
  json container = nullptr;
  json files = json::array();
  uint64_t total = payload;
  if (r.format == vocab::CheckpointFormat::torch) {
    const ContainerSize c = torch_save_size(in);
    total = c.file_bytes;
    container = json::object();
    put(container, "pickleBytes", c.pickle_bytes);
    put(container, "records", c.records);
    put(container, "alignmentPaddingBytes", c.padding_bytes);
    put(container, "overheadBytes", c.overhead_bytes);
    put(container, "payloadBytes", c.payload_bytes);
    json file = json::object();
    put(file, "name", r.file_name);
    put(file, "bytes", total);
    files.push_back(std::move(file));
  } else if (r.format == vocab::CheckpointFormat::safetensors) {
    // Weights and persistent buffers only (tied tensors once).
    std::vector<std::vector<SafetensorsEntry>> shards(1);
    uint64_t cur = 0;
    for (const auto& e : st_entries) {
      uint64_t numel = 1;
      for (uint64_t d : *e.shape) numel = checked_mul(numel, d, "model");
      const uint64_t n = dtype_bytes_for(e.dtype, numel);
      // huggingface_hub split_torch_state_dict_into_shards: start a new shard when the next
      // tensor would exceed the limit (a tensor larger than the limit gets its own shard).
      if (r.max_shard_bytes && !shards.back().empty() &&
          checked_add(cur, n, "model") > r.max_shard_bytes) {
        shards.emplace_back();
        cur = 0;
      }
      shards.back().push_back(e);
      cur = checked_add(cur, n, "model");
    }
    total = 0;
    uint64_t header = 0, padding = 0, overhead = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      const ContainerSize c = safetensors_size(shards[i], true);
      total = checked_add(total, c.file_bytes, "checkpoint");
      header += c.pickle_bytes;
      padding += c.padding_bytes;
      overhead += c.overhead_bytes;
      char name[96];
      json file = json::object();
      if (shards.size() == 1) {
        put(file, "name", r.file_name);
      } else {
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
        put(file, "name", name);
        put(file, "tensors", c.records);
      }
      put(file, "bytes", c.file_bytes);
      files.push_back(std::move(file));
    }
    if (shards.size() > 1)
      notes.push_back("sharded safetensors: the model.safetensors.index.json file is not counted");
    container = json::object();
    put(container, "headerBytes", header);
    put(container, "alignmentPaddingBytes", padding);
    put(container, "overheadBytes", overhead);
    put(container, "shards", shards.size());
    cat_bytes[kOptimizerState] = 0;
    cat_bytes[kMasterWeights] = 0;
  }

  put(out, "totalBytes", total);
  put(out, "format", vocab::name_for(vocab::kCheckpointFormats, r.format));
  json breakdown = json::object();
  for (int c = 0; c < kCategories; ++c) put(breakdown, kCategoryNames[c], cat_bytes[c]);
  put(breakdown, "container",
      total - (r.format == vocab::CheckpointFormat::safetensors
                   ? cat_bytes[kWeights] + cat_bytes[kBuffers]
                   : payload));
  put(out, "breakdown", std::move(breakdown));
  json per_state = json::object(), per_state_elements = json::object();
  if (r.format != vocab::CheckpointFormat::safetensors) {
    for (const auto& kv : by_state) put(per_state, kv.first.c_str(), kv.second);
    for (const auto& kv : elements_by_state) put(per_state_elements, kv.first.c_str(), kv.second);
  }
  put(out, "optimizerStates", std::move(per_state));
  put(out, "optimizerStateElements", std::move(per_state_elements));
  put(out, "params", m.params);
  put(out, "trainableParams", m.trainable_params);
  put(out, "bytesPerParam",
      m.params ? static_cast<double>(total) / static_cast<double>(m.params) : 0.0);
  if (r.include_optimizer) put(out, "optimizer", r.opt.name);
  put(out, "weightDtype", dtype_name(r.weight));
  put(out, "includeOptimizer", r.include_optimizer);
  if (!container.is_null()) put(out, "container", std::move(container));
  if (!files.empty()) put(out, "files", std::move(files));
  json simple = simple_formula(r);
  put(out, "differenceFromSimple",
      static_cast<double>(total) - static_cast<double>(simple["totalBytes"].get<uint64_t>()));
  put(out, "simple", std::move(simple));
  // torch.save pickles state_dict()._metadata, one entry per module (torch/nn/modules/
  // module.py state_dict): modules inferred from tensor names miss the parameterless ones
  const bool modules_guessed = r.format == vocab::CheckpointFormat::torch && m.modules_inferred;
  if (modules_guessed)
    notes.push_back(
        "not exact: the torch file's pickle lists every module (state_dict._metadata); without "
        "model.modules the modules are inferred from the tensor names, so those without "
        "parameters (activations, dropout, containers) are missing, typically 64-768 bytes: "
        "give model.modules for the exact size");
  // torchao low-bit states are tensor subclasses: torch.save pickles each one through
  // Tensor.__reduce_ex__ (_rebuild_wrapper_subclass plus its __dict__: codes, scale, qmap as
  // their own storages; torch/_tensor.py), a pickle this container model does not write
  bool subclass_pickle = false;
  if (r.format == vocab::CheckpointFormat::torch && r.include_optimizer &&
      is_torchao_low_bit(r.opt))
    for (const auto& st : states)
      for (const auto& e : st)
        if (std::strstr(e.name, ".codes")) subclass_pickle = true;
  if (subclass_pickle)
    notes.push_back(
        "not exact: torchao's quantised states are tensor subclasses; their storages (codes, "
        "scale, qmap) are counted exactly, the pickle that rebuilds each subclass is approximated "
        "by plain tensor entries");
  put(out, "exact", !count_only && !modules_guessed && !subclass_pickle);
  put(out, "notes", notes);
  put(out, "formula",
      r.format == vocab::CheckpointFormat::raw
          ? "sum of tensor storages: weights + buffers + optimizer state"
      : r.format == vocab::CheckpointFormat::torch
          ? "torch.save zip: records aligned to 64 bytes + "
            "pickle + zip directory (torch 1.13 layout)"
          : "safetensors: 8 + header (padded to 8) + data");
  return out;
}

}  // namespace trainmem
