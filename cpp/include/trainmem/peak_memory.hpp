// Peak memory of one training step on one device: persistent state (weights, master copy,
// gradients, optimizer state), activations from activations.hpp planned by the placement
// engine (checkpointing), transients, and the runtime (CUDA context). Model and sources:
// docs/peak-memory.md. Typed API for callers that evaluate many configurations (accumulation).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/caching_allocator.hpp"
#include "trainmem/message.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/placement.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace peak {

struct Runtime {
  std::string id = "pytorch-cuda";
  std::string name_code;  // the catalog's sentence that names the profile (its nameMessage)
  activations::RuntimeTraits traits;
  uint64_t context_bytes = 0;  // CUDA context + kernels (nvidia-smi terms), not in memory_allocated
  Text context_source;
  uint64_t workspace_bytes = 0;  // cuBLAS workspace (allocated through the caching allocator)
  Text workspace_source;
  // A runtime profile per PyTorch line (cpp/data/runtime-*.json, each fact with its source
  // there): its defaults.
  bool default_set_to_none = true;  // zero_grad(set_to_none=...) default
  vocab::OptimizerImpl default_optimizer_implementation = vocab::OptimizerImpl::foreach;
  // foreach Adam / AdamW: whole-list temporaries alive at once in this PyTorch line
  uint32_t foreach_adam_lists = 1;
  // The autograd engine sums two dense gradients of one input in place (after torch 1.13) or
  // out of place (torch <= 1.13): trace::StepSpec::input_buffer_in_place
  bool input_buffer_in_place = true;
  bool reentrant_checkpointing = true;
  uint64_t nccl_bytes = 0;  // communicator buffers when distributed (nvidia-smi terms)
  std::string default_attention = "sdpa";
  bool is_cuda() const { return id != "pytorch-cpu"; }
};
// The profiles are read from cpp/data/runtime-<id>.json at the edge (io/device_presets.hpp).

// Dense peak throughput per dtype in TFLOP/s (the preset's peakTflops); 0: the GPU has none
// (null in the data: no tf32 or bf16 before Ampere).
struct DenseTflops {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0;
};

struct Gpu {
  std::string id, name;
  uint64_t memory_bytes = 0;
  DenseTflops tflops;
  double compute_capability = 0;  // CUDA compute capability (8.9: Ada, 9.0: Hopper)
  double memory_bandwidth = 0;    // bytes per second (memoryBandwidthBytesPerSecond; 0: unknown)
  std::string source;
};
// The presets are read from cpp/data/gpus/<id>.json at the edge (io/device_presets.hpp).

struct Checkpointing {
  vocab::Strategy strategy = vocab::Strategy::none;  // any of vocab::kStrategies
  placement::StrategyRequest placement;              // for the strategies the placement engine runs
  activations::SavePolicy save;  // selective-op / torchtitan-op: what each block keeps
  uint32_t layer_every = 2;      // selective-layer: every k-th block checkpointed
};

// How the rows of a micro-batch are filled (the samples field).
struct Samples {
  bool given = false;
  // torchtune PackedDataset (datasets/_packed.py): samples packed into rows of exactly seqLen
  // tokens, the rest padded
  bool packed = false;
  // padded batches (torchtune padded_collate_sft, HF DataCollatorWithPadding): each micro-batch
  // padded to its longest sample; lengths above seqLen truncated to it
  uint64_t count = 0;
  uint64_t longest = 0;        // the padded length of the worst micro-batch: the memory
  uint64_t truncated = 0;      // samples cut to seqLen
  double mean_length = 0;      // mean sample length (after truncation)
  double expected_padded = 0;  // mean padded length over random micro-batches: the time
};

struct Lora {
  bool enabled = false;
  bool qlora = false;  // frozen base in 4-bit NF4 with double quantisation (Dettmers et al. 2023)
  uint64_t rank = 8;
  // PEFT target_modules: names matched as PEFT does, {"all-linear"}, or empty = PEFT's default
  // for the model type
  std::vector<std::string> target_modules;
  double dropout = 0.05;
  // The dtype the frozen base is loaded in (from_pretrained's torch_dtype; QLoRA: the weights
  // it does not quantise); unset: the precision's parameter dtype (lora.baseDtype)
  bool base_dtype_set = false;
  DType base_dtype = DType::fp32;
  // PEFT LoraConfig autocast_adapter_dtype=True (the default): the adapters are fp32 whatever
  // the base's dtype (peft/tuners/tuners_utils.py _cast_adapter_dtype); false: the base's dtype
  bool adapters_fp32 = true;
};

