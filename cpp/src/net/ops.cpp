// The ops of the vision and speech recipes (ops.hpp states the rules and their sources). Each
// save names the autograd node that keeps the tensor (derivatives.yaml of torch 1.13 / 2.x).
#include "net/ops.hpp"

#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace net {
namespace {

uint64_t prod(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  uint64_t n = 1;
  for (size_t i = from; i < s.size() && i < to; ++i) n = checked_mul(n, s[i], "microBatch");
  return n;
}

// Autocast's casts (aten/src/ATen/autocast_mode.cpp): 16-bit for the matmul / convolution
// list, fp32 for the fp32 list; a new tensor per op that reads the value.
V lowp(Graph& g, V x) { return g.widths().autocast && g.width(x) == 4 ? cast(g, x, 2) : x; }
V fp32(Graph& g, V x) { return g.widths().autocast && g.width(x) == 2 ? cast(g, x, 4) : x; }

uint32_t out_width(Graph& g, V x) { return g.widths().autocast ? 2 : g.width(x); }

}  // namespace

V cast(Graph& g, V x, uint32_t width) {
  g.begin_op({x});
  return g.make(g.shape(x), width,
                g.contiguous(x));  // .to() keeps the strides  // ToCopyBackward0 keeps nothing
}

// Measured with torch 1.13 on CPU (tests/fixtures/torch_conv_scratch.json, tools/
// measure_conv_scratch.py): threads x (copies x weight bytes + (cin / groups) x kernel
// elements x output elements x 4) + alignment, the same at any batch; none for a kernel
// narrower than the minimum or a 1-D convolution without groups.
uint64_t conv_weight_grad_scratch(const activations::RuntimeTraits& rt, uint64_t cin, uint64_t cout,
                                  uint64_t groups, const Shape& kernel, const Shape& out,
                                  uint32_t width) {
  if (rt.conv_scratch_threads == 0 || width != 4 || kernel.empty() || groups == 0 ||
      kernel.back() < rt.conv_scratch_min_kernel || (kernel.size() == 1 && groups < 2))
    return 0;
  const uint64_t k = prod(kernel), cg = cin / groups;
  const uint64_t weight =
      checked_mul(checked_mul(cout, cg, "model"), checked_mul(k, 4, "model"), "model");
  const uint64_t columns =
      checked_mul(checked_mul(cg, k, "model"), checked_mul(prod(out), 4, "model"), "model");
  const uint64_t per_thread = checked_mul(weight, rt.conv_scratch_weight_copies, "model") + columns;
  return checked_mul(per_thread, rt.conv_scratch_threads, "model") + rt.conv_scratch_align_bytes;
}

V conv(Graph& g, const std::string& mod, V x, const ConvSpec& c) {
  const Shape in = g.shape(x);  // a copy: new values below may move the graph's storage
  const size_t nd = c.kernel.size();
  const uint64_t cin = in[1];
  if (cin % c.groups != 0 || c.out % c.groups != 0)
    fail(code::kInconsistent, "model", Message{"error.net.groups", {{"mod", mod}}});
  g.module(mod);
  Shape w{c.out, cin / c.groups};
  for (uint64_t k : c.kernel) w.push_back(k);
  g.param(mod + ".weight", w);
  if (c.bias) g.param(mod + ".bias", {c.out});
  x = lowp(g, x);
  Shape out{in[0], c.out};
  for (size_t i = 0; i < nd; ++i) {
    const uint64_t span = c.dilation * (c.kernel[i] - 1) + 1, padded = in[2 + i] + 2 * c.pad[i];
    if (padded < span)
      fail(code::kOutOfRange, "imageSize", Message{"error.net.imageSmall", {{"mod", mod}}});
    out.push_back((padded - span) / c.stride[i] + 1);
  }
  g.begin_op({x});
  const V y = g.make(out, out_width(g, x));
  g.save(x, "convolution input", "ConvolutionBackward0 keeps its input");
  if (g.settings().runtime.id == "pytorch-cpu") {
    // CPU (oneDNN): the input / output reordered to blocked layouts around the kernel, measured
    // on torch 1.13: forward about max(input, output) + weight, backward input + grad_output +
    // weight beyond the gradients (tools/measure_vision.py cases; not on CUDA, whose cuDNN
    // workspace is not counted)
    const uint64_t in_b = checked_mul(prod(in), g.width(x), "microBatch");
    const uint64_t out_b = checked_mul(prod(out), g.width(y), "microBatch");
    const uint64_t w_b = checked_mul(prod(w), g.width(x), "microBatch");
    g.forward_extra(std::max(in_b, out_b) + w_b);
    g.backward_extra(in_b + out_b + w_b);
    // LoRA: a frozen convolution computes no weight gradient
    if (!g.settings().lora.enabled)
      g.backward_extra(conv_weight_grad_scratch(g.settings().runtime, cin, c.out, c.groups,
                                                c.kernel, Shape(out.begin() + 2, out.end()),
                                                g.width(x)));
  }
  // 2 x output elements x (cin / groups) x kernel elements
  g.flops(2.0 * static_cast<double>(prod(out)) * static_cast<double>(cin / c.groups) *
          static_cast<double>(prod(c.kernel)));
  return y;
}

