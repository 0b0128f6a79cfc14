// Every name a request accepts, one table per vocabulary. The parsers in cpp/src/io/ read
// these tables (so an accepted name is listed here or nowhere), the core's `vocabulary`
// function exports them, and tests/js/vocabulary.test.js checks the d.ts unions, the CLI help
// and the page's option lists against them. Adding a name is one line in its table (plus, for
// a vocabulary with an enum, the enumerator it selects). Each table is in the order in which
// error messages list it.
#pragma once
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "trainmem/dtype.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace vocab {

// A name and the enum value it selects: the entry of most tables below.
template <class E>
struct Named {
  const char* name;
  E value;
};

// ---- Optimizers: request name -> the state layout it selects (model/optimizer.cpp). A name
// whose layout is another's is an alias of it; a layout's first name is the one results print.
enum class Optimizer {
  sgd,
  adam,
  adamw,
  adagrad,
  rmsprop,
  adafactor,
  torch_adafactor,
  lion,
  adam_8bit,
  torchao_adamw_8bit,
  torchao_adamw_4bit,
  torchao_adamw_fp8,
};
inline constexpr int kOptimizerLayouts = static_cast<int>(Optimizer::torchao_adamw_fp8) + 1;
// What a name selects besides its layout (read once, in io/optimizer_json.cpp).
enum class OptimizerVariant {
  plain,
  momentum,  // SGD with momentum 0.9
  paged,     // bitsandbytes paged state buffers
};
struct OptimizerTerm {
  const char* name;
  Optimizer value;
  OptimizerVariant variant = OptimizerVariant::plain;
};
inline constexpr OptimizerTerm kOptimizers[] = {
    {"sgd", Optimizer::sgd},                                       // torch.optim.SGD
    {"sgd-momentum", Optimizer::sgd, OptimizerVariant::momentum},  // torch.optim.SGD, momentum 0.9
    {"adam", Optimizer::adam},                                     // torch.optim.Adam
    {"adamw", Optimizer::adamw},                                   // torch.optim.AdamW
    {"adagrad", Optimizer::adagrad},                               // torch.optim.Adagrad
    {"rmsprop", Optimizer::rmsprop},                               // torch.optim.RMSprop
    {"adafactor", Optimizer::adafactor},                           // transformers' Adafactor
    {"torch-adafactor", Optimizer::torch_adafactor},               // torch.optim.Adafactor (>= 2.5)
    {"lion", Optimizer::lion},                                     // lion-pytorch Lion
    {"adam-8bit", Optimizer::adam_8bit},                           // bitsandbytes Adam8bit
    {"adamw-8bit", Optimizer::adam_8bit},    // bitsandbytes AdamW8bit: same state
    {"adafactor-hf", Optimizer::adafactor},  // transformers' Adafactor again
    {"paged-adamw-8bit", Optimizer::adam_8bit, OptimizerVariant::paged},  // bnb PagedAdamW8bit
    {"torchao-adamw-8bit", Optimizer::torchao_adamw_8bit},                // torchao.optim.AdamW8bit
    {"torchao-adamw-4bit", Optimizer::torchao_adamw_4bit},                // torchao.optim.AdamW4bit
    {"torchao-adamw-fp8", Optimizer::torchao_adamw_fp8},                  // torchao.optim.AdamWFp8
};

// ---- Element types. `listed`: named in error messages and exported (the others are
// spellings PyTorch users type: float, half, long ...).
struct DTypeTerm {
  const char* name;
  DType value;
  bool listed;
};
inline constexpr DTypeTerm kDTypes[] = {
    {"fp32", DType::fp32, true},     {"fp16", DType::fp16, true},
    {"bf16", DType::bf16, true},     {"fp8", DType::fp8, true},
    {"int8", DType::int8, true},     {"int4", DType::int4, true},
    {"uint8", DType::uint8, true},   {"int32", DType::int32, true},
    {"int64", DType::int64, true},   {"fp64", DType::fp64, true},
    {"bool", DType::boolean, true},  {"float32", DType::fp32, true},
    {"float16", DType::fp16, true},  {"bfloat16", DType::bf16, true},
    {"float64", DType::fp64, false}, {"double", DType::fp64, false},
    {"float", DType::fp32, false},   {"half", DType::fp16, false},
    {"float8", DType::fp8, false},   {"long", DType::int64, false},
    {"int", DType::int32, false},
};

