#!/usr/bin/python3
"""Measures what PyTorch keeps for the backward pass at the end of the forward pass, for the
placement engine's calibration (tests/cpp/test_placement_torch.cpp).

Run with Debian's PyTorch (CPU): /usr/bin/python3 tools/measure_placement.py
Writes tests/fixtures/torch_placement.json.

What is measured: every tensor saved for backward during the forward pass
(torch.autograd.graph.saved_tensors_hooks), deduplicated by storage, parameters excluded,
plus the output of the forward pass (held by the caller for the loss). Bytes are storage
sizes (untyped storage nbytes), so views count their whole storage once.

Models:
- MLP chains of blocks Linear(w_in, w_out) + activation (ReLU or GELU), fp32, run plainly and
  with torch.utils.checkpoint.checkpoint_sequential(model, segments, x) for several segment
  counts (PyTorch 1.13: reentrant checkpointing; the input requires grad).
- A GPT-2-shaped model (token + position embeddings, pre-LN blocks with causal self-attention
  and a GELU MLP, final LayerNorm, tied LM head; no dropout) with every block checkpointed
  by torch.utils.checkpoint.checkpoint(block, x).
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


def storage_key(t):
    s = t.storage()
    return s.data_ptr(), s.nbytes()


def measure(run, params):
    """Runs run() under saved-tensor hooks; returns (bytes, count) of distinct non-parameter
    storages saved for backward plus the output's storage."""
    param_ptrs = {p.storage().data_ptr() for p in params}
    seen = {}

    def pack(t):
        k = storage_key(t)
        if k[0] not in param_ptrs:
            seen[k[0]] = k[1]
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    k = storage_key(out)
    seen[k[0]] = k[1]
    # The step still works (the plan is real): run the backward once.
    out.float().sum().backward()
    return sum(seen.values()), len(seen)


def mlp(widths, activation):
    blocks = []
    for a, b in zip(widths[:-1], widths[1:]):
        act = nn.ReLU() if activation == "relu" else nn.GELU()
        blocks.append(nn.Sequential(nn.Linear(a, b), act))
    return nn.Sequential(*blocks)


class Block(nn.Module):
    def __init__(self, e, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(e)
        self.qkv = nn.Linear(e, 3 * e)
        self.proj = nn.Linear(e, e)
        self.ln2 = nn.LayerNorm(e)
        self.fc = nn.Linear(e, 4 * e)
        self.out = nn.Linear(4 * e, e)

    def forward(self, x):
        b, s, e = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(e, dim=2)
        q, k, v = (t.view(b, s, self.heads, e // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(e // self.heads)
        mask = torch.ones(s, s, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, e)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, positions, e, heads, layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, e)
        self.wpe = nn.Embedding(positions, e)
        self.blocks = nn.ModuleList(Block(e, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(e)
        self.head = nn.Linear(e, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied, as GPT-2

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = checkpoint(blk, x)
        return self.head(self.ln_f(x))


def main():
    torch.manual_seed(0)
    cases = []
    batch = 32
    for widths, act in [([256] * 9, "relu"),
                        ([128, 512, 256, 1024, 256, 512, 128, 384, 256], "relu"),
                        ([256] * 9, "gelu")]:
        n = len(widths) - 1
        for segments in [1, 2, 3, 4, n]:
            model = mlp(widths, act)
            x = torch.randn(batch, widths[0], requires_grad=True)
            if segments == 1:
                run = lambda: model(x)
            else:
                run = lambda: checkpoint_sequential(model, segments, x)
            saved, count = measure(run, list(model.parameters()))
            cases.append({"kind": "mlp", "batch": batch, "widths": widths, "activation": act,
                          "dtypeBytes": 4, "segments": segments,
                          "measuredBytes": saved, "storages": count})
    cfg = {"vocab": 1000, "positions": 128, "embd": 128, "heads": 4, "layers": 4,
           "batch": 2, "seq": 64}
    model = GPT(cfg["vocab"], cfg["positions"], cfg["embd"], cfg["heads"], cfg["layers"])
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))
    saved, count = measure(lambda: model(ids), list(model.parameters()))
    cases.append({"kind": "gpt2-every-block-checkpointed", "config": cfg, "dtypeBytes": 4,
                  "measuredBytes": saved, "storages": count})
    out = {
        "about": "Bytes PyTorch keeps for backward at the end of the forward pass: tensors saved "
                 "for backward (saved_tensors_hooks, deduplicated by storage, parameters "
                 "excluded) plus the forward output. Written by tools/measure_placement.py.",
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                        "torch_placement.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    for c in cases:
        print(c["kind"], c.get("activation", ""), c.get("segments", ""), c["measuredBytes"])


if __name__ == "__main__":
    main()
