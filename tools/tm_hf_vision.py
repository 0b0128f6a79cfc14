"""Small re-implementations of HuggingFace transformers' vision and speech models, op for op as
their eager modeling code runs them (transformers is not installed on the calibration machine:
Debian's torch 1.13 only). Module and parameter names follow the HF classes, so that the state
dicts can be compared with trainmem's tensor lists. Sources (huggingface/transformers):
- ViT: src/transformers/models/vit/modeling_vit.py @005db8208dee358fe8fe63ae3cc49dd054aad48d
- DINOv2: src/transformers/models/dinov2/modeling_dinov2.py @015e68769f9823df27f5f7372dc155277e6ff7e6
- CLIP: src/transformers/models/clip/modeling_clip.py @000f1ffdbf1ce6190cc8863af9a2fff817590937
Each model is a chain (embeddings, layers, head) like tools/tm_vision_models.py: forward(x,
labels) returns the loss; `ckpt` checkpoints every layer (HF gradient_checkpointing), `region`
tags the chain layer about to run.

Shared by tools/measure_hf_vision.py. Run with /usr/bin/python3 (torch 1.13).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

ACT = {"gelu": nn.GELU, "relu": nn.ReLU, "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh")}


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def act(name):
    return QuickGELU() if name == "quick_gelu" else ACT[name]()


def eager_attention(q, k, v, scaling, dropout, training, mask=None):
    """eager_attention_forward (ViT / CLIP): returns [B, T, heads, d] contiguous."""
    w = torch.matmul(q, k.transpose(-1, -2)) * scaling
    if mask is not None:
        w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=dropout, training=training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


class ChainModel(nn.Module):
    """embeddings -> layers -> head(x, labels); `ckpt` checkpoints every layer."""

    def __init__(self):
        super().__init__()
        self.ckpt = False
        self.region = None

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def run(self, x, labels, embed, layers, head):
        self._tag("stem")
        x = embed(x)
        for i, layer in enumerate(layers):
            self._tag(f"block{i}")
            x = checkpoint(layer, x) if self.ckpt else layer(x)
        self._tag("head")
        return head(x, labels)


# ---------------------------------------------------------------- ViT / DINOv2
class ViTSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_attention_heads"]
        self.d = h // self.heads
        self.query = nn.Linear(h, h, bias=c.get("qkv_bias", True))
        self.key = nn.Linear(h, h, bias=c.get("qkv_bias", True))
        self.value = nn.Linear(h, h, bias=c.get("qkv_bias", True))
        self.dropout = nn.Dropout(c.get("attention_probs_dropout_prob", 0.0))
        self.p = c.get("attention_probs_dropout_prob", 0.0)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.d)).permute(0, 2, 1, 3)

    def forward(self, x):
        k = self.split(self.key(x))
        v = self.split(self.value(x))
        q = self.split(self.query(x))
        ctx = eager_attention(q, k, v, self.d ** -0.5, self.p, self.training)
        return ctx.view(ctx.size()[:-2] + (self.heads * self.d,))


class Dense(nn.Module):
    """ViTSelfOutput / ViTOutput: dense, dropout."""

    def __init__(self, i, o, p):
        super().__init__()
        self.dense = nn.Linear(i, o)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.dense(x))


class ViTAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTSelfAttention(c)
        self.output = Dense(c["hidden_size"], c["hidden_size"], c.get("hidden_dropout_prob", 0.0))

    def forward(self, x):
        return self.output(self.attention(x))


class ViTIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.intermediate_act_fn = act(c.get("hidden_act", "gelu"))

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class ViTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.attention = ViTAttention(c)
        self.intermediate = ViTIntermediate(c)
        self.output = Dense(c["intermediate_size"], h, c.get("hidden_dropout_prob", 0.0))
        self.layernorm_before = nn.LayerNorm(h, eps=1e-12)
        self.layernorm_after = nn.LayerNorm(h, eps=1e-12)

    def forward(self, x):
        x = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(x))) + x


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):  # transformers' drop_path (beit / dinov2)
        if self.p == 0.0 or not self.training:
            return x
        keep = 1 - self.p
        r = keep + torch.rand((x.shape[0],) + (1,) * (x.ndim - 1), dtype=x.dtype)
        r.floor_()
        return x.div(keep) * r


class LayerScale(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.lambda1 = nn.Parameter(torch.ones(h))

    def forward(self, x):
        return x * self.lambda1


class Dinov2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.fc1 = nn.Linear(h, int(h * c.get("mlp_ratio", 4)))
        self.activation = act(c.get("hidden_act", "gelu"))
        self.fc2 = nn.Linear(int(h * c.get("mlp_ratio", 4)), h)

    def forward(self, x):
        return self.fc2(self.activation(self.fc1(x)))


class Dinov2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTSelfAttention(c)
        del self.attention.dropout  # Dinov2SelfAttention keeps a probability, not a module
        self.output = Dense(c["hidden_size"], c["hidden_size"], c.get("hidden_dropout_prob", 0.0))

    def forward(self, x):
        return self.output(self.attention(x))


class Dinov2Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.norm1 = nn.LayerNorm(h, eps=1e-6)
        self.attention = Dinov2Attention(c)
        self.layer_scale1 = LayerScale(h)
        self.drop_path = DropPath(c.get("drop_path_rate", 0.0)) if c.get("drop_path_rate", 0.0) > 0 else nn.Identity()
        self.norm2 = nn.LayerNorm(h, eps=1e-6)
        self.mlp = Dinov2MLP(c)
        self.layer_scale2 = LayerScale(h)

    def forward(self, x):
        x = self.drop_path(self.layer_scale1(self.attention(self.norm1(x)))) + x
        return self.drop_path(self.layer_scale2(self.mlp(self.norm2(x)))) + x


class PatchEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        p = c["patch_size"]
        self.projection = nn.Conv2d(c.get("num_channels", 3), c["hidden_size"], kernel_size=p, stride=p)

    def forward(self, x):
        return self.projection(x).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    """ViTEmbeddings (DeiT: + distillation token; DINOv2: + mask token, interpolated table)."""

    def __init__(self, c, kind):
        super().__init__()
        h, p, s = c["hidden_size"], c["patch_size"], c["image_size"]
        self.kind = kind
        self.cls_token = nn.Parameter(torch.randn(1, 1, h))
        if kind == "deit":
            self.distillation_token = nn.Parameter(torch.zeros(1, 1, h))
        if kind == "dinov2":
            self.mask_token = nn.Parameter(torch.zeros(1, h))
        self.patch_embeddings = PatchEmbeddings(c)
        tokens = 2 if kind == "deit" else 1
        self.position_embeddings = nn.Parameter(torch.randn(1, (s // p) ** 2 + tokens, h))
        self.dropout = nn.Dropout(c.get("hidden_dropout_prob", 0.0))

    def forward(self, x):
        b = x.shape[0]
        e = self.patch_embeddings(x)
        parts = [self.cls_token.expand(b, -1, -1)]
        if self.kind == "deit":
            parts.append(self.distillation_token.expand(b, -1, -1))
        e = torch.cat(parts + [e], dim=1)
        return self.dropout(e + self.position_embeddings)


class ViTForImageClassification(ChainModel):
    """ViTForImageClassification / Dinov2ForImageClassification (kind="dinov2") with the
    encoder's modules under `vit.` / `dinov2.`."""

    def __init__(self, c, kind="vit"):
        super().__init__()
        self.kind = kind
        base = nn.Module()
        base.embeddings = ViTEmbeddings(c, kind)
        base.encoder = nn.Module()
        layer = Dinov2Layer if kind == "dinov2" else ViTLayer
        base.encoder.layer = nn.ModuleList([layer(c) for _ in range(c["num_hidden_layers"])])
        base.layernorm = nn.LayerNorm(c["hidden_size"], eps=1e-12)
        setattr(self, kind, base)
        self.base = [base]
        h = c["hidden_size"]
        self.classifier = nn.Linear(2 * h if kind == "dinov2" else h, c["num_labels"])

    def head(self, x, labels):
        x = self.base[0].layernorm(x)
        if self.kind == "dinov2":
            x = torch.cat([x[:, 0], x[:, 1:].mean(dim=1)], dim=1)
        else:
            x = x[:, 0, :]
        return F.cross_entropy(self.classifier(x).view(-1, self.classifier.out_features), labels.view(-1))

    def forward(self, x, labels):
        b = self.base[0]
        return self.run(x, labels, b.embeddings, list(b.encoder.layer), self.head)