// ---- Checkpointing strategies. peakMemory and accumulation accept every one; `placement`:
// the placement calculator accepts it too (full and the selective modes are not placements of a
// chain).
enum class Strategy {
  none,
  full,
  attention_recompute,
  selective_op,
  torchtitan_op,
  selective_layer,
  manual,
  every_k,
  block,
  sequential,
  sqrt,
  chen_greedy,
  revolve,
  optimal_single_level,
  optimal,
};
// A name, the value it selects, and whether the placement calculator accepts it.
template <class V>
struct PlacementTerm {
  const char* name;
  V value;
  bool placement;
};
// What a strategy does with budgetBytes: `none`, it plans without one (peakMemory refuses the
// field; placement only checks the plan against it); `optional`, it plans under one when given
// (chen-greedy: Chen et al. 2016 Alg. 3 under the budget, else its own threshold search);
// `required`, it cannot plan without one (the optimal solvers). The page asks for a budget, and
// peakMemory accepts one, exactly when it is not `none`.
enum class Budget { none, optional, required };
// The parameters a strategy takes besides the budget, a bit each: given with another strategy,
// a parameter is an error naming the strategies it applies to.
enum StrategyParam : unsigned {
  kNoParams = 0,
  kParamK = 1u << 0,             // every-k, block: layers; selective-layer: every k-th block
  kParamSegments = 1u << 1,      // sequential
  kParamSnapshots = 1u << 2,     // revolve
  kParamSlots = 1u << 3,         // optimal: budget discretisation
  kParamCheckpointed = 1u << 4,  // manual: the segments
  kParamSaveOps = 1u << 5,       // selective-op: saveOps and everyOtherMm
  kParamGreedyBytes = 1u << 6,   // chen-greedy: Alg. 3's threshold (placement)
};
struct StrategyTerm {
  const char* name;
  Strategy value;
  bool placement;  // the placement calculator accepts it
  Budget budget;
  unsigned params;  // StrategyParam bits
};
inline constexpr StrategyTerm kStrategies[] = {
    {"none", Strategy::none, true, Budget::none, kNoParams},
    // every block (HF gradient_checkpointing)
    {"full", Strategy::full, false, Budget::none, kNoParams},
    // Megatron-LM recompute_granularity="selective": the attention core only
    {"attention-recompute", Strategy::attention_recompute, false, Budget::none, kNoParams},
    // torch.utils.checkpoint.create_selective_checkpoint_contexts with a list of ops to save
    {"selective-op", Strategy::selective_op, false, Budget::none, kParamSaveOps},
    // torchtitan activation_checkpoint mode "selective", selective_ac_option "op"
    {"torchtitan-op", Strategy::torchtitan_op, false, Budget::none, kNoParams},
    // torchtitan selective_ac_option "<k>": every k-th block
    {"selective-layer", Strategy::selective_layer, false, Budget::none, kParamK},
    {"manual", Strategy::manual, true, Budget::none, kParamCheckpointed},
    {"every-k", Strategy::every_k, true, Budget::none, kParamK},  // Megatron "uniform"
    {"block", Strategy::block, true, Budget::none, kParamK},      // Megatron "block"
    // torch.utils.checkpoint.checkpoint_sequential
    {"sequential", Strategy::sequential, true, Budget::none, kParamSegments},
    {"sqrt", Strategy::sqrt, true, Budget::none, kNoParams},  // Chen et al. 2016
    {"chen-greedy", Strategy::chen_greedy, true, Budget::optional, kParamGreedyBytes},
    // Griewank & Walther 2000
    {"revolve", Strategy::revolve, true, Budget::none, kParamSnapshots},
    {"optimal-single-level", Strategy::optimal_single_level, true, Budget::required, kNoParams},
    // Rotor, Beaumont et al. 2019
    {"optimal", Strategy::optimal, true, Budget::required, kParamSlots},
};
// The request key of each parameter bit (saveOps' bit also admits everyOtherMm).
using StrategyParamTerm = Named<StrategyParam>;
inline constexpr StrategyParamTerm kStrategyParams[] = {
    {"k", kParamK},
    {"segments", kParamSegments},
    {"snapshots", kParamSnapshots},
    {"slots", kParamSlots},
    {"checkpointed", kParamCheckpointed},
    {"saveOps", kParamSaveOps},
    {"everyOtherMm", kParamSaveOps},
    {"greedyBytes", kParamGreedyBytes},
};
// accumulation's `checkpointing` also takes "auto": the planner tries none and full.
inline constexpr const char* kAccumulationAutoCheckpointing = "auto";

