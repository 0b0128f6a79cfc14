"""Seeds for tests/fuzz/fuzz_trace.cpp: the small traces in tests/fuzz/trace_seeds/ (written by
python/trainmem_trace for tiny models: an MLP, a U-Net with skips, a language model with a
sequence length, a module used twice), each behind first bytes that pick every calculator.
Usage: gen_trace_seeds.py ROOT OUT_DIR"""
import os
import sys

root, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
src = os.path.join(root, "tests", "fuzz", "trace_seeds")
for name in sorted(os.listdir(src)):
    with open(os.path.join(src, name), "rb") as f:
        text = f.read().strip()
    for first in (0, 1, 2, 3, 4, 6, 13, 0x45, 31):
        with open(os.path.join(out, f"{name}.{first}"), "wb") as f:
            f.write(bytes([first]) + text)