V conv2d(Graph& g, const std::string& mod, V x, uint64_t out, uint64_t k, uint64_t s, uint64_t p,
         uint64_t groups, bool bias) {
  return conv(g, mod, x, {out, {k, k}, {s, s}, {p, p}, groups, bias});
}

V batch_norm(Graph& g, const std::string& mod, V x) {
  const uint64_t c = g.shape(x)[1];
  g.module(mod);
  g.param(mod + ".weight", {c});
  g.param(mod + ".bias", {c});
  g.buffer(mod + ".running_mean", {c});
  g.buffer(mod + ".running_var", {c});
  g.buffer(mod + ".num_batches_tracked", {}, DType::int64);
  g.begin_op({x});
  const V y = g.make(g.shape(x), g.width(x));
  const V mean = g.make({c}, 4), invstd = g.make({c}, 4);  // fp32 statistics
  g.save(x, "batch_norm input", "NativeBatchNormBackward0 keeps its input");
  g.save(mean, "batch_norm save_mean", "NativeBatchNormBackward0");
  g.save(invstd, "batch_norm save_invstd", "NativeBatchNormBackward0");
  return y;
}

namespace {
// Statistics of layer_norm / group_norm: fp32 for 16-bit inputs where the runtime does so.
uint32_t stats_width(Graph& g, V x) {
  return g.width(x) == 4 || g.settings().runtime.norm_stats_fp32 ? 4 : g.width(x);
}
}  // namespace

V layer_norm(Graph& g, const std::string& mod, V x, bool bias) {
  const uint64_t n = g.shape(x).back();
  g.module(mod);
  g.param(mod + ".weight", {n});
  if (bias) g.param(mod + ".bias", {n});
  return layer_norm_op(g, x);
}

V layer_norm_op(Graph& g, V x) {
  const Shape s = g.shape(x);
  x = fp32(g, x);
  g.begin_op({x});
  const V y = g.make(s, g.width(x));
  Shape rows(s.begin(), s.end() - 1);
  rows.push_back(1);
  const V mean = g.make(rows, stats_width(g, x)), rstd = g.make(rows, stats_width(g, x));
  g.save(x, "layer_norm input", "NativeLayerNormBackward0 keeps its input");
  g.save(mean, "layer_norm mean", "NativeLayerNormBackward0");
  g.save(rstd, "layer_norm rstd", "NativeLayerNormBackward0");
  return y;
}

V group_norm(Graph& g, const std::string& mod, V x, uint64_t groups) {
  const Shape s = g.shape(x);  // a copy: new values below may move the graph's storage
  g.module(mod);
  g.param(mod + ".weight", {s[1]});
  g.param(mod + ".bias", {s[1]});
  x = fp32(g, x);
  g.begin_op({x});
  const V y = g.make(s, g.width(x));
  const V mean = g.make({s[0], groups}, stats_width(g, x));
  const V rstd = g.make({s[0], groups}, stats_width(g, x));
  g.save(x, "group_norm input", "NativeGroupNormBackward0 keeps its input");
  g.save(mean, "group_norm mean", "NativeGroupNormBackward0");
  g.save(rstd, "group_norm rstd", "NativeGroupNormBackward0");
  return y;
}

V act(Graph& g, Act a, V x, bool inplace) {
  const Shape s = g.shape(x);
  if (a == Act::quick_gelu) {
    // HF QuickGELUActivation: input * torch.sigmoid(1.702 * input)
    const V sig = act(g, Act::sigmoid, scale(g, x));
    return mul(g, x, sig);
  }
  g.begin_op({x});
  const bool keeps_result = a == Act::relu || a == Act::sigmoid || a == Act::tanh;
  if (keeps_result) {
    const V y = inplace ? g.inplace(x) : g.make(s, g.width(x), g.contiguous(x));
    g.save(y, "activation output", "ThresholdBackward0 / SigmoidBackward0 keep their result");
    return y;
  }
  if (inplace) {
    // the in-place op's backward needs the overwritten input: autograd keeps a copy of it
    const V original = g.make(s, g.width(x));
    g.save(original, "activation input (copy kept by the in-place op)",
           "HardswishBackward0 / SiluBackward0 keep the original input");
    return g.inplace(x);
  }
  const V y = g.make(s, g.width(x), g.contiguous(x));
  g.save(x, "activation input", "GeluBackward0 / SiluBackward0 / HardswishBackward0 keep it");
  return y;
}

