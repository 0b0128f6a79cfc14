"""Measures the peak allocated bytes of whole training steps on real PyTorch (CPU) and writes
tests/fixtures/torch_peak.json.

Method: build the model (tools/tm_torch_models.py), create the optimizer, run one warm-up step
so that optimizer state exists (steady state), free gradients (zero_grad(set_to_none=True)).
Baseline = distinct storages of parameters, buffers, optimizer state and the batch. Then one
optimizer step (gradientAccumulationSteps micro-steps of forward + backward, optimizer.step(),
zero_grad) runs under torch.profiler(profile_memory=True); the CPU allocator's alloc/free events
are summed in time order; peak = baseline + highest running sum. The phase holding the peak is
found from record_function ranges ("forward", "backward", "optimizer").

Run: /usr/bin/python3 tools/measure_peak.py   (torch 1.13 CPU: optimizers default to the
for-loop implementation, foreach=False; "adam-foreach" sets foreach=True as PyTorch 2.x does
on CUDA)
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(__file__))
import measure_activations as ma  # noqa: E402
import tm_torch_models as tm  # noqa: E402

MLP4 = {"kind": "mlp", "sizes": [512, 1024, 1024, 512, 256], "microBatch": 64}
MLP8 = {"kind": "mlp", "sizes": [256] * 9, "microBatch": 512}
G = {"kind": "gpt2", "config": ma.GPT2_SMALLISH, "microBatch": 2, "seqLen": 128}
G4 = dict(G, microBatch=4, seqLen=256)
L = {"kind": "llama", "config": ma.LLAMA_TINY, "microBatch": 4, "seqLen": 128}

CASES = [
    dict(MLP4, name="mlp4 sgd", optimizer="sgd"),
    dict(MLP4, name="mlp4 adam", optimizer="adam"),
    dict(MLP8, name="mlp8 b512 sgd-momentum", optimizer="sgd-momentum"),
    dict(MLP8, name="mlp8 b512 adam checkpoint_sequential 4", optimizer="adam", checkpoint={"sequential": 4}),
    dict(G, name="gpt2 smallish fp32 sgd", optimizer="sgd"),
    dict(G, name="gpt2 smallish fp32 adamw", optimizer="adamw"),
    dict(G4, name="gpt2 smallish fp32 b4 s256 adamw", optimizer="adamw"),
    dict(G4, name="gpt2 smallish fp32 b4 s256 adamw, blocks checkpointed", optimizer="adamw", checkpoint="blocks"),
    dict(G4, name="gpt2 smallish fp32 b4 s256 adam-foreach", optimizer="adam-foreach"),
    dict(G, name="gpt2 smallish fp32 adamw, 2 accumulation steps", optimizer="adamw", accumulation=2),
    dict(G4, name="gpt2 smallish bf16 b4 s256 adamw", optimizer="adamw", dtype="bf16"),
    dict(L, name="llama tiny fp32 b4 s128 adamw", optimizer="adamw"),
]


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adam-foreach":
        return torch.optim.Adam(params, lr=1e-3, foreach=True)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise ValueError(name)


def storages(tensors):
    out = {}
    for t in tensors:
        st = t.storage()
        out[st.data_ptr()] = st.size() * t.element_size()
    return out


def step(model, inputs, opt, case):
    acc = case.get("accumulation", 1)
    ck = case.get("checkpoint")
    for _ in range(acc):
        with record_function("phase:forward"):
            if case["kind"] == "mlp":
                if isinstance(ck, dict):
                    out = torch.utils.checkpoint.checkpoint_sequential(model, ck["sequential"], inputs[0])
                else:
                    out = model(inputs[0])
                loss = out.float().pow(2).mean()
            else:
                model.ckpt = "blocks" if ck == "blocks" else "none"
                loss = model(*inputs)
            loss = loss / acc
        with record_function("phase:backward"):
            loss.backward()
        del loss
    with record_function("phase:optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def profiled_peak(run_step):
    """Runs run_step() under torch.profiler(profile_memory=True): the highest running sum of the
    CPU allocator's events (bytes above what was live before), the "phase:" record_function range
    holding it, and the sum at the end."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run_step()
    events = prof.profiler.kineto_results.events()
    mem = sorted(((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]"))
    ranges = [(e.start_us(), e.start_us() + e.duration_us(), e.name()[6:]) for e in events
              if e.name().startswith("phase:")]
    run, peak, peak_t = 0, 0, None
    for t, _, n in mem:
        run += n
        if run > peak:
            peak, peak_t = run, t
    phase = next((name for a, b, name in ranges if a <= peak_t <= b), "other") if peak_t else "baseline"
    return peak, phase, run


def measure(case):
    model, inputs = tm.build(case)
    tm.cast(model, case.get("dtype", "fp32"))
    model.train()
    opt = make_optimizer(case["optimizer"], model.parameters())
    step(model, inputs, opt, case)  # warm-up: optimizer state now exists
    for t in inputs:
        t.grad = None  # an MLP input requires grad (reentrant checkpointing): its grad is per step
    tensors = list(model.parameters()) + list(model.buffers()) + list(inputs)
    for st in opt.state.values():
        tensors += [v for v in st.values() if torch.is_tensor(v)]
    base = storages(tensors)
    baseline = sum(base.values())
    peak, phase, run = profiled_peak(lambda: step(model, inputs, opt, case))
    params = sum(p.numel() for p in model.parameters())
    return {"params": params, "baselineBytes": baseline, "peakDeltaBytes": peak, "peakBytes": baseline + peak,
            "peakPhase": phase, "endDeltaBytes": run}


def main():
    out = {
        "about": "Peak allocated bytes of one steady-state training step on real PyTorch (CPU), "
                 "from torch.profiler memory events plus the baseline of parameters, buffers, "
                 "optimizer state and batch. Written by tools/measure_peak.py.",
        "torch": torch.__version__,
        "cases": [],
    }
    for case in CASES:
        r = measure(case)
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:58s} base {r['baselineBytes']:>11d} peak {r['peakBytes']:>11d} {r['peakPhase']}",
              file=sys.stderr)
    if "--dry" not in sys.argv:
        path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_peak.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
