"""Measures saved-for-backward bytes of the decoder families of tools/tm_llm_families.py (GPT-J,
Phi, Falcon, StarCoder2, OLMo, OLMo 2, Gemma) and of torch.nn.Transformer on torch 1.13 (CPU), per
region (embed, block<i>, head), as tools/measure_activations.py does for GPT-2 / Llama, and
writes tests/fixtures/torch_llm_families.json. It also dumps torch.nn.Transformer's state_dict
(names, shapes, order) and module tree for the tensor-list test.
Run: /usr/bin/python3 tools/measure_llm_families.py [--verbose] [--dry]
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(__file__))
import dump_diffusers as dd  # noqa: E402
import tm_llm_families as fam  # noqa: E402

GPTJ = {"n_embd": 128, "n_head": 4, "n_layer": 2, "n_positions": 256, "rotary_dim": 16, "vocab_size": 1000}
PHI = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 512,
       "vocab_size": 1000, "partial_rotary_factor": 0.5}
FALCON = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000}
SC2 = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
       "intermediate_size": 512, "vocab_size": 1000}
OLMO = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 344,
        "vocab_size": 1000}
GEMMA = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 48,
         "num_hidden_layers": 2, "intermediate_size": 384, "vocab_size": 1000}
NNT = {"d_model": 64, "nhead": 4, "num_encoder_layers": 2, "num_decoder_layers": 3, "dim_feedforward": 160,
       "dropout": 0.1}

CASES = [
    {"name": "gptj tiny b2 s64", "kind": "gptj", "config": GPTJ, "microBatch": 2, "seqLen": 64},
    {"name": "phi tiny b2 s64", "kind": "phi", "config": PHI, "microBatch": 2, "seqLen": 64},
    {"name": "falcon tiny (multi-query, parallel) b2 s64", "kind": "falcon", "config": FALCON, "microBatch": 2,
     "seqLen": 64},
    {"name": "starcoder2 tiny b2 s64", "kind": "starcoder2", "config": SC2, "microBatch": 2, "seqLen": 64},
    {"name": "olmo tiny b2 s64", "kind": "olmo", "config": OLMO, "microBatch": 2, "seqLen": 64},
    {"name": "olmo2 tiny b2 s64", "kind": "olmo2", "config": dict(OLMO, tie_word_embeddings=False),
     "microBatch": 2, "seqLen": 64},
    {"name": "gemma tiny b2 s64", "kind": "gemma", "config": GEMMA, "microBatch": 2, "seqLen": 64},
    {"name": "gemma tiny b1 s128", "kind": "gemma", "config": GEMMA, "microBatch": 1, "seqLen": 128},
    {"name": "falcon tiny (multi-query) b1 s128", "kind": "falcon", "config": FALCON, "microBatch": 1,
     "seqLen": 128},
    {"name": "phi tiny bf16 b2 s64", "kind": "phi", "config": PHI, "microBatch": 2, "seqLen": 64, "dtype": "bf16"},
    {"name": "gptj tiny bf16 b2 s64", "kind": "gptj", "config": GPTJ, "microBatch": 2, "seqLen": 64, "dtype": "bf16"},
    {"name": "olmo tiny bf16 b2 s64", "kind": "olmo", "config": OLMO, "microBatch": 2, "seqLen": 64, "dtype": "bf16"},
    {"name": "olmo2 tiny bf16 b2 s64", "kind": "olmo2", "config": dict(OLMO, tie_word_embeddings=False),
     "microBatch": 2, "seqLen": 64, "dtype": "bf16"},
    {"name": "gemma tiny bf16 b2 s64", "kind": "gemma", "config": GEMMA, "microBatch": 2, "seqLen": 64,
     "dtype": "bf16"},
    {"name": "starcoder2 tiny bf16 b2 s64", "kind": "starcoder2", "config": SC2, "microBatch": 2, "seqLen": 64,
     "dtype": "bf16"},
    {"name": "nn.Transformer tiny b2 s48 t32", "kind": "nn.Transformer", "config": NNT, "microBatch": 2,
     "seqLen": 48, "targetLen": 32},
]


def build(case):
    torch.manual_seed(0)
    c, b, s = case["config"], case["microBatch"], case["seqLen"]
    kind = case["kind"]
    if kind == "nn.Transformer":
        m = fam.TorchTransformer(c)
        return m, (torch.randn(s, b, c["d_model"]), torch.randn(case["targetLen"], b, c["d_model"]))
    m = {"gptj": fam.gptj, "phi": fam.phi, "falcon": fam.falcon, "gemma": fam.gemma}.get(kind)
    m = m(c) if m else fam.llama_like(c, kind)
    if case.get("dtype") == "bf16":  # loaded in bf16 (torch_dtype=torch.bfloat16)
        m = m.to(torch.bfloat16)
    ids = torch.randint(0, c["vocab_size"], (b, s))
    return m, (ids, ids)


def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def measure(case, verbose=False):
    model, inputs = build(case)
    model.train()
    excluded = {storage_key(p)[0] for p in model.parameters()} | {storage_key(x)[0] for x in model.buffers()}
    input_ptrs = {storage_key(t)[0] for t in inputs}
    seen, region = {}, ["embed"]

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = (nbytes, "input" if ptr in input_ptrs else region[0])
            if verbose:
                print(f"  {seen[ptr][1]:8s} {str(tuple(t.shape)):24s} {str(t.dtype):16s} {nbytes}")
        return t

    model.region = lambda name: region.__setitem__(0, name)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(*inputs)
    per = {}
    for nbytes, reg in seen.values():
        per[reg] = per.get(reg, 0) + nbytes
    loss.backward()
    return {"savedBytes": sum(v[0] for v in seen.values()), "savedBytesByRegion": per,
            "params": sum(p.numel() for p in model.parameters())}


def run_step(model, inputs, opt):
    with record_function("phase:forward"):
        loss = model(*inputs)
    with record_function("phase:stored"):
        pass
    with record_function("phase:backward"):
        loss.backward()
    del loss
    with record_function("phase:optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def step_bytes(case):
    """A training step (forward with the loss, backward, AdamW for-loop step, zero_grad(None)):
    the bytes live at its peak (profiler memory events over a baseline of parameters, buffers,
    inputs and AdamW's state after a warm-up step), as tools/measure_diffusion.py measures it."""
    model, inputs = build(case)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    run_step(model, inputs, opt)
    tensors = list(model.parameters()) + list(model.buffers()) + list(inputs)
    for st in opt.state.values():
        tensors += [v for v in st.values() if torch.is_tensor(v)]
    base = dict(storage_key(t) for t in tensors)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run_step(model, inputs, opt)
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]")
    ranges = {e.name()[6:]: (e.start_us(), e.start_us() + e.duration_us()) for e in events
              if e.name().startswith("phase:")}
    run, peak, peak_t = 0, 0, None
    for t, _, nb in mem:
        run += nb
        if run > peak:
            peak, peak_t = run, t
    phase = next((k for k, (a, b) in ranges.items() if a <= peak_t <= b), "other") if peak_t else "baseline"
    return {"baselineBytes": sum(base.values()), "peakBytes": sum(base.values()) + peak, "peakPhase": phase}


