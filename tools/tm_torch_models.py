"""Hand-built PyTorch models with the same operations as HuggingFace transformers' eager
implementations (GPT2LMHeadModel, BertForSequenceClassification, LlamaForCausalLM) and a plain
MLP chain. transformers is not installed on the calibration machine (Debian python3-torch 1.13,
CPU), so the calibration scripts rebuild the blocks op for op from the HF modeling files
(transformers/models/{gpt2,bert,llama}/modeling_*.py, eager attention path).

Shared by tools/measure_activations.py and tools/measure_peak.py. Run with /usr/bin/python3.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


# ---------------------------------------------------------------- GPT-2 (modeling_gpt2.py)
class Conv1D(nn.Module):
    """HF Conv1D: addmm(bias, x.view(-1, nx), weight) with weight (nx, nf)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    # HF NewGELUActivation (GPT-2 "gelu_new"), written as Python tensor ops.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, n = c["n_embd"], c["n_positions"]
        self.a = c["n_head"]
        self.d = h // self.a
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)
        self.c_attn = Conv1D(3 * h, h)
        self.c_proj = Conv1D(h, h)
        self.attn_dropout = nn.Dropout(c["attn_pdrop"])
        self.resid_dropout = nn.Dropout(c["resid_pdrop"])

    def split(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.a, self.d).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        mask = self.bias[:, :, 0:s, :s]
        w = torch.where(mask, w.to(w.dtype), torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = F.softmax(w, dim=-1)
        w = w.type(v.dtype)
        w = self.attn_dropout(w)
        o = torch.matmul(w, v)
        o = o.permute(0, 2, 1, 3).contiguous().view(b, s, h)
        return self.resid_dropout(self.c_proj(o))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["n_embd"]
        self.c_fc = Conv1D(4 * h, h)
        self.c_proj = Conv1D(h, 4 * h)
        self.dropout = nn.Dropout(c["resid_pdrop"])

    def forward(self, x):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["n_embd"]
        self.ln_1 = nn.LayerNorm(h, eps=1e-5)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(h, eps=1e-5)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = self.attn(self.ln_1(x)) + x
        return self.mlp(self.ln_2(x)) + x


class GPT2Embed(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.drop = nn.Dropout(c["embd_pdrop"])

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[-1], dtype=torch.long).unsqueeze(0)
        return self.drop(self.wte(ids) + self.wpe(pos))


class CausalLMHead(nn.Module):
    """Final norm + lm_head (tied or not) + HF ForCausalLMLoss (logits.float(), labels padded
    by one ignore_index and shifted, cross_entropy over all b*s positions)."""

    def __init__(self, norm, weight):
        super().__init__()
        self.norm = norm
        self.weight = weight  # a Parameter (tied: the embedding's)

    def forward(self, x, labels):
        logits = F.linear(self.norm(x), self.weight)
        logits = logits.float()
        labels = F.pad(labels, (0, 1), value=-100)
        shift = labels[..., 1:].contiguous()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), shift.view(-1), ignore_index=-100)


class Chain(nn.Module):
    """embed -> blocks -> head, each a "region" of the activation measurement. `ckpt` is
    "none" or "blocks" (torch.utils.checkpoint around every block, reentrant as in 1.13)."""

    def __init__(self, embed, blocks, head):
        super().__init__()
        self.embed = embed
        self.blocks = nn.ModuleList(blocks)
        self.head = head
        self.ckpt = "none"
        self.region = None  # callback(name) used by measure_activations

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def forward(self, ids, labels):
        self._tag("embed")
        x = self.embed(ids)
        for i, blk in enumerate(self.blocks):
            self._tag(f"block{i}")
            x = checkpoint(blk, x) if self.ckpt == "blocks" else blk(x)
        self._tag("head")
        return self.head(x, labels)


def gpt2(c):
    embed = GPT2Embed(c)
    blocks = [GPT2Block(c) for _ in range(c["n_layer"])]
    head = CausalLMHead(nn.LayerNorm(c["n_embd"], eps=1e-5), embed.wte.weight)  # tied
    return Chain(embed, blocks, head)


