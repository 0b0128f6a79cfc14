"""Measures the saved-for-backward bytes of padded and packed batches on real PyTorch (CPU),
for the Llama-shaped model of tools/tm_torch_models.py, and writes
tests/fixtures/torch_samples.json.

The question: does a padded batch cost memory by its longest sample or by its real tokens?
Each case builds token ids and labels as a collate function would: `padded` pads every sample
of the micro-batch to the longest with pad id 0 and label -100 (torchtune padded_collate_sft,
HF DataCollatorForSeq2Seq); `packed` fills rows of exactly `packSize` tokens with whole
documents and pads the rest (torchtune PackedDataset); `unpadded` runs each sample alone at its
own length (what a mean-length estimate assumes). Saved tensors are counted as in
tools/measure_activations.py (saved_tensors_hooks, deduplicated by storage, parameters and
buffers excluded).

Run: /usr/bin/python3 tools/measure_samples.py   (torch 1.13 CPU)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import tm_torch_models as tm  # noqa: E402
from measure_activations import LLAMA_TINY, storage_key  # noqa: E402

CASES = [
    {"name": "padded: lengths 24, 40 in one micro-batch", "mode": "padded", "lengths": [24, 40]},
    {"name": "padded: lengths 10, 12, 16, 64 in micro-batches of 2", "mode": "padded",
     "lengths": [10, 12, 16, 64], "microBatch": 2},
    {"name": "packed: documents 24 + 40 and 30 + 20 in rows of 64", "mode": "packed",
     "rows": [[24, 40], [30, 20]], "packSize": 64},
    {"name": "unpadded: lengths 24 and 40 alone", "mode": "unpadded", "lengths": [24, 40]},
]


def saved_bytes(model, ids, labels):
    excluded = {storage_key(p)[0] for p in model.parameters()} | {storage_key(b)[0] for b in model.buffers()}
    seen = {}

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = nbytes
        return t

    model.region = lambda name: None
    model.ckpt = "none"
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, labels)
    loss.backward()
    return sum(seen.values())


def batch(rows, width, vocab):
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for r, docs in enumerate(rows):
        at = 0
        for n in docs:
            tok = torch.randint(1, vocab, (n,))
            ids[r, at:at + n] = tok
            labels[r, at:at + n] = tok
            at += n
    return ids, labels


def main():
    torch.manual_seed(0)
    model = tm.llama(LLAMA_TINY)
    model.train()
    vocab = LLAMA_TINY["vocab_size"]
    out = {"about": "Saved-for-backward bytes of padded, packed and unpadded batches on real PyTorch "
                    "(CPU, fp32, eager attention), Llama-shaped model of tools/tm_torch_models.py "
                    "(config: measure_activations.LLAMA_TINY). Written by tools/measure_samples.py.",
           "torch": torch.__version__, "config": LLAMA_TINY, "cases": []}
    for case in CASES:
        r = dict(case)
        if case["mode"] == "padded":
            b = case.get("microBatch", len(case["lengths"]))
            per = []
            for i in range(0, len(case["lengths"]), b):
                group = case["lengths"][i:i + b]
                ids, labels = batch([[n] for n in group], max(group), vocab)
                per.append({"lengths": group, "shape": list(ids.shape),
                            "savedBytes": saved_bytes(model, ids, labels)})
            r["microBatches"] = per
        elif case["mode"] == "packed":
            ids, labels = batch(case["rows"], case["packSize"], vocab)
            r["shape"] = list(ids.shape)
            r["savedBytes"] = saved_bytes(model, ids, labels)
        else:
            r["perSample"] = []
            for n in case["lengths"]:
                ids, labels = batch([[n]], n, vocab)
                r["perSample"].append({"length": n, "savedBytes": saved_bytes(model, ids, labels)})
        out["cases"].append(r)
        print(json.dumps(r), file=sys.stderr)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_samples.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
