// The hyperparameters of torchvision's model builders (pytorch/vision v0.14.0
// torchvision/models/{resnet,vision_transformer,convnext,swin_transformer,efficientnet,
// mobilenetv3,densenet}.py: the resnet50(), vit_b_16(), ... functions and their _*_conf tables).
#include <vector>

#include "net/net_model.hpp"

namespace trainmem {
namespace net {
namespace {

NetStage stage(uint64_t depth, uint64_t width, uint64_t heads = 0) {
  NetStage s;
  s.depth = depth;
  s.width = width;
  s.heads = heads;
  return s;
}

void resnet(NetSpec* n, std::vector<uint64_t> depths, uint64_t expand, uint64_t groups = 1,
            uint64_t base_width = 64) {
  n->family = "tv_resnet";
  n->groups = groups;
  n->base_width = base_width;
  for (size_t i = 0; i < depths.size(); ++i) {
    n->stages.push_back(stage(depths[i], 64u << i));
    n->stages.back().expand = expand;
  }
  n->hidden = (512 * expand);
  n->layers = 0;
  for (uint64_t d : depths) n->layers += d;
}

void vit(NetSpec* n, uint64_t patch, uint64_t layers, uint64_t heads, uint64_t hidden,
         uint64_t mlp) {
  n->family = "tv_vit";
  n->patch = patch;
  n->layers = layers;
  n->heads = heads;
  n->hidden = hidden;
  n->intermediate = mlp;
}

void convnext(NetSpec* n, std::vector<uint64_t> widths, std::vector<uint64_t> depths, double sd) {
  n->family = "tv_convnext";
  for (size_t i = 0; i < widths.size(); ++i) n->stages.push_back(stage(depths[i], widths[i]));
  n->drop_path = sd;
  n->hidden = widths.back();
}

void swin(NetSpec* n, uint64_t embed, std::vector<uint64_t> depths, std::vector<uint64_t> heads,
          double sd) {
  n->family = "tv_swin";
  n->patch = 4;
  n->stem = embed;
  for (size_t i = 0; i < depths.size(); ++i)
    n->stages.push_back(stage(depths[i], embed << i, heads[i]));
  n->drop_path = sd;
  n->hidden = embed << (depths.size() - 1);
}

// EfficientNet-B* (_efficientnet_conf "efficientnet_b"): expand, kernel, stride, in, out, layers
void efficientnet(NetSpec* n, double width, double depth, double dropout) {
  n->family = "tv_efficientnet";
  n->width_mult = width;
  n->depth_mult = depth;
  n->classifier_dropout = dropout;
  n->drop_path = 0.2;
  static const uint64_t rows[7][6] = {
      {1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
      {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1}};
  n->stem = 32;
  for (const auto& r : rows) {
    NetStage s = stage(r[5], r[4]);
    s.expand = r[0];
    s.kernel = r[1];
    s.stride = r[2];
    s.se = true;
    n->stages.push_back(s);
  }
}

// MobileNetV3 (_mobilenet_v3_conf): input, kernel, expanded, out, use_se, activation, stride
void mobilenet_v3(NetSpec* n, bool large) {
  n->family = "tv_mobilenet_v3";
  n->classifier_dropout = 0.2;
  struct Row {
    uint64_t in, k, exp, out;
    bool se;
    const char* act;
    uint64_t stride;
  };
  static const Row kLarge[] = {{16, 3, 16, 16, false, "RE", 1},   {16, 3, 64, 24, false, "RE", 2},
                               {24, 3, 72, 24, false, "RE", 1},   {24, 5, 72, 40, true, "RE", 2},
                               {40, 5, 120, 40, true, "RE", 1},   {40, 5, 120, 40, true, "RE", 1},
                               {40, 3, 240, 80, false, "HS", 2},  {80, 3, 200, 80, false, "HS", 1},
                               {80, 3, 184, 80, false, "HS", 1},  {80, 3, 184, 80, false, "HS", 1},
                               {80, 3, 480, 112, true, "HS", 1},  {112, 3, 672, 112, true, "HS", 1},
                               {112, 5, 672, 160, true, "HS", 2}, {160, 5, 960, 160, true, "HS", 1},
                               {160, 5, 960, 160, true, "HS", 1}};
  static const Row kSmall[] = {{16, 3, 16, 16, true, "RE", 2},  {16, 3, 72, 24, false, "RE", 2},
                               {24, 3, 88, 24, false, "RE", 1}, {24, 5, 96, 40, true, "HS", 2},
                               {40, 5, 240, 40, true, "HS", 1}, {40, 5, 240, 40, true, "HS", 1},
                               {40, 5, 120, 48, true, "HS", 1}, {48, 5, 144, 48, true, "HS", 1},
                               {48, 5, 288, 96, true, "HS", 2}, {96, 5, 576, 96, true, "HS", 1},
                               {96, 5, 576, 96, true, "HS", 1}};
  const Row* rows = large ? kLarge : kSmall;
  const size_t count = large ? sizeof kLarge / sizeof kLarge[0] : sizeof kSmall / sizeof kSmall[0];
  n->stem = 16;
  for (size_t i = 0; i < count; ++i) {
    NetStage s = stage(1, rows[i].out);
    s.kernel = rows[i].k;
    s.extra = rows[i].exp;
    s.se = rows[i].se;
    s.act = rows[i].act;
    s.stride = rows[i].stride;
    n->stages.push_back(s);
  }
  n->hidden = large ? 1280 : 1024;  // last_channel
}

void densenet(NetSpec* n, uint64_t growth, std::vector<uint64_t> blocks, uint64_t init) {
  n->family = "tv_densenet";
  n->growth = growth;
  n->bn_size = 4;
  n->stem = init;
  for (uint64_t b : blocks) n->stages.push_back(stage(b, 0));
}

}  // namespace

const std::vector<std::string>& torchvision_names() {
  static const std::vector<std::string> names = {"resnet18",
                                                 "resnet34",
                                                 "resnet50",
                                                 "resnet101",
                                                 "resnet152",
                                                 "resnext50_32x4d",
                                                 "resnext101_32x8d",
                                                 "wide_resnet50_2",
                                                 "wide_resnet101_2",
                                                 "vit_b_16",
                                                 "vit_b_32",
                                                 "vit_l_16",
                                                 "vit_l_32",
                                                 "vit_h_14",
                                                 "convnext_tiny",
                                                 "convnext_small",
                                                 "convnext_base",
                                                 "convnext_large",
                                                 "swin_t",
                                                 "swin_s",
                                                 "swin_b",
                                                 "efficientnet_b0",
                                                 "efficientnet_b1",
                                                 "efficientnet_b2",
                                                 "efficientnet_b3",
                                                 "efficientnet_b4",
                                                 "efficientnet_b5",
                                                 "efficientnet_b6",
                                                 "efficientnet_b7",
                                                 "mobilenet_v3_large",
                                                 "mobilenet_v3_small",
                                                 "densenet121",
                                                 "densenet161",
                                                 "densenet169",
                                                 "densenet201"};
  return names;
}

bool torchvision_spec(const std::string& a, NetSpec* n) {
  n->variant = a;
  if (a == "resnet18")
    resnet(n, {2, 2, 2, 2}, 1);
  else if (a == "resnet34")
    resnet(n, {3, 4, 6, 3}, 1);
  else if (a == "resnet50")
    resnet(n, {3, 4, 6, 3}, 4);
  else if (a == "resnet101")
    resnet(n, {3, 4, 23, 3}, 4);
  else if (a == "resnet152")
    resnet(n, {3, 8, 36, 3}, 4);
  else if (a == "resnext50_32x4d")
    resnet(n, {3, 4, 6, 3}, 4, 32, 4);
  else if (a == "resnext101_32x8d")
    resnet(n, {3, 4, 23, 3}, 4, 32, 8);
  else if (a == "wide_resnet50_2")
    resnet(n, {3, 4, 6, 3}, 4, 1, 128);
  else if (a == "wide_resnet101_2")
    resnet(n, {3, 4, 23, 3}, 4, 1, 128);
  else if (a == "vit_b_16")
    vit(n, 16, 12, 12, 768, 3072);
  else if (a == "vit_b_32")
    vit(n, 32, 12, 12, 768, 3072);
  else if (a == "vit_l_16")
    vit(n, 16, 24, 16, 1024, 4096);
  else if (a == "vit_l_32")
    vit(n, 32, 24, 16, 1024, 4096);
  else if (a == "vit_h_14")
    vit(n, 14, 32, 16, 1280, 5120);
  else if (a == "convnext_tiny")
    convnext(n, {96, 192, 384, 768}, {3, 3, 9, 3}, 0.1);
  else if (a == "convnext_small")
    convnext(n, {96, 192, 384, 768}, {3, 3, 27, 3}, 0.4);
  else if (a == "convnext_base")
    convnext(n, {128, 256, 512, 1024}, {3, 3, 27, 3}, 0.5);
  else if (a == "convnext_large")
    convnext(n, {192, 384, 768, 1536}, {3, 3, 27, 3}, 0.5);
  else if (a == "swin_t")
    swin(n, 96, {2, 2, 6, 2}, {3, 6, 12, 24}, 0.2);
  else if (a == "swin_s")
    swin(n, 96, {2, 2, 18, 2}, {3, 6, 12, 24}, 0.3);
  else if (a == "swin_b")
    swin(n, 128, {2, 2, 18, 2}, {4, 8, 16, 32}, 0.5);
  else if (a == "efficientnet_b0")
    efficientnet(n, 1.0, 1.0, 0.2);
  else if (a == "efficientnet_b1")
    efficientnet(n, 1.0, 1.1, 0.2);
  else if (a == "efficientnet_b2")
    efficientnet(n, 1.1, 1.2, 0.3);
  else if (a == "efficientnet_b3")
    efficientnet(n, 1.2, 1.4, 0.3);
  else if (a == "efficientnet_b4")
    efficientnet(n, 1.4, 1.8, 0.4);
  else if (a == "efficientnet_b5")
    efficientnet(n, 1.6, 2.2, 0.4);
  else if (a == "efficientnet_b6")
    efficientnet(n, 1.8, 2.6, 0.5);
  else if (a == "efficientnet_b7")
    efficientnet(n, 2.0, 3.1, 0.5);
  else if (a == "mobilenet_v3_large")
    mobilenet_v3(n, true);
  else if (a == "mobilenet_v3_small")
    mobilenet_v3(n, false);
  else if (a == "densenet121")
    densenet(n, 32, {6, 12, 24, 16}, 64);
  else if (a == "densenet161")
    densenet(n, 48, {6, 12, 36, 24}, 96);
  else if (a == "densenet169")
    densenet(n, 32, {6, 12, 32, 32}, 64);
  else if (a == "densenet201")
    densenet(n, 32, {6, 12, 48, 32}, 64);
  else
    return false;
  return true;
}

}  // namespace net
}  // namespace trainmem
