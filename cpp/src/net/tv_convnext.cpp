// torchvision ConvNeXt (pytorch/vision v0.14.0 torchvision/models/convnext.py: LayerNorm2d,
// CNBlock, ConvNeXt). Chain: the stem (features.0: 4x4 convolution + LayerNorm2d), one layer
// per CNBlock (a stage's downsampling, LayerNorm2d + 2x2 convolution, runs in its first block),
// the head (avgpool, classifier: LayerNorm2d, Flatten, Linear; cross-entropy). NetSpec: stages
// (depth, width), drop_path (stochastic_depth_prob, linear in the block index), num_classes.
#include "net/recipes.hpp"

namespace trainmem {
namespace net {
namespace {

// LayerNorm2d: permute to channels-last, layer_norm, permute back.
V layer_norm_2d(Graph& g, const std::string& mod, V x) {
  x = layer_norm(g, mod, permute(g, x, {0, 2, 3, 1}));
  return permute(g, x, {0, 3, 1, 2});
}

V cn_block(Graph& g, const std::string& p, V input, double sd_prob) {
  const uint64_t c = g.shape(input)[1];
  g.module(p);
  g.param(p + ".layer_scale", {c, 1, 1});
  g.module(p + ".block");
  V x = conv2d(g, p + ".block.0", input, c, 7, 1, 3, c, true);
  g.module(p + ".block.1");  // Permute([0, 2, 3, 1])
  x = layer_norm(g, p + ".block.2", permute(g, x, {0, 2, 3, 1}));
  x = linear(g, p + ".block.3", x, 4 * c, true);
  g.module(p + ".block.4");
  x = act(g, Act::gelu, x);
  x = linear(g, p + ".block.5", x, c, true);
  g.module(p + ".block.6");                       // Permute([0, 3, 1, 2])
  x = mul_param(g, permute(g, x, {0, 3, 1, 2}));  // self.layer_scale * self.block(input)
  g.module(p + ".stochastic_depth");
  x = drop_path(g, x, sd_prob, false);
  return add(g, x, input, true);  // result += input
}

}  // namespace

void tv_convnext(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  g.module("");
  g.module("features");
  g.layer("stem", -1);
  V x = g.input({B, 3, S, S}, g.widths().act, false);
  g.module("features.0");
  x = conv2d(g, "features.0.0", x, n.stages[0].width, 4, 4, 0, 1, true);
  x = layer_norm_2d(g, "features.0.1", x);
  g.output(x);
  uint64_t total = 0;
  for (const auto& st : n.stages) total += st.depth;
  int64_t block = 0;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const std::string stage = "features." + std::to_string(2 * s + 1);
    for (uint64_t j = 0; j < n.stages[s].depth; ++j, ++block) {
      g.layer("block " + std::to_string(block) + " (" + stage + "." + std::to_string(j) + ")",
              block);
      if (j == 0 && s > 0) {  // features.(2s): LayerNorm2d + Conv2d(k=2, s=2)
        const std::string down = "features." + std::to_string(2 * s);
        g.module(down);
        x = layer_norm_2d(g, down + ".0", x);
        x = conv2d(g, down + ".1", x, n.stages[s].width, 2, 2, 0, 1, true);
      }
      if (j == 0) g.module(stage);
      // sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1)
      const double sd = total > 1 ? n.drop_path * static_cast<double>(block) / (total - 1.0) : 0;
      x = cn_block(g, stage + "." + std::to_string(j), x, sd);
      g.output(x);
    }
  }
  g.layer("head", block);
  g.module("avgpool");
  x = global_avg_pool(g, x);
  g.module("classifier");
  x = layer_norm_2d(g, "classifier.0", x);
  g.module("classifier.1");
  x = view(g, x, {B, n.stages.back().width});  // Flatten(1): a view of the [B, C, 1, 1] tensor
  g.output(classify(g, "classifier.2", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
