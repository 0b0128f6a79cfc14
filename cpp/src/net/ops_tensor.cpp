// Pointwise, shape, dropout, matmul and attention ops and the classification loss of the
// vision and speech recipes (ops.hpp).
#include <algorithm>

#include "net/ops.hpp"
#include "trainmem/error.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace net {
namespace {

uint64_t prod(const Shape& s) {
  uint64_t n = 1;
  for (uint64_t d : s) n = checked_mul(n, d, "microBatch");
  return n;
}

V lowp(Graph& g, V x) { return g.widths().autocast && g.width(x) == 4 ? cast(g, x, 2) : x; }

}  // namespace

V add(Graph& g, V a, V b, bool inplace) {
  // broadcasting: the output has the larger operand's shape; type promotion: the wider width
  if (prod(g.shape(b)) > prod(g.shape(a))) std::swap(a, b);
  const uint32_t w = std::max(g.width(a), g.width(b));
  g.begin_op({a, b}, true);  // AddBackward0 passes its gradient on
  if (inplace && w == g.width(a)) return g.inplace(a);
  return g.make(g.shape(a), w, g.contiguous(a) && g.contiguous(b));
}

V mul(Graph& g, V a, V b) {
  if (prod(g.shape(b)) > prod(g.shape(a))) std::swap(a, b);
  g.begin_op({a, b});
  const V y =
      g.make(g.shape(a), std::max(g.width(a), g.width(b)), g.contiguous(a) && g.contiguous(b));
  // MulBackward0: self's gradient reads other, other's reads self
  if (g.grad(a)) g.save(b, "mul operand", "MulBackward0 keeps the other factor");
  if (g.grad(b)) g.save(a, "mul operand", "MulBackward0 keeps the other factor");
  // a broadcast factor's gradient is the full product, summed down
  if (g.grad(b) && prod(g.shape(b)) < prod(g.shape(a)))
    g.backward_extra(checked_mul(prod(g.shape(a)), g.width(a), "microBatch"));
  return y;
}

V mul_param(Graph& g, V x) {
  g.begin_op({x});
  const V y = g.make(g.shape(x), g.width(x), g.contiguous(x));
  g.save(x, "input scaled by a parameter", "MulBackward0 keeps it for the parameter's gradient");
  return y;
}

V scale(Graph& g, V x) {
  g.begin_op({x});
  return g.make(g.shape(x), g.width(x), g.contiguous(x));  // MulBackward1 / DivBackward1: none
}

V square(Graph& g, V x) {
  g.begin_op({x});
  const V y = g.make(g.shape(x), g.width(x), g.contiguous(x));
  g.save(x, "pow input", "PowBackward0 keeps its input");
  return y;
}

V sqrt_op(Graph& g, V x) {
  g.begin_op({x});
  const V y = g.make(g.shape(x), g.width(x), g.contiguous(x));
  g.save(y, "sqrt output", "SqrtBackward0 keeps its result");
  return y;
}

V div(Graph& g, V a, V b) {
  g.begin_op({a, b});
  const V y = g.make(g.shape(a), std::max(g.width(a), g.width(b)), g.contiguous(a));
  if (g.grad(b)) g.save(a, "div numerator", "DivBackward0 keeps self for the divisor's gradient");
  g.save(b, "div divisor", "DivBackward0 keeps the divisor");
  if (g.grad(b) && prod(g.shape(b)) < prod(g.shape(a)))
    g.backward_extra(checked_mul(prod(g.shape(a)), g.width(a), "microBatch"));
  return y;
}

V cat(Graph& g, const std::vector<V>& xs, size_t dim) {
  Shape s = g.shape(xs.at(0));
  s[dim] = 0;
  uint32_t w = 0;
  for (V x : xs) {
    s[dim] += g.shape(x)[dim];
    w = std::max(w, g.width(x));
  }
  g.begin_op(xs, true);  // CatBackward0: the inputs' gradients are slices of its own
  return g.make(s, w);
}

V reshape(Graph& g, V x, Shape s) {
  if (g.contiguous(x)) {
    g.begin_op({x}, true);
    return g.view(x, std::move(s), true);
  }
  g.begin_op({x}, true);
  return g.make(std::move(s), g.width(x));  // reshape of a non-contiguous view copies
}

V view(Graph& g, V x, Shape s) {
  g.begin_op({x}, true);
  return g.view(x, std::move(s), g.contiguous(x));
}

V permute(Graph& g, V x, const std::vector<size_t>& perm) {
  Shape s;
  for (size_t p : perm) s.push_back(g.shape(x).at(p));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == i;
  g.begin_op({x}, true);
  return g.view(x, std::move(s), identity && g.contiguous(x));
}

V contiguous(Graph& g, V x) {
  if (g.contiguous(x)) return x;
  g.begin_op({x}, true);
  return g.make(g.shape(x), g.width(x));
}

V copy(Graph& g, V x, Shape s) {
  g.begin_op({x}, true);
  return g.make(std::move(s), g.width(x));
}

V slice(Graph& g, V x, Shape s) {
  g.begin_op({x});  // SliceBackward0 / SelectBackward0 write into zeros of the input's size
  return g.view(x, std::move(s), false);
}

std::vector<V> split(Graph& g, V x, size_t n, const Shape& part) {
  g.begin_op({x});
  std::vector<V> out;
  for (size_t i = 0; i < n; ++i) out.push_back(g.view(x, part, false));
  return out;
}

V interpolate(Graph& g, V x, Shape s) {
  g.begin_op({x});
  return g.make(std::move(s), g.width(x));
}

V expand(Graph& g, V x, Shape s) {
  g.begin_op({x}, true);
  return g.view(x, std::move(s), false);
}

