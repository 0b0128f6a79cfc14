// Checkpoint size: the exact bytes of a checkpoint from the model's tensors, the optimizer's
// real state layout (optimizer.cpp) and the container format (checkpoint_format_*.cpp), with
// the usual rule of thumb (params x copies x bytes per copy) beside it.
#include "trainmem/checkpoint_size.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainmem/checkpoint_format.hpp"
#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/vocabulary.hpp"
#include "util/checked.hpp"  // checked_add, checked_mul

namespace trainmem {
namespace {

using Category = CheckpointCategory;
using vocab::CheckpointFormat;
using vocab::Optimizer;

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16 ||
         t == DType::fp8;
}

bool is_adafactor(const OptimizerSpec& o) {
  return o.type == Optimizer::adafactor || o.type == Optimizer::torch_adafactor;
}

struct Stored {  // one storage of the checkpoint (no strings: a 70B model has ~2,900)
  Category category;
  const char* state;  // state name for optimizer entries (a literal of optimizer.cpp)
  uint64_t bytes = 0;
  uint64_t numel = 0;
};

// The rule of thumb: params x copies x bytes per copy.
SimpleCheckpoint simple_formula(const CheckpointRequest& r) {
  const uint64_t n = r.model.params;
  const DType state = r.has_state_dtype ? r.state : (r.master ? DType::fp32 : r.weight);
  SimpleCheckpoint s;
  s.weights = dtype_bytes_for(r.weight, n);
  s.master_weights = r.master ? dtype_bytes_for(DType::fp32, n) : 0;
  const uint32_t copies = r.include_optimizer ? simple_state_copies(r.opt) : 0;
  // 8-bit Adam: two 1-byte moments per parameter (Transformer Math 101: 8-bit Adam 2 B/param
  // of moments + the fp32 master copy in mixed precision).
  // torchao low-bit AdamW (torchao/optim): 1-byte codes (8-bit, fp8); the 4-bit pair is one byte
  const DType copy_dtype = has_byte_states(r.opt) ? DType::uint8 : state;
  s.optimizer_state = checked_mul(copies, dtype_bytes_for(copy_dtype, n), "model.params");
  s.total_bytes = checked_add(checked_add(s.weights, s.master_weights, "model.params"),
                              s.optimizer_state, "model.params");
  s.copies = 1 + copies + (r.master ? 1 : 0);
  s.bytes_per_param = n ? static_cast<double>(s.total_bytes) / static_cast<double>(n) : 0.0;
  s.factored = is_adafactor(r.opt);
  return s;
}

// A count is one flat tensor: per-tensor scalars (Adam `step`, Adafactor factors, the pickle's
// per-tensor entries) cannot be known without the tensor list.
void model_from_count(CheckpointRequest* r, std::vector<Text>* notes) {
  ModelDescription& m = r->model;
  TensorSpec t;
  t.name = "params";
  t.shape = {m.params};
  t.dtype = r->weight;
  m.tensors.push_back(t);
  m.module_count = 1;
  notes->push_back(Text("size.note.count", {}));
}

// The storages of one checkpoint and the views the container formats read. Holds pointers into
// the request's model and into `states`: it lives as long as the computation.
class Layout {
 public:
  Layout(const CheckpointRequest& r, bool count_only, std::vector<Text>* notes)
      : r_(r), m_(r.model), count_only_(count_only), notes_(notes) {}

  std::vector<Stored> stored;
  TorchSaveInput in;
  std::vector<SafetensorsEntry> st_entries;
  std::vector<std::vector<StateTensor>> states;

  void build() {
    storages_.reserve(m_.tensors.size() * 6 + m_.buffers.size() + 2);
    stored.reserve(storages_.capacity());
    in.file_name = r_.file_name;
    in.module_count = m_.module_count ? m_.module_count : 1;
    in.module_name_bytes = m_.module_name_bytes;
    in.wrap = r_.include_optimizer;
    in.has_optimizer = r_.include_optimizer;
    model_tensors();
    if (r_.include_optimizer) {
      optimizer_states();
    } else if (r_.master) {
      for (const TensorSpec& t : m_.tensors)
        if (t.tied_to.empty() && t.trainable)
          add_storage(DType::fp32, t.numel(), Category::master_weights, "fp32_master");
      notes_->push_back(Text("size.note.masterOnly", {}));
    }
    in.storages = std::move(storages_);
  }

