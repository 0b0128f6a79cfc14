// peakMemory request: strict parsing (every field named in errors, one reader per group of
// fields) and presets (runtime profiles, GPUs as data under cpp/data/). The result JSON:
// peak_json.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "io/device_presets.hpp"
#include "io/diffusion_request.hpp"
#include "io/embedded_data.hpp"
#include "io/json_fields.hpp"
#include "io/model_json.hpp"
#include "io/net_request.hpp"
#include "io/optimizer_json.hpp"
#include "io/parallel_request.hpp"
#include "io/peak_json.hpp"
#include "io/pipeline_request.hpp"
#include "io/request.hpp"
#include "trainmem/error.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/peak_memory.hpp"
#include "trainmem/traced_model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace peak {
namespace {

using limits::kMaxRanks;

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> n = vocab::names(vocab::kStrategies);
  return n;
}

// "selective" names two different things (Megatron's attention recompute, torchtitan's op
// level): it is refused with both names instead of guessing.
void refuse_plain_selective(const json& v, const std::string& field) {
  if (v.is_string() && v.get<std::string>() == "selective")
    fail(code::kUnknownValue, field, Message{"error.checkpointing.selective", {{"field", field}}});
}

Checkpointing parse_checkpointing(const Obj& req) {
  Checkpointing c;
  if (!req.has("checkpointing")) return c;
  const json& raw = req.raw("checkpointing");
  if (raw.is_string()) {
    refuse_plain_selective(raw, "checkpointing");
    c.strategy =
        vocab::find(vocab::kStrategies, req.one_of("checkpointing", strategy_names()))->value;
  } else {
    const Obj o = req.obj("checkpointing");
    if (o.has("strategy")) refuse_plain_selective(o.raw("strategy"), o.field("strategy"));
    c.strategy = vocab::find(vocab::kStrategies, o.one_of("strategy", strategy_names()))->value;
    for (const char* key : {"k", "segments", "snapshots", "budgetBytes", "slots", "checkpointed",
                            "saveOps", "everyOtherMm"})
      only_for(o, key, c.strategy, false);
    if (c.strategy == vocab::Strategy::selective_op) {
      // torch.utils.checkpoint.create_selective_checkpoint_contexts(policy_fn_or_list): the
      // outputs of the listed ops are saved (MUST_SAVE), every other op is recomputed
      const json& ops = o.array("saveOps", 64);
      for (size_t i = 0; i < ops.size(); ++i) {
        const std::string p = index_path(o.field("saveOps"), i);
        const std::string name = read_str(ops[i], p, 64);
        const auto& known = activations::sac_op_names();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          const std::string near = closest_match(name, known);
          std::string list;
          for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
          fail(code::kUnknownValue, p,
               near.empty()
                   ? Message{"error.op.unknown", {{"op", name}, {"field", p}, {"known", list}}}
                   : Message{"error.op.unknownNear",
                             {{"op", name}, {"field", p}, {"known", list}, {"near", near}}});
        }
        c.save.ops.push_back(name);
      }
      c.save.every_other_mm = o.boolean_or("everyOtherMm", false);
    }
    if (c.strategy == vocab::Strategy::selective_layer)
      c.layer_every = static_cast<uint32_t>(o.u64_or("k", 2, 1, 1u << 20));
    if (c.strategy != vocab::Strategy::selective_layer)
      c.placement.k = static_cast<uint32_t>(o.u64_or("k", 0, 1, 1u << 20));
    c.placement.segments = static_cast<uint32_t>(o.u64_or("segments", 0, 1, 1u << 20));
    c.placement.snapshots = static_cast<uint32_t>(o.u64_or("snapshots", 0, 1, 1u << 20));
    c.placement.budget_bytes = o.u64_or("budgetBytes", 0, 1);
    c.placement.slots = static_cast<uint32_t>(o.u64_or("slots", 500, 2, 100000));
    if (o.has("checkpointed")) {
      const json& arr = o.array("checkpointed", 100000);
      for (size_t i = 0; i < arr.size(); ++i) {
        const std::string p = index_path(o.field("checkpointed"), i);
        if (!arr[i].is_array() || arr[i].size() != 2)
          fail(code::kInvalidType, p, Message{"error.segment.pair", {{"field", p}}});
        placement::Segment s;
        s.first = static_cast<uint32_t>(read_u64(arr[i][0], p + "[0]", 0, 1u << 30));
        s.last = static_cast<uint32_t>(read_u64(arr[i][1], p + "[1]", s.first, 1u << 30));
        c.placement.manual.push_back(s);
      }
    }
    o.finish();
  }
  if (c.strategy == vocab::Strategy::every_k && c.placement.k == 0) c.placement.k = 1;
  if (c.strategy == vocab::Strategy::torchtitan_op) {
    // torchtitan/models/llama3/infra/parallelize.py _op_sac_save_list (aten.mm and the SDPA
    // kernels; reduce_scatter and max need tensor parallel / float8) with its every-second-mm
    // rule (torchtitan/distributed/activation_checkpoint.py at cfb93265)
    c.save.ops = {"mm", "sdpa"};
    c.save.every_other_mm = true;
  }
  c.placement.strategy = c.strategy;
  return c;
}

// PYTORCH_CUDA_ALLOC_CONF, as an object or as the environment variable's text
// ("expandable_segments:True,max_split_size_mb:128"); c10/cuda/CUDAAllocatorConfig.cpp parseArgs.
struct AllocatorOption {
  std::string key;
  json value;
};

std::vector<AllocatorOption> allocator_options(const Obj& req) {
  std::vector<AllocatorOption> out;
  const json& raw = req.raw("allocator");
  if (raw.is_string()) {
    const std::string text = req.str("allocator", 1024);
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t end = std::min(text.find(',', pos), text.size());
      const std::string item = text.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      const size_t colon = item.find(':');
      if (colon == std::string::npos)
        fail(code::kInvalidType, "allocator",
             Message{"error.allocator.keyValue", {{"item", item.substr(0, 64)}}});
      const std::string key = item.substr(0, colon), v = item.substr(colon + 1);
      json value;
      if (v == "True" || v == "False")
        value = v == "True";
      else if (v == "unlimited")  // max_split_size_mb's own default
        value = nullptr;
      else {
        try {
          size_t used = 0;
          const double d = std::stod(v, &used);
          if (used != v.size()) throw std::invalid_argument(v);
          value = d;
        } catch (const std::exception&) {
          fail(code::kInvalidType, "allocator." + key.substr(0, 64),
               Message{"error.allocator.value",
                       {{"key", key.substr(0, 64)}, {"v", v.substr(0, 64)}}});
        }
      }
      out.push_back({key, value});
    }
    return out;
  }
  const Obj o = req.obj("allocator");
  for (auto it = raw.begin(); it != raw.end(); ++it) out.push_back({it.key(), *it});
  (void)o;
  return out;
}

