"""Builds diffusers models from their config.json with the modules of tools/tm_diffusers.py (the
same parameters, names and registration order as diffusers@58eb52c0) on the meta device and
writes tests/fixtures/diffusers_tensors.json: per config, the parameter count, the state_dict()
parameter names and shapes in order (as a 64-bit FNV-1a hash of "name:d0,d1;" for each, and in
full for the small configs), the persistent buffers, and the modules state_dict() visits (their
number and total name length, which size torch.save's pickle). tests/cpp/test_diffusion.cpp
builds the same configs and compares.

Run: /usr/bin/python3 tools/dump_diffusers.py   (torch 1.13; nothing is allocated: meta tensors)
"""
import json
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
import measure_diffusion as md  # noqa: E402
import tm_diffusers as td  # noqa: E402

HERE = os.path.dirname(__file__)
PRESETS = os.path.join(HERE, "..", "cpp", "data", "models")

_register = nn.Module.register_parameter


def _meta_register(self, name, p):
    if p is not None and p.device.type != "meta":
        p = nn.Parameter(p.detach().to("meta"), p.requires_grad)
    _register(self, name, p)


def fnv1a(lines):
    h = 0xCBF29CE484222325
    for line in lines:
        for byte in line.encode():
            h ^= byte
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# diffusers@58eb52c0 examples/dreambooth: the LoRA target modules of train_dreambooth_lora_sdxl.py
# (the UNet; trainmem uses them for DiT and PixArt too), _sd3.py and _flux.py.
LORA_TARGETS = {
    "SD3Transformer2DModel": ["attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_add_out",
                              "attn.to_k", "attn.to_out.0", "attn.to_q", "attn.to_v"],
    "FluxTransformer2DModel": ["attn.to_k", "attn.to_q", "attn.to_v", "attn.to_out.0", "attn.add_k_proj",
                               "attn.add_q_proj", "attn.add_v_proj", "attn.to_add_out", "ff.net.0.proj",
                               "ff.net.2", "ff_context.net.0.proj", "ff_context.net.2"],
}


def lora_params_per_rank(model, cls):
    """PEFT's rule (tuners_utils.check_target_module_exists): a module whose name equals a target
    or ends with "." + target; nn.Linear only. r x (in + out) per adapted module, for r = 1."""
    targets = LORA_TARGETS.get(cls, ["to_k", "to_q", "to_v", "to_out.0"])
    n = 0
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear) and any(name == t or name.endswith("." + t) for t in targets):
            n += m.in_features + m.out_features
    return n


def describe(config, full):
    nn.Module.register_parameter = _meta_register
    try:
        model = getattr(td, config["_class_name"])(config)
    finally:
        nn.Module.register_parameter = _register
    params = [(n, list(p.shape)) for n, p in model.named_parameters()]
    sd = model.state_dict()
    pnames = {n for n, _ in params}
    buffers = [(n, list(t.shape)) for n, t in sd.items() if n not in pnames]
    mods = [n for n, _ in model.named_modules()]
    lines = [f"{n}:{','.join(str(d) for d in s)};" for n, s in params]
    out = {"params": sum(p.numel() for p in model.parameters()), "tensors": len(params),
           "tensorsHash": fnv1a(lines), "buffers": [{"name": n, "shape": s} for n, s in buffers],
           "modules": len(mods), "moduleNameBytes": sum(len(n) for n in mods)}
    if config["_class_name"] != "AutoencoderKL":
        out["loraParamsPerRank"] = lora_params_per_rank(model, config["_class_name"])
    if full:
        out["tensorList"] = [{"name": n, "shape": s} for n, s in params]
    return out


def preset_configs():
    """The diffusion presets of cpp/data/models (their config is what trainmem builds)."""
    cases = []
    for f in sorted(os.listdir(PRESETS)):
        with open(os.path.join(PRESETS, f)) as fh:
            p = json.load(fh)
        if "_class_name" in p.get("config", {}):
            cases.append({"name": "preset " + p["id"], "preset": p["id"], "config": p["config"]})
    return cases


def main():
    cases = [{"name": c["name"], "config": c["config"], "full": False}
             for c in md.CASES if not c.get("checkpoint")]
    seen = set()
    cases = [c for c in cases if not (json.dumps(c["config"]) in seen or seen.add(json.dumps(c["config"])))]
    cases += preset_configs()
    out = {"about": "diffusers models built from config.json by tools/tm_diffusers.py (diffusers@58eb52c0 "
                    "modules, meta device): parameter names and shapes in state_dict() order, persistent "
                    "buffers, modules. Written by tools/dump_diffusers.py.", "cases": []}
    for c in cases:
        r = describe(c["config"], c.get("full", False))
        out["cases"].append(dict(c, **r))
        print(f"{c['name']:48s} {r['params']:>14d} {r['tensors']:>6d} {r['modules']:>6d}", file=sys.stderr)
    path = os.path.join(HERE, "..", "tests", "fixtures", "diffusers_tensors.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