 private:
  const CheckpointRequest& r_;
  const ModelDescription& m_;
  const bool count_only_;
  std::vector<Text>* notes_;
  std::vector<StorageInfo> storages_;
  std::vector<DType> eff_;  // each tensor's dtype in the file

  int64_t add_storage(DType dt, uint64_t numel, Category cat, const char* state) {
    StorageInfo s;
    s.dtype = dt;
    s.numel = numel;
    s.bytes = dtype_bytes_for(dt, numel);
    storages_.push_back(s);
    stored.push_back({cat, state ? state : "", s.bytes, numel});
    return static_cast<int64_t>(storages_.size() - 1);
  }

  // Weights (tied tensors share their target's storage) and persistent buffers, in
  // state_dict() order.
  void model_tensors() {
    std::map<std::string, int64_t> storage_of;  // tied-to target name -> storage
    for (const auto& t : m_.tensors)
      if (!t.tied_to.empty()) storage_of[t.tied_to] = -1;
    in.model.reserve(m_.tensors.size() + m_.buffers.size());
    eff_.resize(m_.tensors.size());
    st_entries.reserve(m_.tensors.size() + m_.buffers.size());
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const TensorSpec& t = m_.tensors[i];
      eff_[i] = r_.has_weight_dtype && is_float(t.dtype) ? r_.weight : t.dtype;
      int64_t sid;
      if (t.tied_to.empty()) {
        sid = add_storage(eff_[i], t.numel(), Category::weights, nullptr);
        auto it = storage_of.find(t.name);  // only names that something ties to
        if (it != storage_of.end()) it->second = sid;
        st_entries.push_back({&t.name, &t.shape, eff_[i]});
      } else {
        sid = storage_of.at(t.tied_to);
      }
      in.model.push_back({&t.name, &t.shape, eff_[i], sid});
    }
    for (const auto& b : m_.buffers) {
      if (!b.persistent) continue;  // not in state_dict()
      // module.to(dtype) casts floating buffers; integer counters keep their dtype.
      const DType dt = r_.has_weight_dtype && is_float(b.dtype) ? r_.weight : b.dtype;
      const int64_t sid = add_storage(dt, b.numel(), Category::buffers, nullptr);
      in.model.push_back({&b.name, &b.shape, dt, sid});
      st_entries.push_back({&b.name, &b.shape, dt});
    }
  }

  // One trainable parameter's state entries (plus its fp32 master copy).
  std::vector<StateTensor> param_state(const TensorSpec& t, DType eff, TensorSpec* p) {
    const DType state_dtype = r_.has_state_dtype ? r_.state : (r_.master ? DType::fp32 : eff);
    *p = t;  // reuses the scratch tensor's buffers
    p->dtype = eff;
    if (count_only_ && is_adafactor(r_.opt)) {  // a square-ish matrix estimate
      const uint64_t rows = static_cast<uint64_t>(std::ceil(std::sqrt(double(t.numel()))));
      p->shape = {rows, (t.numel() + rows - 1) / rows};
      notes_->push_back(Text("size.note.adafactorCount", {}));
    }
    std::vector<StateTensor> s = optimizer_state(r_.opt, *p, state_dtype);
    if (count_only_) {  // no per-tensor scalars for a bare count (the rule of thumb's parity)
      std::vector<StateTensor> kept;
      for (auto& e : s)
        if (!(e.kind == StateKind::tensor && e.shape.empty()) && e.kind != StateKind::python_int)
          kept.push_back(e);
      s.swap(kept);
    }
    if (r_.master) {
      StateTensor mw;
      mw.name = "fp32_master";
      mw.shape = t.shape;
      mw.dtype = DType::fp32;
      s.push_back(mw);
    }
    return s;
  }

