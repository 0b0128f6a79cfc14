"""Measures torchvision models on real PyTorch (CPU, torch 1.13 + torchvision 0.14) and writes
tests/fixtures/torch_vision.json: for every model, its parameter tensors (state_dict names and
shapes), buffers and module tree; for every case, the saved-for-backward bytes of one training
forward and the peak allocated bytes of one steady-state training step.

Saved bytes: torch.autograd.graph.saved_tensors_hooks sees every tensor autograd saves; storages
are counted once at their full size, parameters and buffers excluded (as
tools/measure_activations.py does). The batch (images) is included: the stem's convolution
keeps it. Step peak: as tools/measure_peak.py (a warm-up step creates the optimizer state, then
one step under torch.profiler(profile_memory=True); peak = baseline of parameters, buffers,
optimizer state and batch + the highest running sum of the allocator's events).

The models run as chains (tools/tm_vision_models.py): the same torchvision modules, grouped into
the chain layers trainmem plans on; "checkpoint": true checkpoints every block.

Run: nice /usr/bin/python3 tools/measure_vision.py [--verbose] [--only NAME] [--dry]
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(__file__))
import tm_vision_models as tv  # noqa: E402

PRESETS = ["resnet18", "resnet50", "vit_b_16", "vit_l_16", "convnext_tiny", "swin_t", "efficientnet_b0",
           "mobilenet_v3_large", "densenet121"]


def case(arch, b, opt, **kw):
    c = {"name": f"{arch} b{b} {opt}", "preset": "torchvision/" + arch, "arch": arch, "microBatch": b,
         "imageSize": 224, "optimizer": opt}
    c.update(kw)
    for k in ("checkpoint", "dtype", "imageSize", "numClasses"):
        if k in kw and (k != "imageSize" or kw[k] != 224):
            c["name"] += f" {k}={kw[k]}"
    return c


CASES = [
    case("resnet18", 2, "adamw"), case("resnet18", 8, "adamw"),
    case("resnet50", 2, "sgd"), case("resnet50", 4, "sgd"), case("resnet50", 4, "sgd", checkpoint=True),
    case("vit_b_16", 2, "sgd"), case("vit_b_16", 4, "sgd"), case("vit_b_16", 4, "sgd", checkpoint=True),
    case("vit_b_16", 2, "sgd", dtype="bf16"),
    case("vit_l_16", 1, "sgd"), case("vit_l_16", 2, "sgd"),
    case("convnext_tiny", 2, "adamw"), case("convnext_tiny", 4, "adamw"),
    case("swin_t", 2, "sgd"), case("swin_t", 4, "sgd"),
    case("efficientnet_b0", 2, "adamw"), case("efficientnet_b0", 8, "adamw"),
    case("mobilenet_v3_large", 2, "adamw"), case("mobilenet_v3_large", 8, "adamw"),
    case("densenet121", 2, "sgd"), case("densenet121", 4, "sgd"),
    case("resnet18", 4, "sgd", imageSize=160, numClasses=10),
    case("densenet121", 2, "sgd", checkpoint=True),
]


def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def build(c):
    torch.manual_seed(0)
    chain = tv.build(c["arch"], c.get("numClasses", 1000), c["imageSize"])
    if c.get("dtype") == "bf16":
        chain.to(torch.bfloat16)
    chain.train()
    chain.ckpt = c.get("checkpoint", False)
    b, s = c["microBatch"], c["imageSize"]
    dt = torch.bfloat16 if c.get("dtype") == "bf16" else torch.float32
    x = torch.randn(b, 3, s, s, dtype=dt)
    labels = torch.randint(0, c.get("numClasses", 1000), (b,))
    return chain, x, labels


def saved_bytes(c, verbose):
    chain, x, labels = build(c)
    excluded = {storage_key(p)[0] for p in chain.parameters()} | {storage_key(t)[0] for t in chain.buffers()}
    seen, region = {}, ["input"]

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = (nbytes, region[0])
            if verbose:
                print(f"  {region[0]:8s} {str(tuple(t.shape)):24s} {str(t.dtype):16s} {nbytes}")
        return t

    chain.region = lambda name: region.__setitem__(0, name)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = chain(x, labels)
    per_region = {}
    for nbytes, reg in seen.values():
        per_region[reg] = per_region.get(reg, 0) + nbytes
    loss.backward()
    return {"savedBytes": sum(v[0] for v in seen.values()), "savedBytesByRegion": per_region}


def make_optimizer(name, params):
    return torch.optim.SGD(params, lr=1e-3) if name == "sgd" else torch.optim.AdamW(params, lr=1e-3)


def step(chain, x, labels, opt):
    with record_function("phase:forward"):
        loss = chain(x, labels)
    with record_function("phase:backward"):
        loss.backward()
    del loss
    with record_function("phase:optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def step_peak(c):
    chain, x, labels = build(c)
    opt = make_optimizer(c["optimizer"], chain.parameters())
    step(chain, x, labels, opt)  # warm-up: the optimizer state exists from here on
    tensors = list(chain.parameters()) + list(chain.buffers()) + [x, labels]
    for st in opt.state.values():
        tensors += [v for v in st.values() if torch.is_tensor(v)]
    base = {}
    for t in tensors:
        ptr, nbytes = storage_key(t)
        base[ptr] = nbytes
    baseline = sum(base.values())
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(chain, x, labels, opt)
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]")
    ranges = [(e.start_us(), e.start_us() + e.duration_us(), e.name()[6:]) for e in events
              if e.name().startswith("phase:")]
    run, peak, peak_t = 0, 0, None
    for t, _, n in mem:
        run += n
        if run > peak:
            peak, peak_t = run, t
    phase = next((name for a, b, name in ranges if a <= peak_t <= b), "other") if peak_t else "baseline"
    return {"params": sum(p.numel() for p in chain.parameters()), "baselineBytes": baseline,
            "peakBytes": baseline + peak, "peakPhase": phase}


def describe(arch):
    m = tv.build(arch).model
    sd = m.state_dict()
    params = dict(m.named_parameters())
    return {"params": sum(p.numel() for p in m.parameters()),
            "tensors": [[k, list(v.shape)] for k, v in sd.items() if k in params],
            "buffers": [[k, list(v.shape), str(v.dtype).replace("torch.", "")] for k, v in sd.items()
                        if k not in params],
            "modules": len(sd._metadata), "moduleNameBytes": sum(len(k) for k in sd._metadata)}


def main():
    verbose = "--verbose" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    out = {"about": "torchvision 0.14 models on torch 1.13 (CPU), run as trainmem's chains "
                    "(tools/tm_vision_models.py): parameter tensors and module tree per model; per case "
                    "the saved-for-backward bytes (saved_tensors_hooks, storages once, parameters and "
                    "buffers excluded, the image batch included) and the peak allocated bytes of one "
                    "steady-state step (profiler events + baseline). Written by tools/measure_vision.py.",
           "torch": torch.__version__, "torchvision": __import__("torchvision").__version__,
           "models": {}, "cases": []}
    for arch in PRESETS:
        if only and only not in arch:
            continue
        out["models"][arch] = describe(arch)
    torch.set_num_threads(2)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_vision.json")
    # the cheapest cases first; the file is written after each case (a long run can be stopped)
    for c in sorted(CASES, key=lambda c: ("vit_l" in c["arch"], c["microBatch"])):
        if only and only not in c["name"]:
            continue
        if verbose:
            print(c["name"])
        r = saved_bytes(c, verbose)
        r.update(step_peak(c))
        out["cases"].append(dict(c, **r))
        print(f"{c['name']:48s} saved {r['savedBytes']:>12d} peak {r['peakBytes']:>12d} {r['peakPhase']}",
              file=sys.stderr)
        if "--dry" not in sys.argv and not only:
            with open(path, "w") as f:
                json.dump(out, f, indent=None, separators=(",", ":"))
                f.write("\n")


if __name__ == "__main__":
    main()