// What is trained: the model (shared and immutable: presets are built once, see
// parse_model_shared; empty for an MLP request) or the MLP, and its LoRA adapters.
struct ModelSetup {
  std::shared_ptr<const ModelDescription> shared;
  // never a dangling reference: an empty description without a model
  const ModelDescription& description() const {
    static const ModelDescription kNone;
    return shared ? *shared : kNone;
  }
  bool is_mlp = false;
  activations::MlpSpec mlp;
  Lora lora;
};

// One step's shape and its optimizer.
struct Training {
  uint64_t micro_batch = 1;
  uint64_t seq_len = 0;  // 0 = the model's maximum positions (or 512)
  // encoder-decoder models: the decoder's (target) length; 0 = seq_len (seqLen is the encoder's)
  uint64_t target_len = 0;
  Samples samples;
  uint64_t accumulation_steps = 1;
  activations::Precision precision = activations::Precision::fp32;
  activations::Attention attention = activations::Attention::sdpa;
  activations::Settings::Loss loss = activations::Settings::Loss::cross_entropy;
  uint64_t loss_chunks = 8;
  OptimizerSpec optimizer;
  // the request's optimizerImplementation, or the runtime profile's default
  vocab::OptimizerImpl optimizer_implementation = vocab::OptimizerImpl::foreach;
  bool set_to_none = true;  // zero_grad(set_to_none=...), or the runtime profile's default
  Checkpointing checkpointing;
};

// ZeRO-3 as DeepSpeed runs it (deepspeed/runtime/zero/config.py); off: the estimator's
// largest layer gathered twice
struct Zero3 {
  bool enabled = false;
  uint64_t prefetch_bucket = 50000000;       // stage3_prefetch_bucket_size (5e7)
  uint64_t max_live = 1000000000;            // stage3_max_live_parameters (1e9)
  uint64_t max_reuse_distance = 1000000000;  // stage3_max_reuse_distance (1e9)
  uint64_t persistence_threshold = 100000;   // stage3_param_persistence_threshold (1e5)
};

// DeepSpeed's gradient buckets (the zero field; deepspeed/runtime/zero/config.py defaults):
// contiguous_gradients copies each gradient into a reduce_bucket_size-element buffer in the
// gradients' dtype (ZeRO-1/2: per backward, two with overlap_comm; ZeRO-3: once, held);
// allgather_bucket_size has no buffer of its own (runtime/utils.py all_gather_dp_groups
// gathers into the 16-bit parameters).
struct ZeroBuckets {
  uint64_t reduce_bucket = 500000000;     // reduce_bucket_size (5e8 elements)
  uint64_t allgather_bucket = 500000000;  // allgather_bucket_size (5e8 elements)
  bool overlap_comm = false;              // default: true for stage 3 only
  bool contiguous_gradients = true;
};

// DeepSpeed ZeRO (zeroStage, offloadOptimizer, offloadParams, zero, zeroMixedPrecision).
struct Zero {
  uint32_t stage = 0;
  bool offload_optimizer = false;
  bool offload_params = false;
  // with amp-*: DeepSpeed's bf16/fp16 config section makes the model's dtype 16-bit (true, the
  // default) or its torch_autocast section keeps fp32 parameters under autocast
  bool model_dtype_16bit = true;
  Zero3 stage3;
  ZeroBuckets buckets;
};

// DDP (dataParallel > 1 without ZeRO or FSDP).
struct Ddp {
  uint64_t bucket_bytes = 25ull << 20;  // the reducer's gradient buckets: bucket_cap_mb
  bool gradient_as_bucket_view = false;
  // ZeroRedundancyOptimizer (torch.distributed.optim): the optimizer state of the parameters
  // assigned to this rank only
  bool zero_redundancy_optimizer = false;
};

