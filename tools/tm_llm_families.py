"""Hand-built decoder blocks of the transformers families trainmem reads besides GPT-2, BERT,
Llama and T5, with the eager forward of huggingface/transformers' modeling files (transformers is
not installed on the calibration machine): models/gptj/modeling_gptj.py (GPTJAttention._attn in
fp32, rotate_every_two RoPE on rotary_dim), models/phi/modeling_phi.py (partial rotary, parallel
attention and MLP), models/falcon/modeling_falcon.py (fused query_key_value, multi-query,
parallel_attn), models/starcoder2/modeling_starcoder2.py (LayerNorm, biases, GELU MLP),
models/olmo/modeling_olmo.py (OlmoLayerNorm without parameters on an fp32 copy),
models/olmo2/modeling_olmo2.py (post-norms, q_norm / k_norm over all heads), models/gemma/
modeling_gemma.py (GemmaRMSNorm: x * (1 + w) in fp32, embeddings scaled by sqrt(hidden)); and
PyTorch's own torch.nn.Transformer (torch 1.13). Each model is a Chain (tools/tm_torch_models.py:
embed -> blocks -> head) so tools/measure_activations.py measures it per region.
Run with /usr/bin/python3 (torch 1.13).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import tm_torch_models as tm


def eager_attention(q, k, v, mask, scaling, dropout=0.0, training=True):
    """transformers' eager_attention_forward: q k^T * scaling + mask, softmax in fp32 then cast,
    dropout, times v; output transposed to (b, s, heads, d)."""
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=dropout, training=training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def rope_tables(s, dim, dtype, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(s).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[None], emb.sin().to(dtype)[None]


def causal(s, dtype):
    return torch.full((s, s), torch.finfo(dtype).min, dtype=dtype).triu(1)[None, None]


# ---------------------------------------------------------------- GPT-J
def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def gptj_rope(t, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (t * cos) + (rotate_every_two(t) * sin)


class GPTJBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["n_embd"]
        self.a, self.d, self.rot = c["n_head"], h // c["n_head"], c["rotary_dim"]
        self.ln_1 = nn.LayerNorm(h, eps=1e-5)
        self.k_proj, self.v_proj = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.q_proj, self.out_proj = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.fc_in, self.fc_out = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        pos = torch.arange(c["n_positions"]).float()
        inv = 1.0 / (10000 ** (torch.arange(0, self.rot, 2).float() / self.rot))
        f = torch.einsum("i,j->ij", pos, inv)
        # plain attributes, not buffers (as in modeling_gptj.py): model.to(bfloat16) leaves them fp32
        self.embed_positions = torch.cat((torch.sin(f), torch.cos(f)), dim=1)
        self.scale_attn = torch.sqrt(torch.tensor(self.d, dtype=torch.float32))

    def forward(self, x):
        b, s, h = x.shape
        r = x
        x = self.ln_1(x)
        q = self.q_proj(x).view(b, s, self.a, self.d)
        k = self.k_proj(x).view(b, s, self.a, self.d)
        v = self.v_proj(x).view(b, s, self.a, self.d).permute(0, 2, 1, 3)
        pos = torch.arange(s)[None].expand(b, s)
        sincos = torch.gather(self.embed_positions[None].expand(b, -1, -1), 1,
                              pos.unsqueeze(-1).repeat(1, 1, self.embed_positions.shape[-1]))
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        k_rot, k_pass = k[:, :, :, :self.rot], k[:, :, :, self.rot:]
        q_rot, q_pass = q[:, :, :, :self.rot], q[:, :, :, self.rot:]
        k = torch.cat([gptj_rope(k_rot, sin, cos), k_pass], dim=-1).permute(0, 2, 1, 3)
        q = torch.cat([gptj_rope(q_rot, sin, cos), q_pass], dim=-1).permute(0, 2, 1, 3)
        # GPTJAttention._attn: q, k in fp32, / scale_attn, causal mask, softmax, to v's dtype
        w = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        w = w / self.scale_attn
        w = w + causal(s, w.dtype)
        w = F.softmax(w, dim=-1).to(v.dtype)
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
        a = self.out_proj(o)
        f = self.fc_out(tm.gelu_new(self.fc_in(x)))
        return a + f + r


def gptj(c):
    h = c["n_embd"]
    e = TokenEmbed(c["vocab_size"], h)
    lm = nn.Linear(h, c["vocab_size"])
    return tm.Chain(e, [GPTJBlock(c) for _ in range(c["n_layer"])], BiasHead(nn.LayerNorm(h), lm))


class BiasHead(nn.Module):
    """The final norm, lm_head with a bias (GPT-J, Phi), then HF ForCausalLMLoss."""

    def __init__(self, norm, lm):
        super().__init__()
        self.norm, self.lm = norm, lm

    def forward(self, x, labels):
        logits = self.lm(self.norm(x)).float()
        labels = F.pad(labels, (0, 1), value=-100)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels[..., 1:].contiguous().view(-1),
                               ignore_index=-100)


# ---------------------------------------------------------------- Phi
def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


class PhiBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.a, self.d = c["num_attention_heads"], h // c["num_attention_heads"]
        self.rot = int(self.d * c["partial_rotary_factor"])
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.dense = nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, i), nn.Linear(i, h)
        self.input_layernorm = nn.LayerNorm(h, eps=1e-5)

    def forward(self, x):
        b, s, h = x.shape
        cos, sin, mask = self.rope
        r = x
        x = self.input_layernorm(x)
        q = self.q_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        q_rot, q_pass = q[..., :self.rot], q[..., self.rot:]
        k_rot, k_pass = k[..., :self.rot], k[..., self.rot:]
        cu, su = cos.unsqueeze(1), sin.unsqueeze(1)
        q_rot = (q_rot * cu) + (rotate_half(q_rot) * su)
        k_rot = (k_rot * cu) + (rotate_half(k_rot) * su)
        q, k = torch.cat((q_rot, q_pass), dim=-1), torch.cat((k_rot, k_pass), dim=-1)
        o = eager_attention(q, k, v, mask, self.d ** -0.5).reshape(b, s, -1)
        a = self.dense(o)
        f = self.fc2(tm.gelu_new(self.fc1(x)))
        return a + f + r


class RopeChain(tm.Chain):
    """A Chain whose blocks read the rope tables (cos, sin of `rot` dims) and the causal mask."""

    def __init__(self, embed, blocks, head, rot, theta=10000.0):
        super().__init__(embed, blocks, head)
        self.rot, self.theta = rot, theta

    def forward(self, ids, labels):
        dt = next(self.parameters()).dtype
        # the rotary embedding module computes cos and sin per sample (position_ids (b, s))
        cos, sin = rope_tables(ids.shape[1], self.rot, dt, self.theta)
        cos, sin = cos.expand(ids.shape[0], -1, -1).contiguous(), sin.expand(ids.shape[0], -1, -1).contiguous()
        for blk in self.blocks:
            blk.rope = (cos, sin, causal(ids.shape[1], dt))
        return super().forward(ids, labels)


class TokenEmbed(nn.Module):
    def __init__(self, v, h, scale=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(v, h)
        self.scale = scale

    def forward(self, ids):
        x = self.embed_tokens(ids)
        if self.scale is not None:  # Gemma: hidden_states * normalizer (a tensor of the dtype)
            x = x * torch.tensor(self.scale, dtype=x.dtype)
        return x


def phi(c):
    h = c["hidden_size"]
    blocks = [PhiBlock(c) for _ in range(c["num_hidden_layers"])]
    head = BiasHead(nn.LayerNorm(h), nn.Linear(h, c["vocab_size"]))
    rot = int(h // c["num_attention_heads"] * c["partial_rotary_factor"])
    return RopeChain(TokenEmbed(c["vocab_size"], h), blocks, head, rot)


# ---------------------------------------------------------------- Falcon (7B layout: multi-query, parallel)
class FalconBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.a, self.d = c["num_attention_heads"], h // c["num_attention_heads"]
        self.query_key_value = nn.Linear(h, h + 2 * self.d, bias=False)
        self.dense = nn.Linear(h, h, bias=False)
        self.dense_h_to_4h, self.dense_4h_to_h = nn.Linear(h, 4 * h, bias=False), nn.Linear(4 * h, h, bias=False)
        self.input_layernorm = nn.LayerNorm(h, eps=1e-5)

    def forward(self, x):
        b, s, h = x.shape
        cos, sin, mask = self.rope
        r = x
        ln = self.input_layernorm(x)
        fused = self.query_key_value(ln).view(b, s, self.a + 2, self.d)  # FalconLinear: x @ W.T
        q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        q = q.transpose(1, 2).reshape(b, self.a, s, self.d)
        k = k.transpose(1, 2).reshape(b, 1, s, self.d)
        v = v.transpose(1, 2).reshape(b, 1, s, self.d)
        cu, su = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = (q * cu) + (rotate_half(q) * su), (k * cu) + (rotate_half(k) * su)
        # FalconAttention without SDPA: q @ k^T / sqrt(d), softmax(+ mask, dtype), @ v
        w = q @ k.transpose(-1, -2)
        w /= math.sqrt(self.d)
        w = F.softmax(w + mask, dim=-1, dtype=x.dtype)
        o = (w @ v).view(b, self.a, s, self.d).permute(0, 2, 1, 3).reshape(b, s, h)
        attn = self.dense(o)
        mlp = self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(ln)))
        mlp += attn
        return r + mlp


def falcon(c):
    h = c["hidden_size"]
    blocks = [FalconBlock(c) for _ in range(c["num_hidden_layers"])]
    e = TokenEmbed(c["vocab_size"], h)
    head = tm.CausalLMHead(nn.LayerNorm(h), e.embed_tokens.weight)
    return RopeChain(e, blocks, head, h // c["num_attention_heads"])


# ---------------------------------------------------------------- Starcoder2, OLMo, OLMo 2
class Olmo2RMSNorm(tm.RMSNorm):
    """modeling_olmo2.py: the weight multiplies the fp32 normalized tensor before the cast back
    (LlamaRMSNorm casts first)."""

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return (self.weight * x).to(dt)


class LlamaLikeBlock(nn.Module):
    """kind "starcoder2" (LayerNorm, biases, c_fc/c_proj GELU-tanh), "olmo" (OlmoLayerNorm),
    "olmo2" (post-norms, q_norm / k_norm over all heads)."""

    def __init__(self, c, kind):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.kind = kind
        self.a, self.kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
        self.d = h // self.a
        bias = kind == "starcoder2"
        self.q_proj = nn.Linear(h, self.a * self.d, bias=bias)
        self.k_proj = nn.Linear(h, self.kv * self.d, bias=bias)
        self.v_proj = nn.Linear(h, self.kv * self.d, bias=bias)
        self.o_proj = nn.Linear(self.a * self.d, h, bias=bias)
        if kind == "olmo2":
            self.q_norm, self.k_norm = Olmo2RMSNorm(self.a * self.d), Olmo2RMSNorm(self.kv * self.d)
        if kind == "starcoder2":
            self.c_fc, self.c_proj = nn.Linear(h, i), nn.Linear(i, h)
        else:
            self.gate_proj, self.up_proj = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False)
            self.down_proj = nn.Linear(i, h, bias=False)
        if kind == "starcoder2":
            self.input_layernorm, self.post_attention_layernorm = nn.LayerNorm(h), nn.LayerNorm(h)
        elif kind == "olmo2":
            self.post_attention_layernorm, self.post_feedforward_layernorm = Olmo2RMSNorm(h), Olmo2RMSNorm(h)

    def norm(self, x):
        if self.kind == "olmo":  # OlmoLayerNorm
            return F.layer_norm(x.to(torch.float32), (x.shape[-1],), None, None, eps=1e-5).to(x.dtype)
        return x

    def mlp(self, x):
        if self.kind == "starcoder2":
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x):
        b, s, _ = x.shape
        cos, sin, mask = self.rope
        r = x
        if self.kind == "starcoder2":
            x = self.input_layernorm(x)
        elif self.kind == "olmo":
            x = self.norm(x)
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.kind == "olmo2":
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(b, s, -1, self.d).transpose(1, 2)
        k = k.view(b, s, -1, self.d).transpose(1, 2)
        v = v.view(b, s, -1, self.d).transpose(1, 2)
        cu, su = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = (q * cu) + (rotate_half(q) * su), (k * cu) + (rotate_half(k) * su)
        k, v = tm.repeat_kv(k, self.a // self.kv), tm.repeat_kv(v, self.a // self.kv)
        o = self.o_proj(eager_attention(q, k, v, mask, self.d ** -0.5).reshape(b, s, -1))
        if self.kind == "olmo2":
            o = self.post_attention_layernorm(o)
        x = r + o
        r = x
        if self.kind == "starcoder2":
            x = self.post_attention_layernorm(x)
        elif self.kind == "olmo":
            x = self.norm(x)
        f = self.mlp(x)
        if self.kind == "olmo2":
            f = self.post_feedforward_layernorm(f)
        return r + f


def llama_like(c, kind):
    h = c["hidden_size"]
    blocks = [LlamaLikeBlock(c, kind) for _ in range(c["num_hidden_layers"])]
    e = TokenEmbed(c["vocab_size"], h)
    if kind == "starcoder2":
        norm = nn.LayerNorm(h)
    elif kind == "olmo":
        norm = type("OlmoNorm", (nn.Module,), {"forward": lambda self, x: F.layer_norm(
            x.to(torch.float32), (x.shape[-1],), None, None, eps=1e-5).to(x.dtype)})()
    else:
        norm = Olmo2RMSNorm(h)
    tied = c.get("tie_word_embeddings", kind not in ("olmo", "olmo2"))  # OlmoConfig: False
    weight = e.embed_tokens.weight if tied else nn.Linear(h, c["vocab_size"], bias=False).weight
    chain = RopeChain(e, blocks, tm.CausalLMHead(norm, weight), h // c["num_attention_heads"])
    chain.lm_weight = weight
    return chain


# ---------------------------------------------------------------- Gemma (1)
class GemmaNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.zeros(h)), eps

    def forward(self, x):
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


class GemmaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, hd, i = c["hidden_size"], c["head_dim"], c["intermediate_size"]
        self.a, self.kv, self.d = c["num_attention_heads"], c["num_key_value_heads"], hd
        self.input_layernorm, self.post_attention_layernorm = GemmaNorm(h), GemmaNorm(h)
        self.q_proj = nn.Linear(h, self.a * hd, bias=False)
        self.k_proj, self.v_proj = nn.Linear(h, self.kv * hd, bias=False), nn.Linear(h, self.kv * hd, bias=False)
        self.o_proj = nn.Linear(self.a * hd, h, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False)
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
        q, k = (q * cu) + (rotate_half(q) * su), (k * cu) + (rotate_half(k) * su)
        k, v = tm.repeat_kv(k, self.a // self.kv), tm.repeat_kv(v, self.a // self.kv)
        x = r + self.o_proj(eager_attention(q, k, v, mask, self.d ** -0.5).reshape(b, s, -1))
        r = x
        x = self.post_attention_layernorm(x)
        return r + self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def gemma(c):
    h = c["hidden_size"]
    blocks = [GemmaBlock(c) for _ in range(c["num_hidden_layers"])]
    e = TokenEmbed(c["vocab_size"], h, scale=h ** 0.5)
    return RopeChain(e, blocks, tm.CausalLMHead(GemmaNorm(h), e.embed_tokens.weight), c["head_dim"])


# ---------------------------------------------------------------- torch.nn.Transformer
class TorchTransformer(nn.Module):
    """torch.nn.Transformer with src (S, N, E) and tgt (T, N, E) embeddings, a causal target mask,
    and a stand-in loss (the mean square of the output: nn.Transformer has no head).
    Regions: "eblock<i>", "dblock<i>" per layer, "dembed" for the encoder's final norm."""

    def __init__(self, c):
        super().__init__()
        self.t = nn.Transformer(c.get("d_model", 512), c.get("nhead", 8), c.get("num_encoder_layers", 6),
                                c.get("num_decoder_layers", 6), c.get("dim_feedforward", 2048),
                                c.get("dropout", 0.1), c.get("activation", "relu"))
        self.ckpt = "none"
        self.region = None

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def forward(self, src, tgt):
        mask = self.t.generate_square_subsequent_mask(tgt.shape[0])
        x = src
        for i, layer in enumerate(self.t.encoder.layers):
            self._tag(f"eblock{i}")
            x = layer(x)
        self._tag("dembed")
        memory = self.t.encoder.norm(x)
        y = tgt
        for i, layer in enumerate(self.t.decoder.layers):
            self._tag(f"dblock{i}")
            y = layer(y, memory, tgt_mask=mask)
        self._tag("head")
        return self.t.decoder.norm(y).float().pow(2).mean()
