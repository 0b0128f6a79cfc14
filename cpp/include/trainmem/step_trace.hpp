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

struct TraceLayer {
  std::vector<uint64_t> tensors;  // saved tensors in creation order, the output last
  uint64_t output_bytes = 0;
  std::vector<activations::LayerActivations::TempGroup> forward_temps, backward_temps;
  std::vector<uint64_t> grads;  // the .grad of each trainable parameter tensor, module order
  // torch.autocast: the 16-bit copies of the layer's matmul weights, cached for the forward
  // pass and kept by the matmuls' backward nodes (aten/src/ATen/autocast_mode.cpp cached_cast)
  std::vector<uint64_t> cast_weights;
  // Op-level selective checkpointing: the op outputs the policy caches when the layer runs
  // checkpointed; they live until its recomputation, which uses them instead of running
  // those ops (torch/utils/checkpoint.py create_selective_checkpoint_contexts)
  std::vector<uint64_t> selective_kept;
};

// One trainable parameter tensor for the optimizer step (the order of the layers' grads).
struct OptimizerParam {
  std::vector<uint64_t> state;  // its state tensors, created at the first step
  uint64_t temp_bytes = 0;      // one temporary the size of the parameter in the state dtype
};

struct StepSpec {
  uint64_t input_bytes = 0;       // the batch on the device
  std::vector<uint64_t> weights;  // every parameter tensor on the device, in load order
  std::vector<TraceLayer> layers;
  std::vector<placement::Op> ops;  // one micro-step's forward/backward schedule
  std::vector<OptimizerParam> params;
  // Temporaries per parameter (for-loop) or per list (foreach), in copies of temp_bytes:
  // e.g. torch AdamW for-loop 2 (sqrt and its quotient), foreach 1 (_foreach_sqrt), SGD 0.
  uint32_t temp_copies = 0;
  OptimizerImpl impl = OptimizerImpl::foreach;
  uint64_t accumulation_steps = 1;
  bool set_to_none = true;       // zero_grad(set_to_none=True): .grad freed between steps
  uint64_t workspace_bytes = 0;  // cuBLAS workspace, allocated at the first matmul
  uint64_t per_layer_extra =
      0;               // gathered around every layer's forward and backward (ZeRO-3, FSDP)
  uint32_t steps = 3;  // optimizer steps simulated (step 1 creates the state)
  // optimizer in backward: each parameter steps in its post-accumulate-grad hook and its
  // .grad is dropped right after (torchtune register_optim_in_bwd_hooks)
  bool optimizer_in_backward = false;
  // DDP: the reducer's flat gradient buckets, allocated when the model is wrapped; with
  // gradient_as_bucket_view the .grad tensors are views into them (no allocation of their own)
  std::vector<uint64_t> ddp_buckets;
  bool grads_are_bucket_views = false;
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
};

Trace build(const StepSpec& spec);

}  // namespace trace
}  // namespace trainmem
