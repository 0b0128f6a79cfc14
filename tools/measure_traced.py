"""Traces models with python/trainmem_trace on the meta device, then measures the same models'
real training steps on CPU at other batch sizes (and lengths), and writes the traces to
tests/fixtures/traces/ and the measurements to tests/fixtures/torch_traced.json. The Catch2 test
test_traced.cpp asks trainmem about each measured step from the trace alone (runtime
"pytorch-cpu") and compares: saved-for-backward bytes within 1 %, the step's peak within 5 %.

Measured as tools/measure_activations.py and tools/measure_peak.py do:
- saved bytes: torch.autograd.graph.saved_tensors_hooks sees every tensor autograd keeps;
  distinct storages, parameters and buffers excluded (the batch included when a layer keeps it);
- step peak: one optimizer step (forward, loss, backward, optimizer.step(), zero_grad) after a
  warm-up step, under torch.profiler(profile_memory=True): the running sum of the CPU
  allocator's events plus the baseline (parameters, buffers, optimizer state, the batch).

Run: /usr/bin/python3 tools/measure_traced.py [NAME ...] [--dry] [--traces-only]
(torch 1.13 + torchvision 0.14; --traces-only writes the traces again and keeps the
measurements)
"""
import json
import os
import sys

import torch
import torchvision.models as tv
from torch.profiler import record_function

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import measure_activations as ma  # noqa: E402
import measure_peak as mp  # noqa: E402
import tm_custom_models as cm  # noqa: E402
import tm_torch_models as tm  # noqa: E402
import trainmem_trace as tt  # noqa: E402
from trainmem_trace.inputs import apply_loss, main_output, parse_input, target_for  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")

# name, builder, input, loss, optimizer, traced (batch[, seq]), measured points
CASES = [
    ("resnet50", lambda: tv.resnet50(), "b,3,128,128", "cross_entropy", "adam", (2,), [(3,), (6,)]),
    ("vgg11", lambda: tv.vgg11(), "b,3,64,64", "cross_entropy", "sgd-momentum", (2,), [(4,)]),
    ("mobilenet_v3_large", lambda: tv.mobilenet_v3_large(), "b,3,128,128", "cross_entropy", "adam",
     (2,), [(5,)]),
    ("densenet121", lambda: tv.densenet121(), "b,3,96,96", "cross_entropy", "adam", (2,), [(4,)]),
    ("efficientnet_b0", lambda: tv.efficientnet_b0(), "b,3,128,128", "cross_entropy", "adam", (2,),
     [(4,)]),
    ("convnext_tiny", lambda: tv.convnext_tiny(), "b,3,96,96", "cross_entropy", "adamw", (2,),
     [(3,)]),
    ("vit_b_16", lambda: tv.vit_b_16(image_size=112), "b,3,112,112", "cross_entropy", "adamw", (2,),
     [(4,)]),
    ("swin_t", lambda: tv.swin_t(), "b,3,112,112", "cross_entropy", "adamw", (2,), [(3,)]),
    ("regnet_y_400mf", lambda: tv.regnet_y_400mf(), "b,3,128,128", "cross_entropy",
     "sgd-momentum", (2,), [(6,)]),
    ("shufflenet_v2_x1_0", lambda: tv.shufflenet_v2_x1_0(), "b,3,128,128", "cross_entropy",
     "sgd-momentum", (2,), [(5,)]),
    ("unetish", lambda: cm.UNetish(), "b,3,64,64", "cross_entropy", "adam", (2,), [(3,), (7,)]),
    ("shared_twice", lambda: cm.SharedTwice(), "b,256", "cross_entropy", "adam", (4,), [(64,)]),
    ("tinylm", lambda: cm.TinyLM(), "b,s:int64:2000", "cross_entropy", "adamw", (2, 32),
     [(3, 48), (5, 96)]),
]


# Models of trainmem's built-in families (tools/tm_torch_models.py, HF's eager ops), traced to
# check the trace against the family's own recipe (test_traced.cpp): name, builder, config.
FAMILY = [
    ("gpt2_smallish", tm.gpt2, ma.GPT2_SMALLISH, "gpt2"),
    ("llama_tiny", tm.llama, ma.LLAMA_TINY, "llama"),
]


def trace_family(name, build, config):
    ids = f"b,s:int64:{config['vocab_size']}"
    torch.manual_seed(0)
    trace = tt.trace(build(config), [parse_input(ids), parse_input(ids)], None, batch=2, seq=64,
                     name=name)
    return trace


def make_optimizer(name, params):
    # tools/measure_peak.py's optimizers (sgd, sgd-momentum, adam, adamw), trainable tensors only
    return mp.make_optimizer(name, [p for p in params if p.requires_grad])


