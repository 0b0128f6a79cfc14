// A model read from a trace of one training step (python/trainmem_trace; format: docs/trace.md):
// every parameter and buffer, the forward's ops with their module and FLOPs, every storage the
// step allocates with its size as a polynomial in the micro-batch b (and the sequence length s),
// when it is freed in the forward or whether autograd keeps it for the backward, the backward's
// allocations and frees per autograd node, and the chain of layers the module calls form.
// traced_activations turns it into the per-layer activations every calculator uses.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/message.hpp"

namespace trainmem {
namespace traced {

// c[0] + c[1] b + c[2] s + c[3] b s + c[4] s^2 + c[5] b s^2, all over `den` (exact: the tracer
// fits integers, or simple fractions, from probes at several sizes).
struct Poly {
  int64_t c[6] = {0, 0, 0, 0, 0, 0};
  uint32_t den = 1;
  bool uses_seq() const { return c[2] || c[3] || c[4] || c[5]; }
};

struct Tensor {
  Poly bytes;
  uint32_t element_bytes = 4;
  bool floating = true;
  bool mask = false;      // dropout's random draw (a float noise tensor on CPU / meta)
  bool backward = false;  // allocated in the backward
  int64_t op = -1;        // forward: the op that made it
  int64_t free = -1;      // forward: the op before which it was freed (-1: not in the forward)
  bool saved = false;     // kept by autograd for the backward
};

struct Op {
  std::string name;
  int64_t module = -1;
  Poly flops;
};

struct Layer {
  std::string name;
  uint64_t start = 0, end = 0;  // forward op range [start, end)
  uint64_t output = 0;          // the tensor it hands to the next layer (the loss: the last)
};

// The backward in order: 'n' = the events after it belong to forward op `index`'s autograd node
// (-1: unknown); 'a' = tensor `index` is allocated; 'f' = it is freed.
struct Event {
  char kind = 'n';
  int64_t index = -1;
};

struct Trace {
  std::string name, torch, device, loss;
  uint64_t batch = 1, seq = 0;  // the traced sizes (seq 0: no sequence length)
  bool has_seq = false;
  std::vector<Poly> inputs;  // the batch's tensors (the loss's target included)
  std::vector<std::string> dtypes_in;
  std::vector<bool> inputs_saved;  // a layer keeps that batch tensor for the backward
  std::vector<Op> ops;
  std::vector<Tensor> tensors;
  std::vector<Layer> layers;
  std::vector<Event> backward;
  std::vector<uint64_t> layer_params;  // parameters per chain layer (first use; tied once)
  // What the tracer says about this trace: codes of the catalog (trace.note.*), or an older
  // file's plain sentence as trace.note.file (the file's own text).
  std::vector<Message> notes;
  uint64_t inexact = 0;  // sizes the probes contradicted (not polynomial)
  std::string dtype;     // the floating dtype the activations were traced in
  // The same step with the model in bfloat16 (variants.bfloat16), when the tracer recorded it:
  // precision bf16 and fp16 read it (the model's explicit fp32 casts stay fp32 there).
  std::shared_ptr<const Trace> half;
};

// What the forward leaves for the backward at the settings' sizes: the storages autograd keeps
// (the batch's tensors a layer keeps included: what saved_tensors_hooks see, deduplicated by
// storage, parameters and buffers excluded), those alive only because the step's code holds
// them (the model's output, the loss), and the batch.
struct StepSummary {
  uint64_t saved_bytes = 0;
  uint64_t held_bytes = 0;
  uint64_t input_bytes = 0;
};
StepSummary step_summary(const Trace& t, const activations::Settings& s);

// Per-layer activations of the traced step at the settings' micro-batch and seqLen (the
// precision rescales floating tensors traced in fp32; dropout masks take the runtime's width).
// Throws RequestError naming `field` for sizes a polynomial cannot give (negative, too large).
activations::ModelActivations traced_activations(const Trace& t, const activations::Settings& s);

}  // namespace traced
}  // namespace trainmem
