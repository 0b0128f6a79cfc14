"""Writes memory-snapshot fixtures from real CPU training loops (PyTorch 1.13, Debian's
python3-torch): tests/fixtures/snapshots/*.pickle and, beside each, *.expected.json with
figures taken from torch itself for the tests to compare against.

Source of the events: torch.profiler(profile_memory=True, with_stack=True). Its event tree
(kineto_results.experimental_event_tree()) holds every allocation and free of the CPU
allocator with its address (ptr) and size (alloc_size, negative for a free), and the Python
calls it happened under. PyTorch's own converter from such a profile to a snapshot,
torch/cuda/_memory_viz.py _profile_to_snapshot (pytorch/pytorch @0044eb6704e63eec2a52110f4b1a44331e3d4342),
walks the same tree: an allocation's frames are its PyCall parents, innermost first; a free
becomes free_requested + free_completed. We write the same schema as the CUDA writer,
torch/csrc/cuda/memory_snapshot.cpp _memory_snapshot_pickled
(@00067369c9339bed950762afec327514d6fa2566): trace entries {action, addr, size, stream, frames,
time_us}, segments {device, address, total_size, allocated_size, active_size, requested_size,
stream, segment_type, segment_pool_id, is_expandable, frames, blocks: [{address, size,
requested_size, state, frames}]}, allocator_settings; and pickle.dump as
torch/cuda/memory.py _dump_snapshot does (@00b65a04a2d30e498eedcb1e3476abd547f428f1).

The CPU allocator has no cache: each allocation is its own segment (a segment_alloc before its
alloc, a segment_free after its free), so reserved equals the requested bytes. Recording
starts after the model and the batch exist (they are in the final segments, without frames,
as blocks allocated before _record_memory_history are), before the first step (the optimizer
state is created inside the trace).

Fixtures (model: tools/tm_torch_models.py mlp, Adam, 3 steps, opt.zero_grad at the start of
each step):
  mlp_adam_keep_grads.pickle   zero_grad(set_to_none=False): the gradients stay between steps
  mlp_adam_set_to_none.pickle  zero_grad(set_to_none=True): the control

Frames are trimmed to the innermost MAX_FRAMES Python calls (file paths relative to the
site-packages or repository root). Run: /usr/bin/python3 tools/snapshot_fixtures.py
"""
import json
import os
import pickle
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from torch._C._profiler import _EventType

sys.path.insert(0, os.path.dirname(__file__))
import tm_torch_models as tm  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "snapshots")
MAX_FRAMES = 6
STEPS = 3
CASE = {"kind": "mlp", "sizes": [64, 128, 128, 32], "microBatch": 32}