double option_number(const AllocatorOption& o, double lo, double hi, const char* what) {
  const std::string field = "allocator." + o.key;
  if (!o.value.is_number())
    fail(code::kInvalidType, field, Message{"error.field.number", {{"field", field}}});
  const double v = o.value.get<double>();
  if (!(v >= lo && v <= hi))
    fail(code::kOutOfRange, field,
         Message{"error.field.mustBe", {{"field", field}}}.with("what", {Message{what, {}}}));
  return v;
}

allocator::Config parse_allocator(const Obj& req) {
  allocator::Config c;
  if (!req.has("allocator")) return c;
  static const std::vector<std::string> known = {"max_split_size_mb", "expandable_segments",
                                                 "garbage_collection_threshold",
                                                 "roundup_power2_divisions"};
  for (const auto& o : allocator_options(req)) {
    const std::string field = "allocator." + o.key.substr(0, 64);
    if (o.key == "max_split_size_mb") {
      if (o.value.is_null()) continue;  // "unlimited"
      // CUDAAllocatorConfig.cpp parseMaxSplitSize: must be > kLargeBuffer (20 MiB)
      const double mb = option_number(o, 21, 1 << 30, "error.mustBe.splitSize");
      if (mb != std::floor(mb))
        fail(code::kNotInteger, field, Message{"error.allocator.wholeMib", {{"field", field}}});
      c.max_split_size = static_cast<uint64_t>(mb) << 20;
    } else if (o.key == "expandable_segments") {
      if (!o.value.is_boolean())
        fail(code::kInvalidType, field, Message{"error.allocator.bool", {{"field", field}}});
      c.expandable_segments = o.value.get<bool>();
    } else if (o.key == "garbage_collection_threshold") {
      // parseGarbageCollectionThreshold: 0.0 < threshold < 1.0
      const double t = option_number(o, 0, 1, "error.mustBe.fraction");
      if (t <= 0 || t >= 1)
        fail(code::kOutOfRange, field, Message{"error.allocator.fraction", {{"field", field}}});
      c.garbage_collection_threshold = t;
    } else if (o.key == "roundup_power2_divisions") {
      // parseRoundUpPower2Divisions: a power of 2
      const double d = option_number(o, 0, 64, "error.mustBe.powerOf2");
      const uint64_t n = static_cast<uint64_t>(d);
      if (d != std::floor(d) || (n & (n - 1)) != 0)
        fail(code::kOutOfRange, field, Message{"error.allocator.power2", {{"field", field}}});
      c.roundup_power2_divisions = static_cast<uint32_t>(n);
    } else {
      const std::string near = closest_match(o.key, known);
      if (near.empty())
        fail(code::kUnknownKey, field,
             Message{"error.allocator.option", {{"option", o.key.substr(0, 64)}}});
      fail(code::kUnknownKey, field,
           Message{"error.allocator.optionNear", {{"key", o.key.substr(0, 64)}, {"near", near}}});
    }
  }
  return c;
}

}  // namespace

namespace {

// peakTflops: {"fp32", "tf32", "fp16", "bf16"} in TFLOP/s, null where the GPU has none.
DenseTflops dense_tflops(const json& p) {
  auto at = [&p](const char* key) {
    return json_has(p, key) && json_at(p, key).is_number() ? json_at(p, key).get<double>() : 0.0;
  };
  DenseTflops t;
  t.fp32 = at("fp32");
  t.tf32 = at("tf32");
  t.fp16 = at("fp16");
  t.bf16 = at("bf16");
  return t;
}

}  // namespace

Runtime runtime_profile(const std::string& id, const std::string& field) {
  const vocab::RuntimeTerm* term = vocab::find(vocab::kRuntimes, id);
  if (!term) {
    const std::string near = closest_match(id, runtime_ids());
    fail(code::kUnknownValue, field,
         near.empty() ? Message{"error.runtime.unknown", {{"id", id}}}
                      : Message{"error.runtime.unknownNear", {{"id", id}, {"near", near}}});
  }
  const json& j = embedded_json(std::string("runtime-") + term->file + ".json");
  Runtime r;
  r.id = id;
  r.name_code = json_at(j, "nameMessage").get<std::string>();
  r.context_bytes = json_at(j, "contextBytes").get<uint64_t>();
  // the data names the catalog's sentence (cpp/data/messages.json) by its code
  r.context_source = Text(json_at(j, "contextMessage").get<std::string>(), {});
  r.workspace_bytes = json_at(j, "workspaceBytes").get<uint64_t>();
  if (j.contains("workspaceMessage"))
    r.workspace_source = Text(json_at(j, "workspaceMessage").get<std::string>(), {});
  const std::string impl = json_at(j, "optimizerImplementation").get<std::string>();
  const vocab::OptimizerImplTerm* impl_term = vocab::find(vocab::kOptimizerImpls, impl);
  if (!impl_term)
    fail(code::kInternal, field, Message{"error.internal.runtimeOptimizer", {{"impl", impl}}});
  r.default_optimizer_implementation = impl_term->value;
  r.foreach_adam_lists = json_at(j, "foreachAdamLists").get<uint32_t>();
  r.input_buffer_in_place = json_at(j, "inputBufferInPlace").get<bool>();
  r.default_set_to_none = json_at(j, "zeroGradSetToNone").get<bool>();
  r.reentrant_checkpointing = json_at(j, "gradientCheckpointingReentrant").get<bool>();
  r.nccl_bytes = json_at(j, "ncclBytes").get<uint64_t>();
  r.default_attention = json_at(j, "defaultAttention").get<std::string>();
  r.traits.id = id;
  r.traits.dropout_mask_bytes = json_at(j, "dropoutMaskBytes").get<uint32_t>();
  r.traits.mean_saves_input = json_at(j, "meanSavesInput").get<bool>();
  r.traits.softmax_saves_input = json_at(j, "softmaxSavesInput").get<bool>();
  r.traits.norm_stats_fp32 = json_at(j, "normStatsFp32").get<bool>();
  r.traits.conv_backward_temp_outputs =
      static_cast<uint32_t>(json_value_or(j, "convolutionBackwardTemporaryOutputs", uint64_t(0)));
  if (json_has(j, "convolutionWeightGradScratch")) {
    const json& g = json_at(j, "convolutionWeightGradScratch");
    r.traits.conv_scratch_threads = json_at(g, "threads").get<uint32_t>();
    r.traits.conv_scratch_min_kernel = json_at(g, "minKernel").get<uint32_t>();
    r.traits.conv_scratch_weight_copies = json_at(g, "weightCopies").get<uint32_t>();
    r.traits.conv_scratch_align_bytes = json_at(g, "alignBytes").get<uint32_t>();
  }
  return r;
}

