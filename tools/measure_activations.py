"""Measures saved-for-backward activation bytes of real PyTorch (CPU) for MLP chains and
GPT-2 / BERT / Llama / T5-shaped models (hand-built with HF's eager ops: tools/tm_torch_models.py),
with and without checkpointing, and writes tests/fixtures/torch_activations.json.

Method: torch.autograd.graph.saved_tensors_hooks sees every tensor autograd saves during the
forward; tensors are deduplicated by storage (views of one storage count once, at the storage's
full size, because the storage is what stays allocated), and storages of parameters and buffers
are excluded (they are weights, not activations). Each storage is attributed to the region
(embed, block<i>, head; or layer<i> of an MLP) in which it was first saved.

Run: /usr/bin/python3 tools/measure_activations.py [--verbose]   (torch 1.13 CPU)
"""
import json
import os
import sys

import torch
from torch.utils.checkpoint import checkpoint_sequential

sys.path.insert(0, os.path.dirname(__file__))
import tm_torch_models as tm  # noqa: E402

GPT2_TINY = {"n_embd": 128, "n_head": 4, "n_layer": 2, "n_positions": 256, "vocab_size": 1000,
             "attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1}
GPT2_SMALLISH = dict(GPT2_TINY, n_embd=192, n_head=6, n_layer=3, vocab_size=3000)
GPT2_NODROP = dict(GPT2_TINY, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
BERT_TINY = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 512,
             "vocab_size": 1000, "max_position_embeddings": 256, "type_vocab_size": 2, "num_labels": 2,
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
LLAMA_TINY = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2,
              "intermediate_size": 344, "vocab_size": 1000, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "max_position_embeddings": 512}
LLAMA_GQA = dict(LLAMA_TINY, num_key_value_heads=2)
# T5 v1.0 (relu, tied head) and T5 v1.1 / mT5 (gated-gelu, untied head) shapes, d_kv != d_model/heads
T5_TINY = {"d_model": 128, "d_kv": 16, "d_ff": 384, "num_heads": 6, "num_layers": 2, "num_decoder_layers": 3,
           "vocab_size": 1000, "dropout_rate": 0.1, "feed_forward_proj": "relu", "tie_word_embeddings": True}
T5_NODROP = dict(T5_TINY, dropout_rate=0.0)
MT5_TINY = dict(T5_TINY, feed_forward_proj="gated-gelu", tie_word_embeddings=False)

CASES = [
    {"name": "mlp relu 4 layers", "kind": "mlp", "sizes": [512, 1024, 1024, 512, 256], "microBatch": 64},
    {"name": "mlp relu 8 layers, checkpoint_sequential 2 segments", "kind": "mlp",
     "sizes": [256] * 9, "microBatch": 128, "checkpoint": {"sequential": 2}},
    {"name": "mlp relu 8 layers, checkpoint_sequential 4 segments", "kind": "mlp",
     "sizes": [256] * 9, "microBatch": 128, "checkpoint": {"sequential": 4}},
    {"name": "mlp relu 8 layers", "kind": "mlp", "sizes": [256] * 9, "microBatch": 128},
    {"name": "gpt2 tiny fp32 dropout 0.1", "kind": "gpt2", "config": GPT2_TINY, "microBatch": 4, "seqLen": 64},
    {"name": "gpt2 tiny fp32 no dropout", "kind": "gpt2", "config": GPT2_NODROP, "microBatch": 4, "seqLen": 64},
    {"name": "gpt2 smallish fp32 b2 s128", "kind": "gpt2", "config": GPT2_SMALLISH, "microBatch": 2, "seqLen": 128},
    {"name": "gpt2 smallish bf16 b2 s128", "kind": "gpt2", "config": GPT2_SMALLISH, "microBatch": 2, "seqLen": 128,
     "dtype": "bf16"},
    {"name": "gpt2 smallish fp32 b2 s128, every block checkpointed", "kind": "gpt2", "config": GPT2_SMALLISH,
     "microBatch": 2, "seqLen": 128, "checkpoint": "blocks"},
    {"name": "bert tiny fp32 b4 s64", "kind": "bert", "config": BERT_TINY, "microBatch": 4, "seqLen": 64},
    {"name": "llama tiny fp32 b2 s64", "kind": "llama", "config": LLAMA_TINY, "microBatch": 2, "seqLen": 64},
    {"name": "llama tiny bf16 b2 s64", "kind": "llama", "config": LLAMA_TINY, "microBatch": 2, "seqLen": 64,
     "dtype": "bf16"},
    {"name": "llama gqa fp32 b2 s64", "kind": "llama", "config": LLAMA_GQA, "microBatch": 2, "seqLen": 64},
    {"name": "t5 tiny fp32 dropout 0.1 b2 s64 t32", "kind": "t5", "config": T5_TINY, "microBatch": 2,
     "seqLen": 64, "targetLen": 32},
    {"name": "t5 tiny fp32 no dropout b2 s48 t80", "kind": "t5", "config": T5_NODROP, "microBatch": 2,
     "seqLen": 48, "targetLen": 80},
    {"name": "mt5 tiny fp32 dropout 0.1 b2 s64 t32", "kind": "t5", "config": MT5_TINY, "microBatch": 2,
     "seqLen": 64, "targetLen": 32},
    {"name": "t5 tiny bf16 dropout 0.1 b2 s64 t32", "kind": "t5", "config": T5_TINY, "microBatch": 2,
     "seqLen": 64, "targetLen": 32, "dtype": "bf16"},
    {"name": "mt5 tiny bf16 no dropout b2 s64 t32", "kind": "t5", "config": dict(MT5_TINY, dropout_rate=0.0),
     "microBatch": 2, "seqLen": 64, "targetLen": 32, "dtype": "bf16"},
]


def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def measure(case, verbose=False):
    model, inputs = tm.build(case)
    tm.cast(model, case.get("dtype", "fp32"))
    if case.get("dtype") == "bf16" and case["kind"] == "mlp":
        inputs = tuple(i.to(torch.bfloat16) for i in inputs)
    model.train()
    excluded = {storage_key(p)[0] for p in model.parameters()} | {storage_key(b)[0] for b in model.buffers()}
    seen = {}  # data_ptr -> (bytes, region)
    region = ["input"]

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = (nbytes, region[0])
            if verbose:
                print(f"  {region[0]:8s} {str(tuple(t.shape)):24s} {str(t.dtype):16s} {nbytes}")
        return t

    ck = case.get("checkpoint")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if case["kind"] == "mlp":
            hooks = [m.register_forward_pre_hook(lambda mod, inp, i=i: region.__setitem__(0, f"layer{i}"))
                     for i, m in enumerate(model)]
            x = inputs[0]
            if isinstance(ck, dict):
                region[0] = "checkpointed"
                out = checkpoint_sequential(model, ck["sequential"], x)
            else:
                out = model(x)
            loss = out.float().pow(2).mean()
            for h in hooks:
                h.remove()
        else:
            model.region = lambda name: region.__setitem__(0, name)
            model.ckpt = "blocks" if ck == "blocks" else "none"
            loss = model(*inputs)
    per_region = {}
    for nbytes, reg in seen.values():
        per_region[reg] = per_region.get(reg, 0) + nbytes
    loss.backward()
    return {"savedBytes": sum(v[0] for v in seen.values()), "savedBytesByRegion": per_region}


def main():
    verbose = "--verbose" in sys.argv
    out = {
        "about": "Saved-for-backward activation bytes measured on real PyTorch (CPU) with "
                 "torch.autograd.graph.saved_tensors_hooks, deduplicated by storage, parameters and "
                 "buffers excluded; per region = where the storage was first saved. Written by "
                 "tools/measure_activations.py (models: tools/tm_torch_models.py, HF eager ops).",
        "torch": torch.__version__,
        "cases": [],
    }
    for case in CASES:
        if verbose:
            print(case["name"])
        r = measure(case, verbose)
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:60s} {r['savedBytes']:>12d}", file=sys.stderr)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_activations.json")
    if "--dry" not in sys.argv:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
