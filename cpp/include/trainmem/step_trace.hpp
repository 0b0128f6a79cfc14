// The allocation trace of whole training steps: every tensor allocation and free in the order
// PyTorch makes them (weights at load; forward per op; the loss; backward per op, the autograd
// engine freeing each saved tensor once its node has run; .grad creation and accumulation; the
// optimizer step per parameter, per tensor list or fused; zero_grad), for the caching-allocator
// simulator. Built from the placement schedule and the per-layer tensors of activations.hpp.
// Model and sources: docs/allocator.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/caching_allocator.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {
namespace trace {

// How optimizer.step() runs over the parameters (torch/optim/*.py).
enum class OptimizerImpl {
  for_loop,  // _single_tensor_*: one parameter at a time (torch 1.13 default)
  foreach,   // _multi_tensor_*: one list op over all parameters (torch 2.x default on CUDA)
  fused,     // one fused kernel (fused=True, bitsandbytes): no temporaries
};

// What an allocation holds: the parts of the step's memory the breakdown reports (peak
// memory's lines group them). The allocator never sees them.
enum class Part : uint8_t {
  weights,           // parameters on the device (shards, quantised bases, adapters)
  master_weights,    // ZeRO mixed precision's fp32 copy
  gradients,         // the .grad tensors
  ddp_buckets,       // DistributedDataParallel's reducer buckets
  reduce_buckets,    // DeepSpeed ZeRO's gradient (IPG) buckets
  optimizer_state,   // exp_avg, exp_avg_sq, momentum, ... (created at the first step)
  batch,             // the input batch on the device
  saved,             // tensors autograd saved for the backward
  boundaries,        // layer outputs passed on, checkpointed inputs, cached op outputs
  activation_grads,  // gradients of the layers' outputs and inputs during the backward
  op_transients,     // an op's temporaries (attention scores, an incoming .grad being added, ...)
  autocast_copies,   // torch.autocast's 16-bit copies of fp32 weights
  gathered,          // ZeRO-3 / FSDP: unsharded parameters and gradients of running units
  optimizer_temps,   // temporaries of optimizer.step()
  grad_partition,    // ZeRO mixed precision: the fp32 copy of the gradient partition at the step
  workspace,         // the cuBLAS workspace (through the caching allocator)
};
constexpr size_t kParts = 16;

struct TraceLayer {
  std::vector<uint64_t> tensors;  // saved tensors in creation order, the output last
  uint64_t output_bytes = 0;
  std::vector<activations::LayerActivations::TempGroup> forward_temps, backward_temps;
  std::vector<uint64_t> grads;  // the .grad of each trainable parameter tensor, module order
  // The last `late_grads` of `grads` are made after the layer's saved tensors are read (a
  // tied output projection's weight gradient: MmBackward0 runs after the loss's nodes)
  uint32_t late_grads = 0;
  // A tied weight's second gradient, made by this layer's backward (a tied embedding). The
  // weight has one AccumulateGrad node with two producers: the engine holds the first gradient
  // (the head's, the late grad `slot` of layer `user`) in the node's input buffer until this
  // one arrives, sums the two there, then runs AccumulateGrad once (torch/csrc/autograd/
  // engine.cpp evaluate_function -> InputBuffer::add; functions/accumulate_grad.h).
  struct TiedGrad {
    uint32_t user = 0;  // the layer whose late grads hold the first gradient
    uint32_t slot = 0;  // its index in that layer's grads
    uint64_t bytes = 0;
  };
  std::vector<TiedGrad> tied_grads;
  // torch.autocast: the 16-bit copies of the layer's fp32 matmul weights. Cached when the
  // weight is a leaf that requires grad (aten/src/ATen/autocast_mode.cpp cached_cast:
  // can_try_cache), until the autocast region exits; otherwise made per op and freed after it
  // unless a backward node keeps it (in a forward with grad enabled, to the layer's backward).
  std::vector<uint64_t> cast_weights;
  bool casts_cached = true;
  // Whether an op of this layer keeps its input (the previous layer's output) for the backward;
  // false: autograd frees that output once this layer has run with autograd (activations.hpp)
  bool input_saved = true;
  // Skip connections (placement::Layer::skips, the diffusion UNet's concatenated down-block
  // outputs): the outputs of earlier layers this layer also reads. Each lives until this layer
  // has run with autograd (or, inside a checkpointed segment that recomputes the producer too,
  // until its no-grad forward); the gradient this layer's backward sends it (grad_bytes) lives
  // until the producer's next layer's backward, where the two gradients are summed.
  std::vector<placement::Layer::Skip> skips;
  // The first op concatenates the input with the skips (torch.cat): a checkpointed segment
  // starting here keeps the concatenation as its input; the input's gradient is a view of the
  // concatenation's, which lives with the skip's gradient.
  bool concat_input = false;
  // Op-level selective checkpointing: the op outputs the policy caches when the layer runs
  // checkpointed; they live until its recomputation, which uses them instead of running
  // those ops (torch/utils/checkpoint.py create_selective_checkpoint_contexts)
  std::vector<uint64_t> selective_kept;
  // ZeRO-3 / FSDP: the allocations gathered around the layer's forward, recomputation and
  // backward, one per unit (unsharded parameters; in the backward also the unsharded gradients)
  std::vector<uint64_t> gather_forward, gather_recompute, gather_backward;
  // FSDP1 without its rate limiter (limit_all_gathers=False): the CPU may issue a unit's
  // all-gather a whole pass ahead of the GPU, so a gathered block freed in program order is
  // not free for another unit until the GPU has run the ops that read it (the caching
  // allocator reuses a block with pending stream uses only after their events:
  // CUDACachingAllocator.cpp insert_events / process_events). The bound: the layer's gathers
  // after the first `gather_shared` (the root unit, gathered for the whole step) go on their
  // own stream `gather_stream` (0: the default stream, shared by every unit), whose pool only
  // this layer's gathers reuse.
  uint32_t gather_stream = 0;
  uint32_t gather_shared = 0;
};

// One trainable parameter tensor for the optimizer step (the order of the layers' grads).
struct OptimizerParam {
  std::vector<uint64_t> state;  // its state tensors, created at the first step
  uint64_t temp_bytes = 0;      // one temporary the size of the parameter in the state dtype
  uint64_t master = 0;          // ZeRO mixed precision: its fp32 master partition (at load)
  // foreach: _group_tensors_by_device_and_dtype runs the list ops once per dtype group, one
  // group after the other (torch/optim/optimizer.py); parameters of one dtype share a group
  uint8_t group = 0;
};

struct StepSpec {
  uint64_t input_bytes = 0;  // the batch on the device
  // Tensors the step's code holds (ModelActivations::held: the model's outputs in a variable):
  // made as the forward ends; the loop's next micro-step drops them when it rebinds the
  // variable (after its forward), the last micro-step's go when the step ends (after zero_grad)
  std::vector<uint64_t> held;
  // Pipeline parallelism: the saved tensors of the other micro-batches in flight on this stage,
  // made before the step's first micro-batch runs and freed before the optimizer step
  std::vector<uint64_t> in_flight;
  std::vector<uint64_t> weights;  // every parameter tensor on the device, in load order
  std::vector<TraceLayer> layers;
  std::vector<placement::Op> ops;  // one micro-step's forward/backward schedule
  std::vector<OptimizerParam> params;
  // Temporaries per parameter (for-loop), in copies of temp_bytes: e.g. torch AdamW 2 (sqrt
  // and its quotient), SGD 0; and the whole-list temporaries live at once (foreach): AdamW 1
  // (_foreach_sqrt) from torch 2.1, 2 in 2.0 (denom = _foreach_add(exp_avg_sq_sqrt, eps)).
  uint32_t temp_copies = 0;
  uint32_t foreach_lists = 0;
  OptimizerImpl impl = OptimizerImpl::foreach;
  uint64_t accumulation_steps = 1;
  bool set_to_none = true;  // zero_grad(set_to_none=True): .grad freed between steps
  // How the engine sums two dense gradients of one input (InputBuffer accumulate): in place
  // into the first when it holds that tensor's last reference (after torch 1.13:
  // can_accumulate_inplace), or out of place, a third tensor (torch <= 1.13: old_var + var)
  bool input_buffer_in_place = true;
  uint64_t workspace_bytes = 0;       // cuBLAS workspace, allocated at the first matmul
  std::vector<uint64_t> gather_loss;  // ZeRO-3 / FSDP: gathered while the loss is computed
  // ZeRO mixed precision: the fp32 gradient partition made for optimizer.step() and dropped
  // after it (deepspeed/runtime/zero/stage_1_and_2.py step: single_grad_partition)
  uint64_t step_grad_partition = 0;
  uint32_t steps = 3;  // optimizer steps simulated (step 1 creates the state)
  // optimizer in backward: each parameter steps in its post-accumulate-grad hook and its
  // .grad is dropped right after (torchtune register_optim_in_bwd_hooks)
  bool optimizer_in_backward = false;
  // DDP: the reducer's flat gradient buckets, allocated when the model is wrapped; with
  // gradient_as_bucket_view the .grad tensors are views into them (no allocation of their own)
  std::vector<uint64_t> ddp_buckets;
  bool grads_are_bucket_views = false;
  // DeepSpeed's gradient buckets (deepspeed/runtime/zero): ZeRO-3's, allocated once when the
  // optimizer is set up and held (stage3.py _setup_for_real_optimizer); ZeRO-1/2's, allocated
  // when the backward's first gradient hook runs and released at its end (stage_1_and_2.py
  // setup_buckets, independent_gradient_partition_epilogue -> _release_ipg_buffers)
  std::vector<uint64_t> reduce_buckets_held;
  std::vector<uint64_t> reduce_buckets_per_backward;
  // Activation offloading (torchtune OffloadActivations): every tensor saved in the first
  // forward, but those under 1024 B, is copied to pinned CPU memory and freed on the GPU once
  // more than `offload_stash` newer ones exist; the backward brings a layer's back before it
  // runs (torchtune/training/_activation_offloading.py: min_offload_size, max_fwd_stash_size).
  bool offload_activations = false;
  uint64_t offload_min_bytes = 1024;
  uint32_t offload_stash = 5;
};

// Where a trace event belongs, for the result's peak location.
struct Mark {
  uint32_t event = 0;  // index of the first event of this part
  uint32_t step = 0;   // 1-based optimizer step; 0 = loading the model
  uint32_t micro_step = 0;
  std::string phase;  // load | forward | loss | recompute | backward | optimizer | zero_grad
  int32_t layer = -1;
};

struct Trace {
  std::vector<allocator::Event> events;
  std::vector<Mark> marks;
  std::vector<Part> parts;  // what each allocation holds, indexed by its id (index 0 unused)
};

Trace build(const StepSpec& spec);

// A consumer of the events as they are made, for a caller that reads them once in order (peak
// memory's count without the allocator): no list of events is kept. Ids count up from 1, one
// per allocation, in the order the allocations come; `mark` comes before a mark's first event.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void mark() = 0;
  virtual void alloc(uint64_t id, uint64_t bytes, Part part) = 0;
  // The `n` allocations of `bytes` (none of 0 B) one after the other, with nothing between
  // them, and later freed one after the other (the free of `id` stands for them all): one id
  // for a sink that only reads the live bytes and their peak, which within such a run is at its
  // end. Each allocation and free counts as one event.
  virtual void alloc_run(uint64_t id, const uint64_t* bytes, size_t n, Part part) = 0;
  // An allocation freed right after it (nothing between): two events, no id kept.
  virtual void transient(uint64_t bytes, Part part) = 0;
  // Returns the events the free stands for (1, or an allocation run's n).
  virtual uint64_t free(uint64_t id) = 0;
};

// The same trace as build(spec), its events given to `sink` (their streams left out); returns
// the marks (Trace::events and Trace::parts stay empty).
Trace build_into(const StepSpec& spec, Sink* sink);

}  // namespace trace
}  // namespace trainmem
