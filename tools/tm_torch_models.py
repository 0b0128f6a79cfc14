"""Hand-built PyTorch models with the same operations as HuggingFace transformers' eager
implementations (GPT2LMHeadModel, BertForSequenceClassification, LlamaForCausalLM,
T5ForConditionalGeneration) and a plain
MLP chain. transformers is not installed on the calibration machine (Debian python3-torch 1.13,
CPU), so the calibration scripts rebuild the blocks op for op from the HF modeling files
(transformers/models/{gpt2,bert,llama,t5}/modeling_*.py, eager attention path).

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


# ---------------------------------------------------------------- T5 (modeling_t5.py)
# Rebuilt from huggingface/transformers src/transformers/models/t5/modeling_t5.py at
# 6b8b757dfcb582379a64f013cdce46c43629f2b0: T5LayerNorm (RMS without mean: pow/mean on the fp32
# copy, the original times rsqrt, cast to the weight's 16-bit dtype), T5Attention (no score
# scaling, relative position bias computed in block 0 of each stack and shared, softmax of
# scores.float() then type_as, dropout on the probabilities), T5LayerCrossAttention (k, v from the
# encoder output), T5DenseActDense / T5DenseGatedActDense, T5Stack (dropout on the embeddings,
# final_layer_norm then dropout), T5ForConditionalGeneration (decoder ids = labels shifted right,
# tied head scaled by d_model^-0.5, CrossEntropyLoss on the logits as they are).
class T5Norm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x


def t5_bucket(rel, bidirectional, num_buckets=32, max_distance=128):
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).to(torch.long) * num_buckets
        rel = torch.abs(rel)
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, rel, large)


class T5Attn(nn.Module):
    def __init__(self, c, decoder, rel):
        super().__init__()
        h, self.a, self.d = c["d_model"], c["num_heads"], c["d_kv"]
        inner = self.a * self.d
        self.decoder = decoder
        self.q, self.k = nn.Linear(h, inner, bias=False), nn.Linear(h, inner, bias=False)
        self.v, self.o = nn.Linear(h, inner, bias=False), nn.Linear(inner, h, bias=False)
        self.p = c["dropout_rate"]
        self.rel = nn.Embedding(32, self.a) if rel else None

    def bias(self, sq, sk):
        ctx = torch.arange(sq, dtype=torch.long)[:, None]
        mem = torch.arange(sk, dtype=torch.long)[None, :]
        b = t5_bucket(mem - ctx, bidirectional=not self.decoder)
        return self.rel(b).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, x, mask, position_bias, kv=None):
        b, s = x.shape[:2]
        src = x if kv is None else kv
        q = self.q(x).view(b, -1, self.a, self.d).transpose(1, 2)
        k = self.k(src).view(b, -1, self.a, self.d).transpose(1, 2)
        v = self.v(src).view(b, -1, self.a, self.d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2))
        if position_bias is None:
            if self.rel is None:
                position_bias = torch.zeros((1, self.a, s, k.shape[-2]), dtype=scores.dtype)
            else:
                position_bias = self.bias(s, k.shape[-2])
            position_bias = position_bias + mask
        scores += position_bias
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        w = F.dropout(w, p=self.p, training=self.training)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.a * self.d)
        return self.o(o), position_bias


class T5Sub(nn.Module):
    """T5LayerSelfAttention / T5LayerCrossAttention: norm, attention, dropout, residual."""

    def __init__(self, c, decoder, rel):
        super().__init__()
        self.attn = T5Attn(c, decoder, rel)
        self.layer_norm = T5Norm(c["d_model"], c.get("layer_norm_epsilon", 1e-6))
        self.dropout = nn.Dropout(c["dropout_rate"])

    def forward(self, x, mask, position_bias, kv=None):
        y, position_bias = self.attn(self.layer_norm(x), mask, position_bias, kv)
        return x + self.dropout(y), position_bias


class T5FF(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["d_model"], c["d_ff"]
        self.gated = c["feed_forward_proj"].startswith("gated-")
        if self.gated:
            self.wi_0, self.wi_1 = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False)
        else:
            self.wi = nn.Linear(h, i, bias=False)
        self.wo = nn.Linear(i, h, bias=False)
        self.inner_dropout = nn.Dropout(c["dropout_rate"])
        self.layer_norm = T5Norm(h, c.get("layer_norm_epsilon", 1e-6))
        self.dropout = nn.Dropout(c["dropout_rate"])

    def forward(self, x):
        y = self.layer_norm(x)
        if self.gated:  # gated-gelu: ACT2FN["gelu_new"]
            y = gelu_new(self.wi_0(y)) * self.wi_1(y)
        else:  # relu: ACT2FN["relu"]
            y = F.relu(self.wi(y))
        y = self.wo(self.inner_dropout(y))
        return x + self.dropout(y)


class T5Block(nn.Module):
    def __init__(self, c, decoder, first):
        super().__init__()
        self.decoder = decoder
        self.self_attn = T5Sub(c, decoder, first)
        self.cross = T5Sub(c, True, False) if decoder else None
        self.ff = T5FF(c)

    def forward(self, x):
        x, self.stack.bias = self.self_attn(x, self.stack.mask, self.stack.bias)
        if self.decoder:
            x, self.stack.cross_bias = self.cross(x, self.stack.enc_mask, self.stack.cross_bias,
                                                  self.stack.enc_out)
        return self.ff(x)


class T5State:
    """What T5Stack.forward carries from block to block (the shared biases, masks, encoder output)."""
    bias = None
    cross_bias = None
    mask = None
    enc_mask = None
    enc_out = None


class T5Model(nn.Module):
    """T5ForConditionalGeneration. Regions: embed (encoder embedding), eblock<i>, dembed (encoder
    final norm, decoder embedding), dblock<i>, head. `ckpt` "blocks": torch.utils.checkpoint
    around every block (HF gradient_checkpointing)."""

    def __init__(self, c):
        super().__init__()
        h = c["d_model"]
        self.shared = nn.Embedding(c["vocab_size"], h)
        self.tied = c.get("tie_word_embeddings", True)
        self.h = h
        self.enc = nn.ModuleList([T5Block(c, False, i == 0) for i in range(c["num_layers"])])
        self.dec = nn.ModuleList([T5Block(c, True, i == 0)
                                  for i in range(c.get("num_decoder_layers", c["num_layers"]))])
        self.enc_norm = T5Norm(h, c.get("layer_norm_epsilon", 1e-6))
        self.dec_norm = T5Norm(h, c.get("layer_norm_epsilon", 1e-6))
        self.drop = nn.Dropout(c["dropout_rate"])
        self.lm_head = nn.Linear(h, c["vocab_size"], bias=False)
        if self.tied:
            self.lm_head.weight = self.shared.weight
        self.ckpt = "none"
        self.region = None

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def _stack(self, blocks, x, st, tag):
        for i, blk in enumerate(blocks):
            self._tag(f"{tag}{i}")
            blk.stack = st
            x = checkpoint(blk, x) if self.ckpt == "blocks" else blk(x)
        return x

    def forward(self, ids, labels):
        dt = self.shared.weight.dtype
        b, s = ids.shape
        t = labels.shape[1]
        minv = torch.finfo(dt).min
        self._tag("embed")
        enc = T5State()
        enc.mask = (1.0 - torch.ones(b, s, dtype=dt)[:, None, None, :]) * minv  # ones mask, inverted
        x = self.drop(self.shared(ids))
        x = self._stack(self.enc, x, enc, "eblock")
        self._tag("dembed")
        enc_out = self.drop(self.enc_norm(x))
        # T5._shift_right: decoder_start_token_id (0) first, labels shifted right
        dec_ids = torch.zeros_like(labels)
        dec_ids[:, 1:] = labels[:, :-1].clone()
        dec = T5State()
        causal = torch.full((t, t), minv, dtype=dt).triu(1)[None, None].expand(b, 1, t, t)
        dec.mask = causal
        dec.enc_mask = (1.0 - torch.ones(b, s, dtype=dt)[:, None, None, :]) * minv
        dec.enc_out = enc_out
        y = self.drop(self.shared(dec_ids))
        y = self._stack(self.dec, y, dec, "dblock")
        self._tag("head")
        y = self.drop(self.dec_norm(y))
        if self.tied:
            y = y * (self.h ** -0.5)
        logits = self.lm_head(y)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)


def t5(c):
    return T5Model(c)


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
    if kind == "t5":
        m = t5(c)
        ids = torch.randint(0, c["vocab_size"], (b, s))
        return m, (ids, torch.randint(0, c["vocab_size"], (b, case["targetLen"])))
    raise ValueError(kind)


def cast(model, dtype):
    if dtype == "bf16":
        model.to(torch.bfloat16)
    return model
