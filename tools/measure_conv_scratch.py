"""Measures the scratch buffer oneDNN allocates inside the weight gradient of a convolution with
a long kernel on CPU (torch 1.13, oneDNN 2.6): per case, every allocation made while
ConvolutionBackward0 runs (torch.profiler memory events), and writes
tests/fixtures/torch_conv_scratch.json. wav2vec2's positional convolution (1-D, 768 channels,
16 groups, kernel 128) and CLIP-B/32's patch embedding (2-D, 3 -> 768 channels, kernel and
stride 32) allocate one buffer far larger than their gradients; these cases vary the batch,
channels, groups, kernel, stride, length and threads to find what its size depends on.

Run: nice /usr/bin/python3 tools/measure_conv_scratch.py [--dry]
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

# 1-D: (threads, batch, channels, groups, kernel, length): Conv1d(channels, channels, kernel,
# padding=kernel // 2, groups=groups) on [batch, channels, length], the input requiring grad
CASES = [
    (1, 1, 768, 16, 128, 49), (1, 2, 768, 16, 128, 49), (1, 1, 768, 16, 128, 100),
    (1, 1, 768, 16, 128, 200), (1, 1, 768, 16, 64, 49), (1, 1, 768, 16, 32, 49),
    (1, 1, 768, 8, 128, 49), (1, 1, 768, 4, 128, 49), (1, 1, 768, 2, 128, 49),
    (1, 1, 768, 32, 128, 49), (1, 1, 768, 768, 128, 49), (1, 1, 384, 16, 128, 49),
    (1, 1, 384, 8, 128, 49), (1, 1, 768, 1, 128, 49), (1, 1, 768, 16, 3, 49),
    (1, 1, 768, 16, 14, 49), (1, 1, 768, 16, 15, 49), (1, 1, 768, 16, 16, 49),
    (1, 1, 768, 16, 24, 49), (2, 1, 768, 16, 128, 49), (2, 2, 768, 16, 128, 49),
    (2, 1, 768, 16, 32, 100), (2, 1, 384, 8, 64, 49), (2, 2, 768, 4, 128, 49),
]
# 2-D: (threads, batch, in, out, kernel, stride, image, input requires grad): Conv2d(in, out,
# kernel, stride, bias=False) on [batch, in, image, image] (ViT / CLIP / DINOv2 patch embeddings)
CASES_2D = [
    (2, 2, 3, 768, 32, 32, 224, False), (2, 2, 3, 768, 16, 16, 224, False),
    (2, 2, 3, 384, 14, 14, 224, False), (1, 2, 3, 768, 32, 32, 224, True),
    (1, 1, 3, 64, 32, 1, 64, False), (1, 1, 48, 64, 16, 16, 64, False),
    (1, 1, 3, 64, 15, 1, 64, False), (1, 1, 3, 64, 14, 1, 64, False),
]


def backward_allocations(y):
    grad = torch.randn_like(y)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        y.backward(grad)
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]")
    return [n for _, _, n in mem if n > 0]


def allocations(threads, b, c, g, k, length):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.randn(b, c, length, requires_grad=True)
    conv = torch.nn.Conv1d(c, c, k, padding=k // 2, groups=g)
    y = conv(x)
    return {"dims": 1, "threads": threads, "batch": b, "channels": c, "outChannels": c, "groups": g,
            "kernel": k, "stride": 1, "length": length, "outLength": y.shape[2],
            "inputBytes": x.numel() * 4, "weightBytes": conv.weight.numel() * 4,
            "allocations": backward_allocations(y)}


def allocations_2d(threads, b, cin, cout, k, stride, image, input_grad):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.randn(b, cin, image, image, requires_grad=input_grad)
    conv = torch.nn.Conv2d(cin, cout, k, stride=stride, bias=False)
    y = conv(x)
    return {"dims": 2, "threads": threads, "batch": b, "channels": cin, "outChannels": cout,
            "groups": 1, "kernel": k, "stride": stride, "length": image, "outLength": y.shape[2],
            "inputGrad": input_grad, "inputBytes": x.numel() * 4,
            "weightBytes": conv.weight.numel() * 4, "allocations": backward_allocations(y)}


def main():
    out = {"about": "Allocations made during the backward of a convolution on CPU (torch 1.13, "
                    "oneDNN 2.6.3, AVX-512), in order, from torch.profiler memory events; outLength: the "
                    "output's length (2-D: its side). Written by "
                    "tools/measure_conv_scratch.py.",
           "torch": torch.__version__, "cases": []}
    for case in CASES + CASES_2D:
        r = allocations(*case) if len(case) == 6 else allocations_2d(*case)
        out["cases"].append(r)
        print(case, r["allocations"], file=sys.stderr)
    if "--dry" not in sys.argv:
        path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_conv_scratch.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=None, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