// ---- Training precisions.
enum class Precision { fp32, amp_fp16, amp_bf16, bf16, fp16 };
using PrecisionTerm = Named<Precision>;
inline constexpr PrecisionTerm kPrecisions[] = {
    {"fp32", Precision::fp32}, {"amp-fp16", Precision::amp_fp16}, {"amp-bf16", Precision::amp_bf16},
    {"bf16", Precision::bf16}, {"fp16", Precision::fp16},
};

// ---- Attention implementations. `placement`: accepted by the placement calculator's model
// form (flash keeps what SDPA keeps; peakMemory takes the name).
enum class Attention { eager, sdpa };
using AttentionTerm = PlacementTerm<Attention>;
inline constexpr AttentionTerm kAttention[] = {
    {"eager", Attention::eager, true},
    {"sdpa", Attention::sdpa, true},
    {"flash", Attention::sdpa, false},
};

// ---- Runtime profiles: id -> its data file (cpp/data/runtime-<file>.json).
struct RuntimeTerm {
  const char* name;
  const char* file;
};
inline constexpr RuntimeTerm kRuntimes[] = {
    {"pytorch-cuda", "pytorch-2.5-cuda"},  // the current PyTorch line
    {"pytorch-2.5-cuda", "pytorch-2.5-cuda"},   {"pytorch-2.1-cuda", "pytorch-2.1-cuda"},
    {"pytorch-2.0-cuda", "pytorch-2.0-cuda"},   {"pytorch-1.13-cuda", "pytorch-1.13-cuda"},
    {"pytorch-1.10-cuda", "pytorch-1.10-cuda"}, {"pytorch-cpu", "pytorch-cpu"},
};

// ---- Optimizer step implementations (torch.optim foreach / for-loop / fused; transformers'
// own AdamW).
enum class OptimizerImpl { foreach, for_loop, fused, transformers };
using OptimizerImplTerm = Named<OptimizerImpl>;
inline constexpr OptimizerImplTerm kOptimizerImpls[] = {
    {"foreach", OptimizerImpl::foreach},
    {"for-loop", OptimizerImpl::for_loop},
    {"fused", OptimizerImpl::fused},
    {"transformers", OptimizerImpl::transformers},
};

// ---- Loss computations of a language-model head.
enum class Loss { cross_entropy, chunked, liger_fused };
using LossTerm = Named<Loss>;
inline constexpr LossTerm kLosses[] = {
    {"cross-entropy", Loss::cross_entropy},     // HF: cross_entropy over the full fp32 logits
    {"chunked", Loss::chunked},                 // torchtune CEWithChunkedOutputLoss
    {"liger-fused-linear", Loss::liger_fused},  // Liger LigerFusedLinearCrossEntropyLoss
};

// ---- Pipeline-parallel schedules (peakMemory pipelineParallel > 1; parallel.hpp).
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved, zb_h1, zb_v };
using PipelineScheduleTerm = Named<PipelineSchedule>;
inline constexpr PipelineScheduleTerm kPipelineSchedules[] = {
    {"1f1b", PipelineSchedule::one_f_one_b},              // PipeDream-flush: Megatron, torch
    {"gpipe", PipelineSchedule::gpipe},                   // all forwards, then all backwards
    {"interleaved-1f1b", PipelineSchedule::interleaved},  // Narayanan et al. 2021, virtualStages
    {"zb-h1", PipelineSchedule::zb_h1},                   // Qi et al. 2023, 1F1B's memory
    {"zb-v", PipelineSchedule::zb_v},                     // Qi et al. 2023, two chunks in a V
};

// ---- Checkpoint file formats (checkpointSize).
enum class CheckpointFormat { raw, torch, safetensors };
using CheckpointFormatTerm = Named<CheckpointFormat>;
inline constexpr CheckpointFormatTerm kCheckpointFormats[] = {
    {"raw", CheckpointFormat::raw},      // the tensor payload alone
    {"torch", CheckpointFormat::torch},  // torch.save zip
    {"safetensors", CheckpointFormat::safetensors},
};

// ---- Ops a selective checkpointing policy can save (checkpointing.saveOps; the op outputs the
// recipes list in activations.cpp).
inline constexpr const char* kSaveOps[] = {"mm", "sdpa", "bmm", "softmax", "silu"};

// ---- FSDP sharding strategies (torch.distributed.fsdp.ShardingStrategy; fsdp.shardingStrategy).
enum class FsdpStrategy { full_shard, shard_grad_op, hybrid_shard, no_shard };
using FsdpStrategyTerm = Named<FsdpStrategy>;
inline constexpr FsdpStrategyTerm kFsdpStrategies[] = {
    {"FULL_SHARD", FsdpStrategy::full_shard},
    {"SHARD_GRAD_OP", FsdpStrategy::shard_grad_op},  // gathered from the forward to the backward
    {"HYBRID_SHARD", FsdpStrategy::hybrid_shard},    // sharded in a group, replicated across
    {"NO_SHARD", FsdpStrategy::no_shard},            // replicated, like DDP
};

