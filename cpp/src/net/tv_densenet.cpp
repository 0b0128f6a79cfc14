// torchvision DenseNet (pytorch/vision v0.14.0 torchvision/models/densenet.py: _DenseLayer,
// _DenseBlock, _Transition, DenseNet; memory_efficient=False). A dense block concatenates the
// features of all its earlier layers: those features live until the block's final torch.cat
// and each layer's cat copy is what its first BatchNorm keeps. Chain: the stem (conv0, norm0,
// relu0, pool0), one layer per dense block and per transition (the concatenations stay inside
// a chain layer, so checkpointing keeps one tensor per boundary and nothing is carried across),
// the head (norm5, relu, adaptive_avg_pool2d, classifier; cross-entropy). NetSpec: stem
// (num_init_features), growth, bn_size, stages (depth = layers per block), num_classes.
#include "net/recipes.hpp"

namespace trainmem {
namespace net {
namespace {

V bn_relu_conv(Graph& g, const std::string& p, const char* norm, const char* relu, const char* conv,
               V x, uint64_t out, uint64_t k) {
  x = batch_norm(g, p + norm, x);
  g.module(p + relu);
  x = act(g, Act::relu, x, true);
  return conv2d(g, p + conv, x, out, k, 1, k / 2);
}

V dense_block(Graph& g, const std::string& p, V x, uint64_t layers, const NetSpec& n) {
  g.module(p);
  std::vector<V> features{x};
  for (uint64_t j = 0; j < layers; ++j) {
    const std::string l = p + ".denselayer" + std::to_string(j + 1);
    g.module(l);
    V y = cat(g, features, 1);  // bn_function: torch.cat(inputs, 1)
    y = bn_relu_conv(g, l, ".norm1", ".relu1", ".conv1", y, n.bn_size * n.growth, 1);
    y = bn_relu_conv(g, l, ".norm2", ".relu2", ".conv2", y, n.growth, 3);
    features.push_back(y);
  }
  return cat(g, features, 1);
}

}  // namespace

void tv_densenet(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  g.module("");
  g.module("features");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  x = batch_norm(g, "features.norm0", conv2d(g, "features.conv0", x, n.stem, 7, 2, 3));
  g.module("features.relu0");
  x = act(g, Act::relu, x, true);
  g.module("features.pool0");
  x = max_pool2d(g, x, 3, 2, 1);
  g.output(x);
  uint64_t c = n.stem;
  int64_t block = 0;
  for (size_t i = 0; i < n.stages.size(); ++i) {
    const std::string db = "features.denseblock" + std::to_string(i + 1);
    g.layer("block " + std::to_string(block) + " (" + db + ")", block);
    ++block;
    x = dense_block(g, db, x, n.stages[i].depth, n);
    c += n.stages[i].depth * n.growth;
    g.output(x);
    if (i + 1 == n.stages.size()) break;
    const std::string tr = "features.transition" + std::to_string(i + 1);
    g.layer("block " + std::to_string(block) + " (" + tr + ")", block);
    ++block;
    g.module(tr);
    x = bn_relu_conv(g, tr, ".norm", ".relu", ".conv", x, c / 2, 1);
    g.module(tr + ".pool");
    x = avg_pool2d(g, x, 2, 2);
    c /= 2;
    g.output(x);
  }
  g.layer("head", block);
  x = batch_norm(g, "features.norm5", x);
  x = act(g, Act::relu, x, true);  // F.relu(features, inplace=True)
  x = view(g, global_avg_pool(g, x), {B, c});
  g.output(classify(g, "classifier", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
