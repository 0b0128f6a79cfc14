"""Records real memory snapshots on a CUDA machine and writes compact fixtures to
tests/fixtures/gpu/: for each run a trimmed snapshot (<name>.pickle) and a summary
(<name>.json: the trainmem peakMemory request of the same run, torch's max_memory_allocated /
max_memory_reserved, the device's used memory from cudaMemGetInfo, versions).

Runs (models from transformers' AutoModel*.from_config: no download):
  bert_large_b4_fp32_eager_adamw  bert-large-uncased + classification head, batch 4, seq 512,
                                  fp32, eager attention, AdamW for-loop (foreach=False)
  gpt2_b4_s1024                   GPT-2 small, batch 4, seq 1024, AdamW
  gpt2_b4_s1024_checkpointing     the same with gradient_checkpointing_enable()
  llama_shaped_lora               a Llama-shaped config (8 layers, hidden 2048) with LoRA rank 8
                                  on q_proj/v_proj when peft is installed, else plain AdamW

Each run: 3 training steps under torch.cuda.memory._record_memory_history(max_entries=100000)
(torch/cuda/memory.py), then _dump_snapshot. Trimming (so that fixtures stay small): frames cut
to the innermost MAX_FRAMES, and only the last MAX_ENTRIES trace entries kept (earlier blocks
then count as live before recording, as in any snapshot whose ring buffer wrapped).

Without CUDA (or without transformers) it prints why and exits 0, so that it can be run
anywhere: /usr/bin/python3 tools/gpu_snapshots.py [--out DIR]
"""
import json
import os
import pickle
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MAX_FRAMES = 8
MAX_ENTRIES = 20000
STEPS = 3


def skip(why):
    print(f"gpu_snapshots: skipped: {why}")
    sys.exit(0)


def trim(snap):
    def cut(frames):
        return frames[:MAX_FRAMES] if isinstance(frames, list) else frames

    for seg in snap.get("segments", []):
        seg["frames"] = cut(seg.get("frames", []))
        for b in seg.get("blocks", []):
            b["frames"] = cut(b.get("frames", []))
    traces = []
    for t in snap.get("device_traces", []):
        t = t[-MAX_ENTRIES:]
        for e in t:
            if "frames" in e:
                e["frames"] = cut(e["frames"])
        traces.append(t)
    snap["device_traces"] = traces
    return snap


def runs(torch, transformers):
    T = transformers
    bert = T.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096, vocab_size=30522, max_position_embeddings=512,
                        num_labels=2, attn_implementation="eager")
    gpt2 = T.GPT2Config()
    llama = T.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
                          num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                          max_position_embeddings=2048)
    yield ("bert_large_b4_fp32_eager_adamw", lambda: T.AutoModelForSequenceClassification.from_config(bert),
           4, 512, {"model": {"preset": "bert-large-uncased"}, "microBatch": 4, "seqLen": 512,
                    "precision": "fp32", "attention": "eager", "optimizer": "adamw",
                    "optimizerImplementation": "for-loop"}, False, "cls")
    for ck in (False, True):
        yield ("gpt2_b4_s1024" + ("_checkpointing" if ck else ""), lambda: T.AutoModelForCausalLM.from_config(gpt2),
               4, 1024, {"model": {"preset": "gpt2"}, "microBatch": 4, "seqLen": 1024, "optimizer": "adamw",
                         "checkpointing": "full" if ck else "none"}, ck, "lm")
    yield ("llama_shaped_lora", lambda: T.AutoModelForCausalLM.from_config(llama), 2, 1024,
           {"model": {"config": llama.to_dict()}, "microBatch": 2, "seqLen": 1024, "optimizer": "adamw",
            "lora": {"rank": 8}}, False, "lora")


def record(torch, name, build, batch, seq, checkpointing, kind, out):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = build().cuda()
    if checkpointing:
        model.gradient_checkpointing_enable()
    lora = False
    if kind == "lora":
        try:
            import peft
            model = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
            lora = True
        except ImportError:
            pass
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, foreach=False if kind == "cls" else None)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq), device="cuda")
    labels = torch.randint(0, 2, (batch,), device="cuda") if kind == "cls" else ids
    torch.cuda.memory._record_memory_history(max_entries=100000)
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=labels).loss.backward()
        opt.step()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.pickle")
        torch.cuda.memory._dump_snapshot(path)
        with open(path, "rb") as f:
            snap = pickle.load(f)
    torch.cuda.memory._record_memory_history(enabled=None)
    free, total = torch.cuda.mem_get_info()
    with open(os.path.join(out, name + ".pickle"), "wb") as f:
        pickle.dump(trim(snap), f)
    summary = {
        "about": "Recorded by tools/gpu_snapshots.py",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "lora": lora,
        "maxMemoryAllocated": torch.cuda.max_memory_allocated(),
        "maxMemoryReserved": torch.cuda.max_memory_reserved(),
        "deviceUsedBytes": total - free,
        "steps": STEPS,
        "request": None,
    }
    return model, opt, summary


def main():
    out = os.path.join(ROOT, "tests", "fixtures", "gpu")
    if "--out" in sys.argv:
        out = sys.argv[sys.argv.index("--out") + 1]
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("no CUDA device (torch.cuda.is_available() is False)")
    try:
        import transformers
    except ImportError:
        skip("transformers is not installed (pip install transformers)")
    os.makedirs(out, exist_ok=True)
    for name, build, batch, seq, request, ck, kind in runs(torch, transformers):
        model, opt, summary = record(torch, name, build, batch, seq, ck, kind, out)
        if kind == "lora" and not summary["lora"]:
            request = dict(request)
            request.pop("lora")
        summary["request"] = request
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(summary, f, indent=1)
        print(f"{name}: max allocated {summary['maxMemoryAllocated']}, reserved {summary['maxMemoryReserved']}")
        del model, opt
    return 0


if __name__ == "__main__":
    sys.exit(main())