  // Optimizer state, parameter by parameter (the order of model.parameters()), and the
  // storages of its tensors (shared quantisation maps once).
  void optimizer_states() {
    TensorSpec p;
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const TensorSpec& t = m_.tensors[i];
      if (!t.tied_to.empty() || !t.trainable) continue;
      states.push_back(param_state(t, eff_[i], &p));
    }
    in.optimizer_params = states.size();
    in.param_group = optimizer_param_group(r_.opt);
    in.optimizer_state.resize(states.size());
    int64_t qmap[2] = {-1, -1};
    for (size_t i = 0; i < states.size(); ++i) {
      for (const StateTensor& e : states[i]) {
        int64_t sid = -1;
        const bool is_master = std::strcmp(e.name, "fp32_master") == 0;
        if (e.kind == StateKind::tensor) {
          sid =
              add_storage(e.dtype, e.numel(),
                          is_master ? Category::master_weights : Category::optimizer_state, e.name);
        } else if (e.kind == StateKind::shared_tensor) {
          int64_t& q = qmap[std::strcmp(e.name, "qmap1") == 0 ? 0 : 1];
          if (q < 0) q = add_storage(e.dtype, e.numel(), Category::optimizer_state, e.name);
          sid = q;
        }
        in.optimizer_state[i].push_back({e.name, e.kind, &e.shape, e.dtype, sid});
      }
    }
  }
};

// Category totals and per-state totals of the raw payload; returns the payload.
uint64_t sum_storages(const std::vector<Stored>& stored, CheckpointResult* out) {
  // Summed in arrays (a handful of distinct states), then named.
  struct StateSum {
    const char* name;
    uint64_t bytes, numel;
  };
  std::vector<StateSum> sums;
  uint64_t payload = 0;
  for (const auto& s : stored) {
    uint64_t& cat = out->bytes(s.category);
    cat = checked_add(cat, s.bytes, "checkpoint");
    if (s.category == Category::optimizer_state) {
      size_t k = 0;
      while (k < sums.size() && std::strcmp(sums[k].name, s.state) != 0) ++k;
      if (k == sums.size()) sums.push_back({s.state, 0, 0});
      sums[k].bytes = checked_add(sums[k].bytes, s.bytes, "checkpoint");
      sums[k].numel = checked_add(sums[k].numel, s.numel, "checkpoint");
    }
    payload = checked_add(payload, s.bytes, "checkpoint");
  }
  for (const auto& e : sums) {
    out->state_bytes[e.name] = e.bytes;
    out->state_elements[e.name] = e.numel;
  }
  return payload;
}

// huggingface_hub split_torch_state_dict_into_shards: start a new shard when the next tensor
// would exceed the limit (a tensor larger than the limit gets its own shard).
std::vector<std::vector<SafetensorsEntry>> safetensors_shards(
    const std::vector<SafetensorsEntry>& entries, uint64_t max_shard_bytes) {
  std::vector<std::vector<SafetensorsEntry>> shards(1);
  uint64_t cur = 0;
  for (const auto& e : entries) {
    uint64_t numel = 1;
    for (uint64_t d : *e.shape) numel = checked_mul(numel, d, "model");
    const uint64_t n = dtype_bytes_for(e.dtype, numel);
    if (max_shard_bytes && !shards.back().empty() &&
        checked_add(cur, n, "model") > max_shard_bytes) {
      shards.emplace_back();
      cur = 0;
    }
    shards.back().push_back(e);
    cur = checked_add(cur, n, "model");
  }
  return shards;
}

