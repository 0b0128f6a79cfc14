#!/usr/bin/python3
"""Measures real torch.save checkpoint files for trainmem's checkpoint-size model.

Run with Debian's PyTorch:  /usr/bin/python3 tools/measure_checkpoints.py > tests/fixtures/torch_checkpoints.json

For each small model (an MLP, a CNN with BatchNorm, a GPT-2-shaped decoder and a Llama-shaped
decoder built from HF-style configs), dtype (fp32, bf16) and optimizer, it runs ONE real
optimizer step, writes torch.save({'model': sd, 'optimizer': osd}, 'checkpoint.pt') (and the
model-only file), and records the exact file size, the zip records and the state layout.

transformers, safetensors, lion-pytorch and bitsandbytes are not installed on this machine
(Debian ships none of them), so:
  * GPT-2 / Llama modules are hand-built with the SAME module tree, state_dict names and shapes
    as transformers' GPT2LMHeadModel / LlamaForCausalLM (modeling_gpt2.py, modeling_llama.py);
  * HF Adafactor, Lion and bitsandbytes Adam8bit are replicas of their state layouts
    (transformers/optimization.py, lucidrains/lion-pytorch, bitsandbytes/optim/optimizer.py:
    state keys, shapes, dtypes, param_group defaults); their arithmetic is irrelevant to size;
  * safetensors sizes are computed by a reimplementation of the published format
    (safetensors/src/tensor.rs: 8-byte header length, compact JSON header sorted by dtype
    then name, padded with spaces to 8 bytes, then raw data), NOT by the safetensors package.
fp16 optimizer steps are not implemented on CPU in torch 1.13, so only fp32 and bf16 are run.
"""
import collections
import json
import math
import os
import struct
import sys
import tempfile
import zipfile

import torch
from torch import nn

torch.manual_seed(0)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TORCH_TO_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16",
                 torch.int64: "int64", torch.uint8: "uint8", torch.float64: "fp64",
                 torch.int32: "int32", torch.bool: "bool", torch.int8: "int8"}


# ---------------------------------------------------------------- models (HF-identical names)
class Conv1D(nn.Module):  # transformers.pytorch_utils.Conv1D: weight is (in, out)
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(
            x.size()[:-1] + (self.nf,))


class NewGELUActivation(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["n_embd"]
        self.h = c["n_head"]
        self.c_attn = Conv1D(3 * e, e)
        self.c_proj = Conv1D(e, e)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        b, t, e = x.shape
        sh = lambda z: z.view(b, t, self.h, e // self.h).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(e // self.h)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        a = a.masked_fill(~mask, -1e4).softmax(-1)
        y = (self.attn_dropout(a) @ v).transpose(1, 2).reshape(b, t, e)
        return self.resid_dropout(self.c_proj(y))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["n_embd"]
        inner = c.get("n_inner") or 4 * e
        self.c_fc = Conv1D(inner, e)
        self.c_proj = Conv1D(e, inner)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["n_embd"]
        self.ln_1 = nn.LayerNorm(e)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(e)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"])

    def forward(self, ids):
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.size(1))))
        for blk in self.h:
            x = blk(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tie_word_embeddings

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))


class LlamaRMSNorm(nn.Module):
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, h = c["hidden_size"], c["num_attention_heads"]
        kv = c.get("num_key_value_heads", h)
        d = e // h
        bias = c.get("attention_bias", False)
        self.q_proj = nn.Linear(e, h * d, bias=bias)
        self.k_proj = nn.Linear(e, kv * d, bias=bias)
        self.v_proj = nn.Linear(e, kv * d, bias=bias)
        self.o_proj = nn.Linear(h * d, e, bias=False)
        self.h, self.kv, self.d = h, kv, d

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        rep = self.h // self.kv
        k = k.repeat_interleave(rep, 1)
        v = v.repeat_interleave(rep, 1)
        a = ((q @ k.transpose(-1, -2)) / math.sqrt(self.d)).softmax(-1)
        return self.o_proj((a @ v).transpose(1, 2).reshape(b, t, -1))


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, i = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(e, i, bias=False)
        self.up_proj = nn.Linear(e, i, bias=False)
        self.down_proj = nn.Linear(i, e, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"])
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"])

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"] // c["num_attention_heads"]
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        self.register_buffer("inv_freq", inv, persistent=False)  # not in state_dict


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"])
        self.rotary_emb = LlamaRotaryEmbedding(c)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):
        return self.lm_head(self.model(ids))