// ---- torchao float8 training recipes (Float8LinearRecipeName; float8.recipe).
inline constexpr const char* kFloat8Recipes[] = {"tensorwise", "rowwise", "rowwise_with_gw_hp"};

// ---- How DeepSpeed ZeRO runs mixed precision (zeroMixedPrecision): its bf16/fp16 config section
// (the model converted) or its torch_autocast section (fp32 parameters).
inline constexpr const char* kZeroMixedPrecision[] = {"model-dtype", "torch-autocast"};

// ---- MLP activation (peakMemory's `mlp` form).
inline constexpr const char* kMlpActivations[] = {"relu", "gelu", "none"};

// ---- Error codes (trainmem/error.hpp), with their meaning (README "Errors").
struct ErrorCodeTerm {
  const char* name;
  const char* meaning;
};
inline constexpr ErrorCodeTerm kErrorCodes[] = {
    {code::kInvalidJson, "the request is not JSON"},
    {code::kUnknownFunction, "no such calculator"},
    {code::kMissingField, "a required key is absent"},
    {code::kInvalidType, "a value has the wrong JSON type (null included)"},
    {code::kInvalidNumber, "a number JSON cannot carry (NaN, Infinity), refused by the JS wrapper"},
    {code::kOutOfRange, "a number lies outside its range"},
    {code::kNotInteger, "a fraction where a whole number is needed"},
    {code::kUnknownKey, "a key that is not part of the request"},
    {code::kUnknownValue, "a name that is not in its vocabulary"},
    {code::kUnknownPreset, "a preset id that is not in the data"},
    {code::kInconsistent, "fields disagree"},
    {code::kInfeasible, "no plan fits the budget"},
    {code::kTooLarge, "the input exceeds a documented limit"},
    {code::kUnsupported, "valid, but not modelled"},
    {code::kInternal, "a bug: please report it"},
};

// ---- Lookups.
inline const char* name_of(const char* term) { return term; }
template <class T>
const char* name_of(const T& term) {
  return term.name;
}

// Names of a table, in its order.
template <class T, size_t N>
std::vector<std::string> names(const T (&table)[N]) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const T& t : table) out.emplace_back(name_of(t));
  return out;
}
// Names of the entries that `keep` accepts.
template <class T, size_t N, class Keep>
std::vector<std::string> names_if(const T (&table)[N], Keep keep) {
  std::vector<std::string> out;
  for (const T& t : table)
    if (keep(t)) out.emplace_back(name_of(t));
  return out;
}
// The entry named `name`, or nullptr.
template <class T, size_t N>
const T* find(const T (&table)[N], const std::string& name) {
  for (const T& t : table)
    if (name == name_of(t)) return &t;
  return nullptr;
}
// The name of an enum value (the first entry that selects it).
template <class T, size_t N, class V>
const char* name_for(const T (&table)[N], V value) {
  for (const T& t : table)
    if (t.value == value) return t.name;
  return "";
}

// A strategy's entry (every enumerator has one: see every_strategy_named below).
inline const StrategyTerm& term(Strategy s) {
  for (const StrategyTerm& t : kStrategies)
    if (t.value == s) return t;
  return kStrategies[0];
}
inline const char* name_of(Strategy s) { return term(s).name; }
// Strategies whose selective checkpointing works on the ops of a block (a SavePolicy).
inline bool op_level(Strategy s) {
  return s == Strategy::selective_op || s == Strategy::torchtitan_op;
}

// Every optimizer layout has a name in kOptimizers (the enum and the table cannot drift apart).
constexpr bool every_optimizer_named() {
  for (int v = 0; v < kOptimizerLayouts; ++v) {
    bool named = false;
    for (const OptimizerTerm& t : kOptimizers) named = named || static_cast<int>(t.value) == v;
    if (!named) return false;
  }
  return true;
}
static_assert(every_optimizer_named(), "an optimizer layout without a name in kOptimizers");

// Every strategy has exactly one entry in kStrategies, in the enum's order.
constexpr bool every_strategy_named() {
  int v = 0;
  for (const StrategyTerm& t : kStrategies)
    if (static_cast<int>(t.value) != v++) return false;
  return v == static_cast<int>(Strategy::optimal) + 1;
}
static_assert(every_strategy_named(), "kStrategies must list each Strategy once, in order");

}  // namespace vocab
}  // namespace trainmem