// FSDP (torch.distributed.fsdp FSDP1, fully_shard FSDP2): one unit per transformer block,
// the embeddings and head as the root unit
struct Fsdp {
  bool enabled = false;
  uint32_t version = 2;
  vocab::FsdpStrategy strategy = vocab::FsdpStrategy::full_shard;
  uint64_t shard_degree = 1;          // ranks one parameter is sharded over
  bool reshard_after_forward = true;  // block units (fully_shard / FULL_SHARD)
  // the last block's unit: torchtitan's parallelize passed reshard_after_forward=False for it
  // (FSDP would prefetch it again at once); default: as the other blocks
  bool reshard_last_block = true;
  // the root unit (embeddings + head): FSDP2's lazy init keeps it gathered after the forward
  // unless the root was given an explicit True (_fsdp_state.py _lazy_init,
  // _auto_reshard_after_forward); FSDP1 never reshards the root (_post_forward_reshard)
  bool reshard_root = false;
  // FSDP2 per block (fsdp.reshardAfterForward.blocks as a list): one flag per block unit in
  // order; empty: reshard_after_forward, the last block reshard_last_block
  std::vector<uint8_t> reshard_blocks;
  // FSDP2 units of their own for the embeddings and for the final norm + head (fully_shard
  // called on them before the root, as torchtitan's apply_fsdp does; fsdp.reshardAfterForward
  // .embedding / .head): the root then holds what is left of them
  bool embedding_unit = false, reshard_embedding = true;
  bool head_unit = false, reshard_head = true;
  // FSDP1's rate limiter (limit_all_gathers, default True): at most two all-gathers in
  // flight; False lets the CPU issue them ahead of the GPU (the reserve's bound: no unit
  // reuses another's gathered block)
  bool limit_all_gathers = true;
  uint64_t prefetch = 1;            // units all-gathered ahead of the one computing
  uint64_t param_bytes = 0;         // mixed precision param_dtype (0: the model's dtype)
  DType param_dtype = DType::fp32;  // that dtype (when param_bytes is set)
  uint64_t reduce_bytes = 0;        // reduce_dtype (0: param_dtype)
  bool cpu_offload = false;         // sharded params, grads and the step on the CPU
};

// Pipeline parallelism (pipelineParallel, schedule, virtualStages, stageBlocks): the micro-
// batches of a step are gradientAccumulationSteps (parallel.hpp evaluates each stage).
struct PipelineParallel {
  uint64_t stages = 1;
  vocab::PipelineSchedule schedule = vocab::PipelineSchedule::one_f_one_b;
  uint64_t virtual_stages = 1;             // interleaved 1F1B: model chunks per rank
  std::vector<uint64_t> blocks_per_stage;  // uneven split: blocks per model chunk
};

// Context parallelism (contextParallel, contextParallelism): ring attention over `size` ranks
// as torch's context_parallel runs it (docs/parallelism.md). Applied when the request is read:
// training.seq_len is then one rank's tokens (the full length / size) and parallelism.data the
// group the gradients are reduced and ZeRO / FSDP shard over (dataParallel x contextParallel).
struct ContextParallel {
  uint64_t size = 1;
  uint64_t full_seq_len = 0;   // the sequence before sharding
  uint64_t data_parallel = 1;  // the request's dataParallel (replicas of the batch)
  bool zigzag = true;          // load balancing: 2 x size chunks, rank r holds r and 2size-1-r
  bool all_gather = true;      // K/V exchange: all-gather (torchtitan's default) or all-to-all
};

// Expert parallelism (expertParallel, expertTensorParallel, expertParallelism): the routed
// experts of a MoE model spread over `size` ranks, each expert's MLP split over `tensor`.
struct ExpertParallel {
  uint64_t size = 1, tensor = 1;
  double capacity_factor = 0;  // 0: dropless
  double imbalance = 1.0;      // the busiest rank's routed tokens / the mean (dropless)
};

// One pipeline rank's evaluation (set by parallel::pipeline, never read from a request): the
// chain layers of its chunks; the other layers hold nothing. `resident_chunks` chunks of
// other micro-batches (chunk k % chunks of the rank) keep their activations meanwhile.
struct PipelineStage {
  bool enabled = false;
  std::vector<std::vector<uint32_t>> chunks;
  uint64_t resident_chunks = 0;
};

// How the step is spread over devices.
struct Parallelism {
  uint64_t data = 1;  // dataParallel (after context parallelism: the gradients' group)
  uint64_t tensor = 1;
  bool sequence = false;  // Megatron sequence parallelism with tensor parallelism
  Ddp ddp;
  Zero zero;
  Fsdp fsdp;
  PipelineParallel pipeline;
  ContextParallel context;
  ExpertParallel expert;
  PipelineStage stage;
};

// The PyTorch line and the device the step runs on.
struct RuntimeSetup {
  Runtime profile;
  bool overhead_set = false;
  uint64_t overhead_bytes = 0;    // replaces context + workspace when set
  uint64_t gpu_memory_bytes = 0;  // 0 = no device given
  std::string gpu_id;
  bool gpu_bf16 = true;  // the GPU computes in bf16 (Ampere and later)
};

// The caching allocator: PYTORCH_CUDA_ALLOC_CONF options, and whether to simulate it (CUDA
// runtimes; off: allocated bytes plus the runtime only).
struct AllocatorSetup {
  bool simulate = true;
  allocator::Config config;
};

// Training features beyond a plain step.
struct Features {
  bool optimizer_in_backward = false;  // torchtune optimizer_in_bwd: step per parameter in backward
  bool compiled = false;               // torch.compile of each block (inductor, default mode)
  bool float8 = false;   // torchao float8 training, tensorwise dynamic scaling (float8 field)
  Text float8_gpu_note;  // set when the GPU's float8 support could not be checked
  bool offload_activations = false;  // torchtune enable_activation_offloading
};