def round_size(n):
    """The CUDA caching allocator's rounding (c10/cuda/CUDACachingAllocator.cpp round_size)."""
    return 0 if n == 0 else max(512, 512 * ((n + 511) // 512))


def short(path):
    for prefix in (ROOT + "/", "/usr/lib/python3/dist-packages/"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def frame_of(node_name):
    # PyCall names read "torch/nn/modules/linear.py(114): forward".
    head, _, func = node_name.partition("): ")
    filename, _, line = head.rpartition("(")
    return short(filename), int(line) if line.isdigit() else 0, func


def train(set_to_none):
    model, (x,) = tm.build(CASE)
    x.requires_grad_(False)
    target = torch.randn(CASE["microBatch"], CASE["sizes"][-1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    preexisting = [p for p in model.parameters()] + [x, target]

    def one_step():
        opt.zero_grad(set_to_none=set_to_none)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True) as prof:
        for _ in range(STEPS):
            one_step()
    grads = [p.grad for p in model.parameters()]
    state = [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
    return prof, model, preexisting, grads, state


def allocations(prof):
    """Allocation nodes of the event tree in time order, each with its Python frames."""
    out = []

    def walk(node, frames):
        if node.tag == _EventType.PyCall:
            frames = [frame_of(node.name)] + frames
        if node.tag == _EventType.Allocation:
            f = node.extra_fields
            keep = [fr for fr in frames if not fr[0].startswith("torch/profiler")][:MAX_FRAMES]
            out.append((node.start_time_ns, f.ptr, f.alloc_size, f.total_allocated, keep))
        for c in node.children:
            walk(c, frames)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, [])
    out.sort(key=lambda e: e[0])
    return out


def write(name, set_to_none):
    prof, model, pre, grads, state = train(set_to_none)
    allocs = allocations(prof)
    shared = {}  # one dict per distinct frame, shared as the CUDA writer's memo shares them

    def frames(fs):
        return [shared.setdefault(f, {"filename": f[0], "line": f[1], "name": f[2]}) for f in fs]

    t0 = allocs[0][0] // 1000
    # total_allocated counts from the process's first profile: make it count from this one.
    offset = allocs[0][3] - allocs[0][2]
    trace, live, totals = [], {}, []
    for t_ns, ptr, size, total, fs in allocs:
        t = t_ns // 1000 - t0
        total -= offset
        fr = frames(fs)
        if size > 0:
            trace.append({"action": "segment_alloc", "addr": ptr, "size": size, "stream": 0, "frames": fr, "time_us": t})
            totals.append(total - size)
            trace.append({"action": "alloc", "addr": ptr, "size": size, "stream": 0, "frames": fr, "time_us": t})
            totals.append(total)
            live[ptr] = (size, fr)
        else:
            n = -size
            for action in ("free_requested", "free_completed", "segment_free"):
                trace.append({"action": action, "addr": ptr, "size": n, "stream": 0, "frames": fr, "time_us": t})
                totals.append(total)
            live.pop(ptr, None)
    # Final state: what the trace left live, and what existed before recording (no frames).
    blocks = {ptr: (size, fr) for ptr, (size, fr) in live.items()}
    for t in pre:
        st = t.storage()
        blocks.setdefault(st.data_ptr(), (st.size() * t.element_size(), []))
    segments = []
    for ptr, (size, fr) in sorted(blocks.items()):
        segments.append({
            "device": 0, "address": ptr, "total_size": size, "allocated_size": size,
            "active_size": size, "requested_size": size, "stream": 0,
            "segment_type": "small" if size <= (1 << 20) else "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": fr,
            "blocks": [{"address": ptr, "size": size, "requested_size": size, "state": "active_allocated", "frames": fr}],
        })
    snap = {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {"1": 0},
        },
    }
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name + ".pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    params = list(model.parameters())
    expected = {
        "about": "Figures from torch for " + name + ".pickle (tools/snapshot_fixtures.py): "
                 "torch " + torch.__version__ + ", tm_torch_models mlp " + str(CASE["sizes"]) +
                 ", batch " + str(CASE["microBatch"]) + ", Adam, " + str(STEPS) + " steps, zero_grad(set_to_none=" +
                 str(set_to_none) + ") at the start of each step.",
        "setToNone": set_to_none,
        "steps": STEPS,
        "traceEntries": len(trace),
        "allocs": sum(1 for a in allocs if a[2] > 0),
        "frees": sum(1 for a in allocs if a[2] < 0),
        "paramBytes": sum(p.numel() * p.element_size() for p in params),
        "paramBytesRounded": sum(round_size(p.numel() * p.element_size()) for p in params),
        "paramTensors": len(params),
        # p.grad after the last step: with set_to_none=False these are the step-1 buffers.
        "gradBytesRounded": sum(round_size(g.numel() * g.element_size()) for g in grads if g is not None),
        "optimizerStateBytes": sum(v.numel() * v.element_size() for v in state),
        "optimizerStateBytesRounded": sum(round_size(v.numel() * v.element_size()) for v in state),
        # The profiler's own running total of CPU bytes allocated since recording began, after
        # each trace entry (the allocator's figure, not a sum we make).
        "totalAllocatedAfterEntry": totals,
        "maxTotalAllocated": max(totals),
    }
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    print(f"{name}: {len(trace)} entries, {os.path.getsize(path)} B", file=sys.stderr)


def main():
    write("mlp_adam_keep_grads", set_to_none=False)
    write("mlp_adam_set_to_none", set_to_none=True)


if __name__ == "__main__":
    main()
