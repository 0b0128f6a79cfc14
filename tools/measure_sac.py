"""Measures op-level selective activation checkpointing (SAC) on a Llama-style block with real
PyTorch (Debian python3-torch 1.13, CPU) and writes tests/fixtures/torch_sac.json.

torch 1.13 has neither torch.utils.checkpoint.create_selective_checkpoint_contexts (PyTorch 2.4+)
nor torch.compile, so SAC is emulated here with what 1.13 has: a TorchDispatchMode sees every
aten op of the block. The emulation follows the semantics of create_selective_checkpoint_contexts
(torch/utils/checkpoint.py, PyTorch 2.4): in the forward the block runs without autograd and the
outputs of the ops the policy marks MUST_SAVE are cached; in the backward the block runs again
with autograd, the cached ops returning their cached outputs instead of running, and the
backward of the block follows. Policies measured:
- torchtitan "op" (torchtitan/distributed/activation_checkpoint.py at commit cfb93265:
  _save_list ops are saved, except every second aten.mm, counted per block and per pass);
  on CPU 1.13 the block's attention is eager (no SDPA op), so only the mm rule applies;
- every op in a list (PyTorch's create_selective_checkpoint_contexts with a list of ops);
- an empty list (= full checkpointing of the block: only its input stays).

For each case the fixture holds: the aten ops whose output is a new storage (not a view), in forward order,
with their output bytes; the bytes autograd saves for the block without checkpointing
(saved_tensors_hooks, deduplicated by storage, parameters and the block input excluded); per
policy the bytes of the cache kept between forward and backward (deduplicated by storage), the
bytes autograd saves during the recomputation, and whether the gradients of the input and the
parameters equal those of the plain block (the emulation is checked, not assumed).

Run: /usr/bin/python3 tools/measure_sac.py   (torch 1.13 CPU; models: tools/tm_torch_models.py)
"""
import json
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(__file__))
import tm_torch_models as tm  # noqa: E402

LLAMA_TINY = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 1,
              "intermediate_size": 344, "vocab_size": 1000, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "max_position_embeddings": 512}
LLAMA_GQA = dict(LLAMA_TINY, num_key_value_heads=2)

CASES = [
    {"name": "llama tiny fp32 b2 s64", "config": LLAMA_TINY, "microBatch": 2, "seqLen": 64, "dtype": "fp32"},
    {"name": "llama tiny bf16 b2 s64", "config": LLAMA_TINY, "microBatch": 2, "seqLen": 64, "dtype": "bf16"},
    {"name": "llama gqa fp32 b2 s128", "config": LLAMA_GQA, "microBatch": 2, "seqLen": 128, "dtype": "fp32"},
]

# policy name -> (ops to save, torchtitan's every-second-mm rule)
POLICIES = {
    "torchtitan-op": (["mm"], True),
    "saveOps mm": (["mm"], False),
    "saveOps mm, bmm": (["mm", "bmm"], False),
    "saveOps bmm, softmax": (["bmm", "_softmax"], False),
    "saveOps none (full)": ([], False),
}


def op_name(func):
    return func.overloadpacket.__name__


def storages(out):
    ts = out if isinstance(out, (tuple, list)) else [out]
    return [t for t in ts if isinstance(t, torch.Tensor)]