// What the caller wants back.
struct Answer {
  bool search_max_micro_batch = true;
  // The result's timeline (the request's `timeline`, default true)
  bool timeline = true;
  // Set by callers that use only the verdict, the byte figures and the breakdown (the
  // maxMicroBatch search, the accumulation planner); never read from a request. A run whose
  // tensors alone exceed the device then skips the replay under the device's limit, which can
  // only run out of memory: its assumptions and retry count are not that replay's.
  bool verdict_only = false;
};

struct Request {
  ModelSetup model;
  Training training;
  Parallelism parallelism;
  RuntimeSetup runtime;
  AllocatorSetup allocator;
  Features features;
  Answer answer;
};

// One line of the breakdown: the bytes live at the allocated peak (for the runtime line, held
// outside the caching allocator), where they come from, and for a line of several kinds of
// tensors the bytes of each kind.
struct LinePart {
  std::string name;
  uint64_t bytes = 0;
};
struct Line {
  uint64_t bytes = 0;
  Text source;
  std::vector<LinePart> parts;
};

// The highest point of one part of the step (a layer's forward, recomputation or backward, the
// loss, the optimizer step, zero_grad): the live bytes then (allocatedPeakBytes' terms) and the
// breakdown lines they hold.
struct TimelinePoint {
  std::string phase;  // forward | loss | recompute | backward | optimizer | zero_grad
  int32_t layer = -1;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t activation_bytes = 0;
  uint64_t gradient_bytes = 0;
  uint64_t temporary_bytes = 0;
  uint64_t gathered_bytes = 0;  // ZeRO-3 / FSDP: unsharded parameters (and FSDP's gradients)
};

struct Result {
  uint64_t peak_bytes = 0;
  uint64_t allocated_peak_bytes = 0;  // without the runtime line: torch.cuda.max_memory_allocated
  std::string peak_phase;
  int32_t peak_layer = -1;
  Line weights, master_weights, gradients, optimizer_state, activations, temporaries, workspace;
  Line allocator_rounding;     // the allocator's blocks beyond the tensors' own bytes
  Line runtime;                // CUDA context (+ NCCL buffers): outside the caching allocator
  Line paged_optimizer_state;  // bitsandbytes paged states: CUDA managed memory
  std::vector<TimelinePoint> timeline;
  uint64_t params = 0, trainable_params = 0;
  uint64_t stored_activation_bytes = 0;  // held at the end of the forward pass
  double recompute_fraction = 0;         // extra forward work / (forward + backward)
  double recompute_flops = 0;            // per micro-step
  double forward_flops = 0;              // per micro-step
  uint64_t korthikanti_layer_bytes = 0;
  uint64_t derived_layer_bytes = 0;  // this model's saved bytes of one block
  bool has_device = false;
  bool fits = false;
  int64_t headroom_bytes = 0;
  uint64_t max_micro_batch = 0;  // 0 = none fits / no device
  // The maxMicroBatch search stopped at its work bound: max_micro_batch fits, this does not
  // (0: the search was exact, max_micro_batch + 1 does not fit).
  uint64_t max_micro_batch_below = 0;
  uint64_t trace_events = 0;  // events of the allocation trace evaluated (the work of one run)
  std::vector<Text> assumptions;
  // The caching-allocator simulation of whole steps (has_device_simulation).
  bool simulated = false;
  uint64_t reserved_peak_bytes = 0;  // torch.cuda.max_memory_reserved()
  uint64_t device_used_bytes = 0;    // nvidia-smi: reserved + context (+ NCCL when distributed)
  uint64_t fragmentation_bytes = 0;  // reserved peak - allocated peak (the cache's overhead)
  uint64_t largest_request_bytes = 0;
  uint64_t first_step_allocated_bytes = 0, steady_allocated_bytes = 0;
  uint64_t first_step_reserved_bytes = 0;
  uint32_t reserved_peak_step = 0, steps_simulated = 0;
  std::string reserved_peak_phase;
  int32_t reserved_peak_layer = -1;
  uint64_t alloc_retries = 0, ooms = 0, segments = 0;
  uint64_t nccl_bytes = 0;
  uint64_t managed_bytes = 0;  // CUDA managed memory outside the allocator (paged states)
};

// One evaluation (no maxMicroBatch search): cheap, for planners.
Result evaluate(const Request& request);
// evaluate + the largest micro-batch that fits the device (when one is given).
Result compute(const Request& request);

}  // namespace peak
}  // namespace trainmem
