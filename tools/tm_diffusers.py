"""Hand-built PyTorch modules with the same parameters (names, shapes, registration order) and the
same forward operations as Hugging Face diffusers' models, for torch 1.13 on CPU (diffusers is not
installed on the calibration machine). Rebuilt from huggingface/diffusers at
58eb52c0803ea9af3abec60841c2a093bdf1f951, src/diffusers/models/:
  unets/unet_2d_condition.py  UNet2DConditionModel (positional time embedding, SDXL text_time)
  unets/unet_2d_blocks.py     CrossAttnDownBlock2D, DownBlock2D, UNetMidBlock2DCrossAttn,
                              CrossAttnUpBlock2D, UpBlock2D, DownEncoderBlock2D, UpDecoderBlock2D,
                              UNetMidBlock2D
  resnet.py                   ResnetBlock2D
  downsampling.py / upsampling.py  Downsample2D (name="op"), Upsample2D (nearest x2 + conv)
  transformers/transformer_2d.py   Transformer2DModel (continuous input)
  attention.py                BasicTransformerBlock (layer_norm, ada_norm_zero, ada_norm_single),
                              FeedForward, JointTransformerBlock
  activations.py              GEGLU, GELU
  attention_processor.py      Attention with AttnProcessor (the eager path diffusers takes when
                              F.scaled_dot_product_attention is missing, as in torch 1.13),
                              JointAttnProcessor2_0 (its SDPA written as the math path)
  autoencoders/autoencoder_kl.py, autoencoders/vae.py  AutoencoderKL, Encoder, Decoder
  transformers/transformer_sd3.py  SD3Transformer2DModel
  transformers/transformer_flux.py FluxTransformer2DModel, FluxTransformerBlock,
                              FluxSingleTransformerBlock, FluxAttnProcessor
  transformers/dit_transformer_2d.py, pixart_transformer_2d.py
  embeddings.py, normalization.py  Timesteps, TimestepEmbedding, PatchEmbed,
                              CombinedTimestep*Embeddings, PixArtAlphaTextProjection, AdaLayerNorm*

Chain regions: every module that is one layer of trainmem's chain calls `tag(name)` (a callback the
measurement sets) when its forward starts, so saved tensors can be attributed per chain layer.
Run with /usr/bin/python3 (torch 1.13).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

TAG = [None]  # the measurement's region callback


def tag(name):
    if TAG[0] is not None:
        TAG[0](name)


CKPT = {"on": False}  # diffusers' gradient_checkpointing (resnets and transformer blocks)


def ckpt(module, *args):
    # ModelMixin.enable_gradient_checkpointing: torch.utils.checkpoint.checkpoint(module.__call__,
    # *args, use_reentrant=False) (diffusers models/modeling_utils.py)
    if CKPT["on"] and torch.is_grad_enabled():
        return checkpoint(module.__call__, *args, use_reentrant=False)
    return module(*args)


# ------------------------------------------------------------------ embeddings.py
def timestep_embedding(t, dim, flip_sin_to_cos, shift, max_period=10000):
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / (half - shift)
    emb = t[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half:], emb[:, :half]], dim=-1)
    return emb


class Timesteps(nn.Module):
    def __init__(self, n, flip_sin_to_cos, shift):
        super().__init__()
        self.n, self.flip, self.shift = n, flip_sin_to_cos, shift

    def forward(self, t):
        return timestep_embedding(t, self.n, self.flip, self.shift)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, dim, out_dim=None):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(dim, out_dim or dim)

    def forward(self, x):
        return self.linear_2(self.act(self.linear_1(x)))


class TextProjection(nn.Module):
    """PixArtAlphaTextProjection."""

    def __init__(self, in_features, hidden, act="gelu_tanh"):
        super().__init__()
        self.linear_1 = nn.Linear(in_features, hidden)
        self.act_1 = nn.GELU(approximate="tanh") if act == "gelu_tanh" else nn.SiLU()
        self.linear_2 = nn.Linear(hidden, hidden)

    def forward(self, x):
        return self.linear_2(self.act_1(self.linear_1(x)))


# ------------------------------------------------------------------ resnet / sampling
class ResnetBlock2D(nn.Module):
    def __init__(self, cin, cout, temb, groups=32, eps=1e-5):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin, eps=eps, affine=True)
        self.conv1 = nn.Conv2d(cin, cout, 3, 1, 1)
        self.time_emb_proj = nn.Linear(temb, cout) if temb is not None else None
        self.norm2 = nn.GroupNorm(groups, cout, eps=eps, affine=True)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = nn.Conv2d(cin, cout, 1, 1, 0) if cin != cout else None

    def forward(self, x, temb=None):
        # ResnetBlock2D.forward: one op per statement, each result rebinding hidden_states (what a
        # no_grad forward holds at once)
        h = self.norm1(x)
        h = self.nonlinearity(h)
        h = self.conv1(h)
        if self.time_emb_proj is not None:
            t = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
            h = h + t
        h = self.norm2(h)
        h = self.nonlinearity(h)
        h = self.dropout(h)
        h = self.conv2(h)
        if self.conv_shortcut is not None:
            x = self.conv_shortcut(x.contiguous())
        return (x + h) / 1.0


class Downsample2D(nn.Module):
    def __init__(self, c, padding):
        super().__init__()
        self.padding = padding
        self.conv = nn.Conv2d(c, c, 3, 2, padding)

    def forward(self, x):
        tag_next("downsample")
        if self.padding == 0:
            x = F.pad(x, (0, 1, 0, 1), mode="constant", value=0)
        return self.conv(x)


class Upsample2D(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        tag_next("upsample")
        dtype = x.dtype
        if dtype == torch.bfloat16:  # diffusers: upsample_nearest2d lacks bf16 before torch 2.1
            x = x.to(torch.float32)
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        if dtype == torch.bfloat16:
            x = x.to(dtype)
        return self.conv(x)


NAMER = {"fn": None}


def tag_next(kind):
    if NAMER["fn"] is not None:
        NAMER["fn"](kind)


# ------------------------------------------------------------------ attention
class Attention(nn.Module):
    """diffusers Attention: the parameters of the configurations used here, AttnProcessor's eager
    forward (baddbmm scores, softmax, bmm) or, for `joint`, the SD3 / Flux processors."""

    def __init__(self, query_dim, heads, dim_head, cross_dim=None, bias=False, out_bias=True,
                 group_norm=None, eps=1e-5, residual=False, added_kv=None, context_pre_only=None,
                 pre_only=False, qk_norm=None, out_dim=None):
        super().__init__()
        inner = out_dim if out_dim is not None else heads * dim_head
        self.heads, self.dim_head, self.scale = heads, dim_head, dim_head ** -0.5
        self.residual = residual
        self.context_pre_only = context_pre_only
        self.group_norm = nn.GroupNorm(group_norm, query_dim, eps=eps, affine=True) if group_norm else None
        if qk_norm == "rms_norm":
            self.norm_q, self.norm_k = RMSNorm(dim_head, 1e-6), RMSNorm(dim_head, 1e-6)
        else:
            self.norm_q = self.norm_k = None
        kv_in = cross_dim if cross_dim is not None else query_dim
        self.to_q = nn.Linear(query_dim, inner, bias=bias)
        self.to_k = nn.Linear(kv_in, inner, bias=bias)
        self.to_v = nn.Linear(kv_in, inner, bias=bias)
        if added_kv is not None:
            self.add_k_proj = nn.Linear(added_kv, inner, bias=True)
            self.add_v_proj = nn.Linear(added_kv, inner, bias=True)
            if context_pre_only is not None:
                self.add_q_proj = nn.Linear(added_kv, inner, bias=True)
        self.to_out = None
        if not pre_only:
            self.to_out = nn.ModuleList([nn.Linear(inner, out_dim or query_dim, bias=out_bias), nn.Dropout(0.0)])
        if context_pre_only is not None and not context_pre_only:
            self.to_add_out = nn.Linear(inner, out_dim or query_dim, bias=out_bias)
        if qk_norm == "rms_norm" and added_kv is not None:
            self.norm_added_q, self.norm_added_k = RMSNorm(dim_head, 1e-6), RMSNorm(dim_head, 1e-6)

    def head_to_batch(self, t):
        b, s, d = t.shape
        return t.reshape(b, s, self.heads, d // self.heads).permute(0, 2, 1, 3).reshape(
            b * self.heads, s, d // self.heads)

    def batch_to_head(self, t):
        bh, s, d = t.shape
        b = bh // self.heads
        return t.reshape(b, self.heads, s, d).permute(0, 2, 1, 3).reshape(b, s, d * self.heads)

    def get_attention_scores(self, q, k):
        """Attention.get_attention_scores: baddbmm on an empty tensor (beta 0), softmax; each
        intermediate deleted as soon as it is read (what a no_grad forward holds)."""
        base = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
        scores = torch.baddbmm(base, q, k.transpose(-1, -2), beta=0, alpha=self.scale)
        del base
        probs = scores.softmax(dim=-1)
        del scores
        return probs.to(q.dtype)

    def forward(self, x, context=None):
        # AttnProcessor.__call__ (eager)
        residual = x
        ndim = x.ndim
        if ndim == 4:
            b, c, hh, ww = x.shape
            x = x.view(b, c, hh * ww).transpose(1, 2)
        if self.group_norm is not None:
            x = self.group_norm(x.transpose(1, 2)).transpose(1, 2)
        q = self.to_q(x)
        ctx = x if context is None else context
        k, v = self.to_k(ctx), self.to_v(ctx)
        q, k, v = self.head_to_batch(q), self.head_to_batch(k), self.head_to_batch(v)
        probs = self.get_attention_scores(q, k)
        out = self.batch_to_head(torch.bmm(probs, v))
        out = self.to_out[1](self.to_out[0](out))
        if ndim == 4:
            out = out.transpose(-1, -2).reshape(b, c, hh, ww)
        if self.residual:
            out = out + residual
        return out / 1.0


def sdpa_math(q, k, v):
    """F.scaled_dot_product_attention on torch 2.x's math path, written for torch 1.13:
    _scaled_dot_product_attention_math scales q and k by sqrt(scale) each, then softmax(q k^T) v."""
    s = math.sqrt(1.0 / math.sqrt(q.shape[-1]))
    w = torch.matmul(q * s, k.transpose(-2, -1) * s)
    return torch.matmul(torch.softmax(w, dim=-1), v)


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm / diffusers RMSNorm as torch 2.x's composite rms_norm runs it: the input
    upcast to fp32, rsqrt(mean(x^2) + eps), x * rsqrt cast back, times the weight."""

    def __init__(self, dim, eps, affine=True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None

    def forward(self, x):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        y = (xf * r).type_as(x)
        return y * self.weight if self.weight is not None else y


class GEGLU(nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.proj = nn.Linear(din, dout * 2)

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return h * F.gelu(gate)


class GELU(nn.Module):
    def __init__(self, din, dout, approximate="none"):
        super().__init__()
        self.proj = nn.Linear(din, dout)
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(self.proj(x), approximate=self.approximate)


class FeedForward(nn.Module):
    def __init__(self, dim, activation="geglu", dim_out=None, mult=4):
        super().__init__()
        inner = int(dim * mult)
        act = GEGLU(dim, inner) if activation == "geglu" else GELU(dim, inner, "tanh")
        self.net = nn.ModuleList([act, nn.Dropout(0.0), nn.Linear(inner, dim_out or dim)])

    def forward(self, x):
        for m in self.net:
            x = m(x)
        return x


class BasicTransformerBlock(nn.Module):
    """norm_type "layer_norm" (UNet); "ada_norm_zero" (DiT); "ada_norm_single" (PixArt)."""

    def __init__(self, dim, heads, dim_head, cross_dim=None, norm_type="layer_norm", attn_bias=False,
                 num_embeds=None, activation="geglu", eps=1e-5, affine=True):
        super().__init__()
        self.norm_type = norm_type
        if norm_type == "ada_norm_zero":
            self.norm1 = AdaLayerNormZero(dim, num_embeds)
        else:
            self.norm1 = nn.LayerNorm(dim, elementwise_affine=affine, eps=eps)
        self.attn1 = Attention(dim, heads, dim_head, bias=attn_bias)
        if cross_dim is not None:
            self.norm2 = nn.LayerNorm(dim, eps, affine)
            self.attn2 = Attention(dim, heads, dim_head, cross_dim=cross_dim, bias=attn_bias)
        else:
            self.norm2 = nn.LayerNorm(dim, eps, affine) if norm_type == "ada_norm_single" else None
            self.attn2 = None
        self.norm3 = nn.LayerNorm(dim, eps, affine) if norm_type != "ada_norm_single" else None
        self.ff = FeedForward(dim, activation)
        if norm_type == "ada_norm_single":
            self.scale_shift_table = nn.Parameter(torch.randn(6, dim) / dim ** 0.5)

    def forward(self, x, context=None, timestep=None, class_labels=None):
        b = x.shape[0]
        if self.norm_type == "ada_norm_zero":
            n, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(x, timestep, class_labels)
        elif self.norm_type == "ada_norm_single":
            shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = (
                self.scale_shift_table[None] + timestep.reshape(b, 6, -1)).chunk(6, dim=1)
            n = self.norm1(x) * (1 + scale_msa) + shift_msa
        else:
            n = self.norm1(x)
        a = self.attn1(n)
        if self.norm_type == "ada_norm_zero":
            a = gate_msa.unsqueeze(1) * a
        elif self.norm_type == "ada_norm_single":
            a = gate_msa * a
        x = a + x
        if self.attn2 is not None:
            n = x if self.norm_type == "ada_norm_single" else self.norm2(x)
            x = self.attn2(n, context) + x
        if self.norm_type == "ada_norm_single":
            n = self.norm2(x) * (1 + scale_mlp) + shift_mlp
        else:
            n = self.norm3(x)
            if self.norm_type == "ada_norm_zero":
                n = n * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        f = self.ff(n)
        if self.norm_type == "ada_norm_zero":
            f = gate_mlp.unsqueeze(1) * f
        elif self.norm_type == "ada_norm_single":
            f = gate_mlp * f
        return f + x


class Transformer2DModel(nn.Module):
    """Continuous input (UNet attentions): GroupNorm, proj_in, blocks, proj_out, residual."""

    def __init__(self, heads, dim_head, cin, layers, cross_dim, linear_proj, groups=32):
        super().__init__()
        inner = heads * dim_head
        self.linear_proj = linear_proj
        self.norm = nn.GroupNorm(groups, cin, eps=1e-6, affine=True)
        self.proj_in = nn.Linear(cin, inner) if linear_proj else nn.Conv2d(cin, inner, 1, 1, 0)
        self.transformer_blocks = nn.ModuleList(
            [BasicTransformerBlock(inner, heads, dim_head, cross_dim) for _ in range(layers)])
        self.proj_out = nn.Linear(inner, cin) if linear_proj else nn.Conv2d(inner, cin, 1, 1, 0)

    def forward(self, x, context):
        tag_next("attn_in")
        b, _, h, w = x.shape
        residual = x
        x = self.norm(x)
        if not self.linear_proj:
            x = self.proj_in(x)
            inner = x.shape[1]
            x = x.permute(0, 2, 3, 1).reshape(b, h * w, inner)
        else:
            inner = x.shape[1]
            x = x.permute(0, 2, 3, 1).reshape(b, h * w, inner)
            x = self.proj_in(x)
        for blk in self.transformer_blocks:
            tag_next("block")
            x = ckpt(blk, x, context)
        tag_next("attn_out")
        if not self.linear_proj:
            x = x.reshape(b, h, w, inner).permute(0, 3, 1, 2).contiguous()
            x = self.proj_out(x)
        else:
            x = self.proj_out(x)
            x = x.reshape(b, h, w, inner).permute(0, 3, 1, 2).contiguous()
        return x + residual


# ------------------------------------------------------------------ UNet blocks
class DownBlock(nn.Module):
    """CrossAttnDownBlock2D (attn=True) and DownBlock2D."""

    def __init__(self, cin, cout, temb, layers, attn, heads, cross_dim, tlayers, linear_proj, add_down,
                 eps=1e-5, groups=32):
        super().__init__()
        if attn:
            self.attentions = nn.ModuleList([
                Transformer2DModel(heads, cout // heads, cout, tlayers, cross_dim, linear_proj, groups)
                for _ in range(layers)])
        self.resnets = nn.ModuleList([ResnetBlock2D(cin if i == 0 else cout, cout, temb, groups, eps)
                                      for i in range(layers)])
        self.downsamplers = nn.ModuleList([Downsample2D(cout, 1)]) if add_down else None
        self.attn = attn

    def forward(self, x, temb, context):
        out = ()
        for i, r in enumerate(self.resnets):
            tag_next("resnet")
            x = ckpt(r, x, temb)
            if self.attn:
                x = self.attentions[i](x, context)
            out = out + (x,)
        if self.downsamplers is not None:
            x = self.downsamplers[0](x)
            out = out + (x,)
        return x, out


class MidBlockCrossAttn(nn.Module):
    """UNetMidBlock2DCrossAttn (one attention): resnets[0] runs without checkpointing."""

    def __init__(self, c, temb, heads, cross_dim, tlayers, linear_proj, eps=1e-5, groups=32):
        super().__init__()
        self.attentions = nn.ModuleList([
            Transformer2DModel(heads, c // heads, c, tlayers, cross_dim, linear_proj, groups)])
        self.resnets = nn.ModuleList([ResnetBlock2D(c, c, temb, groups, eps), ResnetBlock2D(c, c, temb, groups, eps)])

    def forward(self, x, temb, context):
        tag_next("resnet_plain")
        x = self.resnets[0](x, temb)
        x = self.attentions[0](x, context)
        tag_next("resnet")
        return ckpt(self.resnets[1], x, temb)


class UpBlock(nn.Module):
    """CrossAttnUpBlock2D (attn=True) and UpBlock2D."""

    def __init__(self, cin, prev, cout, temb, layers, attn, heads, cross_dim, tlayers, linear_proj, add_up,
                 eps=1e-5, groups=32):
        super().__init__()
        if attn:
            self.attentions = nn.ModuleList([
                Transformer2DModel(heads, cout // heads, cout, tlayers, cross_dim, linear_proj, groups)
                for _ in range(layers)])
        rs = []
        for i in range(layers):
            skip = cin if i == layers - 1 else cout
            rin = prev if i == 0 else cout
            rs.append(ResnetBlock2D(rin + skip, cout, temb, groups, eps))
        self.resnets = nn.ModuleList(rs)
        self.upsamplers = nn.ModuleList([Upsample2D(cout)]) if add_up else None
        self.attn = attn

    def forward(self, x, res, temb, context):
        for i, r in enumerate(self.resnets):
            s = res[-1]
            res = res[:-1]
            tag_next("resnet")  # the concat is the first op of the up resnet's chain layer
            x = torch.cat([x, s], dim=1)
            x = ckpt(r, x, temb)
            if self.attn:
                x = self.attentions[i](x, context)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x)
        return x


def as_list(v, n):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


class UNet2DConditionModel(nn.Module):
    """The subset of configurations Stable Diffusion 1.x / 2.x and SDXL use (positional time
    embedding, optional text_time added conditioning, CrossAttn/plain down and up blocks,
    UNetMidBlock2DCrossAttn). Forward: (sample, timestep, encoder_hidden_states, added_cond)."""

    def __init__(self, c):
        super().__init__()
        boc = list(c.get("block_out_channels", [320, 640, 1280, 1280]))
        n = len(boc)
        downs = c.get("down_block_types", ["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"])
        ups = c.get("up_block_types", ["UpBlock2D"] + ["CrossAttnUpBlock2D"] * 3)
        lpb = as_list(c.get("layers_per_block", 2), n)
        heads = as_list(c.get("num_attention_heads") or c.get("attention_head_dim", 8), n)
        cross = as_list(c.get("cross_attention_dim", 1280), n)
        tl = as_list(c.get("transformer_layers_per_block", 1), n)
        lin = c.get("use_linear_projection", False)
        eps, groups = c.get("norm_eps", 1e-5), c.get("norm_num_groups", 32)
        temb = boc[0] * 4
        self.conv_in = nn.Conv2d(c.get("in_channels", 4), boc[0], 3, padding=1)
        self.time_proj = Timesteps(boc[0], c.get("flip_sin_to_cos", True), c.get("freq_shift", 0))
        self.time_embedding = TimestepEmbedding(boc[0], temb)
        self.text_time = c.get("addition_embed_type") == "text_time"
        if self.text_time:
            self.add_time_proj = Timesteps(c["addition_time_embed_dim"], c.get("flip_sin_to_cos", True),
                                           c.get("freq_shift", 0))
            self.add_embedding = TimestepEmbedding(c["projection_class_embeddings_input_dim"], temb)
        self.down_blocks = nn.ModuleList([])
        self.up_blocks = nn.ModuleList([])
        out = boc[0]
        for i, t in enumerate(downs):
            cin, out = out, boc[i]
            self.down_blocks.append(DownBlock(cin, out, temb, lpb[i], t.startswith("CrossAttn"), heads[i],
                                              cross[i], tl[i], lin, i < n - 1, eps, groups))
        self.mid_block = MidBlockCrossAttn(boc[-1], temb, heads[-1], cross[-1], tl[-1], lin, eps, groups)
        rb, rh, rl, rc, rt = (list(reversed(x)) for x in (boc, heads, lpb, cross, tl))
        out = rb[0]
        for i, t in enumerate(ups):
            prev, out = out, rb[i]
            cin = rb[min(i + 1, n - 1)]
            self.up_blocks.append(UpBlock(cin, prev, out, temb, rl[i] + 1, t.startswith("CrossAttn"), rh[i],
                                          rc[i], rt[i], lin, i < n - 1, eps, groups))
        self.conv_norm_out = nn.GroupNorm(groups, boc[0], eps=eps)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(boc[0], c.get("out_channels", 4), 3, padding=1)

    def forward(self, sample, timestep, context, text_embeds=None, time_ids=None):
        tag("stem")
        t = self.time_proj(timestep.expand(sample.shape[0])).to(sample.dtype)
        emb = self.time_embedding(t)
        if self.text_time:
            te = self.add_time_proj(time_ids.flatten()).reshape((text_embeds.shape[0], -1))
            emb = emb + self.add_embedding(torch.concat([text_embeds, te], dim=-1).to(emb.dtype))
        sample = self.conv_in(sample)
        res = (sample,)
        for blk in self.down_blocks:
            sample, r = blk(sample, emb, context)
            res += r
        sample = self.mid_block(sample, emb, context)
        for blk in self.up_blocks:
            r = res[-len(blk.resnets):]
            res = res[:-len(blk.resnets)]
            sample = blk(sample, r, emb, context)
        tag_next("head")
        return self.conv_out(self.conv_act(self.conv_norm_out(sample)))


# ------------------------------------------------------------------ AutoencoderKL
class VaeMid(nn.Module):
    """UNetMidBlock2D of the VAE: resnet, Attention(group_norm, residual, bias), resnet."""

    def __init__(self, c, groups):
        super().__init__()
        self.attentions = nn.ModuleList([Attention(c, 1, c, bias=True, group_norm=groups, eps=1e-6, residual=True)])
        self.resnets = nn.ModuleList([ResnetBlock2D(c, c, None, groups, 1e-6), ResnetBlock2D(c, c, None, groups, 1e-6)])

    def forward(self, x):
        # UNetMidBlock2D.forward: each result rebinds hidden_states
        x = self.resnets[0](x)
        x = self.attentions[0](x)
        return self.resnets[1](x)


class VaeDown(nn.Module):
    def __init__(self, cin, cout, layers, add, groups):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(cin if i == 0 else cout, cout, None, groups, 1e-6)
                                      for i in range(layers)])
        self.downsamplers = nn.ModuleList([Downsample2D(cout, 0)]) if add else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        return self.downsamplers[0](x) if self.downsamplers is not None else x


class VaeUp(nn.Module):
    def __init__(self, cin, cout, layers, add, groups):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(cin if i == 0 else cout, cout, None, groups, 1e-6)
                                      for i in range(layers)])
        self.upsamplers = nn.ModuleList([Upsample2D(cout)]) if add else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        return self.upsamplers[0](x) if self.upsamplers is not None else x


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        boc, g, lpb = c["block_out_channels"], c.get("norm_num_groups", 32), c.get("layers_per_block", 2)
        self.conv_in = nn.Conv2d(c.get("in_channels", 3), boc[0], 3, 1, 1)
        self.down_blocks = nn.ModuleList([])
        out = boc[0]
        for i in range(len(boc)):
            cin, out = out, boc[i]
            self.down_blocks.append(VaeDown(cin, out, lpb, i < len(boc) - 1, g))
        self.mid_block = VaeMid(boc[-1], g)
        self.conv_norm_out = nn.GroupNorm(g, boc[-1], eps=1e-6)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(boc[-1], 2 * c.get("latent_channels", 4), 3, padding=1)

    def forward(self, x):
        # Encoder.forward: each result rebinds sample (the caller holds a block's input while it runs)
        x = self.conv_in(x)
        for b in self.down_blocks:
            x = b(x)
        x = self.mid_block(x)
        x = self.conv_norm_out(x)
        x = self.conv_act(x)
        return self.conv_out(x)


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        boc, g, lpb = c["block_out_channels"], c.get("norm_num_groups", 32), c.get("layers_per_block", 2)
        self.conv_in = nn.Conv2d(c.get("latent_channels", 4), boc[-1], 3, 1, 1)
        self.up_blocks = nn.ModuleList([])
        self.mid_block = VaeMid(boc[-1], g)
        rb = list(reversed(boc))
        out = rb[0]
        for i in range(len(boc)):
            prev, out = out, rb[i]
            self.up_blocks.append(VaeUp(prev, out, lpb + 1, i < len(boc) - 1, g))
        self.conv_norm_out = nn.GroupNorm(g, boc[0], eps=1e-6)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(boc[0], c.get("out_channels", 3), 3, padding=1)

    def forward(self, z):
        z = self.mid_block(self.conv_in(z))
        for b in self.up_blocks:
            z = b(z)
        return self.conv_out(self.conv_act(self.conv_norm_out(z)))


class AutoencoderKL(nn.Module):
    def __init__(self, c):
        super().__init__()
        lat = c.get("latent_channels", 4)
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)
        self.quant_conv = nn.Conv2d(2 * lat, 2 * lat, 1) if c.get("use_quant_conv", True) else None
        self.post_quant_conv = nn.Conv2d(lat, lat, 1) if c.get("use_post_quant_conv", True) else None

    def encode(self, x):
        """latent_dist.sample(): mean + std * noise of the moments (DiagonalGaussianDistribution)."""
        h = self.encoder(x)
        if self.quant_conv is not None:
            h = self.quant_conv(h)
        mean, logvar = torch.chunk(h, 2, dim=1)
        logvar = torch.clamp(logvar, -30.0, 20.0)
        std = torch.exp(0.5 * logvar)
        return mean + std * torch.randn(mean.shape, dtype=h.dtype)


# ------------------------------------------------------------------ transformers (DiT, PixArt, SD3, Flux)
class AdaLayerNormZero(nn.Module):
    def __init__(self, dim, num_embeds=None):
        super().__init__()
        self.emb = CombinedTimestepLabelEmbeddings(num_embeds, dim) if num_embeds is not None else None
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 6 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, timestep=None, class_labels=None, emb=None):
        if self.emb is not None:
            emb = self.emb(timestep, class_labels, x.dtype)
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.linear(self.silu(emb)).chunk(6, dim=1)
        return self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None], gate_msa, shift_mlp, scale_mlp, gate_mlp


