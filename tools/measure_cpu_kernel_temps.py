"""Measures the temporaries PyTorch's CPU kernels hold inside one backward op, which a trace made
with a dispatch mode cannot see (it sees each op's outputs, not the kernel's own allocations):
the U-Net of tools/tm_custom_models.py runs one training step under
torch.profiler(profile_memory=True, record_shapes=True), and for every convolution_backward,
native_batch_norm_backward and the other backward ops of the step this writes the most the op
held beyond what it returned (the running sum of the allocator's events inside the op, its
highest point less its net), with the shapes of grad_output, the input and the weight.

Read by traced_activations.cpp (kernel_temporaries, runtime "pytorch-cpu"): a 3x3 convolution's
backward holds one temporary of grad_output's size and one of the input gradient's size (none when
the input needs no gradient); batch norm's backward one of its output's size.

Run: /usr/bin/python3 tools/measure_cpu_kernel_temps.py [BATCH] (torch 1.13; writes
tests/fixtures/torch_cpu_kernel_temps.json)
"""
import json
import math
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import measure_traced as mt  # noqa: E402
import tm_custom_models as cm  # noqa: E402

OPS = ("aten::convolution_backward", "aten::native_batch_norm_backward",
       "aten::threshold_backward", "aten::max_pool2d_with_indices_backward")


def held_inside(event, mem):
    """(most held beyond the op's net, the net) from the memory events inside the op."""
    start, end = event.start_us(), event.start_us() + event.duration_us()
    run = most = 0
    for t, _, n in mem:
        if start <= t <= end:
            run += n
            most = max(most, run)
    return most - run, run


def main():
    b = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = cm.UNetish()
    model.train()
    spec = mt.parse_input("b,3,64,64")
    x, target = mt.batch_of(spec, "cross_entropy", model, b, None)
    opt = mt.make_optimizer("adam", model.parameters())
    mt.step(model, x, target, "cross_entropy", opt)  # warm-up
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True) as prof:
        mt.step(model, x, target, "cross_entropy", opt)
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events)
                 if e.name() == "[memory]")
    rows = []
    for e in events:
        if e.name() not in OPS:
            continue
        temp, net = held_inside(e, mem)
        shapes = [list(s) for s in e.shapes()[:3]]
        rows.append({"op": e.name(), "shapes": shapes, "heldInsideBytes": temp, "netBytes": net,
                     "gradOutputBytes": 4 * math.prod(shapes[0]) if shapes[0] else 0,
                     "inputBytes": 4 * math.prod(shapes[1]) if len(shapes) > 1 and shapes[1]
                     else 0})
        print(f"{e.name()[6:]:36s} {shapes} held inside {temp}", file=sys.stderr)
    out = {"about": "Temporaries held inside CPU backward kernels (torch.profiler memory events "
                    "within each op: most held less the op's net), UNetish of "
                    "tools/tm_custom_models.py, fp32, input b x 3 x 64 x 64; written by "
                    "tools/measure_cpu_kernel_temps.py",
           "torch": torch.__version__, "batch": b, "ops": rows}
    path = os.path.join(HERE, "..", "tests", "fixtures", "torch_cpu_kernel_temps.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
