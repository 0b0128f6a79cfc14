// The ops of the vision and speech recipes: each registers its module's parameters (names and
// shapes as state_dict() holds them), makes its outputs and saves what its backward reads.
// Save rules: PyTorch tools/autograd/derivatives.yaml (torch 1.13 and 2.x agree except where a
// RuntimeTraits flag says otherwise), each checked op by op with saved_tensors_hooks on torch
// 1.13 (tools/measure_vision.py, tests/fixtures/torch_vision.json). Autocast: the op lists of
// aten/src/ATen/autocast_mode.cpp (16-bit: convolutions, linear, matmul, bmm, baddbmm; fp32:
// layer_norm, group_norm, softmax, log_softmax, nll_loss; others run in their input's dtype).
#pragma once
#include <string>
#include <vector>

#include "net/graph.hpp"

namespace trainmem {
namespace net {

// nn.Conv1d / nn.Conv2d (one spatial size per kernel dimension): weight [cout, cin/groups, k...],
// bias [cout]. ConvolutionBackward0 keeps its input.
struct ConvSpec {
  uint64_t out = 0;
  Shape kernel, stride, pad;
  uint64_t groups = 1;
  bool bias = false;
  uint64_t dilation = 1;
};
V conv(Graph& g, const std::string& mod, V x, const ConvSpec& c);
// The scratch the runtime's weight gradient of a convolution with a long kernel allocates (CPU
// oneDNN; RuntimeTraits::conv_scratch_*): weight [cout, cin / groups, kernel...], input of
// `width` bytes per element, output spatial sizes `out`; 0 where the runtime has none or the
// rule does not apply.
uint64_t conv_weight_grad_scratch(const activations::RuntimeTraits& rt, uint64_t cin, uint64_t cout,
                                  uint64_t groups, const Shape& kernel, const Shape& out,
                                  uint32_t width);
// A square 2-D convolution: kernel k, stride s, padding p.
V conv2d(Graph& g, const std::string& mod, V x, uint64_t out, uint64_t k, uint64_t s, uint64_t p,
         uint64_t groups = 1, bool bias = false);

// nn.BatchNorm2d (training): weight, bias; buffers running_mean, running_var,
// num_batches_tracked. Keeps its input and the per-channel save_mean, save_invstd (fp32).
V batch_norm(Graph& g, const std::string& mod, V x);
// nn.LayerNorm over the last dimension (n): keeps its input and per-row mean, rstd.
V layer_norm(Graph& g, const std::string& mod, V x, bool bias = true);
// The same op with parameters registered by the caller.
V layer_norm_op(Graph& g, V x);
// nn.GroupNorm: keeps its input and per-(sample, group) mean, rstd.
V group_norm(Graph& g, const std::string& mod, V x, uint64_t groups);

enum class Act { relu, hardswish, hardsigmoid, silu, sigmoid, gelu, gelu_tanh, quick_gelu, tanh };
// An activation; `inplace` as nn.ReLU(inplace=True) etc. (in-place hardswish, hardsigmoid and
// silu keep a copy of their input: the value they overwrite).
V act(Graph& g, Act a, V x, bool inplace = false);
Act act_named(const std::string& hf_name);  // HF ACT2FN names: gelu, relu, quick_gelu, ...

V max_pool2d(Graph& g, V x, uint64_t k, uint64_t s, uint64_t p);  // keeps input + int64 indices
V avg_pool2d(Graph& g, V x, uint64_t k, uint64_t s);              // keeps its input
// AdaptiveAvgPool2d(1) = mean over H, W (keepdim): MeanBackward keeps its input on torch 1.13.
V global_avg_pool(Graph& g, V x);
// mean over dimension `dim` (keepdim: the dimension stays, of size 1).
V mean_dim(Graph& g, V x, size_t dim, bool keepdim = false);

// nn.Embedding(rows, dim) over int64 ids: EmbeddingBackward0 keeps the indices.
V embedding(Graph& g, const std::string& mod, V ids, uint64_t rows, uint64_t dim);
// An embedding whose indices are a buffer (position_ids): [1, n, dim], nothing kept.
V position_table(Graph& g, const std::string& mod, uint64_t rows, uint64_t n, uint64_t dim);

// nn.Linear over the last dimension: weight [out, in] (+ bias [out]). Keeps its input (a copy
// when the input is a non-contiguous view of more than three dimensions).
V linear(Graph& g, const std::string& mod, V x, uint64_t out, bool bias);
// The same op with parameters registered by the caller (F.linear on a module's own weights).
V linear_op(Graph& g, V x, uint64_t out);
// LoRA (ops_lora.cpp): whether the request adapts module `mod`; the adapter's branch added to
// the base layer's `result` (PEFT lora.Linear), out = the linear's output features.
bool lora_adapted(const Graph& g, const std::string& mod);
V lora_adapter(Graph& g, V x, V result, uint64_t out);

V add(Graph& g, V a, V b, bool inplace = false);  // keeps nothing
V mul(Graph& g, V a, V b);                        // keeps each factor whose partner needs grad
V mul_param(Graph& g, V x);                       // x * parameter: keeps x
V scale(Graph& g, V x);                           // x * a Python number: keeps nothing
V square(Graph& g, V x);                          // x.pow(2): keeps x
V sqrt_op(Graph& g, V x);                         // torch.sqrt: keeps its result
V div(Graph& g, V a, V b);                        // a / b: keeps a and b (both need grad)
V cat(Graph& g, const std::vector<V>& xs, size_t dim);

V reshape(Graph& g, V x, Shape s);  // a view, or a copy of a non-contiguous input
V view(Graph& g, V x, Shape s);     // a view whatever the strides (flatten of size-1 dims)
V permute(Graph& g, V x, const std::vector<size_t>& perm);
V contiguous(Graph& g, V x);
V copy(Graph& g, V x, Shape s);   // an op that writes a new tensor (roll, pad, gather)
V slice(Graph& g, V x, Shape s);  // narrow / select: a view
// chunk / split / unbind into n equal views of shape `part` (one backward node: the input's
// gradient is made once, full size)
std::vector<V> split(Graph& g, V x, size_t n, const Shape& part);
V expand(Graph& g, V x, Shape s);  // a broadcast view (class token)
// F.interpolate (bilinear / nearest): a new tensor; UpsampleBackward keeps only sizes
V interpolate(Graph& g, V x, Shape s);
V cast(Graph& g, V x, uint32_t width);  // .to(dtype): a copy in the new width

V dropout(Graph& g, V x, double p, bool inplace = false);  // mask (CUDA) / noise (CPU) kept
V drop_path(Graph& g, V x, double p, bool hf);             // stochastic depth (per sample)
V softmax(Graph& g, V x);                                  // keeps its result
// torch.matmul / bmm: keeps both operands (reshape copies of non-contiguous batched ones).
V matmul(Graph& g, V a, V b, Shape out, bool batched_reshape = true);

// Scaled dot-product attention of q [b, h, t, d], k, v [b, h, s, d] as the module computes it:
// eager (matmul, scale, softmax, dropout, matmul) or, with settings().attention == sdpa, the
// fused kernel (flash / memory-efficient: keeps q, k, v, output and the fp32 logsumexp).
// `fp32_softmax`: softmax(dtype=float32) then cast back (HF eager_attention_forward).
struct AttentionSpec {
  double dropout = 0;
  bool fp32_softmax = false;
  bool mask = false;   // an additive mask / bias is added to the scores
  bool eager = false;  // the module has no SDPA path
};
V attention(Graph& g, V q, V k, V v, const AttentionSpec& a);

// Cross-entropy over logits [rows, classes] with int64 labels: log_softmax keeps its result
// (fp32 under autocast), nll_loss its target. Returns the loss (a scalar).
V cross_entropy(Graph& g, V logits);

}  // namespace net
}  // namespace trainmem
