"""Example inputs with symbolic sizes, and the losses the CLI offers."""
import re

import torch
import torch.nn.functional as F

from .record import dtype_name

_DTYPES = {
    "float32": torch.float32, "float": torch.float32, "fp32": torch.float32,
    "float16": torch.float16, "half": torch.float16, "fp16": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "long": torch.int64, "int32": torch.int32, "int": torch.int32,
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8,
}
LOSSES = ("cross_entropy", "mse", "sum")


class Input:
    """One example input: a shape whose entries are sizes or the symbols "b" (the batch) and
    "s" (the sequence length), a dtype, and for integer inputs the exclusive upper bound of their
    values (token ids below the vocabulary size; 2 when not given)."""

    def __init__(self, shape, dtype=torch.float32, high=None):
        if isinstance(dtype, str):
            dtype = parse_dtype(dtype)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.high = high
        for d in self.shape:
            if not (d in ("b", "s") or (isinstance(d, int) and d >= 0)):
                raise ValueError(f"input shape entries are sizes or 'b' / 's', got {d!r}")

    @property
    def uses_seq(self):
        return "s" in self.shape

    def concrete(self, b, s):
        return tuple(b if d == "b" else s if d == "s" else d for d in self.shape)

    def make(self, b, s, device):
        shape = self.concrete(b, s)
        if self.dtype.is_floating_point:
            return torch.randn(shape, dtype=self.dtype, device=device)
        if self.dtype == torch.bool:
            return torch.ones(shape, dtype=torch.bool, device=device)
        return torch.randint(0, self.high or 2, shape, dtype=self.dtype, device=device)

    def describe(self):
        return {"shape": list(self.shape), "dtype": dtype_name(self.dtype)}


def parse_dtype(name):
    key = name.strip().lower().replace("torch.", "")
    if key not in _DTYPES:
        raise ValueError(f"unknown dtype {name!r}; one of {', '.join(sorted(_DTYPES))}")
    return _DTYPES[key]


def parse_input(text):
    """'b,3,224,224', '8x3x224x224', 'b,s:int64:50257' -> Input. With no symbol, the first
    size is the batch."""
    parts = text.split(":")
    if not 1 <= len(parts) <= 3 or not parts[0]:
        raise ValueError(f"--input {text!r}: expected SHAPE[:DTYPE[:HIGH]]")
    dims = []
    for d in re.split(r"[,x]", parts[0].strip().lower()):
        d = d.strip()
        if d in ("b", "s"):
            dims.append(d)
        elif d.isdigit():
            dims.append(int(d))
        else:
            raise ValueError(f"--input {text!r}: {d!r} is not a size, 'b' or 's'")
    hint = None
    if dims and "b" not in dims and "s" not in dims:
        hint, dims[0] = dims[0], "b"
    dtype = parse_dtype(parts[1]) if len(parts) > 1 and parts[1] else torch.float32
    high = int(parts[2]) if len(parts) > 2 else None
    spec = Input(dims, dtype, high)
    spec.batch_hint = hint or None  # '8x3x224x224': traced at batch 8
    return spec


def main_output(out):
    """The tensor a loss reads: the output, its .logits, or its first tensor."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits") and isinstance(out.logits, torch.Tensor):
        return out.logits
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for x in out:
            if isinstance(x, torch.Tensor):
                return x
    raise ValueError(f"the model's output ({type(out).__name__}) holds no tensor")


def target_for(kind, logits, spec, b, s):
    """The loss target for one step (made outside the recorded ops)."""
    if kind == "sum":
        return None
    if spec is not None:
        high = spec.high or (logits.shape[-1] if logits.dim() == 3 else
                             logits.shape[1] if logits.dim() >= 2 else 2)
        t = Input(spec.shape, spec.dtype, spec.high or high)
        return t.make(b, s, logits.device)
    if kind == "mse":
        return torch.randn(logits.shape, dtype=logits.dtype, device=logits.device)
    if logits.dim() == 3:  # token-level: [b, s, vocab] -> labels [b, s]
        shape, classes = logits.shape[:2], logits.shape[2]
    elif logits.dim() >= 2:  # [b, classes, ...] -> [b, ...]
        shape, classes = (logits.shape[0],) + tuple(logits.shape[2:]), logits.shape[1]
    else:
        raise ValueError("cross_entropy needs an output with a class dimension")
    return torch.randint(0, classes, shape, device=logits.device)


def apply_loss(kind, logits, target):
    if kind == "sum":
        return logits.sum()
    if kind == "mse":
        return F.mse_loss(logits, target)
    if logits.dim() == 3 and target.dim() == 2 and logits.shape[:2] == target.shape:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    return F.cross_entropy(logits, target)
