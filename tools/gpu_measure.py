"""Prepared for a session WITH a CUDA GPU (not run yet: the calibration machine has none).

Measures torch.cuda.max_memory_allocated() of one steady-state training step for a few
HuggingFace models built from their config (AutoModelForCausalLM / ...ForSequenceClassification
.from_config: random weights, no download), and writes tests/fixtures/torch_peak_gpu.json with
the matching trainmem peakMemory request for each case, so that a test can compare
result.allocatedPeakBytes (goal: within 10 %).

Needs: torch >= 2.0 with CUDA, transformers. Usage (≈ 2-4 min on one H100/H200):
    python3 tools/gpu_measure.py [--out tests/fixtures/torch_peak_gpu.json] [--quick]

Method per case: build the model on the GPU in the case's dtype, AdamW (foreach, torch's
default on CUDA), one warm-up step (optimizer state exists), zero_grad(set_to_none=True),
torch.cuda.reset_peak_memory_stats(), then one optimizer step of `accumulation` micro-steps;
record max_memory_allocated() (what trainmem's allocatedPeakBytes models: no CUDA context, no
allocator reserve), max_memory_reserved() and the nvidia-smi-style used memory (for the gap).
"""
import argparse
import json
import os
import sys
import time

import torch

CONFIGS = {
    # copied config.json fields (huggingface.co model repos); weights are random (from_config)
    "gpt2": {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
             "vocab_size": 50257},
    "bert-large-cls": {"model_type": "bert", "hidden_size": 1024, "num_attention_heads": 16,
                       "num_hidden_layers": 24, "intermediate_size": 4096, "vocab_size": 30522,
                       "max_position_embeddings": 512, "type_vocab_size": 2, "num_labels": 2,
                       "architectures": ["BertForSequenceClassification"]},
    "qwen2.5-0.5b": {"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14,
                     "num_key_value_heads": 2, "num_hidden_layers": 24, "intermediate_size": 4864,
                     "vocab_size": 151936, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                     "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
    "tinyllama-1.1b": {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32,
                       "num_key_value_heads": 4, "num_hidden_layers": 22, "intermediate_size": 5632,
                       "vocab_size": 32000, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5},
}

CASES = [
    # name, config, micro, seq, precision, attention, checkpointing, accumulation
    ("gpt2 fp32 eager b8 s512", "gpt2", 8, 512, "fp32", "eager", "none", 1),
    ("gpt2 amp-bf16 sdpa b8 s1024", "gpt2", 8, 1024, "amp-bf16", "sdpa", "none", 1),
    ("gpt2 amp-bf16 sdpa b8 s1024 checkpointed", "gpt2", 8, 1024, "amp-bf16", "sdpa", "full", 1),
    ("bert-large fp32 eager b1 s512 x4 accumulation (seed 000)", "bert-large-cls", 1, 512, "fp32", "eager", "none", 4),
    ("bert-large fp32 eager b1 s512 x4 accumulation, checkpointed (seed 000)", "bert-large-cls", 1, 512, "fp32",
     "eager", "full", 4),
    ("bert-large fp32 eager b4 s512 (HF anatomy guide)", "bert-large-cls", 4, 512, "fp32", "eager", "none", 1),
    ("qwen2.5-0.5b bf16 sdpa b4 s1024", "qwen2.5-0.5b", 4, 1024, "bf16", "sdpa", "none", 1),
    ("tinyllama bf16 sdpa b2 s2048 checkpointed", "tinyllama-1.1b", 2, 2048, "bf16", "sdpa", "full", 1),
    ("tinyllama amp-bf16 eager b1 s1024", "tinyllama-1.1b", 1, 1024, "amp-bf16", "eager", "none", 1),
]


def build(cfg_json, precision, attention):
    import transformers
    cfg_json = dict(cfg_json)
    mt = cfg_json.pop("model_type")
    arch = cfg_json.pop("architectures", None)
    cfg = transformers.AutoConfig.for_model(mt, **cfg_json)
    cls = transformers.AutoModelForSequenceClassification if arch else transformers.AutoModelForCausalLM
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = cls.from_config(cfg, attn_implementation=attention, torch_dtype=dtype)
    return model.cuda().train(), cfg, bool(arch)


def step(model, batch, opt, precision, accumulation):
    for _ in range(accumulation):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision.startswith("amp")):
            loss = model(**batch).loss / accumulation
        loss.backward()
        del loss
    opt.step()
    opt.zero_grad(set_to_none=True)


def nvml_used():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used
    except Exception:  # pynvml absent: leave it out
        return None


def measure(case):
    name, key, b, s, precision, attention, ckpt, acc = case
    model, cfg, cls = build(CONFIGS[key], precision, attention)
    if ckpt == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
    batch = {"input_ids": ids, "labels": torch.randint(0, 2, (b,), device="cuda") if cls else ids}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    step(model, batch, opt, precision, acc)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    step(model, batch, opt, precision, acc)
    torch.cuda.synchronize()
    request = {"model": {"config": CONFIGS[key]}, "microBatch": b, "seqLen": s, "precision": precision,
               "optimizer": "adamw", "attention": attention, "checkpointing": ckpt,
               "gradientAccumulationSteps": acc, "runtime": "pytorch-cuda"}
    out = {"name": name, "request": request,
           "maxMemoryAllocated": torch.cuda.max_memory_allocated(),
           "maxMemoryReserved": torch.cuda.max_memory_reserved(),
           "nvmlUsed": nvml_used(), "stepSeconds": time.time() - t0,
           "params": sum(p.numel() for p in model.parameters())}
    del model, opt, batch
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                  "torch_peak_gpu.json"))
    ap.add_argument("--quick", action="store_true", help="only the first three cases")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: this script is for a GPU session")
    import transformers
    res = {"about": "torch.cuda.max_memory_allocated() of one steady-state training step of HF models built "
                    "from config (tools/gpu_measure.py); compare with peakMemory allocatedPeakBytes.",
           "torch": torch.__version__, "transformers": transformers.__version__,
           "device": torch.cuda.get_device_name(0), "cases": []}
    for case in CASES[:3] if args.quick else CASES:
        r = measure(case)
        res["cases"].append(r)
        print(f"{r['name']:70s} alloc {r['maxMemoryAllocated'] / 2**20:10.1f} MiB "
              f"reserved {r['maxMemoryReserved'] / 2**20:10.1f} MiB", flush=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