def nn_transformer_tensors():
    """torch.nn.Transformer's parameter names, shapes and modules (the default and a small one)."""
    out = []
    for name, c in [("nn.Transformer defaults", {}), ("nn.Transformer tiny", NNT)]:
        m = fam.TorchTransformer(c).t
        params = [(n, list(p.shape)) for n, p in m.named_parameters()]
        mods = [n for n, _ in m.named_modules()]
        lines = [f"{n}:{','.join(str(d) for d in s)};" for n, s in params]
        out.append({"name": name, "config": dict({"model_type": "nn.Transformer"}, **c),
                    "params": sum(p.numel() for p in m.parameters()), "tensors": len(params),
                    "tensorsHash": dd.fnv1a(lines), "modules": len(mods),
                    "moduleNameBytes": sum(len(n) for n in mods)})
    return out


def main():
    verbose = "--verbose" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = {"about": "Saved-for-backward bytes of decoder blocks rebuilt from transformers' eager modules "
                    "(tools/tm_llm_families.py) and of torch.nn.Transformer, torch 1.13 CPU, storages "
                    "deduplicated, per region. Written by tools/measure_llm_families.py.",
           "torch": torch.__version__, "cases": [], "tensorLists": nn_transformer_tensors()}
    for case in CASES:
        if only and not any(o in case["name"] for o in only):
            continue
        if verbose:
            print(case["name"])
        r = measure(case, verbose)
        if case.get("dtype") is None:  # fp32 cases: the step's peak too
            r.update(step_bytes(case))
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:48s} {r['savedBytes']:>10d} {r.get('peakBytes', 0):>10d} {r.get('peakPhase', '')}",
              file=sys.stderr)
    if "--dry" not in sys.argv and not only:  # a subset is a look, not the fixture
        path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_llm_families.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
