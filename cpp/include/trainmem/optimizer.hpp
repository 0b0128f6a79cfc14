// Optimizer state layouts as data: for each parameter tensor, which state entries the
// optimizer keeps (names, shapes, dtypes), exactly as the framework's state_dict holds them.
// Used by the checkpoint-size calculator and by peak memory (optimizer state bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {

// An optimizer and its settings. `type` is the state layout (vocab::kOptimizers maps the
// request names, aliases included, onto it; io/optimizer_json.cpp reads them).
struct OptimizerSpec {
  vocab::Optimizer type = vocab::Optimizer::adamw;
  // bitsandbytes paged optimizers (PagedAdamW8bit): state tensors of >= 100,000 values are
  // allocated with cudaMallocManaged (bitsandbytes/optim/optimizer.py get_state_buffer, paged),
  // outside PyTorch's caching allocator
  bool paged = false;
  double momentum = 0;            // sgd, rmsprop: momentum_buffer when != 0
  bool nesterov = false;          // sgd (no extra state)
  bool amsgrad = false;           // adam, adamw: max_exp_avg_sq
  bool centered = false;          // rmsprop: grad_avg
  bool has_beta1 = false;         // HF adafactor: exp_avg when beta1 is set (default None)
  double beta1 = 0;               //
  uint64_t block_size = 2048;     // adam-8bit: values per absmax block (bitsandbytes);
                                  // torchao: values per scale (256; 4-bit 128)
  uint64_t min_8bit_size = 4096;  // adam-8bit: smaller tensors keep fp32 state1/state2
  bool weight_decay_set = false;  // a float weight_decay given (pickle width only)
};

// How a state entry is held in optimizer.state_dict()['state'][i].
enum class StateKind {
  tensor,         // its own storage
  shared_tensor,  // one tensor object shared by every parameter (bitsandbytes qmap1/qmap2)
  python_int,     // e.g. RMSprop / HF Adafactor `step` (no storage)
  python_none,    // torch 1.13 SGD without momentum stores momentum_buffer = None
};

struct StateTensor {
  const char* name = "";  // "exp_avg", "step", ...
  StateKind kind = StateKind::tensor;
  std::vector<uint64_t> shape;  // tensors: shape (empty = 0-dim scalar)
  DType dtype = DType::fp32;
  bool follows_param = false;  // dtype follows the parameter / requested state dtype
  uint64_t numel() const;      // 1 for a 0-dim tensor, 0 for non-tensors
  uint64_t bytes() const;      // storage bytes (0 for non-tensors)
};

// torchao's AdamW8bit / AdamW4bit / AdamWFp8 (torchao/optim/adam.py): tensor-subclass states.
bool is_torchao_low_bit(const OptimizerSpec& o);
// States of one byte or less per value: bitsandbytes 8-bit Adam or a torchao low-bit AdamW.
bool has_byte_states(const OptimizerSpec& o);
// The layout's name as results print it ("adamw", "adam-8bit", ...: its first name in
// vocab::kOptimizers).
std::string optimizer_name(const OptimizerSpec& o);
// Names accepted as optimizer strings (for messages and docs).
const std::vector<std::string>& optimizer_names();
// Values per quantisation block of torchao's low-bit AdamW defaults (adam.py @ 0372e5ff), or the
// bitsandbytes default for the others.
uint64_t default_block_size(vocab::Optimizer type);

// State entries of one parameter tensor, in the order the optimizer inserts them.
// `state_dtype` is the dtype of the entries that follow the parameter (the parameter's dtype
// in PyTorch; fp32 with a mixed-precision master copy). Fixed-dtype entries (Adam `step`
// float32, 8-bit uint8 states, fp32 absmax, HF Adafactor fp32 factors) ignore it.
std::vector<StateTensor> optimizer_state(const OptimizerSpec& opt, const TensorSpec& param,
                                         DType state_dtype);

// State bytes of one parameter tensor (sum of optimizer_state(...).bytes(); shared tensors
// excluded — see optimizer_shared_state_bytes).
uint64_t optimizer_state_bytes(const OptimizerSpec& opt, const TensorSpec& param,
                               DType state_dtype);
// Bytes held once per optimizer (bitsandbytes quantization maps), given whether any tensor
// uses 8-bit state.
uint64_t optimizer_shared_state_bytes(const OptimizerSpec& opt, bool any_8bit);

// How optimizer.step() runs and what it allocates besides the state (torch/optim/*.py,
// transformers' optimization.py, lion-pytorch, bitsandbytes, torchao).
struct StepFacts {
  vocab::OptimizerImpl impl = vocab::OptimizerImpl::for_loop;  // what runs
  bool own_kernel = false;     // bitsandbytes / torchao: their own kernels (no torch temporaries)
  uint32_t loop_copies = 0;    // for-loop: temporaries of one tensor alive at once
  uint32_t foreach_lists = 0;  // foreach: whole-list temporaries alive at once
};
// Whether the optimizer has that implementation (an explicit request for another is an error).
bool has_implementation(const OptimizerSpec& o, vocab::OptimizerImpl impl);
// The step as it runs for `requested` (the request's or the runtime's default; an optimizer
// without it runs its own loop). `adam_foreach_lists`: the runtime's foreach Adam/AdamW lists.
StepFacts step_facts(const OptimizerSpec& o, vocab::OptimizerImpl requested,
                     uint32_t adam_foreach_lists);

// torch 1.13 param_group entries of the optimizer (keys and pickled value kinds), for the
// container model: 'f' float, 'i' small int, 'b' bool, 'n' None, 't' (float, float),
// 'u' (None, float).
struct GroupEntry {
  const char* key;
  char kind;
};
std::vector<GroupEntry> optimizer_param_group(const OptimizerSpec& opt);

// Copies per parameter in seed 003's simple formula (weights excluded): sgd 0, momentum 1,
// adam 2, ... (adam-8bit counts its two 1-byte moments as 2 copies of 1 byte: see checkpoint).
uint32_t simple_state_copies(const OptimizerSpec& opt);

}  // namespace trainmem
