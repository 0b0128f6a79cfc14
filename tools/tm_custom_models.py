"""Custom PyTorch modules for the trace calibration (tools/measure_traced.py): shapes torchvision
does not have. Each exercises something the tracer must follow exactly:

- UNetish: skip connections across the whole network (encoder features concatenated into the
  decoder, so no clean cut exists inside the U), in-place ReLUs and an in-place add_.
- SharedTwice: one block applied twice (shared weights, two sets of activations), a detached
  branch (statistics computed from .detach(): no gradient flows back through it), a frozen
  layer (requires_grad=False) and a parameter the forward never uses.
- TinyLM: a causal transformer language model with tied input/output embeddings, dropout, GELU
  and eager attention: sizes in the batch and the sequence length (b*s*s attention scores).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = self.bn2(self.conv2(x))
        y.add_(x)  # in place: the residual
        return F.relu(y, inplace=True)


class UNetish(nn.Module):
    def __init__(self, ch=16, classes=5):
        super().__init__()
        self.enc1 = ConvBlock(3, ch)
        self.enc2 = ConvBlock(ch, 2 * ch)
        self.enc3 = ConvBlock(2 * ch, 4 * ch)
        self.up2 = nn.ConvTranspose2d(4 * ch, 2 * ch, 2, stride=2)
        self.dec2 = ConvBlock(4 * ch, 2 * ch)
        self.up1 = nn.ConvTranspose2d(2 * ch, ch, 2, stride=2)
        self.dec1 = ConvBlock(2 * ch, ch)
        self.head = nn.Conv2d(ch, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(e3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.norm = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class SharedTwice(nn.Module):
    def __init__(self, d_in=256, h=512, classes=10):
        super().__init__()
        self.frozen = nn.Linear(d_in, d_in)
        self.frozen.requires_grad_(False)
        self.inp = nn.Linear(d_in, h)
        self.block = Block(h)  # applied twice
        self.scale = nn.Linear(h, h)
        self.out = nn.Linear(h, classes)
        self.unused = nn.Parameter(torch.zeros(1000))  # never read by forward

    def forward(self, x):
        x = torch.relu_(self.inp(self.frozen(x)))
        x = self.block(x)
        # detached branch: a per-sample statistic, no gradient through it
        stat = x.detach().pow(2).mean(dim=-1, keepdim=True).add(1.0).rsqrt()
        x = self.block(x * stat)
        x = torch.tanh(self.scale(x))
        return self.out(x)


class Attention(nn.Module):
    def __init__(self, h, heads, p):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(h // self.heads)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        w = w.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        o = (self.drop(w) @ v).transpose(1, 2).reshape(b, s, h)
        return self.proj(o)


class LMBlock(nn.Module):
    def __init__(self, h, heads, p):
        super().__init__()
        self.ln1 = nn.LayerNorm(h)
        self.attn = Attention(h, heads, p)
        self.ln2 = nn.LayerNorm(h)
        self.mlp = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h), nn.Dropout(p))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=2000, h=128, heads=4, layers=3, positions=512, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Embedding(positions, h)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(LMBlock(h, heads, p) for _ in range(layers))
        self.ln = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # tied

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.tok(ids) + self.pos(pos))
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln(x))