def skey(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


class Policy:
    def __init__(self, ops, every_other_mm):
        self.ops, self.every_other_mm = set(ops), every_other_mm
        self.mm = 0

    def save(self, func):
        name = op_name(func)
        if name == "mm":
            self.mm += 1
        if name not in self.ops:
            return False
        return not (self.every_other_mm and name == "mm" and self.mm % 2 == 0)


class Record(TorchDispatchMode):
    """Lists the ops whose output is a new storage (not a view of an input), with its bytes."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {skey(t)[0] for t in storages(list(args) + list((kwargs or {}).values()))}
        new = sum(skey(t)[1] for t in storages(out) if skey(t)[0] not in inputs)
        if new:
            self.ops.append({"op": op_name(func), "bytes": new})
        return out


class Cache(TorchDispatchMode):
    def __init__(self, policy):
        super().__init__()
        self.policy, self.cache = policy, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.policy.save(func):
            self.cache.append(out)
        return out


class Replay(TorchDispatchMode):
    def __init__(self, policy, cache):
        super().__init__()
        self.policy, self.cache = policy, list(cache)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.policy.save(func):
            return self.cache.pop(0)
        return func(*args, **(kwargs or {}))


def saved_bytes_of(fn, excluded):
    seen = {}

    def pack(t):
        ptr, n = skey(t)
        if ptr not in excluded:
            seen[ptr] = n
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())


def build(case):
    torch.manual_seed(0)
    c = case["config"]
    model = tm.llama(dict(c, num_hidden_layers=1))
    tm.cast(model, case["dtype"])
    dt = next(model.parameters()).dtype
    b, s = case["microBatch"], case["seqLen"]
    ids = torch.randint(0, c["vocab_size"], (b, s))
    block = model.blocks[0]
    block.rope = model.embed.rope(ids, dt)
    x = (torch.randn(b, s, c["hidden_size"]) * 0.5).to(dt).requires_grad_()
    return block, x


def measure(case):
    block, x = build(case)
    params = list(block.parameters())
    excluded = {skey(p)[0] for p in params} | {skey(t)[0] for t in block.rope} | {skey(x)[0]}
    # ops and their new storages (forward with autograd, as a plain block runs)
    rec = Record()
    with rec:
        block(x)
    # plain block: saved bytes and reference gradients
    out, plain_saved = saved_bytes_of(lambda: block(x), excluded)
    g = torch.randn_like(out)
    ref = torch.autograd.grad(out, [x] + params, g)
    result = {"ops": rec.ops, "savedBytes": plain_saved, "policies": {}}
    for pname, (ops, every_other) in POLICIES.items():
        with torch.no_grad():
            cache = Cache(Policy(ops, every_other))
            with cache:
                out_nograd = block(x)
        keys = {}
        for o in cache.cache:
            for t in storages(o):
                ptr, n = skey(t)
                if ptr not in excluded:
                    keys[ptr] = n
        kept = sum(keys.values())
        replay = Replay(Policy(ops, every_other), cache.cache)

        def rerun():
            with replay:
                return block(x)

        out2, recompute_saved = saved_bytes_of(rerun, excluded)
        grads = torch.autograd.grad(out2, [x] + params, g)
        tol = 1e-5 if case["dtype"] == "fp32" else 1e-2
        match = all(torch.allclose(a.float(), b.float(), rtol=tol, atol=tol) for a, b in zip(ref, grads))
        same_out = torch.allclose(out_nograd.float(), out.float(), rtol=tol, atol=tol)
        result["policies"][pname] = {
            "saveOps": ops, "everyOtherMm": every_other, "cachedBytes": kept,
            "cachedTensors": len(keys), "recomputeSavedBytes": recompute_saved,
            "gradientsMatch": bool(match and same_out),
        }
    return result


def main():
    out = {
        "about": "Op-level selective activation checkpointing of one Llama-style block (tools/tm_torch_models.py, "
                 "HF eager attention), emulated in torch 1.13 with a TorchDispatchMode that caches the outputs "
                 "of the policy's ops in the forward and replays them in the recomputation "
                 "(create_selective_checkpoint_contexts semantics; that function needs PyTorch 2.4). "
                 "cachedBytes: the cache kept between forward and backward (block input excluded); "
                 "savedBytes: what autograd saves without checkpointing (input excluded). "
                 "Written by tools/measure_sac.py.",
        "torch": torch.__version__,
        "cases": [],
    }
    for case in CASES:
        r = measure(case)
        out["cases"].append(dict(case, **r))
        print(case["name"], r["savedBytes"], {k: (v["cachedBytes"], v["gradientsMatch"]) for k, v in
                                               r["policies"].items()}, file=sys.stderr)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_sac.json")
    if "--dry" not in sys.argv:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
