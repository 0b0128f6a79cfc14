// A network recorded op by op, for the vision and speech recipes (cpp/src/net/*.cpp): one pass
// of a recipe over a Graph gives the exact parameter list (names and shapes as state_dict()
// holds them) and, for a batch, what autograd saves, what lives transiently in the forward and
// in the backward, per chain layer (activations::LayerActivations).
//
// The model: every tensor is a value on a storage (views share their base's storage; in-place
// ops write their input's). An op reads values, makes values and saves some storages for its
// backward (the rules of PyTorch's tools/autograd/derivatives.yaml, one per op in ops.cpp,
// checked against torch 1.13 with saved_tensors_hooks: tools/measure_vision.py). A saved storage
// lives until the backward of the earliest op that saved it; any other storage until its last
// reader. The backward is walked op by op in reverse: each op's input gradients are made (or
// alias its output gradient: views, add, cat), its output gradients and the storages it was
// the last to hold are freed. Parameters and their gradients are not activations (peak memory
// counts them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"
#include "trainmem/net.hpp"

namespace trainmem {
namespace net {

using Shape = std::vector<uint64_t>;

// A tensor value (0 = none).
struct V {
  uint32_t id = 0;
  explicit operator bool() const { return id != 0; }
};

// Element widths of the run: parameters, the default activation, and whether torch.autocast
// casts matmul/conv inputs to 16-bit and layer_norm/softmax inputs to fp32.
struct Widths {
  uint32_t param = 4;
  uint32_t act = 4;
  bool autocast = false;
};

class Graph {
 public:
  // `s`: the batch and run settings; `m` (may be null): receives the parameter tensors, buffers
  // and module counts. `activations`: record what is saved (false: parameters only).
  Graph(const activations::Settings& s, ModelDescription* m, bool activations);

  // ---- structure: chain layers (0: the stem, then the blocks, last: the head)
  // Starts a chain layer; `block`: the TensorSpec.block of its parameters (-1 before the first
  // block; peak memory maps block b to chain layer b + 1).
  void layer(const std::string& name, int64_t block);
  void output(V v);  // the current layer's output (what the next layer reads)
  // A tensor this layer makes that later layers read beside its output (Whisper's encoder
  // output, read by every decoder layer): counted in the output bytes, so that a checkpointed
  // next layer keeps it and its gradient flows back with the output's.
  void carry(V v);
  void tokens(uint64_t rows);  // rows its linear modules process (LayerActivations::tokens)
  void assume(const Text& a);

  // ---- parameters, buffers, modules (names as state_dict(); module count for torch.save)
  void module(const std::string& path);
  V param(const std::string& name, Shape shape, LinearKind lk = LinearKind::none,
          bool trainable = true, const std::string& tied = std::string());
  void mark_output_head();  // the last parameter is the output embedding (LoRA all-linear skips it)
  void buffer(const std::string& name, Shape shape, DType dt = DType::fp32, bool persistent = true);

  // ---- values
  V input(Shape shape, uint32_t width, bool grad);  // the batch (not an activation of a layer)
  // A parameter read as a tensor (class token, position table): not an activation, and its
  // gradient is peak memory's (the trace's .grad), not the graph's.
  V weight_value(Shape shape);
  const Shape& shape(V v) const { return vals_[v.id].shape; }
  uint64_t numel(V v) const;
  uint32_t width(V v) const { return vals_[v.id].width; }
  bool contiguous(V v) const { return vals_[v.id].contiguous; }
  bool grad(V v) const { return vals_[v.id].grad; }
  const Widths& widths() const { return w_; }
  const activations::Settings& settings() const { return s_; }
  bool recording() const { return rec_; }
  size_t chain_layers() const { return chain_layers_; }

  // ---- op bookkeeping (ops.cpp)
  // An op: reads `in`, makes values. `alias_backward`: its input gradients are its output
  // gradient (views, add, cat, copies), so its backward allocates nothing.
  void begin_op(std::initializer_list<V> in, bool alias_backward = false);
  void begin_op(const std::vector<V>& in, bool alias_backward = false);
  // A new storage; `contiguous`: false for pointwise results of permuted inputs (TensorIterator
  // keeps its input's dimension order).
  V make(Shape shape, uint32_t width, bool contiguous = true);
  V view(V base, Shape shape, bool contiguous);  // the same storage
  V inplace(V base);                             // a new version of base's storage
  void save(V v, const char* what, const char* why);
  void flops(double f);
  void backward_extra(uint64_t bytes);  // a workspace while this op's backward runs
  void forward_extra(uint64_t bytes);   // a workspace while this op runs

  // The recorded network as per-layer activations (ModelActivations::layers, input_bytes).
  void finish(activations::ModelActivations* out);

 private:
  struct Value {
    Shape shape;
    uint32_t storage = 0;
    uint32_t width = 4;
    bool grad = true;
    bool contiguous = true;
  };
  struct Storage {
    uint64_t bytes = 0;
    int32_t layer = -1;        // chain layer that made it (-1: the batch, a parameter)
    uint32_t made = 0;         // op index
    uint32_t last_read = 0;    // op index
    int64_t first_saver = -1;  // earliest op whose backward node holds it
    bool param = false;
    bool batch = false;
    const char* what = "";
    const char* why = "";
  };
  struct Op {
    int32_t layer = 0;
    std::vector<uint32_t> in, out;  // values
    bool alias = false;
    uint64_t extra = 0;
  };
  struct Layer {
    std::string name;
    uint32_t first_op = 0;
    uint32_t output = 0;            // value
    std::vector<uint32_t> carried;  // values
    uint64_t tokens = 0;
    double flops = 0;
  };
  // The reduction to chain layers (graph_layers.cpp).
  struct Reduced;
  void use(V v);
  void reduce_layers(Reduced* r, activations::ModelActivations* out) const;
  void forward_temps(const Reduced& r, size_t L, activations::LayerActivations* l) const;
  void backward_walk(Reduced* r) const;
  void backward_temps(const Reduced& r, size_t L, activations::LayerActivations* l) const;
  uint64_t out_bytes_of(size_t L) const;  // output + carried bytes of layer L

  const activations::Settings& s_;
  ModelDescription* m_;
  bool rec_;
  Widths w_;
  int64_t block_ = -1;
  size_t chain_layers_ = 0;
  std::vector<Value> vals_;
  std::vector<Storage> st_;
  std::vector<Op> ops_;
  std::vector<Layer> layers_;
  std::vector<Text> assumptions_;
};

}  // namespace net
}  // namespace trainmem
