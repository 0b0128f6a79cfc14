"""torchvision models (0.14, the Debian package) run as the chains trainmem plans on: a stem, one
layer per block, a head that ends in the loss. The ops are torchvision's own (its modules are
called in the order their forward() calls them); only the grouping into chain layers is ours,
so that a measurement can be attributed per layer and blocks can be checkpointed one by one,
as trainmem's placement strategies do for torchvision models (which have no built-in
checkpointing). The chain layers are those of cpp/src/net/tv_*.cpp.

Shared by tools/measure_vision.py. Run with /usr/bin/python3 (torch 1.13, torchvision 0.14).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.checkpoint import checkpoint


class Chain(nn.Module):
    """stem -> blocks -> head(x, labels) -> loss. `ckpt`: checkpoint every block (reentrant,
    torch 1.13's default). `region`: a callback told the chain layer about to run."""

    def __init__(self, model, stem, blocks, head):
        super().__init__()
        self.model = model  # owns the parameters (state_dict as torchvision's, under "model.")
        self._stem, self._blocks, self._head = stem, blocks, head
        self.ckpt = False
        self.region = None

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def forward(self, x, labels):
        self._tag("stem")
        x = self._stem(x)
        for i, blk in enumerate(self._blocks):
            self._tag(f"block{i}")
            x = checkpoint(blk, x) if self.ckpt else blk(x)
        self._tag("head")
        return F.cross_entropy(self._head(x), labels)


def seq(*fns):
    def run(x):
        for f in fns:
            x = f(x)
        return x
    return run


def resnet(m):
    stem = seq(m.conv1, m.bn1, m.relu, m.maxpool)
    blocks = [b for layer in (m.layer1, m.layer2, m.layer3, m.layer4) for b in layer]
    head = seq(m.avgpool, lambda x: torch.flatten(x, 1), m.fc)
    return stem, blocks, head


def vit(m):
    def stem(x):
        x = m._process_input(x)
        x = torch.cat([m.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return m.encoder.dropout(x + m.encoder.pos_embedding)
    blocks = list(m.encoder.layers)
    head = seq(m.encoder.ln, lambda x: x[:, 0], m.heads)
    return stem, blocks, head


def convnext(m):
    # features: [stem, stage1, down1, stage2, down2, stage3, down3, stage4]; a stage's
    # downsampling (LayerNorm2d + conv) runs with the stage's first block
    f = m.features
    blocks = []
    for i in range(1, len(f), 2):
        stage = list(f[i])
        down = f[i - 1] if i > 1 else None
        blocks.append(seq(down, stage[0]) if down is not None else stage[0])
        blocks += stage[1:]
    head = seq(m.avgpool, m.classifier)
    return f[0], blocks, head


def swin(m):
    f = m.features  # [patch embedding, stage1, merge1, stage2, merge2, stage3, merge3, stage4]
    blocks = []
    for i in range(1, len(f), 2):
        stage = list(f[i])
        merge = f[i - 1] if i > 1 else None
        blocks.append(seq(merge, stage[0]) if merge is not None else stage[0])
        blocks += stage[1:]
    head = seq(m.norm, m.permute, m.avgpool, m.flatten, m.head)
    return f[0], blocks, head


def efficientnet(m):
    f = m.features  # [stem, stages..., last 1x1 conv]
    blocks = [b for stage in f[1:-1] for b in stage]
    head = seq(f[-1], m.avgpool, lambda x: torch.flatten(x, 1), m.classifier)
    return f[0], blocks, head


def mobilenet_v3(m):
    f = m.features  # [stem, 15 (or 11) InvertedResidual, last 1x1 conv]
    head = seq(f[-1], m.avgpool, lambda x: torch.flatten(x, 1), m.classifier)
    return f[0], list(f[1:-1]), head


def densenet(m):
    f = m.features
    stem = seq(f.conv0, f.norm0, f.relu0, f.pool0)
    blocks = [mod for name, mod in f.named_children() if name.startswith(("denseblock", "transition"))]

    def head(x):
        x = F.relu(f.norm5(x), inplace=True)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return m.classifier(torch.flatten(x, 1))
    return stem, blocks, head


FAMILIES = {"resnet": resnet, "resnext": resnet, "wide_resnet": resnet, "vit": vit, "convnext": convnext,
            "swin": swin, "efficientnet": efficientnet, "mobilenet_v3": mobilenet_v3, "densenet": densenet}


def build(arch, num_classes=1000, image_size=224):
    kwargs = {"num_classes": num_classes}
    if arch.startswith("vit"):
        kwargs["image_size"] = image_size
    m = getattr(torchvision.models, arch)(weights=None, **kwargs)
    family = next(f for f in sorted(FAMILIES, key=len, reverse=True) if arch.startswith(f))
    stem, blocks, head = FAMILIES[family](m)
    return Chain(m, stem, blocks, head)