GPT2_CONFIG = {"model_type": "gpt2", "vocab_size": 1000, "n_positions": 64, "n_embd": 64,
               "n_layer": 2, "n_head": 4, "activation_function": "gelu_new"}
LLAMA_CONFIG = {"model_type": "llama", "vocab_size": 512, "hidden_size": 64,
                "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 128,
                "tie_word_embeddings": False}


def make_model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), \
            (lambda: torch.randn(4, 32))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.Conv2d(8, 16, 3), nn.BatchNorm2d(16), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)), \
            (lambda: torch.randn(2, 3, 12, 12))
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2_CONFIG), (lambda: torch.randint(0, 1000, (2, 16)))
    if kind == "llama":
        return LlamaForCausalLM(LLAMA_CONFIG), (lambda: torch.randint(0, 512, (2, 16)))
    raise ValueError(kind)


# ---------------------------------------------------------------- optimizer replicas
class HFAdafactorLayout(torch.optim.Optimizer):
    """State layout of transformers.optimization.Adafactor (defaults and state keys)."""

    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8,
                 beta1=None, weight_decay=0.0, scale_parameter=True, relative_step=True,
                 warmup_init=False):
        defaults = {"lr": lr, "eps": eps, "clip_threshold": clip_threshold,
                    "decay_rate": decay_rate, "beta1": beta1, "weight_decay": weight_decay,
                    "scale_parameter": scale_parameter, "relative_step": relative_step,
                    "warmup_init": warmup_init}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.dtype in {torch.float16, torch.bfloat16}:
                    grad = grad.float()
                state = self.state[p]
                shape = grad.shape
                factored = len(shape) >= 2
                if len(state) == 0:
                    state["step"] = 0
                    if group["beta1"] is not None:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:
                        state["exp_avg_sq_row"] = torch.zeros(shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0
                state["step"] += 1
                pf = p.float()
                state["RMS"] = pf.norm(2) / (pf.numel() ** 0.5)


class LionLayout(torch.optim.Optimizer):
    """State layout of lion_pytorch.Lion: defaults (lr, betas, weight_decay), state exp_avg."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg"].mul_(0.99).add_(p.grad, alpha=0.01)


class Adam8bitLayout(torch.optim.Optimizer):
    """State layout of bitsandbytes.optim.Adam8bit (Optimizer2State, block_wise=True):
    step (int), state1/state2 uint8 + shared 256-entry fp32 qmap1/qmap2 + fp32 absmax1/absmax2
    per 2048-value block; tensors below min_8bit_size (4096) keep fp32 state1/state2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.qmap = {"dynamic": torch.linspace(-1, 1, 256), "udynamic": torch.linspace(0, 1, 256)}

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    if p.numel() < 4096:
                        state["state1"] = torch.zeros_like(p, dtype=torch.float32)
                        state["state2"] = torch.zeros_like(p, dtype=torch.float32)
                    else:
                        state["state1"] = torch.zeros_like(p, dtype=torch.uint8)
                        state["qmap1"] = self.qmap["dynamic"]
                        state["state2"] = torch.zeros_like(p, dtype=torch.uint8)
                        state["qmap2"] = self.qmap["udynamic"]
                        blocks = (p.numel() + 2047) // 2048
                        state["absmax1"] = torch.zeros((blocks,), dtype=torch.float32)
                        state["absmax2"] = torch.zeros((blocks,), dtype=torch.float32)
                state["step"] += 1


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.01),
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps),
    "adamw": lambda ps: torch.optim.AdamW(ps),
    "adamw-amsgrad": lambda ps: torch.optim.AdamW(ps, amsgrad=True),
    "adagrad": lambda ps: torch.optim.Adagrad(ps),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps),
    "rmsprop-centered-momentum": lambda ps: torch.optim.RMSprop(ps, centered=True, momentum=0.9),
    "adafactor": lambda ps: HFAdafactorLayout(ps),
    "adafactor-beta1": lambda ps: HFAdafactorLayout(ps, beta1=0.9),
    "lion": lambda ps: LionLayout(ps),
    "adam-8bit": lambda ps: Adam8bitLayout(ps),
}
# trainmem request for each (outside the code under test: what a user would type)
REQUESTS = {
    "sgd": "sgd", "sgd-momentum": {"name": "sgd", "momentum": 0.9}, "adam": "adam",
    "adamw": "adamw", "adamw-amsgrad": {"name": "adamw", "amsgrad": True},
    "adagrad": "adagrad", "rmsprop": "rmsprop",
    "rmsprop-centered-momentum": {"name": "rmsprop", "centered": True, "momentum": 0.9},
    "adafactor": "adafactor", "adafactor-beta1": {"name": "adafactor", "beta1": 0.9},
    "lion": "lion", "adam-8bit": "adam-8bit",
}