# ---------------------------------------------------------------- BERT (modeling_bert.py)
class BertEmbed(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.word = nn.Embedding(c["vocab_size"], h)
        self.pos = nn.Embedding(c["max_position_embeddings"], h)
        self.tok = nn.Embedding(c["type_vocab_size"], h)
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros((1, c["max_position_embeddings"]), dtype=torch.long),
                             persistent=False)
        self.norm = nn.LayerNorm(h, eps=1e-12)
        self.drop = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, ids):
        b, s = ids.shape
        tt = self.token_type_ids[:, :s].expand(b, s)
        x = self.word(ids) + self.tok(tt)
        x = x + self.pos(self.position_ids[:, :s])
        return self.drop(self.norm(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.a = c["num_attention_heads"]
        self.d = h // self.a
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_drop = nn.Dropout(c["attention_probs_dropout_prob"])
        self.o = nn.Linear(h, h)
        self.o_drop = nn.Dropout(c["hidden_dropout_prob"])
        self.o_norm = nn.LayerNorm(h, eps=1e-12)
        self.inter = nn.Linear(h, i)
        self.out = nn.Linear(i, h)
        self.out_drop = nn.Dropout(c["hidden_dropout_prob"])
        self.out_norm = nn.LayerNorm(h, eps=1e-12)

    def split(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.a, self.d).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        w = w + self.ext_mask
        w = self.attn_drop(F.softmax(w, dim=-1))
        ctx = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
        x = self.o_norm(self.o_drop(self.o(ctx)) + x)
        return self.out_norm(self.out_drop(self.out(F.gelu(self.inter(x)))) + x)


class BertClsHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.pool = nn.Linear(h, h)
        self.drop = nn.Dropout(c["hidden_dropout_prob"])
        self.cls = nn.Linear(h, c["num_labels"])

    def forward(self, x, labels):
        pooled = torch.tanh(self.pool(x[:, 0]))
        return F.cross_entropy(self.cls(self.drop(pooled)), labels)


class BertChain(Chain):
    def forward(self, ids, labels):
        # attention_mask of ones -> extended additive mask (b, 1, 1, s) of zeros
        ext = torch.zeros(ids.shape[0], 1, 1, ids.shape[1], dtype=next(self.parameters()).dtype)
        for blk in self.blocks:
            blk.ext_mask = ext
        return super().forward(ids, labels)


def bert(c):
    return BertChain(BertEmbed(c), [BertLayer(c) for _ in range(c["num_hidden_layers"])], BertClsHead(c))


# ---------------------------------------------------------------- Llama (modeling_llama.py)
class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n):
    if n == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.a, self.kv = c["num_attention_heads"], c["num_key_value_heads"]
        self.d = h // self.a
        self.input_layernorm = RMSNorm(h, c["rms_norm_eps"])
        self.q_proj = nn.Linear(h, self.a * self.d, bias=False)
        self.k_proj = nn.Linear(h, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(h, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.a * self.d, h, bias=False)
        self.post_attention_layernorm = RMSNorm(h, c["rms_norm_eps"])
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        cos, sin, mask = self.rope
        r = x
        x = self.input_layernorm(x)
        q = self.q_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        cu, su = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cu) + (rotate_half(q) * su)
        k = (k * cu) + (rotate_half(k) * su)
        k, v = repeat_kv(k, self.a // self.kv), repeat_kv(v, self.a // self.kv)
        w = torch.matmul(q, k.transpose(2, 3)) * (self.d ** -0.5)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, s, -1)
        x = r + self.o_proj(o)
        r = x
        x = self.post_attention_layernorm(x)
        x = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return r + x


class LlamaEmbed(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        d = c["hidden_size"] // c["num_attention_heads"]
        self.register_buffer("inv_freq", 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2).float() / d)),
                             persistent=False)

    def forward(self, ids):
        return self.embed_tokens(ids)

    def rope(self, ids, dtype):
        b, s = ids.shape
        pos = torch.arange(s).unsqueeze(0).expand(b, s).float()
        freqs = (self.inv_freq.float()[None, :, None].expand(b, -1, 1) @ pos[:, None, :]).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        mask = torch.full((s, s), torch.finfo(dtype).min, dtype=dtype).triu(1)[None, None].expand(b, 1, s, s)
        return emb.cos().to(dtype), emb.sin().to(dtype), mask


class LlamaChain(Chain):
    def forward(self, ids, labels):
        rope = self.embed.rope(ids, next(self.parameters()).dtype)
        for blk in self.blocks:
            blk.rope = rope
        return super().forward(ids, labels)


def llama(c):
    embed = LlamaEmbed(c)
    blocks = [LlamaLayer(c) for _ in range(c["num_hidden_layers"])]
    lm = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
    head = CausalLMHead(RMSNorm(c["hidden_size"], c["rms_norm_eps"]), lm.weight)
    chain = LlamaChain(embed, blocks, head)
    chain.lm_head = lm
    return chain


# ---------------------------------------------------------------- MLP chain
def mlp(sizes, activation="relu"):
    """Linear(sizes[i], sizes[i+1]) followed by the activation, for every i."""
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers.append(nn.Sequential(nn.Linear(a, b), nn.ReLU() if activation == "relu" else nn.GELU()))
    return nn.Sequential(*layers)


def build(case):
    """A model and its (inputs, labels) from a fixture case description."""
    torch.manual_seed(0)
    kind, c = case["kind"], case.get("config", {})
    b, s = case["microBatch"], case.get("seqLen", 0)
    if kind == "mlp":
        m = mlp(case["sizes"], case.get("activation", "relu"))
        # requires_grad: reentrant checkpointing (torch 1.13 default) yields no parameter
        # gradients inside checkpointed segments when no input requires grad.
        x = torch.randn(b, case["sizes"][0], requires_grad=True)
        return m, (x,)
    if kind == "gpt2":
        m = gpt2(c)
        ids = torch.randint(0, c["vocab_size"], (b, s))
        return m, (ids, ids)
    if kind == "bert":
        m = bert(c)
        ids = torch.randint(0, c["vocab_size"], (b, s))
        return m, (ids, torch.randint(0, c["num_labels"], (b,)))
    if kind == "llama":
        m = llama(c)
        ids = torch.randint(0, c["vocab_size"], (b, s))
        return m, (ids, ids)
    raise ValueError(kind)


def cast(model, dtype):
    if dtype == "bf16":
        model.to(torch.bfloat16)
    return model