std::vector<std::string> runtime_ids() { return vocab::names(vocab::kRuntimes); }

std::vector<std::string> gpu_ids() {
  std::vector<std::string> ids;
  for (const auto& f : embedded_under("gpus/"))
    if (f.second->is_object() && json_has(*f.second, "id"))
      ids.push_back(json_at(*f.second, "id").get<std::string>());
  return ids;
}

Gpu gpu_preset(const std::string& id, const std::string& field) {
  for (const auto& f : embedded_under("gpus/")) {
    const json& j = *f.second;
    if (!j.is_object() || json_value_or(j, "id", "") != id) continue;
    Gpu g;
    g.id = id;
    g.name = json_value_or(j, "name", id);
    g.memory_bytes = json_at(j, "memoryBytes").get<uint64_t>();
    g.tflops = dense_tflops(json_value_or(j, "peakTflops", json::object()));
    g.compute_capability = json_value_or(j, "computeCapability", 0.0);
    g.memory_bandwidth = json_value_or(j, "memoryBandwidthBytesPerSecond", 0.0);
    g.source = json_value_or(j, "source", "");
    return g;
  }
  const std::string near = closest_match(id, gpu_ids());
  fail(code::kUnknownPreset, field,
       near.empty() ? Message{"error.gpu.unknown", {{"id", id}}}
                    : Message{"error.gpu.unknownNear", {{"id", id}, {"near", near}}});
}

namespace {

// fsdp.reshardAfterForward.blocks given as a list: one boolean per block unit, in order (FSDP2:
// fully_shard(block, reshard_after_forward=...) for each block). Its length is checked against
// the model's blocks where the units are built (peak_sharding.cpp check_fsdp_units).
void parse_fsdp_block_list(const Obj& o, Fsdp* d) {
  const json& a = o.array("blocks", 100000);
  const std::string field = o.field("blocks");
  if (a.empty()) fail(code::kOutOfRange, field, Message{"error.fsdp.blockList.empty", {}});
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_boolean())
      fail(code::kInvalidType, index_path(field, i),
           Message{"error.field.boolean", {{"field", index_path(field, i)}}});
    d->reshard_blocks.push_back(a[i].get<bool>() ? 1 : 0);
  }
  if (o.has("lastBlock"))
    fail(code::kInconsistent, o.field("lastBlock"), Message{"error.fsdp.lastBlockInList", {}});
  o.mark_used("lastBlock");
}

// fsdp.reshardAfterForward: a boolean for every block, or per unit {blocks (a boolean or one per
// block), lastBlock, root, embedding, head} (FSDP2: fully_shard per module; `embedding` / `head`
// given: those modules are units of their own, as torchtitan's apply_fsdp makes them). FSDP1
// ShardingStrategy: SHARD_GRAD_OP keeps the gathered parameters from the forward to the
// backward; FSDP2 (_fully_shard.py) says it with reshard_after_forward=False.
void parse_fsdp_reshard(const Obj& f, Fsdp* out) {
  Fsdp& d = *out;
  const bool strategy_keeps = d.strategy == vocab::FsdpStrategy::shard_grad_op;
  const char* field = "fsdp.reshardAfterForward";
  const bool per_unit = f.has("reshardAfterForward") && f.raw("reshardAfterForward").is_object();
  if (per_unit && d.version == 1)
    fail(code::kInconsistent, field, Message{"error.fsdp.reshardBoolean", {}});
  const Obj o = per_unit ? f.obj("reshardAfterForward") : f;
  const char* key = per_unit ? "blocks" : "reshardAfterForward";
  const bool listed = per_unit && o.has("blocks") && o.raw("blocks").is_array();
  if (listed) parse_fsdp_block_list(o, &d);
  const auto any_reshards = [&] {
    for (uint8_t b : d.reshard_blocks)
      if (b) return true;
    return false;
  };
  d.reshard_after_forward = listed ? any_reshards() : o.boolean_or(key, !strategy_keeps);
  if (o.has(key) && d.reshard_after_forward == strategy_keeps)
    fail(code::kInconsistent, o.field(key),
         Message{strategy_keeps ? "error.fsdp.shardGradOp" : "error.fsdp.reshardFalse", {}});
  d.reshard_last_block = d.reshard_after_forward;
  if (!per_unit) return;
  if (!listed) d.reshard_last_block = o.boolean_or("lastBlock", d.reshard_after_forward);
  d.reshard_root = o.boolean_or("root", false);
  d.embedding_unit = o.has("embedding");
  d.reshard_embedding = o.boolean_or("embedding", true);
  d.head_unit = o.has("head");
  d.reshard_head = o.boolean_or("head", true);
  o.finish();
}