# ---------------------------------------------------------------- measuring
def zip_records(path):
    with zipfile.ZipFile(path) as z:
        return [{"name": i.filename, "offset": i.header_offset, "size": i.file_size}
                for i in z.infolist()]


def storage_bytes(obj, seen):
    """Distinct storage bytes reachable from a state dict (raw payload)."""
    total = 0
    if isinstance(obj, torch.Tensor):
        s = obj.storage()
        key = s.data_ptr() if s.data_ptr() != 0 else id(s)
        if key not in seen:
            seen.add(key)
            total += s.size() * obj.element_size()
    elif isinstance(obj, dict):
        for v in obj.values():
            total += storage_bytes(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            total += storage_bytes(v, seen)
    return total


def safetensors_size(sd):
    """Size of a .safetensors file by the format (see module docstring), tied storages once,
    metadata {"format": "pt"} as transformers' save_pretrained writes it."""
    order = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
             "U32", "F32", "F64", "I64", "U64"]
    names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
             torch.int64: "I64", torch.uint8: "U8", torch.bool: "BOOL"}
    seen, items = set(), []
    for k, v in sd.items():
        ptr = v.storage().data_ptr()
        if ptr in seen:
            continue
        seen.add(ptr)
        items.append((k, names[v.dtype], list(v.shape), v.numel() * v.element_size()))
    items.sort(key=lambda t: (-order.index(t[1]), t[0]))
    header, off = collections.OrderedDict(), 0
    header["__metadata__"] = {"format": "pt"}
    for k, dt, shape, n in items:
        header[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return 8 + len(h) + off


def tensor_list(model):
    """The model as trainmem's {tensors, buffers, modules} form, from the real module."""
    first = {}
    tensors, buffers = [], []
    sd = model.state_dict(keep_vars=True)
    for name, t in sd.items():
        if isinstance(t, nn.Parameter):
            entry = {"name": name, "shape": list(t.shape), "dtype": TORCH_TO_NAME[t.dtype]}
            if id(t) in first:
                entry["tiedTo"] = first[id(t)]
            else:
                first[id(t)] = name
            tensors.append(entry)
        else:
            buffers.append({"name": name, "shape": list(t.shape), "dtype": TORCH_TO_NAME[t.dtype]})
    modules = []

    def walk(mod, prefix):  # the order Module.state_dict visits modules (_metadata keys)
        modules.append(prefix)
        for n, child in mod._modules.items():
            if child is not None:
                walk(child, prefix + ("." if prefix else "") + n)
    walk(model, "")
    return {"tensors": tensors, "buffers": buffers, "modules": modules}


def optimizer_layout(osd):
    per = []
    for idx, st in osd["state"].items():
        entries = []
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                entries.append({"key": k, "dtype": TORCH_TO_NAME[v.dtype], "shape": list(v.shape)})
            else:
                entries.append({"key": k, "python": type(v).__name__})
        per.append(entries)
    groups = [{k: type(v).__name__ for k, v in g.items()} for g in osd["param_groups"]]
    return {"state": per, "paramGroups": groups}


def run_case(kind, dtype_name, opt_name, tmp):
    torch.manual_seed(0)
    model, make_input = make_model(kind)
    model = model.to(DTYPES[dtype_name])
    model.train()
    out = model(make_input() if kind in ("gpt2", "llama") else make_input().to(DTYPES[dtype_name]))
    out.float().pow(2).mean().backward()
    opt = OPTIMIZERS[opt_name](model.parameters())
    opt.step()
    path = os.path.join(tmp, "checkpoint.pt")
    osd = opt.state_dict()
    torch.save({"model": model.state_dict(), "optimizer": osd}, path)
    size = os.path.getsize(path)
    recs = zip_records(path)
    seen = set()
    raw_model = storage_bytes(model.state_dict(), seen)
    raw_opt = storage_bytes(osd["state"], seen)
    with zipfile.ZipFile(path) as z:
        pkl = len(z.read("checkpoint/data.pkl"))
    return {"fileBytes": size, "pickleBytes": pkl, "records": len(recs),
            "rawModelBytes": raw_model, "rawOptimizerBytes": raw_opt,
            "layout": optimizer_layout(osd)}


def model_only(kind, dtype_name, tmp):
    torch.manual_seed(0)
    model, _ = make_model(kind)
    model = model.to(DTYPES[dtype_name])
    path = os.path.join(tmp, "model.pt")
    torch.save(model.state_dict(), path)
    with zipfile.ZipFile(path) as z:
        pkl = len(z.read("model/data.pkl"))
    return {"fileBytes": os.path.getsize(path), "pickleBytes": pkl,
            "rawModelBytes": storage_bytes(model.state_dict(), set()),
            "safetensorsBytes": safetensors_size(model.state_dict())}


def model_request(kind, model):
    if kind == "gpt2":
        return {"config": GPT2_CONFIG}
    if kind == "llama":
        return {"config": LLAMA_CONFIG}
    tl = tensor_list(model)
    return tl


def main():
    cases, models = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("mlp", "cnn", "gpt2", "llama"):
            m, _ = make_model(kind)
            models[kind] = {"request": model_request(kind, m), "stateDict": tensor_list(m)}
            for dt in ("fp32", "bf16"):
                cases.append({"name": f"{kind} {dt} model only", "model": kind,
                              "weightDtype": dt, "includeOptimizer": False,
                              "fileName": "model.pt", "measured": model_only(kind, dt, tmp)})
                for opt in OPTIMIZERS:
                    cases.append({"name": f"{kind} {dt} {opt}", "model": kind,
                                  "weightDtype": dt, "optimizer": REQUESTS[opt],
                                  "includeOptimizer": True, "fileName": "checkpoint.pt",
                                  "measured": run_case(kind, dt, opt, tmp)})
    doc = {
        "about": __doc__.strip(),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "save": "torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict()}, "
                "'checkpoint.pt') after one optimizer step; model-only: "
                "torch.save(model.state_dict(), 'model.pt')",
        "models": models,
        "cases": cases,
    }
    # One case per line: readable diffs without a megabyte of indentation.
    head = {k: v for k, v in doc.items() if k != "cases"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "cases": [\n'
    text += ",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases)
    sys.stdout.write(text + "\n ]\n}\n")


if __name__ == "__main__":
    main()
