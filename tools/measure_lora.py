"""Measures what autograd saves under LoRA and QLoRA (real PyTorch, CPU) for Llama-, GPT-2-, BERT- and
T5-shaped models (tools/tm_torch_models.py, HF eager ops) and writes tests/fixtures/torch_lora.json: per
region (embed, block<i>, head) every saved storage in the order autograd first saves it, with its bytes,
dtype, shape, the module that ran and the autograd node fields that hold it.

The LoRA layer is rebuilt from PEFT's source (huggingface/peft 5d602fdbf, src/peft/tuners/lora/layer.py
Linear.forward): result = base_layer(x); x = self._cast_input_dtype(x, lora_A.weight.dtype) (PEFT >= 0.15,
#2353, which can switch it off; before: x = x.to(lora_A.weight.dtype), since 0.3.0, f35b20a8);
result = result + lora_B(lora_A(dropout(x))) * scaling; result.to(the base result's dtype). lora_dropout
is nn.Identity when p = 0 (LoraLayer.update_layer). Adapters are fp32 (autocast_adapter_dtype=True upcasts
bf16/fp16 adapters: tuners_utils.py cast_adapter_dtype, PEFT >= 0.12 #1706) and every base parameter is
frozen (requires_grad False, as get_peft_model / prepare_model_for_kbit_training leave it).

QLoRA: bitsandbytes Linear4bit (bitsandbytes-foundation/bitsandbytes 0.49.2, bitsandbytes/nn/modules.py
Linear4bit.forward: x.to(compute_dtype); matmul_4bit(...).to(input dtype)) and MatMul4Bit
(bitsandbytes/autograd/_functions.py): forward F.linear(A, dequantize_4bit(B).to(A.dtype).t(), bias),
keeping ctx.tensors = (None, B) as an attribute, not through save_for_backward; backward grad_output @
dequantize_4bit(B).to(grad dtype).t(), no weight gradient. (0.50's fused gemm_4bit is for few rows:
backends/cuda/ops.py _gemm_4bit_use_custom_cuda sends training shapes to dequantize + F.linear.) The
4-bit weight is emulated (int4 codes in uint8, an fp32 absmax per 64 values); only what autograd keeps is
measured, and the dequantized weight's appearances are counted. PEFT's bnb LoRA layer
(src/peft/tuners/lora/bnb.py Linear4bit.forward): result.clone(); the input cast and output.to(result
dtype) only when autocast is off.

Autocast on CPU (torch 1.13) runs softmax, log_softmax, layer_norm, pow, rsqrt in the input's dtype; CUDA
runs them in fp32 (aten/src/ATen/autocast_mode.cpp, KERNEL_CUDA(..., fp32) and fp32_set_opt_dtype). The
measurement applies CUDA's rule to those five ops (inputs cast to fp32, autocast off inside), so that the
fixture shows what a CUDA run keeps.

Run: /usr/bin/python3 tools/measure_lora.py [--verbose] [--dry]   (torch 1.13 CPU)
"""
import json
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import tm_torch_models as tm  # noqa: E402


# ---------------------------------------------------------------- PEFT LoRA (lora/layer.py Linear)
class LoraLinear(nn.Module):
    def __init__(self, base, r, alpha, dropout, adapter_dtype):
        super().__init__()
        in_f, out_f = linear_in_out(base)
        self.base_layer = base
        self.lora_A = nn.Linear(in_f, r, bias=False, dtype=adapter_dtype)
        self.lora_B = nn.Linear(r, out_f, bias=False, dtype=adapter_dtype)
        nn.init.normal_(self.lora_B.weight, std=0.02)  # nonzero so every gradient is real
        self.lora_dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.scaling = alpha / r
        self.bnb = isinstance(base, Linear4bitEmu)

    def forward(self, x):
        result = self.base_layer(x)
        if self.bnb:  # lora/bnb.py Linear4bit.forward
            result = result.clone()
            convert = not torch.is_autocast_cpu_enabled()
            if convert:
                expected = result.dtype
                x = x if x.dtype == self.lora_A.weight.dtype else x.to(self.lora_A.weight.dtype)
            out = self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
            if convert:
                out = out.to(expected)
            return result + out
        dt = result.dtype
        x = x if x.dtype == self.lora_A.weight.dtype else x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result.to(dt)