class AdaLayerNormZeroX(nn.Module):
    """SD35AdaLayerNormZeroX: nine modulation vectors (the second attention's three)."""

    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 9 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        sm, cm, gm, sp, cp, gp, sm2, cm2, gm2 = self.linear(self.silu(emb)).chunk(9, dim=1)
        n = self.norm(x)
        return n * (1 + cm[:, None]) + sm[:, None], gm, sp, cp, gp, n * (1 + cm2[:, None]) + sm2[:, None], gm2


class AdaLayerNormZeroSingle(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 3 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        shift_msa, scale_msa, gate_msa = self.linear(self.silu(emb)).chunk(3, dim=1)
        return self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None], gate_msa


class AdaLayerNormContinuous(nn.Module):
    def __init__(self, dim, cond_dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(cond_dim, 2 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, cond):
        scale, shift = torch.chunk(self.linear(self.silu(cond).to(x.dtype)), 2, dim=1)
        return self.norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]


class CombinedTimestepLabelEmbeddings(nn.Module):
    def __init__(self, num_classes, dim):
        super().__init__()
        self.time_proj = Timesteps(256, True, 1)
        self.timestep_embedder = TimestepEmbedding(256, dim)
        self.class_embedder = nn.Module()
        self.class_embedder.embedding_table = nn.Embedding(num_classes + 1, dim)  # LabelEmbedding, cfg row

    def forward(self, t, labels, dtype):
        if self.training:  # LabelEmbedding.token_drop (class_dropout_prob 0.1): new labels per call
            labels = torch.where(torch.rand(labels.shape[0]) < 0.1, self.class_embedder.embedding_table.num_embeddings - 1,
                                 labels)
        return self.timestep_embedder(self.time_proj(t).to(dtype)) + self.class_embedder.embedding_table(labels)