V dropout(Graph& g, V x, double p, bool inplace) {
  // F.dropout returns its input when p = 0 or not training (ATen Dropout.cpp)
  if (p <= 0 || !g.settings().dropout) return x;
  const uint32_t mask_w = g.settings().runtime.dropout_mask_bytes;
  g.begin_op({x});
  // CUDA: native_dropout's bool mask; CPU (torch 1.13 _dropout_impl): the scaled noise tensor
  const V mask = g.make(g.shape(x), mask_w ? mask_w : g.width(x));
  const V y = inplace ? g.inplace(x) : g.make(g.shape(x), g.width(x), g.contiguous(x));
  g.save(mask, "dropout mask",
         "NativeDropoutBackward0 keeps the mask (CPU: MulBackward0 the noise)");
  return y;
}

V drop_path(Graph& g, V x, double p, bool hf) {
  if (p <= 0 || !g.settings().dropout) return x;
  // torchvision.ops.stochastic_depth (mode "row"): input * noise[N, 1, ...]; HF drop_path:
  // input.div(keep_prob) * random_tensor, one more full-size tensor
  if (hf) x = scale(g, x);
  Shape ns(g.shape(x).size(), 1);
  ns[0] = g.shape(x)[0];
  g.begin_op({x});
  const V noise = g.make(ns, g.width(x));
  const V y = g.make(g.shape(x), g.width(x), g.contiguous(x));
  g.save(noise, "stochastic depth noise", "MulBackward0 keeps the per-sample noise");
  return y;
}

V softmax(Graph& g, V x) {
  if (g.widths().autocast && g.width(x) == 2) x = cast(g, x, 4);  // autocast's fp32 list
  g.begin_op({x});
  const V y = g.make(g.shape(x), g.width(x));
  g.save(y, "softmax output", "SoftmaxBackward0 keeps its result");
  return y;
}

V matmul(Graph& g, V a, V b, Shape out, bool batched_reshape) {
  // torch.matmul folds batch dimensions with reshape: a non-contiguous operand of more than
  // three dimensions is copied, and the copy is what bmm keeps
  if (batched_reshape && g.shape(a).size() > 3 && !g.contiguous(a)) a = contiguous(g, a);
  if (batched_reshape && g.shape(b).size() > 3 && !g.contiguous(b)) b = contiguous(g, b);
  a = lowp(g, a);
  b = lowp(g, b);
  g.begin_op({a, b});
  const V y = g.make(out, g.widths().autocast ? 2 : std::max(g.width(a), g.width(b)));
  if (g.grad(b)) g.save(a, "matmul operand", "BmmBackward0 keeps both operands");
  if (g.grad(a)) g.save(b, "matmul operand", "BmmBackward0 keeps both operands");
  g.flops(2.0 * static_cast<double>(prod(out)) * static_cast<double>(g.shape(a).back()));
  return y;
}

V attention(Graph& g, V q, V k, V v, const AttentionSpec& a) {
  const Shape qs = g.shape(q), ks = g.shape(k);
  const uint64_t b = qs[0], h = qs[1], t = qs[2], d = qs[3], s = ks[2];
  const bool sdpa = g.settings().attention == activations::Attention::sdpa && !a.eager;
  if (sdpa) {
    // flash / memory-efficient SDPA: the backward reads q, k, v, the output and the fp32
    // logsumexp (aten _scaled_dot_product_flash_attention); dropout from the saved RNG state
    q = lowp(g, q);
    k = lowp(g, k);
    v = lowp(g, v);
    g.begin_op({q, k, v});
    const V o = g.make({b, h, t, d}, g.width(q));
    const V lse = g.make({b, h, t}, 4);
    g.save(q, "SDPA query", "scaled_dot_product_attention backward reads q, k, v");
    g.save(k, "SDPA key", "scaled_dot_product_attention backward reads q, k, v");
    g.save(v, "SDPA value", "scaled_dot_product_attention backward reads q, k, v");
    g.save(o, "SDPA output", "the fused backward reads its output");
    g.save(lse, "SDPA logsumexp (fp32)", "the fused backward reads the logsumexp");
    g.flops(4.0 * static_cast<double>(b * h) * static_cast<double>(t) * s * d);
    return o;
  }
  const V kt = permute(g, k, {0, 1, 3, 2});
  V scores = matmul(g, q, kt, {b, h, t, s});
  scores = scale(g, scores);              // / sqrt(d) (ViT) or * scaling
  if (a.mask) scores = scale(g, scores);  // + mask / bias: a new tensor, nothing kept
  // softmax(dtype=torch.float32) converts a 16-bit input first (autocast's softmax does too)
  if (a.fp32_softmax && g.width(scores) == 2 && !g.widths().autocast) scores = cast(g, scores, 4);
  V probs = softmax(g, scores);
  if (a.fp32_softmax && g.width(q) == 2) probs = cast(g, probs, 2);  // .to(query.dtype)
  probs = dropout(g, probs, a.dropout);
  return matmul(g, probs, v, {b, h, t, d});
}

V cross_entropy(Graph& g, V logits) {
  const Shape s = g.shape(logits);
  V x = logits;
  if (g.widths().autocast && g.width(x) == 2) x = cast(g, x, 4);  // log_softmax: fp32 list
  g.begin_op({x});
  const V logp = g.make(s, g.width(x));
  g.save(logp, "log_softmax output", "LogSoftmaxBackward0 keeps its result");
  g.begin_op({logp});
  const V labels = g.make({s[0]}, 8);
  const V loss = g.make({}, 4);
  g.save(labels, "labels (int64)", "NllLossBackward0 keeps its target");
  return loss;
}

}  // namespace net
}  // namespace trainmem