def linear_in_out(m):
    if isinstance(m, tm.Conv1D):
        return m.weight.shape[0], m.weight.shape[1]
    if isinstance(m, Linear4bitEmu):
        return m.in_features, m.out_features
    return m.in_features, m.out_features


# ---------------------------------------------------------------- bitsandbytes 4-bit (emulated)
DEQUANT = {"forward": 0, "backward": 0, "bytes": []}


def dequantize(packed, absmax, shape, dtype, phase):
    lo = (packed & 0x0F).to(torch.int16) - 8
    hi = (packed >> 4).to(torch.int16) - 8
    codes = torch.stack((lo, hi), dim=-1).reshape(-1)[: shape[0] * shape[1]]
    w = (codes.view(-1, 64).float() / 7.0 * absmax[:, None]).reshape(shape).to(dtype)
    DEQUANT[phase] += 1
    DEQUANT["bytes"].append(w.numel() * w.element_size())
    return w


class MatMul4BitEmu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, B, bias, state):
        ctx.state = state
        out = F.linear(A, dequantize(B, state["absmax"], state["shape"], state["dtype"], "forward").to(A.dtype),
                       bias)
        ctx.tensors = (None, B) if any(ctx.needs_input_grad[:2]) else (None, None)  # not save_for_backward
        return out

    @staticmethod
    def backward(ctx, grad_output):
        _, B = ctx.tensors
        s = ctx.state
        grad_A = None
        if ctx.needs_input_grad[0]:
            grad_A = grad_output @ dequantize(B, s["absmax"], s["shape"], s["dtype"], "backward").to(grad_output.dtype)
        return grad_A, None, None, None


class Linear4bitEmu(nn.Module):
    def __init__(self, weight, bias, compute_dtype):
        super().__init__()
        out_f, in_f = weight.shape
        self.in_features, self.out_features = in_f, out_f
        w = weight.detach().float().reshape(-1, 64)
        absmax = w.abs().amax(dim=1).clamp(min=1e-8)
        codes = (torch.round(w / absmax[:, None] * 7).clamp(-7, 7).to(torch.int16) + 8).reshape(-1)
        packed = (codes[0::2] | (codes[1::2] << 4)).to(torch.uint8)
        self.weight = nn.Parameter(packed, requires_grad=False)  # Params4bit: a frozen Parameter
        self.register_buffer("absmax", absmax)
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone(), requires_grad=False)
        self.compute_dtype = compute_dtype
        self.quant_dtype = weight.dtype  # quant_state.dtype: the dtype the weight was quantized from

    def forward(self, x):
        inp = x.dtype
        x = x.to(self.compute_dtype)
        bias = None if self.bias is None else self.bias.to(self.compute_dtype)
        state = {"absmax": self.absmax, "shape": (self.out_features, self.in_features), "dtype": self.quant_dtype}
        return MatMul4BitEmu.apply(x, self.weight, bias, state).to(inp)


def quantize(m, compute_dtype):
    if isinstance(m, tm.Conv1D):  # HF's bnb integration stores Conv1D transposed
        return Linear4bitEmu(m.weight.t().contiguous(), m.bias, compute_dtype)
    return Linear4bitEmu(m.weight, m.bias, compute_dtype)