// fsdp: {version, shardingStrategy, shardGroupSize, reshardAfterForward, prefetch,
// limitAllGathers, mixedPrecision: {paramDtype, reduceDtype}, cpuOffload}. Defaults and
// sources: the README row.
void parse_fsdp(const Obj& req, Request* out) {
  Request& r = *out;
  const Obj f = req.obj("fsdp");
  Fsdp& d = r.parallelism.fsdp;
  d.enabled = true;
  d.version = static_cast<uint32_t>(f.u64_or("version", 2, 1, 2));
  const std::string strategy =
      f.one_of_or("shardingStrategy", vocab::names(vocab::kFsdpStrategies), "FULL_SHARD");
  d.strategy = vocab::find(vocab::kFsdpStrategies, strategy)->value;
  if (d.strategy == vocab::FsdpStrategy::hybrid_shard) {
    if (!f.has("shardGroupSize"))
      fail(code::kMissingField, "fsdp.shardGroupSize", Message{"error.fsdp.group", {}});
    d.shard_degree = f.u64_or("shardGroupSize", 1, 1, kMaxRanks);
    if (r.parallelism.data % d.shard_degree != 0)
      fail(code::kInconsistent, "fsdp.shardGroupSize",
           Message{"error.fsdp.groupDivides",
                   {{"group", std::to_string(d.shard_degree)},
                    {"ranks", std::to_string(r.parallelism.data)}}});
  } else {
    if (f.has("shardGroupSize"))
      fail(code::kInconsistent, "fsdp.shardGroupSize", Message{"error.fsdp.groupHybrid", {}});
    d.shard_degree = d.strategy == vocab::FsdpStrategy::no_shard ? 1 : r.parallelism.data;
  }
  parse_fsdp_reshard(f, &d);
  d.prefetch = f.u64_or("prefetch", 1, 0, 64);
  // FSDP1 FullyShardedDataParallel(limit_all_gathers=True) (fully_sharded_data_parallel.py)
  if (f.has("limitAllGathers") && d.version != 1)
    fail(code::kInconsistent, "fsdp.limitAllGathers", Message{"error.fsdp.limitAllGathers", {}});
  d.limit_all_gathers = f.boolean_or("limitAllGathers", true);
  if (f.has("mixedPrecision")) {
    const Obj mp = f.obj("mixedPrecision");
    auto width = [&](const char* key) -> uint64_t {
      if (!mp.has(key)) return 0;
      const std::string v = mp.one_of_or(key, {"fp32", "bf16", "fp16"}, "fp32");
      if (std::string(key) == "paramDtype") parse_dtype(v, &d.param_dtype);
      return v == "fp32" ? 4 : 2;
    };
    d.param_bytes = width("paramDtype");
    d.reduce_bytes = width("reduceDtype");
    mp.finish();
  }
  d.cpu_offload = f.boolean_or("cpuOffload", false);
  f.finish();
  if (r.parallelism.zero.stage > 0)
    fail(code::kInconsistent, "fsdp", Message{"error.fsdp.zero", {}});
  if (req.has("ddp")) fail(code::kInconsistent, "fsdp", Message{"error.fsdp.ddp", {}});
  if (r.features.optimizer_in_backward)
    fail(code::kUnsupported, "optimizerInBackward", Message{"error.inBackward.fsdp", {}});
  if (r.model.is_mlp) fail(code::kUnsupported, "fsdp", Message{"error.fsdp.transformer", {}});
}

// mlp: {sizes, activation, bias} (an MLP chain), or model (a preset, a config or tensors).
void read_model(const Obj& req, Request* out) {
  Request& r = *out;
  if (!req.has("mlp")) {
    const Obj model = req.obj("model");
    r.model.shared = model.has("pipeline") ? read_pipeline(model) : parse_model_shared(model);
    return;
  }
  if (req.has("model")) fail(code::kInconsistent, "mlp", Message{"error.model.orMlp", {}});
  const Obj m = req.obj("mlp");
  const json& sizes = m.array("sizes", 10000);
  if (sizes.size() < 2) fail(code::kOutOfRange, m.field("sizes"), Message{"error.mlp.sizes", {}});
  for (size_t i = 0; i < sizes.size(); ++i)
    r.model.mlp.sizes.push_back(read_u64(sizes[i], index_path(m.field("sizes"), i), 1, 1ULL << 32));
  r.model.mlp.activation = m.one_of_or("activation", vocab::names(vocab::kMlpActivations), "relu");
  r.model.mlp.bias = m.boolean_or("bias", true);
  m.finish();
  r.model.is_mlp = true;
}

// E[max of b samples drawn without replacement] over the sorted lengths l_1 <= .. <= l_n:
// P(max = l_k) = C(k-1, b-1) / C(n, b); w_n = b / n, w_(k-1) = w_k (k - b) / (k - 1)
double expected_longest(const std::vector<uint64_t>& sorted, uint64_t micro_batch) {
  const double n = static_cast<double>(sorted.size()), b = static_cast<double>(micro_batch);
  double wk = b / n, e = 0;
  for (size_t k = sorted.size(); k >= micro_batch && wk > 0; --k) {
    e += wk * static_cast<double>(sorted[k - 1]);
    if (k <= 1) break;
    wk *= (static_cast<double>(k) - b) / (static_cast<double>(k) - 1);
  }
  return e;
}

// samples.lengths: padded batches; each length above seqLen is truncated to it.
void read_sample_lengths(const Obj& sm, Request* out) {
  Request& r = *out;
  const json& a = sm.array("lengths", 1000000);
  if (a.size() < r.training.micro_batch)
    fail(code::kOutOfRange, "samples.lengths",
         Message{"error.samples.few",
                 {{"count", std::to_string(a.size())},
                  {"micro", std::to_string(r.training.micro_batch)}}});
  std::vector<uint64_t> len;
  len.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t v = read_u64(a[i], index_path(sm.field("lengths"), i), 1, limits::kMaxSeqLen);
    if (v > r.training.seq_len) {
      v = r.training.seq_len;  // the tokenizer's max_seq_len truncates
      ++r.training.samples.truncated;
    }
    len.push_back(v);
  }
  std::sort(len.begin(), len.end());
  r.training.samples.count = len.size();
  r.training.samples.longest = len.back();
  double sum = 0;
  for (uint64_t v : len) sum += static_cast<double>(v);
  r.training.samples.mean_length = sum / static_cast<double>(len.size());
  r.training.samples.expected_padded = expected_longest(len, r.training.micro_batch);
  r.training.seq_len =
      r.training.samples.longest;  // the micro-batch holding the longest sample: the peak
}

// samples: {packed} or {lengths}, how the rows of a micro-batch are filled.
void read_samples(const Obj& req, Request* out) {
  Request& r = *out;
  const Obj sm = req.obj("samples");
  r.training.samples.given = true;
  r.training.samples.packed = sm.boolean_or("packed", false);
  if (r.model.is_mlp) fail(code::kUnsupported, "samples", Message{"error.samples.tokens", {}});
  if (r.training.samples.packed && sm.has("lengths"))
    fail(code::kInconsistent, "samples.lengths", Message{"error.samples.both", {}});
  if (sm.has("lengths"))
    read_sample_lengths(sm, &r);
  else if (!r.training.samples.packed)
    fail(code::kMissingField, "samples", Message{"error.samples.kind", {}});
  sm.finish();
}

// A traced model's length: seqLen when its inputs have one (the traced length by default);
// none otherwise.
uint64_t trace_seq_len(const Obj& req, const traced::Trace& t) {
  if (t.has_seq) return req.u64_or("seqLen", t.seq, 1, limits::kMaxSeqLen);
  if (req.has("seqLen")) fail(code::kInconsistent, "seqLen", Message{"error.trace.seqLen", {}});
  return 1;
}

