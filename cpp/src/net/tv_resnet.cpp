// torchvision ResNet, ResNeXt and wide ResNet (pytorch/vision v0.14.0
// torchvision/models/resnet.py: BasicBlock, Bottleneck, ResNet._make_layer / _forward_impl).
// Chain: the stem (conv1, bn1, relu, maxpool), one layer per residual block, the head
// (avgpool, flatten, fc, cross-entropy). NetSpec: stages (depth, width = planes), expand (1:
// BasicBlock, 4: Bottleneck), groups, base_width, num_classes, image_size.
#include "net/recipes.hpp"

namespace trainmem {
namespace net {
namespace {

V residual_block(Graph& g, const NetSpec& n, const std::string& p, V x, uint64_t planes,
                 uint64_t stride, bool downsample) {
  const bool bottleneck = n.stages[0].expand == 4;
  const uint64_t out_ch = planes * n.stages[0].expand;
  g.module(p);
  g.module(p + ".relu");  // one nn.ReLU(inplace=True), applied after each bn but the last
  V out;
  if (bottleneck) {
    const uint64_t width = planes * n.base_width / 64 * n.groups;  // Bottleneck.__init__
    out = conv2d(g, p + ".conv1", x, width, 1, 1, 0);
    out = act(g, Act::relu, batch_norm(g, p + ".bn1", out), true);
    out = conv2d(g, p + ".conv2", out, width, 3, stride, 1, n.groups);
    out = act(g, Act::relu, batch_norm(g, p + ".bn2", out), true);
    out = batch_norm(g, p + ".bn3", conv2d(g, p + ".conv3", out, out_ch, 1, 1, 0));
  } else {
    out = conv2d(g, p + ".conv1", x, planes, 3, stride, 1);
    out = act(g, Act::relu, batch_norm(g, p + ".bn1", out), true);
    out = batch_norm(g, p + ".bn2", conv2d(g, p + ".conv2", out, planes, 3, 1, 1));
  }
  V identity = x;
  if (downsample) {
    g.module(p + ".downsample");
    identity = conv2d(g, p + ".downsample.0", x, out_ch, 1, stride, 0);
    identity = batch_norm(g, p + ".downsample.1", identity);
  }
  out = add(g, out, identity, true);  // out += identity
  return act(g, Act::relu, out, true);
}

}  // namespace

V classify(Graph& g, const std::string& mod, V x, uint64_t classes) {
  const V logits = linear(g, mod, x, classes, true);
  return cross_entropy(g, logits);
}

void tv_resnet(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  g.module("");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  x = batch_norm(g, "bn1", conv2d(g, "conv1", x, 64, 7, 2, 3));
  g.module("relu");
  x = act(g, Act::relu, x, true);
  g.module("maxpool");
  x = max_pool2d(g, x, 3, 2, 1);
  g.output(x);
  uint64_t inplanes = 64;
  int64_t block = 0;
  for (size_t st = 0; st < n.stages.size(); ++st) {
    const std::string stage = "layer" + std::to_string(st + 1);
    g.module(stage);
    const uint64_t planes = n.stages[st].width;
    for (uint64_t j = 0; j < n.stages[st].depth; ++j, ++block) {
      g.layer("block " + std::to_string(block) + " (" + stage + "." + std::to_string(j) + ")",
              block);
      const uint64_t stride = j == 0 && st > 0 ? 2 : 1;
      const bool down = j == 0 && (stride != 1 || inplanes != planes * n.stages[st].expand);
      x = residual_block(g, n, stage + "." + std::to_string(j), x, planes, stride, down);
      inplanes = planes * n.stages[st].expand;
      g.output(x);
    }
  }
  g.layer("head", block);
  g.module("avgpool");
  x = global_avg_pool(g, x);
  x = reshape(g, x, {B, inplanes});  // torch.flatten(x, 1)
  g.output(classify(g, "fc", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
