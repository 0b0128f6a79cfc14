// torchvision EfficientNet-B0..B7 and MobileNetV3 (pytorch/vision v0.14.0
// torchvision/models/efficientnet.py: MBConv, EfficientNet; mobilenetv3.py: InvertedResidual,
// MobileNetV3; torchvision/ops/misc.py: Conv2dNormActivation, SqueezeExcitation). Chain: the
// stem (features.0), one layer per MBConv / InvertedResidual, the head (the last 1x1
// convolution, avgpool, flatten, classifier; cross-entropy). NetSpec: stem width, stages
// (EfficientNet rows: depth, width = out, expand, kernel, stride; MobileNetV3 rows: width = out,
// extra = expanded, kernel, stride, se, act "RE" / "HS"), width_mult, depth_mult, drop_path,
// classifier_dropout, hidden (MobileNetV3 last_channel), num_classes.
#include <cmath>

#include "net/recipes.hpp"

namespace trainmem {
namespace net {
namespace {

// torchvision.models._utils._make_divisible(v, 8)
uint64_t divisible8(double v) {
  uint64_t n = std::max<uint64_t>(8, static_cast<uint64_t>(v + 4) / 8 * 8);
  if (static_cast<double>(n) < 0.9 * v) n += 8;
  return n;
}

// Conv2dNormActivation: conv (bias only without a norm), BatchNorm2d, the activation in place.
V conv_bn_act(Graph& g, const std::string& p, V x, uint64_t out, uint64_t k, uint64_t stride,
              uint64_t groups, Act a, bool has_act) {
  g.module(p);
  x = batch_norm(g, p + ".1", conv2d(g, p + ".0", x, out, k, stride, (k - 1) / 2, groups));
  if (!has_act) return x;
  g.module(p + ".2");
  return act(g, a, x, true);
}

// SqueezeExcitation: avgpool, fc1, activation, fc2, scale activation, scale * input.
V squeeze_excite(Graph& g, const std::string& p, V x, uint64_t squeeze, Act a, bool a_inplace,
                 Act scale_act) {
  const uint64_t c = g.shape(x)[1];
  g.module(p);
  g.module(p + ".avgpool");
  V s = global_avg_pool(g, x);
  s = conv2d(g, p + ".fc1", s, squeeze, 1, 1, 0, 1, true);
  g.module(p + ".activation");
  s = act(g, a, s, a_inplace);
  s = conv2d(g, p + ".fc2", s, c, 1, 1, 0, 1, true);
  g.module(p + ".scale_activation");
  s = act(g, scale_act, s);
  return mul(g, s, x);
}

V head(Graph& g, const std::string& last, V x, uint64_t last_out, Act a, const NetSpec& n,
       bool mobilenet) {
  const uint64_t B = g.shape(x)[0];
  x = conv_bn_act(g, last, x, last_out, 1, 1, 1, a, true);
  g.module("avgpool");
  x = view(g, global_avg_pool(g, x), {B, last_out});  // torch.flatten(x, 1)
  g.module("classifier");
  if (mobilenet) {
    x = linear(g, "classifier.0", x, n.hidden, true);
    g.module("classifier.1");
    x = act(g, Act::hardswish, x, true);
    g.module("classifier.2");
    x = dropout(g, x, n.classifier_dropout, true);
    return classify(g, "classifier.3", x, n.num_classes);
  }
  g.module("classifier.0");
  x = dropout(g, x, n.classifier_dropout, true);
  return classify(g, "classifier.1", x, n.num_classes);
}

}  // namespace

void tv_efficientnet(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  g.module("");
  g.module("features");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  uint64_t in = divisible8(n.stem * n.width_mult);
  x = conv_bn_act(g, "features.0", x, in, 3, 2, 1, Act::silu, true);
  g.output(x);
  std::vector<uint64_t> depth;
  uint64_t total = 0;
  for (const auto& st : n.stages)
    total += depth.emplace_back(static_cast<uint64_t>(std::ceil(st.depth * n.depth_mult)));
  int64_t block = 0;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const NetStage& st = n.stages[s];
    const uint64_t out = divisible8(st.width * n.width_mult);
    const std::string stage = "features." + std::to_string(s + 1);
    g.module(stage);
    for (uint64_t j = 0; j < depth[s]; ++j, ++block) {
      const std::string p = stage + "." + std::to_string(j);
      g.layer("block " + std::to_string(block) + " (" + p + ")", block);
      const uint64_t stride = j == 0 ? st.stride : 1;
      const uint64_t expanded = divisible8(static_cast<double>(in * st.expand));
      g.module(p);
      g.module(p + ".block");
      V y = x;
      size_t k = 0;
      if (expanded != in)
        y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, expanded, 1, 1, 1, Act::silu,
                        true);
      y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, expanded, st.kernel, stride,
                      expanded, Act::silu, true);
      y = squeeze_excite(g, p + ".block." + std::to_string(k++), y, std::max<uint64_t>(1, in / 4),
                         Act::silu, true, Act::sigmoid);
      y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, out, 1, 1, 1, Act::silu, false);
      g.module(p + ".stochastic_depth");
      if (stride == 1 && in == out) {
        // sd_prob = stochastic_depth_prob * stage_block_id / total_stage_blocks
        y = drop_path(g, y, n.drop_path * static_cast<double>(block) / total, false);
        y = add(g, y, x, true);  // result += input
      }
      x = y;
      in = out;
      g.output(x);
    }
  }
  g.layer("head", block);
  const std::string last = "features." + std::to_string(n.stages.size() + 1);
  g.output(head(g, last, x, 4 * in, Act::silu, n, false));
}

void tv_mobilenet_v3(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  g.module("");
  g.module("features");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  x = conv_bn_act(g, "features.0", x, n.stem, 3, 2, 1, Act::hardswish, true);
  g.output(x);
  uint64_t in = n.stem;
  int64_t block = 0;
  for (const NetStage& st : n.stages) {
    const std::string p = "features." + std::to_string(block + 1);
    g.layer("block " + std::to_string(block) + " (" + p + ")", block);
    const Act a = st.act == "HS" ? Act::hardswish : Act::relu;
    g.module(p);
    g.module(p + ".block");
    V y = x;
    size_t k = 0;
    if (st.extra != in)
      y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, st.extra, 1, 1, 1, a, true);
    y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, st.extra, st.kernel, st.stride,
                    st.extra, a, true);
    if (st.se)
      y = squeeze_excite(g, p + ".block." + std::to_string(k++), y, divisible8(st.extra / 4),
                         Act::relu, false, Act::hardsigmoid);
    y = conv_bn_act(g, p + ".block." + std::to_string(k++), y, st.width, 1, 1, 1, a, false);
    if (st.stride == 1 && in == st.width) y = add(g, y, x, true);  // result += input
    x = y;
    in = st.width;
    g.output(x);
    ++block;
  }
  g.layer("head", block);
  const std::string last = "features." + std::to_string(n.stages.size() + 1);
  g.output(head(g, last, x, 6 * in, Act::hardswish, n, true));
}

}  // namespace net
}  // namespace trainmem