// microBatch, seqLen, samples and targetLen: the shape of one micro-batch.
void read_lengths(const Obj& req, Request* out) {
  Request& r = *out;
  r.training.micro_batch = req.u64("microBatch", 1, limits::kMaxMicroBatch);
  r.training.seq_len = 1;
  // a traced model: its own length (io/trace_json.cpp); a diffusion network: imageSize, seqLen
  // as its text tokens (io/diffusion_request.cpp); a vision or speech network: its own fields
  // (io/net_request.cpp)
  const bool traced = !r.model.is_mlp && r.model.description().trace;
  const bool diffusion = !r.model.is_mlp && !traced &&
                         read_diffusion_fields(req, &r.model.shared, &r.training.seq_len);
  const bool net =
      !r.model.is_mlp && !traced && !diffusion &&
      read_net_fields(req, &r.model.shared, &r.training.seq_len, &r.training.target_len);
  const bool count_only =
      !r.model.is_mlp && !traced && !net && !diffusion && !r.model.description().has_architecture();
  if (traced) {
    r.training.seq_len = trace_seq_len(req, *r.model.description().trace);
  } else if (diffusion || net) {
    // (read above)
  } else if (count_only) {  // a parameter count: no shapes, seqLen changes nothing
    r.training.seq_len = req.u64_or("seqLen", 1, 1, limits::kMaxSeqLen);
  } else if (!r.model.is_mlp) {
    r.training.seq_len = req.u64("seqLen", 1, limits::kMaxSeqLen);
    const uint64_t maxpos = r.model.description().arch.max_positions;
    if (maxpos > 0 && r.training.seq_len > maxpos)
      fail(code::kOutOfRange, "seqLen",
           Message{
               "error.seqLen.positions",
               {{"seqLen", std::to_string(r.training.seq_len)}, {"max", std::to_string(maxpos)}}});
  }
  if (req.has("samples")) read_samples(req, &r);
  if (req.has("targetLen") && !net) {
    // T5ForConditionalGeneration: input_ids (the encoder, seqLen) and labels (the decoder)
    // have their own lengths (modeling_t5.py forward)
    r.training.target_len = req.u64("targetLen", 1, limits::kMaxSeqLen);
    if (r.model.is_mlp || r.model.description().arch.encoder_layers == 0)
      fail(code::kInconsistent, "targetLen", Message{"error.targetLen", {}});
  }
}

// precision, optimizer and checkpointing.
void read_training(const Obj& req, Request* out) {
  Request& r = *out;
  const std::string prec = req.one_of_or("precision", activations::precision_names(), "fp32");
  activations::parse_precision(prec, &r.training.precision);
  if (req.has("optimizer")) r.training.optimizer = parse_optimizer(req, "optimizer");
  r.training.checkpointing = parse_checkpointing(req);
  const vocab::Strategy kind = r.training.checkpointing.strategy;
  const std::string cs = vocab::name_of(kind);
  if (r.model.is_mlp && (kind == vocab::Strategy::attention_recompute || vocab::op_level(kind) ||
                         kind == vocab::Strategy::selective_layer))
    fail(code::kInconsistent, "checkpointing",
         Message{"error.checkpointing.transformer", {{"cs", cs}}});
}

// gradientAccumulationSteps, zeroStage, dataParallel, offload, tensorParallel, sequenceParallel.
void read_parallelism(const Obj& req, Request* out) {
  Request& r = *out;
  r.training.accumulation_steps =
      req.u64_or("gradientAccumulationSteps", 1, 1, limits::kMaxAccumulationSteps);
  r.parallelism.zero.stage = static_cast<uint32_t>(req.u64_or("zeroStage", 0, 0, 3));
  r.parallelism.data = req.u64_or("dataParallel", 1, 1, kMaxRanks);
  if (req.has("offload")) {
    const Obj o = req.obj("offload");
    r.parallelism.zero.offload_optimizer = o.boolean_or("optimizer", false);
    r.parallelism.zero.offload_params = o.boolean_or("params", false);
    o.finish();
    if (r.parallelism.zero.offload_optimizer && r.parallelism.zero.stage == 0)
      fail(code::kInconsistent, "offload.optimizer", Message{"error.offload.optimizer", {}});
    if (r.parallelism.zero.offload_params && r.parallelism.zero.stage != 3)
      fail(code::kInconsistent, "offload.params", Message{"error.offload.params", {}});
  }
  // torch.distributed.optim.ZeroRedundancyOptimizer under DDP: each rank keeps the state of the
  // parameters assigned to it
  r.parallelism.ddp.zero_redundancy_optimizer = req.boolean_or("zeroRedundancyOptimizer", false);
  if (r.parallelism.ddp.zero_redundancy_optimizer &&
      (r.parallelism.data < 2 || r.parallelism.zero.stage > 0 || req.has("fsdp")))
    fail(code::kInconsistent, "zeroRedundancyOptimizer", Message{"error.zeroRedundancy", {}});
  r.parallelism.tensor = req.u64_or("tensorParallel", 1, 1, 4096);
  r.parallelism.sequence = req.boolean_or("sequenceParallel", false);
  if (r.parallelism.sequence && r.parallelism.tensor == 1)
    fail(code::kInconsistent, "sequenceParallel", Message{"error.sequenceParallel", {}});
  if (!r.model.is_mlp && r.parallelism.tensor > 1 && r.model.description().arch.heads > 0 &&
      r.model.description().arch.heads % r.parallelism.tensor != 0)
    fail(code::kInconsistent, "tensorParallel",
         Message{"error.tensorParallel.heads",
                 {{"tp", std::to_string(r.parallelism.tensor)},
                  {"heads", std::to_string(r.model.description().arch.heads)}}});
}

