"""Measures HF vision models, re-implemented op for op from transformers' modeling files
(tools/tm_hf_vision.py: ViT, DINOv2, CLIP's vision tower), on real PyTorch (CPU, torch 1.13) and
writes tests/fixtures/hf_vision.json: per case, the saved-for-backward bytes of one training
forward and the peak allocated bytes of one steady-state training step, measured exactly as
tools/measure_vision.py measures torchvision (its saved_bytes and step_peak, with this file's
models): saved_tensors_hooks (storages once, parameters and buffers excluded, the image batch
included) and torch.profiler memory events over a baseline.

The configs are the Hub's config.json files (the fields that shape the model): ViT-B/16
(google/vit-base-patch16-224, 1000 labels), DINOv2-S/14 (facebook/dinov2-small with a
2-label classifier) and CLIP-B/32's vision tower (openai/clip-vit-base-patch32). Eager
attention (HF's eager_attention_forward), dropout 0 as those configs set it.

Run: nice /usr/bin/python3 tools/measure_hf_vision.py [--verbose] [--dry]
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import measure_vision as mv  # noqa: E402
import tm_hf_vision as hf  # noqa: E402

VIT_B16 = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 768,
           "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
           "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
           "image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": True,
           "num_labels": 1000}
DINOV2_S14 = {"model_type": "dinov2", "architectures": ["Dinov2ForImageClassification"],
              "hidden_size": 384, "num_hidden_layers": 12, "num_attention_heads": 6, "mlp_ratio": 4,
              "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
              "drop_path_rate": 0.0, "image_size": 224, "patch_size": 14, "num_channels": 3,
              "qkv_bias": True, "layerscale_value": 1.0, "use_swiglu_ffn": False, "num_labels": 2}
CLIP_B32_VISION = {"model_type": "clip_vision_model", "architectures": ["CLIPVisionModel"],
                   "hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
                   "num_hidden_layers": 12, "image_size": 224, "patch_size": 32,
                   "hidden_act": "quick_gelu", "attention_dropout": 0.0}


def case(name, config, b, opt, **kw):
    c = {"name": f"{name} b{b} {opt}", "config": config, "microBatch": b, "imageSize":
         config["image_size"], "optimizer": opt}
    c.update(kw)
    if kw.get("checkpoint"):
        c["name"] += " checkpoint"
    return c


CASES = [
    case("clip-b32-vision", CLIP_B32_VISION, 2, "sgd"), case("dinov2-s14", DINOV2_S14, 2, "adamw"),
    case("vit-b16", VIT_B16, 2, "sgd"),
]


def model_of(config):
    # the re-implementations read the label count as num_labels and DINOv2's MLP as intermediate_size
    c = dict(config)
    if c["model_type"] == "dinov2":
        c["intermediate_size"] = c["hidden_size"] * c["mlp_ratio"]
        return hf.ViTForImageClassification(c, kind="dinov2")
    if c["model_type"] == "vit":
        return hf.ViTForImageClassification(c)
    return hf.CLIPVisionModel(c)


def build(c):
    """The chain, its image batch and labels (measure_vision.build's contract)."""
    torch.manual_seed(0)
    chain = model_of(c["config"])
    chain.train()
    chain.ckpt = c.get("checkpoint", False)
    b, s = c["microBatch"], c["imageSize"]
    x = torch.randn(b, 3, s, s)
    labels = torch.randint(0, c["config"].get("num_labels", 2), (b,))
    return chain, x, labels


def main():
    verbose = "--verbose" in sys.argv
    mv.build = build  # measure_vision's saved_bytes and step_peak build their model through it
    torch.set_num_threads(2)
    out = {"about": "HF vision models re-implemented from transformers' modeling files "
                    "(tools/tm_hf_vision.py) on torch 1.13 (CPU): per case the saved-for-backward "
                    "bytes (saved_tensors_hooks, storages once, parameters and buffers excluded, the "
                    "image batch included) and the peak allocated bytes of one steady-state step "
                    "(profiler events + baseline). Written by tools/measure_hf_vision.py.",
           "torch": torch.__version__, "cases": []}
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "hf_vision.json")
    for c in CASES:
        r = mv.saved_bytes(c, verbose)
        r.update(mv.step_peak(c))
        out["cases"].append(dict(c, **r))
        print(f"{c['name']:40s} saved {r['savedBytes']:>12d} peak {r['peakBytes']:>12d} {r['peakPhase']}",
              file=sys.stderr)
        if "--dry" not in sys.argv:  # written after each case (a long run can be stopped)
            with open(path, "w") as f:
                json.dump(out, f, indent=None, separators=(",", ":"))
                f.write("\n")


if __name__ == "__main__":
    main()
