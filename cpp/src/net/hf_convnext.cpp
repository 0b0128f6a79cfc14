// HuggingFace ConvNeXt and ResNet (transformers src/transformers/models/convnext/
// modeling_convnext.py @00fea5de3f39d68bacc08b65261aa60eda7df10d: ConvNextLayerNorm (the
// channels_first form written with mean, pow, sqrt and division), ConvNextEmbeddings,
// ConvNextLayer, ConvNextStage, ConvNextModel (the final LayerNorm on the spatial mean),
// ConvNextForImageClassification; resnet/modeling_resnet.py: ResNetConvLayer (conv, batch norm,
// a non-inplace ReLU), ResNetShortCut, ResNetBasicLayer / ResNetBottleNeckLayer, ResNetStage,
// ResNetModel, ResNetForImageClassification). Chain: the embeddings, one layer per residual
// layer (a ConvNeXt stage's downsampling runs in its first layer), the head. NetSpec: stages
// (depth, width), act, layer_scale, drop_path, num_classes, variant; ResNet: stem
// (embedding_size), stages' expand (1: basic, 4: bottleneck), base_width (downsample_in_bottleneck
// = 1), groups (downsample_in_first_stage = 1).
#include "net/hf_encoder.hpp"

namespace trainmem {
namespace net {
namespace {

// ConvNextLayerNorm(data_format="channels_first") on [B, C, H, W].
V channels_first_norm(Graph& g, const std::string& mod, V x) {
  const uint64_t c = g.shape(x)[1];
  g.module(mod);
  g.param(mod + ".weight", {c});
  g.param(mod + ".bias", {c});
  const V u = mean_dim(g, x, 1, true);
  const V s = mean_dim(g, square(g, add(g, x, u)), 1, true);  // (x - u).pow(2).mean(1)
  const V r = sqrt_op(g, scale(g, s));                        // torch.sqrt(s + eps)
  const V y = div(g, add(g, x, u), r);                        // (x - u) / ...
  return add(g, mul_param(g, y), g.weight_value({c, 1, 1}));  // weight * x + bias
}

V convnext_layer(Graph& g, const NetSpec& n, const std::string& l, V input, double dp) {
  const uint64_t c = g.shape(input)[1];
  g.module(l);
  if (n.layer_scale) g.param(l + ".layer_scale_parameter", {c});
  V x = conv2d(g, l + ".dwconv", input, c, 7, 1, 3, c, true);
  x = layer_norm(g, l + ".layernorm", permute(g, x, {0, 2, 3, 1}));
  x = linear(g, l + ".pwconv1", x, 4 * c, true);
  g.module(l + ".act");
  x = act(g, act_named(n.act), x);
  x = linear(g, l + ".pwconv2", x, c, true);
  if (n.layer_scale) x = mul_param(g, x);
  x = permute(g, x, {0, 3, 1, 2});
  g.module(l + ".drop_path");
  return add(g, input, drop_path(g, x, dp, true));
}

V convnext_head(Graph& g, const NetSpec& n, const std::string& p, V x) {
  const uint64_t B = g.shape(x)[0], c = g.shape(x)[1];
  x = view(g, mean_dim(g, mean_dim(g, x, 3), 2), {B, c});  // last_hidden_state.mean([-2, -1])
  x = layer_norm(g, p + "layernorm", x);
  if (n.num_classes > 0) return classify(g, "classifier", x, n.num_classes);
  g.assume(Text("net.assume.bare.pooled", {{"model", "ConvNextModel"}})
               .then({"net.assume.head.classifier",
                      {{"architecture", "ConvNextForImageClassification"}}}));
  return mean_dim(g, view(g, x, {B * c}), 0);
}

}  // namespace

void hf_convnext(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  const std::string p = n.variant == "ConvNextModel" ? "" : "convnext.";
  g.module("");
  if (!p.empty()) g.module("convnext");
  g.layer("embeddings", -1);
  g.module(p + "embeddings");
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  x = conv2d(g, p + "embeddings.patch_embeddings", x, n.stages[0].width, n.patch, n.patch, 0, 1,
             true);
  x = channels_first_norm(g, p + "embeddings.layernorm", x);
  g.output(x);
  g.module(p + "encoder");
  g.module(p + "encoder.stages");
  uint64_t total = 0;
  for (const auto& st : n.stages) total += st.depth;
  int64_t block = 0;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const std::string stage = p + "encoder.stages." + std::to_string(s);
    for (uint64_t j = 0; j < n.stages[s].depth; ++j, ++block) {
      g.layer("layer " + std::to_string(block) + " (stage " + std::to_string(s) + ")", block);
      if (j == 0) {
        g.module(stage);
        g.module(stage + ".downsampling_layer");
        if (s > 0) {  // LayerNorm (channels_first) + Conv2d(k=2, s=2)
          x = channels_first_norm(g, stage + ".downsampling_layer.0", x);
          x = conv2d(g, stage + ".downsampling_layer.1", x, n.stages[s].width, 2, 2, 0, 1, true);
        }
        g.module(stage + ".layers");
      }
      // drop_path_rates = linspace(0, drop_path_rate, sum(depths))
      const double dp = total > 1 ? n.drop_path * static_cast<double>(block) / (total - 1.0) : 0;
      x = convnext_layer(g, n, stage + ".layers." + std::to_string(j), x, dp);
      g.output(x);
    }
  }
  g.layer("head", block);
  g.output(convnext_head(g, n, p, x));
}

}  // namespace net
}  // namespace trainmem

