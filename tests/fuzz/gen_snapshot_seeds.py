"""Seeds for tests/fuzz/fuzz_snapshot.cpp: small snapshots in PyTorch's schema (the keys of
torch/csrc/cuda/memory_snapshot.cpp), pickled by pickle.dumps at protocols 2 to 5, plus the
committed fixtures. Usage: gen_snapshot_seeds.py ROOT OUT_DIR"""
import os
import pickle
import shutil
import sys

root, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
frames = [{"filename": "torch/optim/adam.py", "line": 10, "name": "step"},
          {"filename": "torch/autograd/__init__.py", "line": 200, "name": "backward"},
          {"filename": "train.py", "line": 5, "name": "main"}]
trace = []
for i in range(12):
    a = (1 << 40) + 512 * i
    trace.append({"action": "alloc", "addr": a, "size": 1000 + i, "stream": 0, "frames": frames[i % 3:], "time_us": i})
    if i % 2:
        for act in ("free_requested", "free_completed"):
            trace.append({"action": act, "addr": a, "size": 1000 + i, "stream": 0, "frames": frames[1:], "time_us": i})
trace.append({"action": "segment_alloc", "addr": 1 << 41, "size": 2 << 20, "stream": 0, "frames": []})
trace.append({"action": "oom", "device_free": 123, "size": 1 << 30, "stream": 0})
snap = {"segments": [{"device": 0, "address": 1 << 40, "total_size": 2 << 20, "allocated_size": 1024,
                      "active_size": 1024, "requested_size": 1000, "stream": 0, "segment_type": "small",
                      "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                      "blocks": [{"address": 1 << 40, "size": 1024, "requested_size": 1000,
                                  "state": "active_allocated", "frames": frames}]}],
        "device_traces": [trace, []],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0, "expandable_segments": True}}
for p in (2, 3, 4, 5):
    with open(os.path.join(out, f"small_p{p}.pickle"), "wb") as f:
        f.write(pickle.dumps(snap, protocol=p))
with open(os.path.join(out, "segments_only.pickle"), "wb") as f:
    f.write(pickle.dumps(snap["segments"]))
with open(os.path.join(out, "memory_stats.json"), "w") as f:
    f.write('{"allocated_bytes.all.peak": 1024, "reserved_bytes.all.peak": 4096, "num_ooms": 1}')
fx = os.path.join(root, "tests", "fixtures", "snapshots")
for name in sorted(os.listdir(fx)):
    if name.endswith(".pickle"):
        shutil.copy(os.path.join(fx, name), os.path.join(out, name))
