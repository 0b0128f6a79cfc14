"""Measures the AutoencoderKL encoder's working set under no_grad (what a diffusion training
step spends encoding its images before the forward, when the latents are not cached) on torch
1.13 CPU: the bytes allocated beyond the model and the pixels, at their peak (profiler memory
events), for small VAEs rebuilt from diffusers@58eb52c0's modules (tools/tm_diffusers.py, eager
AttnProcessor), at two image sizes. Writes tests/fixtures/torch_pipeline.json.
Run: /usr/bin/python3 tools/measure_pipeline.py [--dry]
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
import tm_diffusers as td  # noqa: E402

VAE = {"_class_name": "AutoencoderKL", "block_out_channels": [16, 32, 64], "layers_per_block": 1,
       "norm_num_groups": 8, "latent_channels": 4}
VAE2 = {"_class_name": "AutoencoderKL", "block_out_channels": [32, 64], "layers_per_block": 2,
        "norm_num_groups": 16, "latent_channels": 16, "use_quant_conv": False, "use_post_quant_conv": False}
CASES = [
    {"name": "vae 3 levels b2 64px", "config": VAE, "batch": 2, "image": 64},
    {"name": "vae 3 levels b1 128px", "config": VAE, "batch": 1, "image": 128},
    {"name": "vae 2 levels (16 latents) b2 48px", "config": VAE2, "batch": 2, "image": 48},
    {"name": "vae 2 levels (16 latents) b1 96px", "config": VAE2, "batch": 1, "image": 96},
]


def encode_bytes(case):
    torch.manual_seed(0)
    vae = td.AutoencoderKL(case["config"]).eval()
    x = torch.randn(case["batch"], 3, case["image"], case["image"])
    with torch.no_grad():
        vae.encode(x)  # warm-up
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            z = vae.encode(x)
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]")
    run, peak = 0, 0
    for _, _, nb in mem:
        run += nb
        peak = max(peak, run)
    return {"encodeBytes": peak, "latentBytes": z.numel() * z.element_size(),
            "params": sum(p.numel() for p in vae.parameters())}


def main():
    out = {"about": "AutoencoderKL encode under no_grad on torch 1.13 CPU (tools/measure_pipeline.py): the "
                    "bytes allocated beyond the model and the pixels at their peak, fp32, eager attention.",
           "torch": torch.__version__, "cases": []}
    for case in CASES:
        r = encode_bytes(case)
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:40s} {r['encodeBytes']:>12d}", file=sys.stderr)
    if "--dry" not in sys.argv:
        path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_pipeline.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
