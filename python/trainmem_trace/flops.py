"""FLOPs of one aten op, counted as PyTorch's flop counter counts them.

torch 2.1+ ships torch.utils.flop_counter (pytorch/pytorch torch/utils/flop_counter.py: mm, addmm,
bmm, baddbmm 2*m*n*k; convolution 2 * prod(out spatial) * prod(kernel) * batch * c_out * c_in,
transposed convolutions over the input's spatial size; convolution_backward as the two
convolutions it runs; scaled-dot-product attention as its two batched matmuls). torch 1.13 has no
flop counter: the same formulas are written here, and where a newer torch has a formula for an op
these do not know, its registry answers. Pointwise ops count 0, as there.
"""
from math import prod

import torch

aten = torch.ops.aten


def _shape(x):
    return tuple(x.shape) if isinstance(x, torch.Tensor) else x


def _mm(a, b):
    m, k = a[-2], a[-1]
    n = b[-1]
    return 2 * m * n * k


def _bmm(a, b):
    return a[0] * _mm(a[1:], b[1:])


def _conv(x, w, out, transposed):
    batch = x[0]
    spatial = (x if transposed else out)[2:]
    c_out, c_in = w[0], w[1]
    return 2 * prod(spatial) * prod(w[2:]) * batch * c_out * c_in


def _conv_fwd(args, out):
    x, w = _shape(args[0]), _shape(args[1])
    transposed = bool(args[6]) if len(args) > 6 else False
    return _conv(x, w, _shape(out), transposed)


def _conv_bwd(args, out):
    grad_out, x, w = _shape(args[0]), _shape(args[1]), _shape(args[2])
    transposed = bool(args[7])
    mask = args[10]
    total = 0

    def t(s):
        return [s[1], s[0]] + list(s[2:])

    if mask[0] and out[0] is not None:
        total += _conv(grad_out, w, _shape(out[0]), not transposed)
    if mask[1] and out[1] is not None:
        gw = _shape(out[1])
        if transposed:
            total += _conv(t(grad_out), t(x), t(gw), False)
        else:
            total += _conv(t(x), t(grad_out), t(gw), False)
    return total


def _sdpa(args, out):
    q, k, v = (_shape(a) for a in args[:3])
    b, h, sq, d = q
    sk, dv = k[2], v[3]
    return 2 * b * h * sq * sk * d + 2 * b * h * sq * sk * dv


_OWN = {
    "mm": lambda a, o: _mm(_shape(a[0]), _shape(a[1])),
    "addmm": lambda a, o: _mm(_shape(a[1]), _shape(a[2])),
    "bmm": lambda a, o: _bmm(_shape(a[0]), _shape(a[1])),
    "baddbmm": lambda a, o: _bmm(_shape(a[1]), _shape(a[2])),
    "convolution": _conv_fwd,
    "_convolution": _conv_fwd,
    "convolution_backward": _conv_bwd,
    "_scaled_dot_product_flash_attention": _sdpa,
    "_scaled_dot_product_efficient_attention": _sdpa,
    "_scaled_dot_product_cudnn_attention": _sdpa,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa,
}


def _registry():
    try:
        from torch.utils import flop_counter  # torch >= 2.1
    except ImportError:
        return {}
    return getattr(flop_counter, "flop_registry", {})


_REGISTRY = _registry()


def op_name(func):
    """'aten.mm' for aten::mm.default: the overload packet's name."""
    packet = getattr(func, "overloadpacket", None) or getattr(func, "_overloadpacket", None)
    name = getattr(packet, "__name__", None) or str(func).split(".")[-2]
    ns = getattr(func, "namespace", None) or str(func).split(".")[0]
    return f"{ns}.{name}"


def count(func, args, kwargs, out):
    """FLOPs of one call (0 for ops without a formula)."""
    name = op_name(func).split(".", 1)[-1]
    f = _OWN.get(name)
    try:
        if f is not None:
            return int(f(args, out))
        packet = getattr(func, "overloadpacket", None)
        g = _REGISTRY.get(packet)
        if g is None:
            return 0
        try:
            return int(g(*args, **(kwargs or {}), out_val=out))
        except TypeError:
            return int(g(*args, **(kwargs or {}), out=out))
    except Exception:  # a formula that does not fit this overload: no FLOPs rather than a crash
        return 0