# ---------------------------------------------------------------- CLIP vision
class CLIPAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_attention_heads"]
        self.d = h // self.heads
        self.k_proj, self.v_proj = nn.Linear(h, h), nn.Linear(h, h)
        self.q_proj, self.out_proj = nn.Linear(h, h), nn.Linear(h, h)
        self.p = c.get("attention_dropout", 0.0)

    def forward(self, x, mask=None):
        b, t, h = x.shape
        q = self.q_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        ctx = eager_attention(q, k, v, self.d ** -0.5, self.p, self.training, mask)
        return self.out_proj(ctx.reshape(b, t, -1).contiguous())


class CLIPMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.activation_fn = act(c.get("hidden_act", "quick_gelu"))
        self.fc1 = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.fc2 = nn.Linear(c["intermediate_size"], c["hidden_size"])

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class CLIPEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.self_attn = CLIPAttention(c)
        self.layer_norm1 = nn.LayerNorm(h)
        self.mlp = CLIPMLP(c)
        self.layer_norm2 = nn.LayerNorm(h)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class CLIPVisionEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, p, s = c["hidden_size"], c["patch_size"], c["image_size"]
        self.class_embedding = nn.Parameter(torch.randn(h))
        self.patch_embedding = nn.Conv2d(c.get("num_channels", 3), h, kernel_size=p, stride=p, bias=False)
        n = (s // p) ** 2 + 1
        self.position_embedding = nn.Embedding(n, h)
        self.register_buffer("position_ids", torch.arange(n).expand((1, -1)), persistent=False)

    def forward(self, x):
        b = x.shape[0]
        e = self.patch_embedding(x).flatten(2).transpose(1, 2)
        e = torch.cat([self.class_embedding.expand(b, 1, -1), e], dim=1)
        return e + self.position_embedding(self.position_ids)


class CLIPVisionModel(ChainModel):
    """CLIPVisionModel (vision_model.*) trained with a linear probe on the pooled output: the
    stand-in head trainmem uses for a bare vision tower is its pooled output's mean."""

    def __init__(self, c):
        super().__init__()
        vm = nn.Module()
        vm.embeddings = CLIPVisionEmbeddings(c)
        vm.pre_layrnorm = nn.LayerNorm(c["hidden_size"])
        vm.encoder = nn.Module()
        vm.encoder.layers = nn.ModuleList([CLIPEncoderLayer(c) for _ in range(c["num_hidden_layers"])])
        vm.post_layernorm = nn.LayerNorm(c["hidden_size"])
        self.vision_model = vm

    def forward(self, x, labels):
        vm = self.vision_model

        def head(h, labels):
            return vm.post_layernorm(h[:, 0, :]).view(-1).mean()
        return self.run(x, labels, lambda t: vm.pre_layrnorm(vm.embeddings(t)), list(vm.encoder.layers), head)