storages = mp.storages  # distinct storages: {data_ptr: bytes}


def batch_of(spec, loss, model, b, s):
    x = spec.make(b, s, "cpu")
    with torch.no_grad():
        logits = main_output(model(x))
    return x, target_for(loss, logits, None, b, s)


def saved_bytes(model, x, target, loss):
    excluded = set(storages(list(model.parameters()) + list(model.buffers())))
    seen = {}

    def pack(t):
        st = t.storage()
        if st.data_ptr() not in excluded:
            seen[st.data_ptr()] = st.size() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
        lv = apply_loss(loss, main_output(out), target)
    lv.backward()
    for p in model.parameters():
        p.grad = None
    return sum(seen.values())


def step(model, x, target, loss, opt):
    with record_function("phase:forward"):
        out = model(x)
        lv = apply_loss(loss, main_output(out), target)
    with record_function("phase:backward"):
        lv.backward()
    with record_function("phase:optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def measure(build, spec, loss, optimizer, b, s):
    torch.manual_seed(0)
    model = build()
    model.train()
    x, target = batch_of(spec, loss, model, b, s)
    opt = make_optimizer(optimizer, model.parameters())
    step(model, x, target, loss, opt)  # warm-up: the optimizer's state exists
    saved = saved_bytes(model, x, target, loss)
    tensors = list(model.parameters()) + list(model.buffers()) + [x, target]
    for st in opt.state.values():
        tensors += [v for v in st.values() if torch.is_tensor(v)]
    baseline = sum(storages(tensors).values())
    peak, phase, _ = mp.profiled_peak(lambda: step(model, x, target, loss, opt))
    return {"savedBytes": saved, "baselineBytes": baseline, "peakBytes": baseline + peak,
            "peakPhase": phase, "params": sum(p.numel() for p in model.parameters())}


def trace_case(case):
    name, build, inp, loss, _, traced, _ = case
    torch.manual_seed(0)
    trace = tt.trace(build(), [parse_input(inp)], loss, batch=traced[0],
                     seq=traced[1] if len(traced) > 1 else None, name=name)
    return trace, os.path.join("traces", f"{name}.trace.json")


def run_case(case):
    name, build, inp, loss, optimizer, traced, points = case
    spec = parse_input(inp)
    trace, path = trace_case(case)
    rows = []
    for pt in points:
        b, s = pt[0], (pt[1] if len(pt) > 1 else None)
        r = measure(build, spec, loss, optimizer, b, s)
        row = {"name": f"{name} b{b}" + (f" s{s}" if s else ""), "trace": path,
               "optimizer": optimizer, "microBatch": b}
        if s:
            row["seqLen"] = s
        row.update(r)
        rows.append(row)
        print(f"{row['name']:28s} saved {r['savedBytes']:>12d} peak {r['peakBytes']:>12d} "
              f"{r['peakPhase']}", file=sys.stderr)
    return trace, path, rows


def main():
    dry = "--dry" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    torch.set_num_threads(2)
    out_path = os.path.join(FIXTURES, "torch_traced.json")
    old = json.load(open(out_path)) if os.path.exists(out_path) and only else {"cases": []}
    cases = []
    if "--traces-only" in sys.argv:
        only = only or None
    else:
        cases = [r for r in old["cases"] if r["name"].split(" ")[0] not in only]
        only = only or None
    for name, build, config, _ in FAMILY:
        if only and name not in only:
            continue
        trace = trace_family(name, build, config)
        if not dry:
            trace.save(os.path.join(FIXTURES, "traces", f"{name}.trace.json"))
    for case in CASES:
        if only and case[0] not in only:
            continue
        if "--traces-only" in sys.argv:
            trace, path = trace_case(case)
            trace.save(os.path.join(FIXTURES, path))
            continue
        trace, path, rows = run_case(case)
        if not dry:
            trace.save(os.path.join(FIXTURES, path))
        cases += rows
    if "--traces-only" in sys.argv:
        return
    out = {
        "about": "Real CPU training steps of traced models (torch 1.13): saved-for-backward bytes "
                 "(saved_tensors_hooks, distinct storages, parameters and buffers excluded) and "
                 "the step's peak (profiler memory events + parameters, buffers, optimizer state "
                 "and batch), at batch sizes other than the traced one. Written by "
                 "tools/measure_traced.py; the traces (meta device) are in traces/.",
        "torch": torch.__version__,
        "cases": sorted(cases, key=lambda r: [c[0] for c in CASES].index(r["name"].split(" ")[0])),
    }
    if not dry:
        with open(out_path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