// pipelineParallel, schedule, virtualStages, stageBlocks (parallel.hpp).
void read_pipeline(const Obj& req, Request* out) {
  PipelineParallel& pp = out->parallelism.pipeline;
  pp.stages = req.u64_or("pipelineParallel", 1, 1, 1024);
  const std::string name =
      req.one_of_or("schedule", vocab::names(vocab::kPipelineSchedules), "1f1b");
  pp.schedule = vocab::find(vocab::kPipelineSchedules, name)->value;
  const bool interleaved = pp.schedule == vocab::PipelineSchedule::interleaved;
  pp.virtual_stages = req.u64_or("virtualStages", interleaved ? 2 : 1, 1, 64);
  if (req.has("stageBlocks")) {
    const json& a = req.array("stageBlocks", 4096);
    for (size_t i = 0; i < a.size(); ++i)
      pp.blocks_per_stage.push_back(read_u64(a[i], index_path(req.field("stageBlocks"), i), 0));
  }
  if (pp.stages == 1 && (req.has("schedule") || req.has("virtualStages") || req.has("stageBlocks")))
    fail(code::kInconsistent, req.has("schedule") ? "schedule" : "virtualStages",
         Message{"error.pipeline.needsStages", {}});
  if (req.has("virtualStages") && !interleaved)
    fail(code::kInconsistent, "virtualStages", Message{"error.pipeline.virtualStages", {}});
  if (interleaved && pp.virtual_stages < 2)
    fail(code::kOutOfRange, "virtualStages", Message{"error.pipeline.virtualStagesMin", {}});
}

