"""Measures diffusion models rebuilt from diffusers' source (tools/tm_diffusers.py) on real PyTorch
(CPU, torch 1.13) and writes tests/fixtures/torch_diffusion.json:

- savedBytes: what autograd saves in the forward (torch.autograd.graph.saved_tensors_hooks),
  storages deduplicated and parameters/buffers excluded, per chain region (the module running when
  a storage was first saved; inputs count as "input"), without checkpointing;
- storedBytes: bytes allocated at the end of the forward pass and the loss, over what was allocated
  before it (profiler memory events), with and without diffusers' gradient checkpointing (resnets
  and transformer blocks under torch.utils.checkpoint(use_reentrant=False));
- peakBytes: the highest allocated bytes of one steady-state training step (forward, MSE loss,
  backward, AdamW step, zero_grad(set_to_none=True)), as tools/measure_peak.py measures it.

The loss is diffusers' training scripts': F.mse_loss(model_pred.float(), target.float()).
Run: /usr/bin/python3 tools/measure_diffusion.py [--verbose] [--dry]
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(__file__))
import tm_diffusers as td  # noqa: E402

# Small UNets with Stable Diffusion 1.x's layout (conv projections, 4 levels) and SDXL's (linear
# projections, text_time conditioning, several transformer blocks per attention, a plain first
# level). Heads divide channels; norm groups divide every channel count.
UNET_SD = {"_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64, 64, 64],
           "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                "DownBlock2D"],
           "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
           "layers_per_block": 2, "attention_head_dim": 4, "cross_attention_dim": 48, "norm_num_groups": 8,
           "in_channels": 4, "out_channels": 4, "sample_size": 16}
UNET_XL = {"_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64, 96],
           "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
           "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
           "layers_per_block": 2, "attention_head_dim": [2, 4, 6], "cross_attention_dim": 40,
           "transformer_layers_per_block": [1, 2, 3], "use_linear_projection": True, "norm_num_groups": 8,
           "addition_embed_type": "text_time", "addition_time_embed_dim": 8,
           "projection_class_embeddings_input_dim": 56, "in_channels": 4, "out_channels": 4, "sample_size": 16}

SD3_TINY = {"_class_name": "SD3Transformer2DModel", "num_attention_heads": 4, "attention_head_dim": 16,
            "num_layers": 3, "in_channels": 4, "out_channels": 4, "patch_size": 2, "joint_attention_dim": 32,
            "caption_projection_dim": 64, "pooled_projection_dim": 24, "pos_embed_max_size": 16, "sample_size": 16}
SD35_TINY = dict(SD3_TINY, dual_attention_layers=[0], qk_norm="rms_norm")
FLUX_TINY = {"_class_name": "FluxTransformer2DModel", "num_attention_heads": 4, "attention_head_dim": 16,
             "num_layers": 2, "num_single_layers": 2, "in_channels": 16, "joint_attention_dim": 32,
             "pooled_projection_dim": 24, "guidance_embeds": True, "axes_dims_rope": [4, 6, 6]}
DIT_TINY = {"_class_name": "DiTTransformer2DModel", "num_attention_heads": 4, "attention_head_dim": 16,
            "num_layers": 2, "in_channels": 4, "out_channels": 8, "patch_size": 2, "sample_size": 16,
            "num_embeds_ada_norm": 10}
PIXART_TINY = {"_class_name": "PixArtTransformer2DModel", "num_attention_heads": 4, "attention_head_dim": 16,
               "num_layers": 2, "in_channels": 4, "out_channels": 8, "patch_size": 2, "sample_size": 16,
               "cross_attention_dim": 64, "caption_channels": 32, "use_additional_conditions": False}

CASES = [
    {"name": "unet sd-layout b2 latent 16 text 7", "kind": "unet", "config": UNET_SD, "microBatch": 2,
     "latent": 16, "textLen": 7},
    {"name": "unet sd-layout b1 latent 32 text 9", "kind": "unet", "config": UNET_SD, "microBatch": 1,
     "latent": 32, "textLen": 9},
    {"name": "unet sd-layout b2 latent 16 text 7, checkpointed", "kind": "unet", "config": UNET_SD,
     "microBatch": 2, "latent": 16, "textLen": 7, "checkpoint": True},
    {"name": "unet xl-layout b2 latent 16 text 7", "kind": "unet", "config": UNET_XL, "microBatch": 2,
     "latent": 16, "textLen": 7},
    {"name": "unet xl-layout b1 latent 32 text 5", "kind": "unet", "config": UNET_XL, "microBatch": 1,
     "latent": 32, "textLen": 5},
    {"name": "unet xl-layout b2 latent 16 text 7, checkpointed", "kind": "unet", "config": UNET_XL,
     "microBatch": 2, "latent": 16, "textLen": 7, "checkpoint": True},
    {"name": "sd3 tiny b2 latent 16 text 7", "kind": "sd3", "config": SD3_TINY, "microBatch": 2, "latent": 16,
     "textLen": 7},
    {"name": "sd3 tiny b1 latent 32 text 9", "kind": "sd3", "config": SD3_TINY, "microBatch": 1, "latent": 32,
     "textLen": 9},
    {"name": "sd3.5 tiny (dual attention, qk-norm) b2 latent 16 text 7", "kind": "sd3", "config": SD35_TINY,
     "microBatch": 2, "latent": 16, "textLen": 7},
    {"name": "flux tiny b2 latent 16 text 7", "kind": "flux", "config": FLUX_TINY, "microBatch": 2, "latent": 16,
     "textLen": 7},
    {"name": "flux tiny b1 latent 32 text 9", "kind": "flux", "config": FLUX_TINY, "microBatch": 1, "latent": 32,
     "textLen": 9},
    {"name": "flux tiny b2 latent 16 text 7, checkpointed", "kind": "flux", "config": FLUX_TINY, "microBatch": 2,
     "latent": 16, "textLen": 7, "checkpoint": True},
    {"name": "dit tiny b2 latent 16", "kind": "dit", "config": DIT_TINY, "microBatch": 2, "latent": 16,
     "textLen": 0},
    {"name": "pixart tiny b2 latent 16 text 7", "kind": "pixart", "config": PIXART_TINY, "microBatch": 2,
     "latent": 16, "textLen": 7},
]


def build(case):
    torch.manual_seed(0)
    c = case["config"]
    b, n, s = case["microBatch"], case["latent"], case["textLen"]
    if case["kind"] == "unet":
        m = td.UNet2DConditionModel(c)
        cin = c.get("in_channels", 4)
        cross = c["cross_attention_dim"]
        cross = cross[0] if isinstance(cross, list) else cross
        inputs = [torch.randn(b, cin, n, n), torch.tensor(500), torch.randn(b, s, cross)]
        if c.get("addition_embed_type") == "text_time":
            pooled = c["projection_class_embeddings_input_dim"] - 6 * c["addition_time_embed_dim"]
            inputs += [torch.randn(b, pooled), torch.randn(b, 6)]
        target = torch.randn(b, c.get("out_channels", 4), n, n)
        return m, inputs, target
    cin = c.get("in_channels", 4)
    t = torch.rand(b) * 1000
    if case["kind"] == "sd3":
        m = td.SD3Transformer2DModel(c)
        inputs = [torch.randn(b, cin, n, n), torch.randn(b, s, c["joint_attention_dim"]),
                  torch.randn(b, c["pooled_projection_dim"]), t]
        return m, inputs, torch.randn(b, cin, n, n)
    if case["kind"] == "flux":  # packed latents: (n/2)^2 tokens of 4 x 4 latent channels
        m = td.FluxTransformer2DModel(c)
        tokens = (n // 2) ** 2
        inputs = [torch.randn(b, tokens, cin), torch.randn(b, s, c["joint_attention_dim"]),
                  torch.randn(b, c["pooled_projection_dim"]), torch.rand(b), torch.full((b,), 3.5)]
        return m, inputs, torch.randn(b, tokens, cin)
    if case["kind"] == "dit":
        m = td.DiTTransformer2DModel(c)
        inputs = [torch.randn(b, cin, n, n), t.long(), torch.randint(0, c["num_embeds_ada_norm"], (b,))]
        return m, inputs, torch.randn(b, cin, n, n)
    if case["kind"] == "pixart":
        m = td.PixArtTransformer2DModel(c)
        inputs = [torch.randn(b, cin, n, n), torch.randn(b, s, c["caption_channels"]), t]
        return m, inputs, torch.randn(b, cin, n, n)
    raise ValueError(case["kind"])


def loss_of(case, pred, target):
    """diffusers' training losses: the UNet scripts' F.mse_loss(pred.float(), target.float()); the
    SD3 / Flux scripts' mean of (pred.float() - target.float())^2 (weighting 1); learned-sigma
    models (DiT, PixArt: 2 x the latent channels) on the predicted-noise half."""
    if case["kind"] == "unet":
        return F.mse_loss(pred.float(), target.float(), reduction="mean")
    if pred.shape[1] != target.shape[1] and case["kind"] in ("dit", "pixart"):
        pred = pred.chunk(2, dim=1)[0]
    return ((pred.float() - target.float()) ** 2).mean()


class Regions:
    """Names chain regions in forward order: 'stem', then '<index>:<kind>' for every tag_next."""

    def __init__(self):
        self.name = "input"
        self.count = 0

    def __call__(self, kind):
        self.count += 1
        self.name = f"{self.count}:{kind}"

    def stem(self, name):
        self.name = name


def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def saved_bytes(case, verbose=False):
    model, inputs, target = build(case)
    model.train()
    excluded = {storage_key(p)[0] for p in model.parameters()} | {storage_key(b)[0] for b in model.buffers()}
    input_ptrs = {storage_key(t)[0] for t in inputs + [target] if t.dim() > 0}
    regions = Regions()
    td.NAMER["fn"], td.TAG[0] = regions, regions.stem
    seen = {}

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            reg = "input" if ptr in input_ptrs else regions.name
            seen[ptr] = (nbytes, reg)
            if verbose:
                print(f"  {reg:16s} {str(tuple(t.shape)):28s} {str(t.dtype):15s} {nbytes}")
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        pred = model(*inputs)
        regions("loss")
        loss = loss_of(case, pred, target)
    td.NAMER["fn"], td.TAG[0] = None, None
    per = {}
    for nbytes, reg in seen.values():
        per[reg] = per.get(reg, 0) + nbytes
    loss.backward()
    return {"savedBytes": sum(v[0] for v in seen.values()), "savedBytesByRegion": per,
            "regions": regions.count}


def run_step(case, model, inputs, target, opt):
    with record_function("phase:forward"):
        pred = model(*inputs)
        loss = loss_of(case, pred, target)
        del pred
    with record_function("phase:stored"):
        pass
    with record_function("phase:backward"):
        loss.backward()
    del loss
    with record_function("phase:optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def step_bytes(case):
    """storedBytes (live after forward + loss) and the step's peak, from profiler memory events."""
    model, inputs, target = build(case)
    model.train()
    td.CKPT["on"] = bool(case.get("checkpoint"))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    run_step(case, model, inputs, target, opt)  # warm-up: optimizer state exists
    tensors = list(model.parameters()) + list(model.buffers()) + [t for t in inputs if t.dim() > 0] + [target]
    for st in opt.state.values():
        tensors += [v for v in st.values() if torch.is_tensor(v)]
    base = {}
    for t in tensors:
        k, n = storage_key(t)
        base[k] = n
    baseline = sum(base.values())
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run_step(case, model, inputs, target, opt)
    td.CKPT["on"] = False
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(events) if e.name() == "[memory]")
    ranges = {e.name()[6:]: (e.start_us(), e.start_us() + e.duration_us()) for e in events
              if e.name().startswith("phase:")}
    run, peak, peak_t, stored = 0, 0, None, None
    for t, _, nb in mem:
        if stored is None and t >= ranges["stored"][0]:
            stored = run
        run += nb
        if run > peak:
            peak, peak_t = run, t
    phase = next((k for k, (a, b) in ranges.items() if a <= peak_t <= b), "other") if peak_t else "baseline"
    params = sum(p.numel() for p in model.parameters())
    return {"params": params, "baselineBytes": baseline, "storedBytes": stored, "peakBytes": baseline + peak,
            "peakPhase": phase}


def main():
    verbose = "--verbose" in sys.argv
    out = {"about": "Diffusion models rebuilt from diffusers' source (tools/tm_diffusers.py), measured on "
                    "torch 1.13 CPU by tools/measure_diffusion.py: saved-for-backward bytes per chain region "
                    "(saved_tensors_hooks, storages deduplicated), bytes stored at the end of the forward and "
                    "the step's peak (profiler memory events, plus the baseline of parameters, buffers, AdamW "
                    "state and batch).",
           "torch": torch.__version__, "cases": []}
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for case in CASES:
        if only and not any(o in case["name"] for o in only):
            continue
        if verbose:
            print(case["name"])
        r = {} if case.get("checkpoint") else saved_bytes(case, verbose)
        r.update(step_bytes(case))
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:52s} saved {r.get('savedBytes', 0):>10d} stored {r['storedBytes']:>10d} "
              f"peak {r['peakBytes']:>10d} {r['peakPhase']}", file=sys.stderr)
    if "--dry" not in sys.argv:
        path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_diffusion.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
