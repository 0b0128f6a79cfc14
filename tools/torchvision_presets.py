"""Writes cpp/data/models/torchvision-<arch>.json: one preset per torchvision builder, its config
the builder's name and arguments (cpp/src/io/net_config.cpp) and its published parameter count
from torchvision's own weights table (<Weights>.DEFAULT.meta["num_params"], torchvision 0.14).

Run: /usr/bin/python3 tools/torchvision_presets.py
"""
import json
import os

import torchvision.models as tvm

PRESETS = {  # id -> (name, weights enum)
    "resnet18": ("ResNet-18 (torchvision)", "ResNet18_Weights"),
    "resnet34": ("ResNet-34 (torchvision)", "ResNet34_Weights"),
    "resnet50": ("ResNet-50 (torchvision)", "ResNet50_Weights"),
    "resnet101": ("ResNet-101 (torchvision)", "ResNet101_Weights"),
    "vit_b_16": ("ViT-B/16 (torchvision)", "ViT_B_16_Weights"),
    "vit_b_32": ("ViT-B/32 (torchvision)", "ViT_B_32_Weights"),
    "vit_l_16": ("ViT-L/16 (torchvision)", "ViT_L_16_Weights"),
    "convnext_tiny": ("ConvNeXt-Tiny (torchvision)", "ConvNeXt_Tiny_Weights"),
    "swin_t": ("Swin-T (torchvision)", "Swin_T_Weights"),
    "efficientnet_b0": ("EfficientNet-B0 (torchvision)", "EfficientNet_B0_Weights"),
    "mobilenet_v3_large": ("MobileNetV3-Large (torchvision)", "MobileNet_V3_Large_Weights"),
    "densenet121": ("DenseNet-121 (torchvision)", "DenseNet121_Weights"),
}


def main():
    out_dir = os.path.join(os.path.dirname(__file__), "..", "cpp", "data", "models")
    os.makedirs(out_dir, exist_ok=True)
    for arch, (name, weights) in PRESETS.items():
        w = getattr(tvm, weights)
        # the 1000-class ImageNet weights (DEFAULT; vit_b_16's and vit_l_16's DEFAULT is 224 px)
        meta = w.IMAGENET1K_V1.meta
        preset = {
            "id": "torchvision/" + arch,
            "name": name,
            "source": f"torchvision.models.{arch}(num_classes=1000) at 224 x 224 px "
                      "(pytorch/vision v0.14.0; imageSize and numClasses are request fields)",
            "publishedParams": meta["num_params"],
            "publishedSource": f"torchvision 0.14 {weights}.IMAGENET1K_V1.meta['num_params'] "
                               "(the weights table of the torchvision docs)",
            "config": {"model_type": "torchvision", "architecture": arch, "num_classes": 1000,
                       "image_size": 224},
        }
        with open(os.path.join(out_dir, "torchvision-" + arch.replace("_", "-") + ".json"), "w") as f:
            json.dump(preset, f, indent=2)
            f.write("\n")
        print(arch, meta["num_params"])


if __name__ == "__main__":
    main()