// lora: {rank, qlora, dropout, targetModules, baseDtype, autocastAdapterDtype}.
void read_lora(const Obj& req, Request* out) {
  Request& r = *out;
  const Obj l = req.obj("lora");
  r.model.lora.enabled = true;
  r.model.lora.rank = l.u64_or("rank", 8, 1, 65536);
  r.model.lora.qlora = l.boolean_or("qlora", false);
  r.model.lora.dropout = l.num_or("dropout", 0.05, 0.0, 1.0);
  if (l.has("baseDtype")) {
    r.model.lora.base_dtype_set = true;
    parse_dtype(l.one_of("baseDtype", {"fp32", "bf16", "fp16"}), &r.model.lora.base_dtype);
  }
  r.model.lora.adapters_fp32 = l.boolean_or("autocastAdapterDtype", true);
  // PEFT LoraConfig.target_modules: a list of names, or the string "all-linear"
  // (INCLUDE_LINEAR_LAYERS_SHORTHAND, peft/utils/constants.py); PEFT lower-cases it.
  if (l.has("targetModules") && l.raw("targetModules").is_string()) {
    std::string v = l.str("targetModules", 64);
    std::transform(v.begin(), v.end(), v.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (v != "all-linear")
      fail(code::kUnknownValue, "lora.targetModules", Message{"error.lora.targetsType", {}});
    r.model.lora.target_modules.push_back(v);
  } else if (l.has("targetModules")) {
    const json& t = l.array("targetModules", 64);
    if (t.empty())
      fail(code::kOutOfRange, "lora.targetModules", Message{"error.lora.targetsEmpty", {}});
    for (size_t i = 0; i < t.size(); ++i)
      r.model.lora.target_modules.push_back(
          read_str(t[i], index_path(l.field("targetModules"), i), 64));
  }
  l.finish();
  if (r.model.is_mlp || !(r.model.description().has_architecture() ||
                          r.model.description().diffusion || r.model.description().trace))
    fail(code::kUnsupported, "lora", Message{"error.lora.architecture", {}});
  if (r.model.lora.target_modules.empty())
    r.model.lora.target_modules = diffusion_lora_targets(r.model.description());
}

// The CUDA context the runtime's PyTorch line holds on this GPU (its contextBytesByGpu entry,
// measured or derived: cpp/data/runtime-*.json); a line without Hopper kernels is refused on a
// Hopper GPU.
void context_for_gpu(const Gpu& g, Request* out) {
  Request& r = *out;
  if (!r.runtime.profile.is_cuda()) return;
  const vocab::RuntimeTerm* term = vocab::find(vocab::kRuntimes, r.runtime.profile.id);
  const json& j = embedded_json(std::string("runtime-") + term->file + ".json");
  // torch 1.10 (cu102-cu113) and 1.13 (cu116/cu117) wheels carry no sm_90 code: Hopper needs
  // CUDA >= 11.8, PyTorch's cu118 wheels start at 2.0
  if (g.compute_capability >= 9.0 && j.value("contextNoSm90", false))
    fail(code::kUnsupported, "runtime",
         Message{"error.runtime.hopper", {{"id", r.runtime.profile.id}, {"id2", g.id}}});
  const auto by = j.find("contextBytesByGpu");
  if (by == j.end() || !by->contains(g.id)) {
    r.runtime.profile.context_source.then({"runtime.context.noGpu", {{"gpu", g.id}}});
    return;
  }
  const json& e = (*by)[g.id];
  r.runtime.profile.context_bytes = e.at("bytes").get<uint64_t>();
  // the entry names its catalog sentence: what was measured, or how it was derived
  r.runtime.profile.context_source = Text(e.at("message").get<std::string>(), {{"gpu", g.id}});
}

// attention, runtimeOverheadBytes, gpu or gpuMemoryBytes, optimizerImplementation and
// zeroGradSetToNone (the runtime's defaults). Returns the GPU's compute capability (0: no
// preset).
double read_device(const Obj& req, Request* out) {
  Request& r = *out;
  const char* def_attn = r.runtime.profile.default_attention.c_str();
  const std::string attn = req.one_of_or("attention", vocab::names(vocab::kAttention), def_attn);
  r.training.attention = vocab::find(vocab::kAttention, attn)->value;
  if (req.has("runtimeOverheadBytes")) {
    r.runtime.overhead_set = true;
    r.runtime.overhead_bytes = req.u64("runtimeOverheadBytes", 0, kMaxExactJson);
  }
  double gpu_capability = 0;
  if (req.has("gpu") && req.has("gpuMemoryBytes"))
    fail(code::kInconsistent, "gpuMemoryBytes", Message{"error.gpu.both", {}});
  if (req.has("gpu")) {
    const Gpu g = gpu_preset(req.str("gpu", 64), "gpu");
    r.runtime.gpu_id = g.id;
    r.runtime.gpu_memory_bytes = g.memory_bytes;
    r.runtime.gpu_bf16 = g.tflops.bf16 > 0;
    gpu_capability = g.compute_capability;
    context_for_gpu(g, &r);
  } else if (req.has("gpuMemoryBytes")) {
    r.runtime.gpu_memory_bytes = req.u64("gpuMemoryBytes", 1, kMaxExactJson);
  }
  const std::string impl = req.one_of_or(
      "optimizerImplementation", vocab::names(vocab::kOptimizerImpls),
      vocab::name_for(vocab::kOptimizerImpls, r.runtime.profile.default_optimizer_implementation));
  r.training.optimizer_implementation = vocab::find(vocab::kOptimizerImpls, impl)->value;
  if (req.has("optimizerImplementation") &&
      !has_implementation(r.training.optimizer, r.training.optimizer_implementation)) {
    // the way out: the implementations this optimizer has
    std::string has;
    for (const auto& t : vocab::kOptimizerImpls)
      if (has_implementation(r.training.optimizer, t.value))
        has += std::string(has.empty() ? "" : ", ") + t.name;
    fail(code::kUnsupported, "optimizerImplementation",
         has.empty()
             ? Message{"error.optimizer.ownKernels",
                       {{"optimizer", optimizer_name(r.training.optimizer)}, {"impl", impl}}}
             : Message{"error.optimizer.noImpl",
                       {{"optimizer", optimizer_name(r.training.optimizer)},
                        {"impl", impl},
                        {"has", has}}});
  }
  r.training.set_to_none =
      req.boolean_or("zeroGradSetToNone", r.runtime.profile.default_set_to_none);
  return gpu_capability;
}

// float8: {recipe}.
void read_float8(const Obj& req, double gpu_capability, Request* out) {
  Request& r = *out;
  // torchao float8 training: convert_to_float8_training with Float8LinearConfig recipes
  // (torchao/float8/config.py @ c6c388b5); "tensorwise" (the default: dynamic per-tensor
  // scaling) is the one modelled
  const Obj f = req.obj("float8");
  const std::string recipe =
      f.one_of_or("recipe", vocab::names(vocab::kFloat8Recipes), "tensorwise");
  f.finish();
  if (recipe != "tensorwise")
    fail(code::kUnsupported, "float8.recipe", Message{"error.float8.recipe", {{"recipe", recipe}}});
  if (r.model.is_mlp || r.model.description().arch.model_type.empty())
    fail(code::kUnsupported, "float8", Message{"error.float8.transformer", {}});
  if (r.model.lora.enabled) fail(code::kUnsupported, "float8", Message{"error.float8.lora", {}});
  // torch._scaled_mm: "only supported on CUDA devices with compute capability >= 9.0 or 8.9"
  // (aten/src/ATen/native/cuda/Blas.cpp @ 960a6846, _scaled_mm_out_cuda)
  if (!r.runtime.gpu_id.empty() && gpu_capability < 8.9)
    fail(code::kUnsupported, "float8", Message{"error.float8.gpu", {{"gpu", r.runtime.gpu_id}}});
  if (r.runtime.gpu_id.empty())
    r.features.float8_gpu_note = Text("peak.assume.float8.unchecked", {});
  r.features.float8 = true;
}

// loss: "cross-entropy" (HF: cross_entropy over the full fp32 logits), "chunked" (torchtune
// CEWithChunkedOutputLoss, num_output_chunks = 8), "liger-fused-linear" (Liger's
// LigerFusedLinearCrossEntropyLoss), or {type, chunks}.
void read_loss(const Obj& req, Request* out) {
  Request& r = *out;
  std::string type;
  if (req.raw("loss").is_string()) {
    type = req.one_of("loss", vocab::names(vocab::kLosses));
  } else {
    const Obj l = req.obj("loss");
    type = l.one_of("type", vocab::names(vocab::kLosses));
    only_for(l, "chunks", type, {"chunked"});
    r.training.loss_chunks = l.u64_or("chunks", 8, 1, 4096);
    l.finish();
  }
  r.training.loss = vocab::find(vocab::kLosses, type)->value;
  if (r.training.loss != activations::Settings::Loss::cross_entropy &&
      (r.model.is_mlp ||
       (r.model.description().arch.encoder_only && r.model.description().arch.num_labels > 0)))
    fail(code::kInconsistent, "loss", Message{"error.loss.noHead", {}});
}

// zero3: DeepSpeed's stage-3 bucket and persistence settings.
void read_zero3(const Obj& req, Request* out) {
  Request& r = *out;
  if (r.parallelism.zero.stage != 3)
    fail(code::kInconsistent, "zero3", Message{"error.zero3.stage", {}});
  const Obj z = req.obj("zero3");
  Zero3& d = r.parallelism.zero.stage3;
  d.enabled = true;
  d.prefetch_bucket = z.u64_or("prefetchBucketSize", d.prefetch_bucket, 0, limits::kMaxParams);
  d.max_live = z.u64_or("maxLiveParameters", d.max_live, 0, limits::kMaxParams);
  d.max_reuse_distance = z.u64_or("maxReuseDistance", d.max_reuse_distance, 0, limits::kMaxParams);
  d.persistence_threshold =
      z.u64_or("paramPersistenceThreshold", d.persistence_threshold, 0, limits::kMaxParams);
  z.finish();
}

// zero: DeepSpeed's zero_optimization bucket settings (deepspeed/runtime/zero/config.py).
void read_zero_buckets(const Obj& req, Request* out) {
  Request& r = *out;
  ZeroBuckets& d = r.parallelism.zero.buckets;
  // config.py overlap_comm_valid: None means True for stage 3, False otherwise
  d.overlap_comm = r.parallelism.zero.stage == 3;
  if (!req.has("zero")) return;
  if (r.parallelism.zero.stage == 0)
    fail(code::kInconsistent, "zero", Message{"error.zero.stage", {}});
  const Obj z = req.obj("zero");
  d.reduce_bucket = z.u64_or("reduceBucketSize", d.reduce_bucket, 1, limits::kMaxParams);
  if (z.has("allgatherBucketSize") && r.parallelism.zero.stage == 3)
    fail(code::kInconsistent, z.field("allgatherBucketSize"), Message{"error.zero3.prefetch", {}});
  d.allgather_bucket = z.u64_or("allgatherBucketSize", d.allgather_bucket, 1, limits::kMaxParams);
  d.overlap_comm = z.boolean_or("overlapComm", d.overlap_comm);
  d.contiguous_gradients = z.boolean_or("contiguousGradients", true);
  z.finish();
}

// optimizerInBackward's limits, ddp, zeroMixedPrecision, zero, zero3 and fsdp.
void read_sharding(const Obj& req, Request* out) {
  Request& r = *out;
  if (r.features.optimizer_in_backward && r.training.accumulation_steps > 1)
    fail(code::kInconsistent, "optimizerInBackward", Message{"error.inBackward.accumulation", {}});
  if (r.features.optimizer_in_backward && r.parallelism.zero.stage > 0)
    fail(code::kUnsupported, "optimizerInBackward", Message{"error.inBackward.zero", {}});
  if (req.has("ddp")) {
    const Obj d = req.obj("ddp");
    // torch/nn/parallel/distributed.py: bucket_cap_mb = 25, gradient_as_bucket_view = False
    r.parallelism.ddp.bucket_bytes = d.u64_or("bucketCapMb", 25, 1, 1u << 20) << 20;
    r.parallelism.ddp.gradient_as_bucket_view = d.boolean_or("gradientAsBucketView", false);
    d.finish();
    if (r.parallelism.data < 2 || r.parallelism.zero.stage > 0)
      fail(code::kInconsistent, "ddp", Message{"error.ddp.ranks", {}});
  }
  if (req.has("zeroMixedPrecision")) {
    const std::string m = req.one_of_or("zeroMixedPrecision",
                                        vocab::names(vocab::kZeroMixedPrecision), "model-dtype");
    if (r.parallelism.zero.stage == 0 ||
        (r.training.precision != activations::Precision::amp_bf16 &&
         r.training.precision != activations::Precision::amp_fp16))
      fail(code::kInconsistent, "zeroMixedPrecision", Message{"error.zero.mixedPrecision", {}});
    r.parallelism.zero.model_dtype_16bit = m == "model-dtype";
  }
  read_zero_buckets(req, &r);
  if (req.has("zero3")) read_zero3(req, &r);
  if (req.has("fsdp")) parse_fsdp(req, &r);
}

// simulateAllocator and allocator (PYTORCH_CUDA_ALLOC_CONF): CUDA runtimes only.
void read_allocator_settings(const Obj& req, Request* out) {
  Request& r = *out;
  r.allocator.simulate = req.boolean_or("simulateAllocator", r.runtime.profile.is_cuda());
  if (r.allocator.simulate && !r.runtime.profile.is_cuda())
    fail(code::kInconsistent, "simulateAllocator", Message{"error.allocator.cuda", {}});
  r.allocator.config = parse_allocator(req);
  if (r.features.offload_activations && !r.allocator.simulate)
    fail(code::kInconsistent, "activationOffloading", Message{"error.offload.activations", {}});
  if (req.has("allocator") && !r.runtime.profile.is_cuda())
    fail(code::kInconsistent, "allocator", Message{"error.allocator.needsCuda", {}});
}

// What a traced model cannot answer: settings whose effect a recipe of the architecture models
// (the attention core, op-level policies, tensor parallelism, compile, float8, other losses) and
// mixed precision, which the trace would have to be recorded under.
void check_trace_scope(const Request& r) {
  if (!r.model.description().trace) return;
  const vocab::Strategy kind = r.training.checkpointing.strategy;
  const std::string cs = vocab::name_of(kind);
  const char* field = nullptr;
  Message why;
  if (kind == vocab::Strategy::attention_recompute || vocab::op_level(kind)) {
    field = "checkpointing";
    why = Message{"error.trace.why.checkpointing", {{"strategy", cs}}};
  } else if (r.parallelism.tensor > 1 || r.parallelism.sequence) {
    field = "tensorParallel";
    why = Message{"error.trace.why.tensorParallel", {}};
  } else if (r.features.compiled) {
    field = "compile";
    why = Message{"error.trace.why.compile", {}};
  } else if (r.features.float8) {
    field = "float8";
    why = Message{"error.trace.why.float8", {}};
  } else if (r.training.loss != activations::Settings::Loss::cross_entropy) {
    field = "loss";
    why = Message{"error.trace.why.loss", {}};
  } else if (r.training.precision == activations::Precision::amp_bf16 ||
             r.training.precision == activations::Precision::amp_fp16) {
    field = "precision";
    why = Message{"error.trace.why.precision", {}};
  } else if (r.training.samples.given && !r.model.description().trace->has_seq) {
    field = "samples";
    why = Message{"error.trace.why.samples", {}};
  }
  if (field)
    fail(code::kUnsupported, field, Message{"error.trace.model", {}}.with("why", {std::move(why)}));
}

// What needs the whole request: bf16 on the GPU, and what op-level selective checkpointing is
// modelled for (Llama-family dense blocks, eager or SDPA attention, without tensor parallel,
// LoRA or compile).
void check_scope(const Request& r) {
  if ((r.training.precision == activations::Precision::bf16 ||
       r.training.precision == activations::Precision::amp_bf16) &&
      !r.runtime.gpu_bf16)
    fail(code::kUnsupported, "precision", Message{"error.bf16", {{"gpu", r.runtime.gpu_id}}});
  const std::string cs = vocab::name_of(r.training.checkpointing.strategy);
  if (!vocab::op_level(r.training.checkpointing.strategy)) return;
  const char* why =
      r.parallelism.tensor > 1 ? "error.selectiveOp.tensorParallel"
      : r.model.lora.enabled   ? "error.selectiveOp.lora"
      : r.model.description().arch.num_experts > 0 || r.model.description().arch.shared_experts > 0
          ? "error.selectiveOp.moe"
          : nullptr;
  if (why) fail(code::kUnsupported, "checkpointing", Message{why, {{"strategy", cs}}});
}

}  // namespace