# ---------------------------------------------------------------- CUDA autocast's fp32 ops on CPU
def cuda_fp32_policy():
    """Patches softmax, log_softmax, layer_norm, pow and rsqrt (as tm_torch_models calls them) so
    that under autocast they run as CUDA's autocast runs them: floating inputs cast to fp32, fp32 out."""
    saved = []

    def wrap(mod, name):
        fn = getattr(mod, name)

        def run(*args, **kw):
            if not torch.is_autocast_cpu_enabled():
                return fn(*args, **kw)
            up = [a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
            kw = {k: (v.float() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in kw.items()}
            with torch.autocast("cpu", enabled=False):
                return fn(*up, **kw)

        saved.append((mod, name, fn))
        setattr(mod, name, run)

    for mod, name in ((F, "softmax"), (F, "log_softmax"), (F, "layer_norm"), (torch, "pow"), (torch, "rsqrt")):
        wrap(mod, name)
    return saved


def restore(saved):
    for mod, name, fn in saved:
        setattr(mod, name, fn)


# ---------------------------------------------------------------- models and targets
LLAMA = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3,
         "intermediate_size": 344, "vocab_size": 1000, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "max_position_embeddings": 512}
GPT2 = {"n_embd": 128, "n_head": 4, "n_layer": 3, "n_positions": 256, "vocab_size": 1000,
        "attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1}
BERT = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 3, "intermediate_size": 512,
        "vocab_size": 1000, "max_position_embeddings": 256, "type_vocab_size": 2, "num_labels": 2,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
T5 = {"d_model": 128, "d_kv": 16, "d_ff": 384, "num_heads": 6, "num_layers": 2, "num_decoder_layers": 2,
      "vocab_size": 1000, "dropout_rate": 0.1, "feed_forward_proj": "relu", "tie_word_embeddings": True}

# The PEFT target names of each model (HF module names) and the tm_torch_models attribute they are.
TARGETS = {
    "llama": {"qv": ["q_proj", "v_proj"],
              "all": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
              "mlp": ["gate_proj", "up_proj", "down_proj"]},
    "gpt2": {"qv": ["attn.c_attn"], "all": ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"],
             "mlp": ["mlp.c_fc", "mlp.c_proj"]},
    "bert": {"qv": ["query", "value"],
             "all": ["query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"],
             "mlp": ["intermediate.dense", "output.dense"]},
    "t5": {"qv": ["q", "v"], "all": ["q", "k", "v", "o", "wi", "wi_0", "wi_1", "wo"], "mlp": ["wi", "wo"]},
}
# HF module name -> the tm_torch_models module path suffix
TM_NAME = {"gpt2": {"attn.c_attn": "attn.c_attn", "attn.c_proj": "attn.c_proj", "mlp.c_fc": "mlp.c_fc",
                    "mlp.c_proj": "mlp.c_proj"},
           "bert": {"query": "query", "key": "key", "value": "value", "attention.output.dense": "o",
                    "intermediate.dense": "inter", "output.dense": "out"}}


def adapt(model, kind, targets, lora):
    """Wraps the target linears of the blocks (PEFT's suffix match on module names)."""
    names = [TM_NAME.get(kind, {}).get(t, t) for t in targets]
    chosen = []
    for name, mod in model.named_modules():
        if not isinstance(mod, (nn.Linear, tm.Conv1D, Linear4bitEmu)) or name.endswith(("lora_A", "lora_B")):
            continue
        if name == "lm_head" or name.startswith("head."):
            continue
        if any(name == n or name.endswith("." + n) for n in names):
            chosen.append(name)
    for name in chosen:
        parent = model.get_submodule(name.rsplit(".", 1)[0])
        child = getattr(parent, name.rsplit(".", 1)[1])
        setattr(parent, name.rsplit(".", 1)[1],
                LoraLinear(child, lora["rank"], lora["alpha"], lora["dropout"], torch.float32))
    return chosen


def quantize_blocks(model, compute_dtype):
    """bitsandbytes replaces every Linear (and Conv1D) of the blocks; the head stays 16-bit
    (transformers' bnb integration keeps lm_head out: llm_int8_skip_modules / get_keys_to_not_convert)."""
    chosen = [n for n, m in model.named_modules() if isinstance(m, (nn.Linear, tm.Conv1D))
              and (".blocks." in "." + n or n.startswith("blocks.") or n.startswith("enc.") or n.startswith("dec."))]
    for name in chosen:
        parent = model.get_submodule(name.rsplit(".", 1)[0])
        setattr(parent, name.rsplit(".", 1)[1], quantize(getattr(parent, name.rsplit(".", 1)[1]), compute_dtype))


DT = {"fp32": torch.float32, "bf16": torch.bfloat16}


def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def build(case):
    kind = case["kind"]
    cfg = dict({"llama": LLAMA, "gpt2": GPT2, "bert": BERT, "t5": T5}[kind], **case.get("configOverride", {}))
    model, inputs = tm.build(dict(case, kind=kind, config=cfg))
    base = DT[case["dtype"]]
    lora = case.get("lora")
    qlora = lora is not None and lora.get("qlora", False)
    if qlora:
        # transformers loads the model in torch_dtype and quantizes the blocks' linears from it;
        # prepare_model_for_kbit_training then casts the other parameters to fp32 (peft/utils/other.py)
        model.to(DT[case.get("quantizedFrom", case["dtype"])])
        quantize_blocks(model, DT[case["computeDtype"]])
        for p in model.parameters():
            if p.dtype.is_floating_point:
                p.data = p.data.to(base)
    else:
        model.to(base)
    for p in model.parameters():
        p.requires_grad_(lora is None)
    adapted = adapt(model, kind, TARGETS[kind][lora["targets"]], lora) if lora else []
    if case.get("inputRequiresGrad"):
        # transformers enable_input_require_grads: a forward hook on the input embeddings
        emb = {"llama": lambda m: m.embed.embed_tokens, "gpt2": lambda m: m.embed.wte,
               "bert": lambda m: m.embed.word, "t5": lambda m: m.shared}[kind](model)
        emb.register_forward_hook(lambda mod, inp, out: out.requires_grad_(True))
    return model, inputs, adapted, cfg


def module_tracker(model):
    stack = ["-"]

    def enter(name):
        stack.append(name)

    def leave():
        stack.pop()

    for name, mod in model.named_modules():
        mod.register_forward_pre_hook(lambda m, i, n=name: enter(n))
        mod.register_forward_hook(lambda m, i, o: leave())
    return stack


def graph_labels(root):
    """storage ptr -> the autograd node fields that hold it ("MmBackward0.self")."""
    labels, seen, todo = {}, set(), [root]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                v = getattr(node, attr)
            except Exception:  # noqa: BLE001 - some fields cannot be read back
                continue
            for t in (v if isinstance(v, (tuple, list)) else [v]):
                if torch.is_tensor(t):
                    labels.setdefault(storage_key(t)[0], []).append(f"{type(node).__name__}.{attr[7:]}")
        todo.extend(fn for fn, _ in node.next_functions)
    return labels


def measure(case, verbose=False):
    model, inputs, adapted, cfg = build(case)
    model.train()
    excluded = {storage_key(p)[0] for p in model.parameters()} | {storage_key(b)[0] for b in model.buffers()}
    region = ["input"]
    module = module_tracker(model)
    order, seen = [], {}

    # the recipes count Llama's RoPE cos and sin (shared by every block) with the embeddings
    shared, enc_out = set(), set()
    if case["kind"] == "llama":
        real_rope = model.embed.rope

        def rope(ids, dtype):
            r = real_rope(ids, dtype)
            shared.update(storage_key(t)[0] for t in r[:2])
            return r

        model.embed.rope = rope

    # each block's and the head's input, to flag what keeps it: "in" (its storage) or "in-copy"
    # (a copy in another dtype: equal values once both are in the narrower dtype)
    current_input = [None]
    for blk in list(getattr(model, "blocks", [])) + list(getattr(model, "enc", [])) + \
            list(getattr(model, "dec", [])) + [getattr(model, "head", None), getattr(model, "dec_norm", None)]:
        if isinstance(blk, nn.Module):
            blk.register_forward_pre_hook(lambda m, args: current_input.__setitem__(0, args[0]))
    # T5: the recipes count the encoder output (read by every decoder layer) where the encoder ends
    if case["kind"] == "t5":
        real_stack = model._stack

        def stack(blocks, x, st, tag):
            if st.enc_out is not None:
                shared.add(storage_key(st.enc_out)[0])
                enc_out.add(storage_key(st.enc_out)[0])
            return real_stack(blocks, x, st, tag)

        model._stack = stack

    def input_flag(t):
        x = current_input[0]
        if x is None or not t.is_floating_point():
            return None
        if storage_key(t)[0] == storage_key(x)[0]:
            return "in"
        if t.numel() == x.numel() and t.dtype != x.dtype:
            lo = torch.bfloat16 if torch.bfloat16 in (t.dtype, x.dtype) else torch.float32
            if torch.equal(t.detach().reshape(-1).to(lo), x.detach().reshape(-1).to(lo)):
                return "in-copy"
        return None

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = len(order)
            home = ("dembed" if ptr in enc_out else "embed") if ptr in shared else region[0]
            order.append({"ptr": ptr, "bytes": nbytes, "region": home, "dtype": str(t.dtype)[6:],
                          "shape": list(t.shape), "module": module[-1],
                          "flag": "enc-out" if ptr in enc_out else input_flag(t)})
        return t

    DEQUANT.update(forward=0, backward=0, bytes=[])
    patched = cuda_fp32_policy()
    try:
        model.region = lambda name: region.__setitem__(0, name)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=case.get("autocast", False)):
                loss = model(*inputs)
    finally:
        restore(patched)
    labels = graph_labels(loss.grad_fn)
    regions = {}
    for o in order:
        saved_by = sorted(set(labels.get(o["ptr"], [])))
        r = regions.setdefault(o["region"], {"savedBytes": 0, "tensors": []})
        r["savedBytes"] += o["bytes"]
        # [bytes, dtype, shape, module, autograd fields(, "in" | "in-copy": the region's input
        # or a copy of it in another dtype; "enc-out": T5's encoder output)]; a linear's mm / addmm keeps its weight
        # as mat2 (here an autocast copy: parameters themselves are excluded); 0-dim tensors are
        # wrapped Python scalars (CPU-side on a CUDA run)
        module = re.sub(r"^(blocks|enc|dec)\.\d+\.?", "", o["module"]) or "block"
        r["tensors"].append([o["bytes"], o["dtype"], o["shape"], module, ",".join(saved_by)] +
                            ([o["flag"]] if o["flag"] else []))
    prev = None  # a block saving what the one before it saved is stored as {"sameAs": that block}
    for name in list(regions):
        if prev and re.sub(r"\d+$", "", name) == re.sub(r"\d+$", "", prev[0]) and \
                regions[name]["tensors"] == prev[1]["tensors"]:
            regions[name] = {"savedBytes": regions[name]["savedBytes"], "sameAs": prev[0]}
        else:
            prev = (name, regions[name])
    fwd = DEQUANT["forward"]
    loss.backward()
    grads = sorted(n for n, p in model.named_parameters() if p.grad is not None)
    out = {"savedBytes": sum(o["bytes"] for o in order), "regions": regions, "adaptedLinears": len(adapted),
           "parameterGradients": len(grads)}
    if fwd or DEQUANT["backward"]:
        out["dequantize"] = {"forward": fwd, "backward": DEQUANT["backward"],
                             "bytesEach": sorted(set(DEQUANT["bytes"]))}
    if verbose:
        for name, r in regions.items():
            print(f"  {name} {r['savedBytes']}")
            for t in r["tensors"]:
                print(f"     {t[0]:>9d} {t[1]:9s} {str(t[2]):18s} {t[3]:28s} {t[4]}")
    return out


def cases():
    shapes = {"llama": {"microBatch": 2, "seqLen": 64}, "gpt2": {"microBatch": 2, "seqLen": 64},
              "bert": {"microBatch": 2, "seqLen": 64}, "t5": {"microBatch": 2, "seqLen": 48, "targetLen": 32}}
    # precision: (base dtype, autocast)
    precisions = [("fp32", False), ("fp32", True), ("bf16", False), ("bf16", True)]
    out = []
    for kind in ("llama", "gpt2", "bert", "t5"):
        for dtype, ac in precisions:
            out.append(dict(shapes[kind], kind=kind, name=f"{kind} full {dtype}{' autocast' if ac else ''}",
                            dtype=dtype, autocast=ac))
            for targets in ("qv", "all", "mlp"):
                for p in (0.0, 0.05):
                    if kind in ("bert", "t5") and (targets == "mlp" or (p == 0.05 and targets == "all")):
                        continue
                    out.append(dict(shapes[kind], kind=kind, dtype=dtype, autocast=ac,
                                    name=f"{kind} lora {targets} dropout {p} {dtype}{' autocast' if ac else ''}",
                                    lora={"targets": targets, "rank": 8, "alpha": 16, "dropout": p}))
    # mT5's gated-gelu feed-forward (wi_0, wi_1), untied head
    for dtype, ac in (("fp32", False), ("bf16", False), ("fp32", True)):
        out.append(dict(shapes["t5"], kind="t5", dtype=dtype, autocast=ac,
                        configOverride={"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
                        name=f"mt5 lora all dropout 0.05 {dtype}{' autocast' if ac else ''}",
                        lora={"targets": "all", "rank": 8, "alpha": 16, "dropout": 0.05}))
    for kind in ("llama", "gpt2", "bert", "t5"):
        out.append(dict(shapes[kind], kind=kind, dtype="bf16", autocast=False, inputRequiresGrad=True,
                        name=f"{kind} lora qv dropout 0.05 bf16, input requires grad",
                        lora={"targets": "qv", "rank": 8, "alpha": 16, "dropout": 0.05}))
    for kind in ("llama", "gpt2"):
        # QLoRA: a bf16 model (no autocast, compute bf16); the HF recipe (prepare_model_for_kbit_training:
        # fp32 non-quantized parameters, embedding outputs require grad; autocast bf16, compute bf16)
        for targets in ("qv", "all"):
            for p in (0.0, 0.05):
                out.append(dict(shapes[kind], kind=kind, dtype="bf16", autocast=False, computeDtype="bf16",
                                name=f"{kind} qlora {targets} dropout {p} bf16",
                                lora={"targets": targets, "rank": 8, "alpha": 16, "dropout": p, "qlora": True}))
                out.append(dict(shapes[kind], kind=kind, dtype="fp32", quantizedFrom="bf16", autocast=True,
                                computeDtype="bf16", inputRequiresGrad=True,
                                name=f"{kind} qlora {targets} dropout {p} kbit-prepared fp32 autocast",
                                lora={"targets": targets, "rank": 8, "alpha": 16, "dropout": p, "qlora": True}))
    return out


def main():
    verbose = "--verbose" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = {
        "about": "What autograd saves under LoRA / QLoRA, measured on real PyTorch (CPU) with "
                 "torch.autograd.graph.saved_tensors_hooks: storages counted once, parameters and buffers "
                 "excluded, each in the region (embed, block<i>, head) where it is first saved, in saving "
                 "order, with the module that ran and the autograd fields that hold it. CUDA autocast's fp32 "
                 "ops emulated. Written by tools/measure_lora.py.",
        "torch": torch.__version__,
        "configs": {"llama": LLAMA, "gpt2": GPT2, "bert": BERT, "t5": T5},
        "cases": [],
    }
    for case in cases():
        if only and not any(o in case["name"] for o in only):
            continue
        if verbose:
            print(case["name"])
        r = measure(case, verbose)
        out["cases"].append(dict(case, **r))
        print(f"{case['name']:64s} {r['savedBytes']:>10d}", file=sys.stderr)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "torch_lora.json")
    if "--dry" not in sys.argv:
        with open(path, "w") as f:
            # one case per line, one region per line
            f.write(json.dumps({k: v for k, v in out.items() if k != "cases"})[:-1] + ', "cases": [\n')
            for i, c in enumerate(out["cases"]):
                regions = c.pop("regions")
                head = json.dumps(c)[:-1]
                body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                                  for k, v in regions.items())
                f.write(f"{head}, \"regions\": {{\n{body}}}}}" + (",\n" if i + 1 < len(out["cases"]) else "\n"))
            f.write("]}\n")


if __name__ == "__main__":
    main()