class PatchEmbed(nn.Module):
    def __init__(self, height, width, patch, cin, dim, pos_max=None):
        super().__init__()
        self.patch, self.pos_max = patch, pos_max
        self.proj = nn.Conv2d(cin, dim, kernel_size=patch, stride=patch)
        grid = pos_max if pos_max else int(((height // patch) * (width // patch)) ** 0.5)
        # sin-cos table (values irrelevant here); persistent only with pos_embed_max_size (SD3)
        self.register_buffer("pos_embed", torch.zeros(1, grid * grid, dim), persistent=bool(pos_max))

    def forward(self, latent):
        h, w = latent.shape[-2] // self.patch, latent.shape[-1] // self.patch
        x = self.proj(latent).flatten(2).transpose(1, 2)
        if self.pos_max:
            g = self.pos_max
            top, left = (g - h) // 2, (g - w) // 2
            pe = self.pos_embed.reshape(1, g, g, -1)[:, top:top + h, left:left + w, :].reshape(1, h * w, -1)
        else:
            pe = self.pos_embed
        return (x + pe).to(x.dtype)


class JointTransformerBlock(nn.Module):
    """SD3's MMDiT block; the attention is JointAttnProcessor2_0 with its SDPA on the math path."""

    def __init__(self, dim, heads, dim_head, context_pre_only, qk_norm=None, dual=False):
        super().__init__()
        self.context_pre_only, self.dual = context_pre_only, dual
        self.norm1 = AdaLayerNormZeroX(dim) if dual else AdaLayerNormZero(dim)
        self.norm1_context = AdaLayerNormContinuous(dim, dim) if context_pre_only else AdaLayerNormZero(dim)
        self.attn = Attention(dim, heads, dim_head, bias=True, added_kv=dim, context_pre_only=context_pre_only,
                              qk_norm=qk_norm, out_dim=dim)
        self.attn2 = Attention(dim, heads, dim_head, bias=True, qk_norm=qk_norm, out_dim=dim) if dual else None
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, "gelu-approximate", dim)
        if not context_pre_only:
            self.norm2_context = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
            self.ff_context = FeedForward(dim, "gelu-approximate", dim)

    def joint_attention(self, x, c):
        a, b = self.attn, x.shape[0]

        def heads(t):
            return t.view(b, -1, a.heads, a.dim_head).transpose(1, 2)

        q, k, v = heads(a.to_q(x)), heads(a.to_k(x)), heads(a.to_v(x))
        if a.norm_q is not None:
            q, k = a.norm_q(q), a.norm_k(k)
        cq, ck, cv = heads(a.add_q_proj(c)), heads(a.add_k_proj(c)), heads(a.add_v_proj(c))
        if a.norm_q is not None:
            cq, ck = a.norm_added_q(cq), a.norm_added_k(ck)
        q, k, v = torch.cat([q, cq], dim=2), torch.cat([k, ck], dim=2), torch.cat([v, cv], dim=2)
        o = sdpa_math(q, k, v).transpose(1, 2).reshape(b, -1, a.heads * a.dim_head).to(q.dtype)
        o, co = o[:, :x.shape[1]], o[:, x.shape[1]:]
        if not self.context_pre_only:
            co = a.to_add_out(co)
        return a.to_out[1](a.to_out[0](o)), co

    def self_attention2(self, n):
        a, b = self.attn2, n.shape[0]

        def heads(t):
            return t.view(b, -1, a.heads, a.dim_head).transpose(1, 2)

        q, k, v = heads(a.to_q(n)), heads(a.to_k(n)), heads(a.to_v(n))
        if a.norm_q is not None:
            q, k = a.norm_q(q), a.norm_k(k)
        o = sdpa_math(q, k, v).transpose(1, 2).reshape(b, -1, a.heads * a.dim_head).to(q.dtype)
        return a.to_out[1](a.to_out[0](o))

    def forward(self, x, c, temb):
        if self.dual:
            n, gate_msa, shift_mlp, scale_mlp, gate_mlp, n2, gate_msa2 = self.norm1(x, emb=temb)
        else:
            n, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(x, emb=temb)
        if self.context_pre_only:
            nc = self.norm1_context(c, temb)
        else:
            nc, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(c, emb=temb)
        a, ca = self.joint_attention(n, nc)
        x = x + gate_msa.unsqueeze(1) * a
        if self.dual:
            x = x + gate_msa2.unsqueeze(1) * self.self_attention2(n2)
        n = self.norm2(x) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        x = x + gate_mlp.unsqueeze(1) * self.ff(n)
        if self.context_pre_only:
            return None, x
        c = c + c_gate_msa.unsqueeze(1) * ca
        nc = self.norm2_context(c) * (1 + c_scale_mlp[:, None]) + c_shift_mlp[:, None]
        c = c + c_gate_mlp.unsqueeze(1) * self.ff_context(nc)
        return c, x


class SD3Transformer2DModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        heads, hd = c.get("num_attention_heads", 18), c.get("attention_head_dim", 64)
        dim, n = heads * hd, c.get("num_layers", 18)
        self.patch = c.get("patch_size", 2)
        self.out_channels = c.get("out_channels") or c.get("in_channels", 16)
        self.pos_embed = PatchEmbed(c.get("sample_size", 128), c.get("sample_size", 128), self.patch,
                                    c.get("in_channels", 16), dim, c.get("pos_embed_max_size", 96))
        self.time_text_embed = nn.Module()
        self.time_text_embed.time_proj = Timesteps(256, True, 0)
        self.time_text_embed.timestep_embedder = TimestepEmbedding(256, dim)
        self.time_text_embed.text_embedder = TextProjection(c.get("pooled_projection_dim", 2048), dim, "silu")
        self.context_embedder = nn.Linear(c.get("joint_attention_dim", 4096), c.get("caption_projection_dim", 1152))
        dual = c.get("dual_attention_layers", [])
        self.transformer_blocks = nn.ModuleList([
            JointTransformerBlock(dim, heads, hd, i == n - 1, c.get("qk_norm"), i in dual) for i in range(n)])
        self.norm_out = AdaLayerNormContinuous(dim, dim)
        self.proj_out = nn.Linear(dim, self.patch * self.patch * self.out_channels)

    def forward(self, latent, context, pooled, timestep):
        tag("stem")
        h, w = latent.shape[-2:]
        x = self.pos_embed(latent).contiguous()
        tte = self.time_text_embed
        temb = tte.timestep_embedder(tte.time_proj(timestep).to(pooled.dtype)) + tte.text_embedder(pooled)
        c = self.context_embedder(context)
        for blk in self.transformer_blocks:
            tag_next("block")
            c, x = ckpt(blk, x, c, temb)
        tag_next("head")
        x = self.proj_out(self.norm_out(x, temb))
        p = self.patch
        x = x.reshape(x.shape[0], h // p, w // p, p, p, self.out_channels)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(x.shape[0], self.out_channels, h, w)


def rope(x, cos, sin):
    """diffusers apply_rotary_emb(use_real=True, use_real_unbind_dim=-1), sequence_dim=1:
    x [B, S, H, D], cos/sin [S, D]; pairs (x0, x1) rotated, computed in fp32, cast back."""
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    x_rot = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
    return (x.float() * cos + x_rot.float() * sin).to(x.dtype)


class FluxAttention(nn.Module):
    def __init__(self, dim, heads, dim_head, added_kv=None, pre_only=False):
        super().__init__()
        self.heads, self.dim_head = heads, dim_head
        self.norm_q, self.norm_k = RMSNorm(dim_head, 1e-6), RMSNorm(dim_head, 1e-6)
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.pre_only = pre_only
        if not pre_only:
            self.to_out = nn.ModuleList([nn.Linear(dim, dim), nn.Dropout(0.0)])
        self.added = added_kv is not None
        if self.added:
            self.norm_added_q, self.norm_added_k = RMSNorm(dim_head, 1e-6), RMSNorm(dim_head, 1e-6)
            self.add_q_proj, self.add_k_proj = nn.Linear(added_kv, dim), nn.Linear(added_kv, dim)
            self.add_v_proj, self.to_add_out = nn.Linear(added_kv, dim), nn.Linear(dim, dim)

    def forward(self, x, c=None, cos=None, sin=None):
        # FluxAttnProcessor; dispatch_attention_fn (native SDPA) on [B, S, H, D]
        u = lambda t: t.unflatten(-1, (-1, self.dim_head))  # noqa: E731
        q, k, v = self.norm_q(u(self.to_q(x))), self.norm_k(u(self.to_k(x))), u(self.to_v(x))
        if self.added:
            cq, ck = self.norm_added_q(u(self.add_q_proj(c))), self.norm_added_k(u(self.add_k_proj(c)))
            cv = u(self.add_v_proj(c))
            q, k, v = torch.cat([cq, q], dim=1), torch.cat([ck, k], dim=1), torch.cat([cv, v], dim=1)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        o = sdpa_math(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)
        o = o.flatten(2, 3).to(q.dtype)
        if self.added:
            co, o = o.split_with_sizes([c.shape[1], o.shape[1] - c.shape[1]], dim=1)
            o = self.to_out[1](self.to_out[0](o.contiguous()))
            return o, self.to_add_out(co.contiguous())
        return o


class FluxTransformerBlock(nn.Module):
    def __init__(self, dim, heads, dim_head):
        super().__init__()
        self.norm1, self.norm1_context = AdaLayerNormZero(dim), AdaLayerNormZero(dim)
        self.attn = FluxAttention(dim, heads, dim_head, added_kv=dim)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, "gelu-approximate", dim)
        self.norm2_context = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff_context = FeedForward(dim, "gelu-approximate", dim)

    def forward(self, x, c, temb, cos, sin):
        n, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(x, emb=temb)
        nc, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(c, emb=temb)
        a, ca = self.attn(n, nc, cos, sin)
        x = x + gate_msa.unsqueeze(1) * a
        n = self.norm2(x) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        x = x + gate_mlp.unsqueeze(1) * self.ff(n)
        c = c + c_gate_msa.unsqueeze(1) * ca
        nc = self.norm2_context(c) * (1 + c_scale_mlp[:, None]) + c_shift_mlp[:, None]
        c = c + c_gate_mlp.unsqueeze(1) * self.ff_context(nc)
        if c.dtype == torch.float16:
            c = c.clip(-65504, 65504)
        return c, x


class FluxSingleTransformerBlock(nn.Module):
    def __init__(self, dim, heads, dim_head, mlp_ratio=4.0):
        super().__init__()
        mlp = int(dim * mlp_ratio)
        self.norm = AdaLayerNormZeroSingle(dim)
        self.proj_mlp = nn.Linear(dim, mlp)
        self.act_mlp = nn.GELU(approximate="tanh")
        self.proj_out = nn.Linear(dim + mlp, dim)
        self.attn = FluxAttention(dim, heads, dim_head, pre_only=True)

    def forward(self, x, c, temb, cos, sin):
        s = c.shape[1]
        x = torch.cat([c, x], dim=1)
        residual = x
        n, gate = self.norm(x, emb=temb)
        m = self.act_mlp(self.proj_mlp(n))
        a = self.attn(n, cos=cos, sin=sin)
        x = residual + gate.unsqueeze(1) * self.proj_out(torch.cat([a, m], dim=2))
        if x.dtype == torch.float16:
            x = x.clip(-65504, 65504)
        return x[:, :s], x[:, s:]


class FluxTransformer2DModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        heads, hd = c.get("num_attention_heads", 24), c.get("attention_head_dim", 128)
        dim = heads * hd
        self.axes = c.get("axes_dims_rope", [16, 56, 56])
        self.pos_embed = nn.Module()  # FluxPosEmbed (no parameters; rope_tables computes it)
        self.time_text_embed = nn.Module()
        self.time_text_embed.time_proj = Timesteps(256, True, 0)
        self.time_text_embed.timestep_embedder = TimestepEmbedding(256, dim)
        self.guidance = c.get("guidance_embeds", False)
        if self.guidance:
            self.time_text_embed.guidance_embedder = TimestepEmbedding(256, dim)
        self.time_text_embed.text_embedder = TextProjection(c.get("pooled_projection_dim", 768), dim, "silu")
        self.context_embedder = nn.Linear(c.get("joint_attention_dim", 4096), dim)
        self.x_embedder = nn.Linear(c.get("in_channels", 64), dim)
        self.transformer_blocks = nn.ModuleList([FluxTransformerBlock(dim, heads, hd)
                                                 for _ in range(c.get("num_layers", 19))])
        self.single_transformer_blocks = nn.ModuleList([FluxSingleTransformerBlock(dim, heads, hd)
                                                        for _ in range(c.get("num_single_layers", 38))])
        self.norm_out = AdaLayerNormContinuous(dim, dim)
        p = c.get("patch_size", 1)
        self.proj_out = nn.Linear(dim, p * p * (c.get("out_channels") or c.get("in_channels", 64)))

    def rope_tables(self, n):
        """FluxPosEmbed over n ids: per axis cos/sin of length axes_dim (repeat_interleave_real)."""
        ids = torch.zeros(n, len(self.axes))
        ids[:, 1] = torch.arange(n).float()
        cos, sin = [], []
        for i, d in enumerate(self.axes):
            freqs = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
            f = torch.outer(ids[:, i].double(), freqs)
            cos.append(f.cos().repeat_interleave(2, dim=1).float())
            sin.append(f.sin().repeat_interleave(2, dim=1).float())
        return torch.cat(cos, dim=-1), torch.cat(sin, dim=-1)

    def forward(self, x, context, pooled, timestep, guidance=None):
        tag("stem")
        x = self.x_embedder(x)
        tte = self.time_text_embed
        temb = tte.timestep_embedder(tte.time_proj(timestep * 1000).to(x.dtype))
        if self.guidance:
            temb = temb + tte.guidance_embedder(tte.time_proj(guidance * 1000).to(x.dtype))
        temb = temb + tte.text_embedder(pooled)
        c = self.context_embedder(context)
        cos, sin = self.rope_tables(c.shape[1] + x.shape[1])
        for blk in self.transformer_blocks:
            tag_next("block")
            c, x = ckpt(blk, x, c, temb, cos, sin)
        for blk in self.single_transformer_blocks:
            tag_next("single")
            c, x = ckpt(blk, x, c, temb, cos, sin)
        tag_next("head")
        return self.proj_out(self.norm_out(x, temb))


class DiTTransformer2DModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        heads, hd = c.get("num_attention_heads", 16), c.get("attention_head_dim", 72)
        dim = heads * hd
        self.patch, self.cin = c.get("patch_size", 2), c.get("in_channels", 4)
        self.out_channels = c.get("out_channels") or self.cin
        s = c.get("sample_size", 32)
        self.pos_embed = PatchEmbed(s, s, self.patch, self.cin, dim)
        self.transformer_blocks = nn.ModuleList([
            BasicTransformerBlock(dim, heads, hd, None, "ada_norm_zero", c.get("attention_bias", True),
                                  c.get("num_embeds_ada_norm", 1000), "gelu-approximate", c.get("norm_eps", 1e-5),
                                  c.get("norm_elementwise_affine", False))
            for _ in range(c.get("num_layers", 28))])
        self.norm_out = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.proj_out_1 = nn.Linear(dim, 2 * dim)
        self.proj_out_2 = nn.Linear(dim, self.patch * self.patch * self.out_channels)

    def forward(self, latent, timestep, class_labels):
        tag("stem")
        h, w = latent.shape[-2] // self.patch, latent.shape[-1] // self.patch
        x = self.pos_embed(latent)
        for blk in self.transformer_blocks:
            tag_next("block")
            x = ckpt(blk, x, None, timestep, class_labels)
        tag_next("head")
        cond = self.transformer_blocks[0].norm1.emb(timestep, class_labels, x.dtype)
        shift, scale = self.proj_out_1(F.silu(cond)).chunk(2, dim=1)
        x = self.proj_out_2(self.norm_out(x) * (1 + scale[:, None]) + shift[:, None])
        p, c = self.patch, self.out_channels
        x = torch.einsum("nhwpqc->nchpwq", x.reshape(-1, h, w, p, p, c))
        return x.reshape(-1, c, h * p, w * p)


class PixArtTransformer2DModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        heads, hd = c.get("num_attention_heads", 16), c.get("attention_head_dim", 72)
        dim = heads * hd
        self.patch, s = c.get("patch_size", 2), c.get("sample_size", 128)
        self.pos_embed = PatchEmbed(s, s, self.patch, c.get("in_channels", 4), dim)
        self.transformer_blocks = nn.ModuleList([
            BasicTransformerBlock(dim, heads, hd, c.get("cross_attention_dim", 1152), "ada_norm_single",
                                  c.get("attention_bias", True), None, "gelu-approximate", c.get("norm_eps", 1e-6),
                                  c.get("norm_elementwise_affine", False))
            for _ in range(c.get("num_layers", 28))])
        self.norm_out = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.scale_shift_table = nn.Parameter(torch.randn(2, dim) / dim ** 0.5)
        self.proj_out = nn.Linear(dim, self.patch * self.patch * (c.get("out_channels") or 8))
        extra = c.get("use_additional_conditions")
        if extra is None:
            extra = s == 128
        self.adaln_single = nn.Module()
        self.adaln_single.emb = nn.Module()
        e = self.adaln_single.emb
        e.time_proj = Timesteps(256, True, 0)
        e.timestep_embedder = TimestepEmbedding(256, dim)
        if extra:
            e.additional_condition_proj = Timesteps(256, True, 0)
            e.resolution_embedder = TimestepEmbedding(256, dim // 3)
            e.aspect_ratio_embedder = TimestepEmbedding(256, dim // 3)
        self.adaln_single.silu = nn.SiLU()
        self.adaln_single.linear = nn.Linear(dim, 6 * dim)
        if c.get("caption_channels") is not None:
            self.caption_projection = TextProjection(c["caption_channels"], dim)
        self.out_channels = c.get("out_channels") or 8

    def forward(self, latent, caption, timestep):
        tag("stem")
        b = latent.shape[0]
        h, w = latent.shape[-2] // self.patch, latent.shape[-1] // self.patch
        x = self.pos_embed(latent)
        e = self.adaln_single.emb
        embedded = e.timestep_embedder(e.time_proj(timestep).to(x.dtype))
        t6 = self.adaln_single.linear(self.adaln_single.silu(embedded))
        c = self.caption_projection(caption).view(b, -1, x.shape[-1])
        for blk in self.transformer_blocks:
            tag_next("block")
            x = ckpt(blk, x, c, t6)
        tag_next("head")
        shift, scale = (self.scale_shift_table[None] + embedded[:, None]).chunk(2, dim=1)
        x = self.proj_out(self.norm_out(x) * (1 + scale) + shift)
        p, oc = self.patch, self.out_channels
        x = torch.einsum("nhwpqc->nchpwq", x.reshape(-1, h, w, p, p, oc))
        return x.reshape(-1, oc, h * p, w * p)