Request parse_request(const json& request) {
  if (!request.is_object()) fail(code::kInvalidType, "", Message{"error.request.object", {}});
  Obj req(request, "");
  Request r;
  // runtime first: it sets defaults (attention)
  const std::string runtime_id = req.one_of_or("runtime", runtime_ids(), "pytorch-cuda");
  r.runtime.profile = runtime_profile(runtime_id, "runtime");
  read_model(req, &r);
  read_lengths(req, &r);
  read_training(req, &r);
  read_parallelism(req, &r);
  read_pipeline(req, &r);
  if (req.has("lora")) read_lora(req, &r);
  const double gpu_capability = read_device(req, &r);
  r.features.optimizer_in_backward = req.boolean_or("optimizerInBackward", false);
  r.features.compiled = req.boolean_or("compile", false);
  r.features.offload_activations = req.boolean_or("activationOffloading", false);
  if (req.has("float8")) read_float8(req, gpu_capability, &r);
  if (r.features.compiled && (r.model.is_mlp || r.model.description().arch.model_type.empty()))
    fail(code::kUnsupported, "compile", Message{"error.compile.transformer", {}});
  if (req.has("loss")) read_loss(req, &r);
  read_sharding(req, &r);
  read_context_parallel(req, &r);
  read_expert_parallel(req, &r);
  read_allocator_settings(req, &r);
  check_scope(r);
  check_trace_scope(r);
  r.answer.search_max_micro_batch = req.boolean_or("searchMaxMicroBatch", true);
  r.answer.timeline = req.boolean_or("timeline", true);
  req.finish();
  return r;
}

}  // namespace peak
}  // namespace trainmem