// Weights and persistent buffers only (tied tensors once), in one file or in shards.
void safetensors_files(const CheckpointRequest& r, const std::vector<SafetensorsEntry>& entries,
                       CheckpointResult* out) {
  const auto shards = safetensors_shards(entries, r.max_shard_bytes);
  out->total_bytes = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ContainerSize c = safetensors_size(shards[i], true);
    out->total_bytes = checked_add(out->total_bytes, c.file_bytes, "checkpoint");
    out->container.pickle_bytes += c.pickle_bytes;
    out->container.padding_bytes += c.padding_bytes;
    out->container.overhead_bytes += c.overhead_bytes;
    CheckpointFile file;
    file.bytes = c.file_bytes;
    if (shards.size() == 1) {
      file.name = r.file_name;
    } else {
      char name[96];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      file.name = name;
      file.sharded = true;
      file.tensors = c.records;
    }
    out->files.push_back(std::move(file));
  }
  if (shards.size() > 1) out->notes.push_back(Text("size.note.shardIndex", {}));
  out->shards = shards.size();
  out->bytes(Category::optimizer_state) = 0;
  out->bytes(Category::master_weights) = 0;
}

// torchao low-bit states are tensor subclasses: torch.save pickles each one through
// Tensor.__reduce_ex__ (_rebuild_wrapper_subclass plus its __dict__: codes, scale, qmap as
// their own storages; torch/_tensor.py), a pickle this container model does not write.
bool has_subclass_pickle(const CheckpointRequest& r,
                         const std::vector<std::vector<StateTensor>>& states) {
  if (r.format != CheckpointFormat::torch || !r.include_optimizer || !is_torchao_low_bit(r.opt))
    return false;
  for (const auto& st : states)
    for (const auto& e : st)
      if (std::strstr(e.name, ".codes")) return true;
  return false;
}

// Whether the total is exact, with a note for each reason it is not.
bool exactness(const CheckpointRequest& r, bool count_only,
               const std::vector<std::vector<StateTensor>>& states, std::vector<Text>* notes) {
  // torch.save pickles state_dict()._metadata, one entry per module (torch/nn/modules/
  // module.py state_dict): modules inferred from tensor names miss the parameterless ones
  const bool modules_guessed = r.format == CheckpointFormat::torch && r.model.modules_inferred;
  if (modules_guessed) notes->push_back(Text("size.note.modulesInferred", {}));
  const bool subclass_pickle = has_subclass_pickle(r, states);
  if (subclass_pickle) notes->push_back(Text("size.note.torchaoSubclass", {}));
  return !count_only && !modules_guessed && !subclass_pickle;
}

}  // namespace

CheckpointResult checkpoint_size(CheckpointRequest r) {
  CheckpointResult out;
  const bool count_only = !r.model.has_tensors();
  out.notes = r.model.assumptions;  // e.g. a generic recipe's approximation
  if (count_only) model_from_count(&r, &out.notes);
  if (!r.has_weight_dtype) r.weight = r.model.tensors.front().dtype;

  Layout lay(r, count_only, &out.notes);
  lay.build();
  const uint64_t payload = sum_storages(lay.stored, &out);
  out.total_bytes = payload;
  if (r.format == CheckpointFormat::torch) {
    out.container = torch_save_size(lay.in);
    out.total_bytes = out.container.file_bytes;
    out.files.push_back({r.file_name, out.total_bytes, 0, false});
  } else if (r.format == CheckpointFormat::safetensors) {
    safetensors_files(r, lay.st_entries, &out);
  }
  const uint64_t counted = r.format == CheckpointFormat::safetensors
                               ? out.bytes(Category::weights) + out.bytes(Category::buffers)
                               : payload;
  out.container_bytes = out.total_bytes - counted;
  if (r.format == CheckpointFormat::safetensors) {
    out.state_bytes.clear();
    out.state_elements.clear();
  }
  out.format = r.format;
  out.params = r.model.params;
  out.trainable_params = r.model.trainable_params;
  out.bytes_per_param =
      r.model.params ? static_cast<double>(out.total_bytes) / static_cast<double>(r.model.params)
                     : 0.0;
  out.include_optimizer = r.include_optimizer;
  out.opt = r.opt;
  out.weight_dtype = r.weight;
  out.simple = simple_formula(r);
  out.exact = exactness(r, count_only, lay.states, &out.notes);
  return out;
}

}  // namespace trainmem