namespace trainmem {
namespace net {
namespace {

// ResNetConvLayer: conv (padding k // 2, no bias), BatchNorm2d, ACT2FN (a new tensor) or none.
V resnet_conv(Graph& g, const std::string& p, V x, uint64_t out, uint64_t k, uint64_t stride,
              bool relu, const NetSpec& n) {
  g.module(p);
  x = batch_norm(g, p + ".normalization", conv2d(g, p + ".convolution", x, out, k, stride, k / 2));
  g.module(p + ".activation");
  return relu ? act(g, act_named(n.act), x) : x;
}

V resnet_layer(Graph& g, const NetSpec& n, const std::string& l, V x, uint64_t out,
               uint64_t stride) {
  const uint64_t in = g.shape(x)[1];
  const bool bottleneck = n.stages[0].expand == 4;
  g.module(l);
  g.module(l + ".layer");
  V h = x;
  if (bottleneck) {
    const uint64_t r = out / 4;  // reduction = 4
    h = resnet_conv(g, l + ".layer.0", h, r, 1, 1, true, n);
    h = resnet_conv(g, l + ".layer.1", h, r, 3, stride, true, n);
    h = resnet_conv(g, l + ".layer.2", h, out, 1, 1, false, n);
  } else {
    h = resnet_conv(g, l + ".layer.0", h, out, 3, stride, true, n);
    h = resnet_conv(g, l + ".layer.1", h, out, 3, 1, false, n);
  }
  V residual = x;
  g.module(l + ".shortcut");
  if (in != out || stride != 1) {  // ResNetShortCut: 1x1 conv + batch norm
    residual = conv2d(g, l + ".shortcut.convolution", x, out, 1, stride, 0);
    residual = batch_norm(g, l + ".shortcut.normalization", residual);
  }
  h = add(g, h, residual, true);  // hidden_state += residual
  g.module(l + ".activation");
  return act(g, act_named(n.act), h);
}

}  // namespace

void hf_resnet(Graph& g, const NetSpec& n) {
  const uint64_t B = g.settings().micro_batch, S = n.image_size;
  const std::string p = n.variant == "ResNetModel" ? "" : "resnet.";
  g.module("");
  if (!p.empty()) g.module("resnet");
  g.layer("embeddings", -1);
  g.module(p + "embedder");
  V x = g.input({B, n.channels, S, S}, g.widths().act, false);
  x = resnet_conv(g, p + "embedder.embedder", x, n.stem, 7, 2, true, n);
  g.module(p + "embedder.pooler");
  x = max_pool2d(g, x, 3, 2, 1);
  g.output(x);
  g.module(p + "encoder");
  g.module(p + "encoder.stages");
  int64_t block = 0;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const std::string stage = p + "encoder.stages." + std::to_string(s);
    g.module(stage);
    g.module(stage + ".layers");
    for (uint64_t j = 0; j < n.stages[s].depth; ++j, ++block) {
      g.layer("layer " + std::to_string(block) + " (stage " + std::to_string(s) + ")", block);
      // downsample_in_first_stage (groups here): the first stage's first layer strides too
      const uint64_t stride = j > 0 ? 1 : (s > 0 || n.groups == 2 ? 2 : 1);
      x = resnet_layer(g, n, stage + ".layers." + std::to_string(j), x, n.stages[s].width, stride);
      g.output(x);
    }
  }
  g.layer("head", block);
  const uint64_t c = n.stages.back().width;
  g.module(p + "pooler");
  x = view(g, global_avg_pool(g, x), {B, c});
  if (n.num_classes == 0) {
    g.assume(Text("net.assume.bare.pooled", {{"model", "ResNetModel"}})
                 .then({"net.assume.head.classifier",
                        {{"architecture", "ResNetForImageClassification"}}}));
    g.output(mean_dim(g, view(g, x, {B * c}), 0));
    return;
  }
  g.module("classifier");
  g.module("classifier.0");  // Flatten
  g.output(classify(g, "classifier.1", x, n.num_classes));
}

}  // namespace net
}  // namespace trainmem