Act act_named(const std::string& n) {
  if (n == "relu") return Act::relu;
  if (n == "silu" || n == "swish") return Act::silu;
  if (n == "quick_gelu") return Act::quick_gelu;
  if (n == "gelu_pytorch_tanh" || n == "gelu_fast" || n == "gelu_new") return Act::gelu_tanh;
  if (n == "tanh") return Act::tanh;
  if (n == "sigmoid") return Act::sigmoid;
  return Act::gelu;
}

V max_pool2d(Graph& g, V x, uint64_t k, uint64_t s, uint64_t p) {
  Shape out = g.shape(x);
  for (size_t i = 2; i < 4; ++i) out[i] = (out[i] + 2 * p - k) / s + 1;
  g.begin_op({x});
  const V y = g.make(out, g.width(x));
  const V idx = g.make(out, 8);
  g.save(x, "max_pool2d input", "MaxPool2DWithIndicesBackward0 keeps its input");
  g.save(idx, "max_pool2d indices (int64)", "MaxPool2DWithIndicesBackward0 keeps the indices");
  return y;
}

V avg_pool2d(Graph& g, V x, uint64_t k, uint64_t s) {
  Shape out = g.shape(x);
  for (size_t i = 2; i < 4; ++i) out[i] = (out[i] - k) / s + 1;
  g.begin_op({x});
  const V y = g.make(out, g.width(x));
  g.save(x, "avg_pool2d input", "AvgPool2DBackward0 keeps its input");
  return y;
}

V global_avg_pool(Graph& g, V x) {
  Shape out = g.shape(x);
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  g.begin_op({x});
  const V y = g.make(out, g.width(x));
  if (g.settings().runtime.mean_saves_input)
    g.save(x, "mean input", "MeanBackward1 keeps its input (torch 1.13)");
  return y;
}

V mean_dim(Graph& g, V x, size_t dim, bool keepdim) {
  Shape out = g.shape(x);
  if (keepdim)
    out[dim] = 1;
  else
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
  g.begin_op({x});
  const V y = g.make(out, g.width(x));
  if (g.settings().runtime.mean_saves_input)
    g.save(x, "mean input", "MeanBackward1 keeps its input (torch 1.13)");
  return y;
}

V embedding(Graph& g, const std::string& mod, V ids, uint64_t rows, uint64_t dim) {
  g.module(mod);
  g.param(mod + ".weight", {rows, dim});
  g.begin_op({ids});
  Shape s = g.shape(ids);
  s.push_back(dim);
  const V y = g.make(s, g.widths().param);
  g.save(ids, "embedding indices (int64)", "EmbeddingBackward0 keeps its indices");
  return y;
}

V position_table(Graph& g, const std::string& mod, uint64_t rows, uint64_t n, uint64_t dim) {
  g.module(mod);
  g.param(mod + ".weight", {rows, dim});
  g.begin_op({});  // indices: the registered position_ids buffer (not an activation)
  return g.make({1, n, dim}, g.widths().param);
}

V linear(Graph& g, const std::string& mod, V x, uint64_t out, bool bias) {
  const uint64_t in = g.shape(x).back();
  g.module(mod);
  g.param(mod + ".weight", {out, in}, LinearKind::linear);
  if (bias) g.param(mod + ".bias", {out});
  const V y = linear_op(g, x, out);
  return lora_adapted(g, mod) ? lora_adapter(g, x, y, out) : y;
}

V linear_op(Graph& g, V x, uint64_t out) {
  const Shape s = g.shape(x);
  const uint64_t in = s.back();
  // F.linear -> matmul: a non-contiguous input of more than three dimensions is folded to 2-D
  // with reshape (a copy); a transposed 3-D one goes to bmm as it is
  if (!g.contiguous(x) && s.size() > 3) x = reshape(g, x, s);
  x = lowp(g, x);
  Shape o = s;
  o.back() = out;
  g.begin_op({x});
  const V y = g.make(o, out_width(g, x));
  // under LoRA the base weight is frozen: autograd keeps the input only for a weight's gradient
  if (!g.settings().lora.enabled)
    g.save(x, "linear input", "AddmmBackward0 / MmBackward0 keep the input");
  g.flops(2.0 * static_cast<double>(prod(s, 0, s.size() - 1)) * static_cast<double>(in) *
          static_cast<double>(out));
  return y;
}

}  // namespace net
}  // namespace trainmem
