// Peak memory of one training step on one device: persistent state (weights, master copy,
// gradients, optimizer state), activations from activations.hpp planned by the placement
// engine (checkpointing), transients, and the runtime (CUDA context). Model and sources:
// docs/peak-memory.md. Typed API for callers that evaluate many configurations (accumulation).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/activations.hpp"
#include "trainmem/caching_allocator.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {
namespace peak {

struct Runtime {
  std::string id = "pytorch-cuda";
  std::string name;
  activations::RuntimeTraits traits;
  uint64_t context_bytes = 0;  // CUDA context + kernels (nvidia-smi terms), not in memory_allocated
  std::string context_source;
  uint64_t workspace_bytes = 0;    // cuBLAS workspace (allocated through the caching allocator)
  bool foreach_optimizers = true;  // torch 2.x on CUDA: _foreach_* optimizer implementations
  std::string source;
  // A runtime profile per PyTorch line (cpp/data/runtime-*.json): its defaults.
  std::string torch_versions;
  bool set_to_none = true;  // zero_grad(set_to_none=...) default
  std::string zero_grad_source;
  std::string optimizer_implementation = "foreach";  // for-loop | foreach | fused
  std::string trainer_adamw, trainer_source;         // the HF Trainer's AdamW of the era
  bool reentrant_checkpointing = true;
  bool lazy_module_loading = true;
  uint64_t nccl_bytes = 0;  // communicator buffers when distributed (nvidia-smi terms)
  std::string nccl_source;
  std::string default_attention = "sdpa";
  bool is_cuda() const { return id != "pytorch-cpu"; }
};
// Runtime profile from cpp/data/runtime-<id>.json; throws RequestError naming `field`.
Runtime runtime_profile(const std::string& id, const std::string& field);
std::vector<std::string> runtime_ids();

struct Gpu {
  std::string id, name;
  uint64_t memory_bytes = 0;
  nlohmann::json tflops;  // {"fp32": .., "tf32": .., "fp16": .., "bf16": ..} dense peak
  std::string source;
};
// GPU preset from cpp/data/gpus/<id>.json; throws RequestError(unknown_preset, field).
Gpu gpu_preset(const std::string& id, const std::string& field);
std::vector<std::string> gpu_ids();

struct Checkpointing {
  std::string strategy = "none";         // none full selective every-k block sequential sqrt
                                         // chen-greedy revolve optimal-single-level optimal manual
  placement::StrategyRequest placement;  // for the strategies the placement engine runs
};

struct Lora {
  bool enabled = false;
  bool qlora = false;  // frozen base in 4-bit NF4 with double quantisation (Dettmers et al. 2023)
  uint64_t rank = 8;
  // PEFT target_modules: names matched as PEFT does, {"all-linear"}, or empty = PEFT's default
  // for the model type
  std::vector<std::string> target_modules;
  double dropout = 0.05;
};

struct Request {
  // The model (shared and immutable: presets are built once, see parse_model_shared); empty
  // for an MLP request. model() never returns a dangling reference.
  std::shared_ptr<const ModelDescription> model_ptr;
  const ModelDescription& model() const {
    static const ModelDescription kNone;
    return model_ptr ? *model_ptr : kNone;
  }
  bool is_mlp = false;
  activations::MlpSpec mlp;
  uint64_t micro_batch = 1;
  uint64_t seq_len = 0;  // 0 = the model's maximum positions (or 512)
  // encoder-decoder models: the decoder's (target) length; 0 = seq_len (seqLen is the encoder's)
  uint64_t target_len = 0;
  activations::Precision precision = activations::Precision::fp32;
  activations::Attention attention = activations::Attention::sdpa;
  OptimizerSpec optimizer;
  Checkpointing checkpointing;
  uint64_t accumulation_steps = 1;
  uint32_t zero_stage = 0;
  uint64_t data_parallel = 1;
  bool offload_optimizer = false;
  bool offload_params = false;
  uint64_t tensor_parallel = 1;
  bool sequence_parallel = false;
  Lora lora;
  Runtime runtime;
  bool runtime_overhead_set = false;
  uint64_t runtime_overhead_bytes = 0;  // replaces context + workspace when set
  uint64_t gpu_memory_bytes = 0;        // 0 = no device given
  std::string gpu_id;
  bool gpu_bf16 = true;  // the GPU computes in bf16 (Ampere and later)
  bool search_max_micro_batch = true;
  // The caching allocator: PYTORCH_CUDA_ALLOC_CONF options, and whether to simulate it (CUDA
  // runtimes; off: allocated bytes plus the runtime only).
  bool simulate_allocator = true;
  allocator::Config allocator;
  std::string optimizer_implementation;  // for-loop | foreach | fused | transformers
  bool set_to_none = true;
  bool optimizer_in_backward = false;  // torchtune optimizer_in_bwd: step per parameter in backward
  activations::Settings::Loss loss = activations::Settings::Loss::cross_entropy;
  uint64_t loss_chunks = 8;
  bool compiled = false;             // torch.compile of each block (inductor, default mode)
  bool offload_activations = false;  // torchtune enable_activation_offloading
  // DDP (dataParallel > 1 without ZeRO): the reducer's gradient buckets
  uint64_t ddp_bucket_bytes = 25ull << 20;  // bucket_cap_mb
  bool ddp_gradient_as_bucket_view = false;
};

// Parses and validates a peakMemory request (throws RequestError naming the field).
Request parse_request(const nlohmann::json& request);

struct Line {
  uint64_t bytes = 0;
  std::string source;
};

struct TimelinePoint {
  std::string phase;  // forward | loss | recompute | backward | optimizer
  int32_t layer = -1;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t activation_bytes = 0;
  uint64_t gradient_bytes = 0;
};

struct Result {
  uint64_t peak_bytes = 0;
  uint64_t allocated_peak_bytes = 0;  // without the runtime line: torch.cuda.max_memory_allocated
  std::string peak_phase;
  int32_t peak_layer = -1;
  Line weights, master_weights, gradients, optimizer_state, activations, temporaries, runtime;
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
  std::vector<std::string> assumptions;
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

nlohmann::json to_json(const Result& r, bool include_timeline = true);

}  // namespace peak
}  // namespace trainmem
