// diffusers UNet2DConditionModel (Stable Diffusion 1.x / 2.x / XL) and AutoencoderKL config.json
// -> the exact parameter tensor list (names and order of state_dict()) and the chain of units.
// Sources: huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951
// src/diffusers/models/unets/unet_2d_condition.py (__init__: conv_in, time_proj, time_embedding,
// add_time_proj / add_embedding for addition_embed_type "text_time", down_blocks, up_blocks,
// mid_block, conv_norm_out, conv_act, conv_out; `num_attention_heads or attention_head_dim`),
// unets/unet_2d_blocks.py (CrossAttnDownBlock2D, DownBlock2D, UNetMidBlock2DCrossAttn,
// CrossAttnUpBlock2D, UpBlock2D, DownEncoderBlock2D, UpDecoderBlock2D, UNetMidBlock2D),
// resnet.py ResnetBlock2D, transformers/transformer_2d.py Transformer2DModel, attention.py
// BasicTransformerBlock, autoencoders/autoencoder_kl.py, autoencoders/vae.py Encoder / Decoder.
// Checked: tools/dump_diffusers.py -> tests/fixtures/diffusers_tensors.json.
#include <string>
#include <vector>

#include "io/diffusers_build.hpp"

namespace trainmem {
namespace diffusers {
namespace {

using diffusion::Unit;
using diffusion::UnitKind;

struct UNetConfig {
  std::vector<uint64_t> boc, lpb, heads, cross, tlayers;
  std::vector<bool> down_attn, up_attn;
  bool linear = false, text_time = false;
  uint64_t in = 4, out = 4, groups = 32, temb = 0, cond = 0, kin = 3, kout = 3;
};

// The chain unit numbers of one Transformer2DModel (attn_in, its blocks, attn_out).
struct AttnUnits {
  int32_t in = -1, out = -1;
  std::vector<int32_t> blocks;
};
struct BlockUnits {
  std::vector<int32_t> resnets;
  std::vector<AttnUnits> attns;
  int32_t sample = -1;
};
struct Plan {
  std::vector<BlockUnits> down, up;
  BlockUnits mid;
};

std::vector<bool> block_types(const Obj& c, const char* key, size_t n, const char* attn,
                              const char* plain, std::initializer_list<const char*> fallback) {
  std::vector<std::string> names(fallback.begin(), fallback.end());
  if (c.has(key)) {
    const json& a = c.array(key, kMaxUnits);
    names.clear();
    for (size_t i = 0; i < a.size(); ++i)
      names.push_back(read_str(a[i], index_path(c.field(key), i)));
  }
  if (names.size() != n)
    fail(code::kInconsistent, c.field(key),
         Message{"error.unet.blocks",
                 {{"field", c.field(key)},
                  {"size", std::to_string(names.size())},
                  {"n", std::to_string(n)}}});
  std::vector<bool> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != attn && names[i] != plain)
      fail(code::kUnsupported, index_path(c.field(key), i),
           Message{"error.unet.blockType",
                   {{"field", index_path(c.field(key), i)},
                    {"value", names[i].substr(0, 64)},
                    {"attn", attn},
                    {"plain", plain}}});
    out.push_back(names[i] == attn);
  }
  return out;
}

// Fields that would add tensors or change the forward beyond what is modelled.
void refuse_unmodelled(const Obj& c) {
  require_null(c, "class_embed_type", "error.diffusers.classEmbed");
  require_null(c, "num_class_embeds");
  require_null(c, "encoder_hid_dim", "error.diffusers.encoderHid");
  require_null(c, "encoder_hid_dim_type");
  require_null(c, "dual_cross_attention");
  require_null(c, "only_cross_attention");
  require_null(c, "mid_block_only_cross_attention");
  require_null(c, "cross_attention_norm");
  require_null(c, "timestep_post_act");
  require_null(c, "time_embedding_act_fn");
  require_null(c, "class_embeddings_concat");
  require_null(c, "reverse_transformer_layers_per_block");
  require_value(c, "mid_block_type", "UNetMidBlock2DCrossAttn");
  require_value(c, "time_embedding_type", "positional");
  require_value(c, "resnet_time_scale_shift", "default");
  require_value(c, "attention_type", "default");
  require_value(c, "act_fn", "silu");
  if (c.has("addition_embed_type") && !c.raw("addition_embed_type").is_null())
    require_value(c, "addition_embed_type", "text_time");
}

UNetConfig read_unet(const Obj& c) {
  UNetConfig u;
  refuse_unmodelled(c);
  const json& b = c.has("block_out_channels") ? c.array("block_out_channels", 16) : json::array();
  for (size_t i = 0; i < b.size(); ++i)
    u.boc.push_back(read_u64(b[i], index_path(c.field("block_out_channels"), i), 1, kMaxWidth));
  if (u.boc.empty()) u.boc = {320, 640, 1280, 1280};  // UNet2DConditionModel default
  const size_t n = u.boc.size();
  u.down_attn = block_types(
      c, "down_block_types", n, "CrossAttnDownBlock2D", "DownBlock2D",
      {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"});
  u.up_attn =
      block_types(c, "up_block_types", n, "CrossAttnUpBlock2D", "UpBlock2D",
                  {"UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"});
  u.lpb = int_or_list(c, "layers_per_block", 2, n, 1, kMaxUnits);
  // num_attention_heads = num_attention_heads or attention_head_dim (the config's naming)
  const bool nh = c.has("num_attention_heads") && !c.raw("num_attention_heads").is_null();
  u.heads = int_or_list(c, nh ? "num_attention_heads" : "attention_head_dim", 8, n, 1, kMaxWidth);
  c.mark_used(nh ? "attention_head_dim" : "num_attention_heads");
  u.cross = int_or_list(c, "cross_attention_dim", 1280, n, 1, kMaxWidth);
  u.tlayers = int_or_list(c, "transformer_layers_per_block", 1, n, 1, kMaxUnits);
  u.linear = c.boolean_or("use_linear_projection", false);
  u.groups = c.u64_or("norm_num_groups", 32, 1, kMaxWidth);
  u.in = c.u64_or("in_channels", 4, 1, kMaxWidth);
  u.out = c.u64_or("out_channels", 4, 1, kMaxWidth);
  u.temb = c.u64_or("time_embedding_dim", 4 * u.boc[0], 1, kMaxWidth);
  u.cond = c.u64_or("time_cond_proj_dim", 0, 0, kMaxWidth);  // LCM-distilled UNets
  u.kin = c.u64_or("conv_in_kernel", 3, 1, 15);
  u.kout = c.u64_or("conv_out_kernel", 3, 1, 15);
  u.text_time = c.has("addition_embed_type") && !c.raw("addition_embed_type").is_null();
  for (size_t i = 0; i < n; ++i) {
    if (u.boc[i] % u.groups != 0)
      fail(code::kInconsistent, c.field("norm_num_groups"),
           Message{"error.unet.groups",
                   {{"field", c.field("norm_num_groups")}, {"groups", std::to_string(u.groups)}}});
    if ((u.down_attn[i] || u.up_attn[n - 1 - i]) && u.boc[i] % u.heads[i] != 0)
      fail(
          code::kInconsistent, c.field("attention_head_dim"),
          Message{"error.unet.heads",
                  {{"heads", std::to_string(u.heads[i])}, {"channels", std::to_string(u.boc[i])}}});
  }
  return u;
}

Unit unit(UnitKind k, uint64_t cin, uint64_t cout, uint32_t level) {
  Unit u;
  u.kind = k;
  u.cin = cin;
  u.cout = cout;
  u.level = level;
  return u;
}

// One Transformer2DModel's units (attn_in, blocks, attn_out) at `level`.
AttnUnits plan_attention(diffusion::Net& net, uint64_t c, uint64_t heads, uint64_t cross,
                         uint64_t layers, bool linear, uint32_t level) {
  AttnUnits a;
  Unit in = unit(UnitKind::attn_in, c, c, level);
  in.linear_proj = linear;
  a.in = static_cast<int32_t>(net.units.size());
  net.units.push_back(in);
  for (uint64_t k = 0; k < layers; ++k) {
    Unit b = unit(UnitKind::block, c, c, level);
    b.heads = heads;
    b.head_dim = c / heads;
    b.cross = cross;
    b.checkpointable = true;  // Transformer2DModel checkpoints each BasicTransformerBlock
    a.blocks.push_back(static_cast<int32_t>(net.units.size()));
    net.units.push_back(b);
  }
  Unit out = unit(UnitKind::attn_out, c, c, level);
  out.linear_proj = linear;
  a.out = static_cast<int32_t>(net.units.size());
  net.units.push_back(out);
  return a;
}

int32_t push(diffusion::Net& net, const Unit& u) {
  net.units.push_back(u);
  return static_cast<int32_t>(net.units.size()) - 1;
}

// The units in forward order (down blocks, mid block, up blocks) and the skip connections:
// down_block_res_samples = conv_in's output, then every resnet (+ attention) output and every
// downsampler output; each up resnet concatenates the last one left.
Plan plan_unet(const UNetConfig& u, diffusion::Net& net) {
  Plan p;
  const size_t n = u.boc.size();
  net.units.push_back(unit(UnitKind::stem, u.in, u.boc[0], 0));
  std::vector<int32_t> res = {0};
  uint64_t ch = u.boc[0];
  for (size_t i = 0; i < n; ++i) {
    BlockUnits b;
    const uint32_t lv = static_cast<uint32_t>(i);
    for (uint64_t j = 0; j < u.lpb[i]; ++j) {
      Unit r = unit(UnitKind::resnet, j == 0 ? ch : u.boc[i], u.boc[i], lv);
      r.checkpointable = true;
      b.resnets.push_back(push(net, r));
      if (u.down_attn[i]) {
        b.attns.push_back(
            plan_attention(net, u.boc[i], u.heads[i], u.cross[i], u.tlayers[i], u.linear, lv));
        res.push_back(b.attns.back().out);
      } else {
        res.push_back(b.resnets.back());
      }
    }
    ch = u.boc[i];
    if (i + 1 < n) {
      b.sample = push(net, unit(UnitKind::downsample, ch, ch, lv));
      res.push_back(b.sample);
    }
    p.down.push_back(b);
  }
  const uint32_t deep = static_cast<uint32_t>(n - 1);
  Unit m0 = unit(UnitKind::resnet, ch, ch, deep);
  m0.plain_mid = true;  // UNetMidBlock2DCrossAttn runs resnets[0] without checkpointing
  p.mid.resnets.push_back(push(net, m0));
  p.mid.attns.push_back(
      plan_attention(net, ch, u.heads[n - 1], u.cross[n - 1], u.tlayers[n - 1], u.linear, deep));
  Unit m1 = unit(UnitKind::resnet, ch, ch, deep);
  m1.checkpointable = true;
  p.mid.resnets.push_back(push(net, m1));
  for (size_t i = 0; i < n; ++i) {
    const size_t r = n - 1 - i;  // reversed index
    BlockUnits b;
    const uint32_t lv = static_cast<uint32_t>(r);
    const uint64_t out = u.boc[r];
    for (uint64_t j = 0; j < u.lpb[r] + 1; ++j) {
      const int32_t from = res.back();
      res.pop_back();
      Unit rs = unit(UnitKind::resnet, ch + net.units[from].cout, out, lv);
      rs.skip_from = from;
      rs.checkpointable = true;
      b.resnets.push_back(push(net, rs));
      ch = out;
      if (u.up_attn[i])
        b.attns.push_back(
            plan_attention(net, out, u.heads[r], u.cross[r], u.tlayers[r], u.linear, lv));
    }
    if (i + 1 < n) b.sample = push(net, unit(UnitKind::upsample, out, out, lv));
    p.up.push_back(b);
  }
  net.units.push_back(unit(UnitKind::head, u.boc[0], u.out, 0));
  return p;
}

// ResnetBlock2D under `base` (norm1, conv1, time_emb_proj, norm2, dropout, conv2, nonlinearity,
// conv_shortcut when the channels change).
void resnet(Builder& b, const std::string& base, uint64_t cin, uint64_t cout, uint64_t temb) {
  b.mod(base);
  b.group_norm(base + ".norm1", cin);
  b.conv(base + ".conv1", cin, cout, 3);
  if (temb) b.linear(base + ".time_emb_proj", temb, cout);
  b.group_norm(base + ".norm2", cout);
  b.mod(base + ".dropout");
  b.conv(base + ".conv2", cout, cout, 3);
  b.mod(base + ".nonlinearity");
  if (cin != cout) b.conv(base + ".conv_shortcut", cin, cout, 1);
}

// BasicTransformerBlock (layer_norm): norm1, attn1, norm2, attn2, norm3, ff (GEGLU).
void basic_block(Builder& b, const std::string& base, uint64_t dim, uint64_t cross) {
  b.mod(base);
  b.layer_norm(base + ".norm1", dim, true);
  b.attention(base + ".attn1", dim, dim, dim, false, dim);
  b.layer_norm(base + ".norm2", dim, true);
  b.attention(base + ".attn2", dim, cross, dim, false, dim);
  b.layer_norm(base + ".norm3", dim, true);
  b.feed_forward(base + ".ff", dim, 4 * dim, true, dim);
}

// Transformer2DModel (continuous input) under `base`.
void transformer2d(Builder& b, const std::string& base, const AttnUnits& a, uint64_t c,
                   uint64_t cross, bool linear) {
  b.unit = a.in;
  b.mod(base);
  b.group_norm(base + ".norm", c);
  if (linear)
    b.linear(base + ".proj_in", c, c);
  else
    b.conv(base + ".proj_in", c, c, 1);
  b.mod(base + ".transformer_blocks");
  for (size_t k = 0; k < a.blocks.size(); ++k) {
    b.unit = a.blocks[k];
    basic_block(b, base + ".transformer_blocks." + std::to_string(k), c, cross);
  }
  b.unit = a.out;
  if (linear)
    b.linear(base + ".proj_out", c, c);
  else
    b.conv(base + ".proj_out", c, c, 1);
}

// One down, mid or up block's tensors (attentions, resnets, samplers: registration order).
void emit_block(Builder& b, const std::string& base, const BlockUnits& u, const diffusion::Net& net,
                uint64_t cross, bool linear, const char* sampler, uint64_t temb) {
  b.mod(base);
  if (!u.attns.empty()) {
    b.mod(base + ".attentions");
    for (size_t j = 0; j < u.attns.size(); ++j)
      transformer2d(b, base + ".attentions." + std::to_string(j), u.attns[j],
                    net.units[u.attns[j].in].cout, cross, linear);
  }
  b.mod(base + ".resnets");
  for (size_t j = 0; j < u.resnets.size(); ++j) {
    const Unit& r = net.units[u.resnets[j]];
    b.unit = u.resnets[j];
    resnet(b, base + ".resnets." + std::to_string(j), r.cin, r.cout, temb);
  }
  if (u.sample < 0) return;
  const std::string s = base + "." + sampler;
  b.unit = u.sample;
  b.mod(s);
  b.mod(s + ".0");
  b.conv(s + ".0.conv", net.units[u.sample].cout, net.units[u.sample].cout, 3);
}

void emit_unet(Builder& b, const UNetConfig& u, const Plan& p) {
  const size_t n = u.boc.size();
  b.mod("");
  b.unit = 0;
  b.conv("conv_in", u.in, u.boc[0], u.kin);
  b.mod("time_proj");
  b.timestep_embedding("time_embedding", u.boc[0], u.temb, u.cond);
  if (u.text_time) {
    b.mod("add_time_proj");
    b.timestep_embedding("add_embedding", b.net.add_in, u.temb);
  }
  b.mod("down_blocks");
  b.mod("up_blocks");
  for (size_t i = 0; i < n; ++i)
    emit_block(b, "down_blocks." + std::to_string(i), p.down[i], b.net, u.cross[i], u.linear,
               "downsamplers", u.temb);
  for (size_t i = 0; i < n; ++i)
    emit_block(b, "up_blocks." + std::to_string(i), p.up[i], b.net, u.cross[n - 1 - i], u.linear,
               "upsamplers", u.temb);
  emit_block(b, "mid_block", p.mid, b.net, u.cross[n - 1], u.linear, "", u.temb);
  b.unit = static_cast<int64_t>(b.net.units.size()) - 1;
  b.group_norm("conv_norm_out", u.boc[0]);
  b.mod("conv_act");
  b.conv("conv_out", u.boc[0], u.out, u.kout);
}

}  // namespace

ModelDescription unet_from_config(const Obj& c) {
  ModelDescription m;
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "UNet2DConditionModel";
  const UNetConfig u = read_unet(c);
  net->in_channels = u.in;
  net->out_channels = net->latent_channels = u.out;
  net->groups = u.groups;
  net->temb = u.temb;
  net->sample_size = c.u64_or("sample_size", 64, 1, kMaxWidth);
  net->text_dim = u.cross[0];
  net->default_text_len = 77;  // CLIP's max_position_embeddings (the SD pipelines pad to it)
  if (u.text_time) {
    net->add_time_dim = c.u64("addition_time_embed_dim", 1, kMaxWidth);
    net->add_in = c.u64("projection_class_embeddings_input_dim", 1, kMaxWidth);
    if (net->add_in <= 6 * net->add_time_dim)
      fail(code::kInconsistent, c.field("projection_class_embeddings_input_dim"),
           Message{"error.unet.projection",
                   {{"field", c.field("projection_class_embeddings_input_dim")}}});
    net->pooled_dim = net->add_in - 6 * net->add_time_dim;
  }
  const Plan p = plan_unet(u, *net);
  Builder b{m, *net};
  emit_unet(b, u, p);
  m.arch.model_type = "unet";
  m.architecture = "UNet2DConditionModel";
  m.diffusion = net;
  return m;
}

// ------------------------------------------------------------------- AutoencoderKL
namespace {

// Encoder / Decoder mid block (UNetMidBlock2D): attentions.0 (group_norm, to_q/k/v, to_out with
// bias), resnets.0, resnets.1.
void vae_mid(Builder& b, const std::string& base, uint64_t c) {
  b.mod(base);
  b.mod(base + ".attentions");
  const std::string a = base + ".attentions.0";
  b.mod(a);
  b.group_norm(a + ".group_norm", c);
  b.linear(a + ".to_q", c, c);
  b.linear(a + ".to_k", c, c);
  b.linear(a + ".to_v", c, c);
  b.mod(a + ".to_out");
  b.linear(a + ".to_out.0", c, c);
  b.mod(a + ".to_out.1");
  b.mod(base + ".resnets");
  resnet(b, base + ".resnets.0", c, c, 0);
  resnet(b, base + ".resnets.1", c, c, 0);
}

void vae_coder(Builder& b, const std::string& base, const std::vector<uint64_t>& boc,
               uint64_t layers, uint64_t cin, uint64_t cout, bool decoder) {
  b.mod(base);
  const size_t n = boc.size();
  b.conv(base + ".conv_in", cin, decoder ? boc[n - 1] : boc[0], 3);
  // Decoder registers up_blocks before mid_block, so its up blocks come first in state_dict()
  const char* blocks = decoder ? ".up_blocks" : ".down_blocks";
  b.mod(base + blocks);
  uint64_t ch = decoder ? boc[n - 1] : boc[0];
  for (size_t i = 0; i < n; ++i) {
    const uint64_t out = decoder ? boc[n - 1 - i] : boc[i];
    const std::string blk = base + blocks + "." + std::to_string(i);
    b.mod(blk);
    b.mod(blk + ".resnets");
    const uint64_t k = decoder ? layers + 1 : layers;
    for (uint64_t j = 0; j < k; ++j)
      resnet(b, blk + ".resnets." + std::to_string(j), j == 0 ? ch : out, out, 0);
    ch = out;
    if (i + 1 < n) {
      const std::string s = blk + (decoder ? ".upsamplers" : ".downsamplers");
      b.mod(s);
      b.mod(s + ".0");
      b.conv(s + ".0.conv", out, out, 3);
    }
  }
  vae_mid(b, base + ".mid_block", boc[n - 1]);
  b.group_norm(base + ".conv_norm_out", decoder ? boc[0] : boc[n - 1]);
  b.mod(base + ".conv_act");
  b.conv(base + ".conv_out", decoder ? boc[0] : boc[n - 1], cout, 3);
}

}  // namespace

ModelDescription vae_from_config(const Obj& c) {
  ModelDescription m;
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "AutoencoderKL";
  net->vae = true;
  std::vector<uint64_t> boc;
  const json& a = c.has("block_out_channels") ? c.array("block_out_channels", 16) : json::array();
  for (size_t i = 0; i < a.size(); ++i)
    boc.push_back(read_u64(a[i], index_path(c.field("block_out_channels"), i), 1, kMaxWidth));
  if (boc.empty()) boc = {64};  // AutoencoderKL default
  const uint64_t layers = c.u64_or("layers_per_block", 1, 1, kMaxUnits);
  const uint64_t in = c.u64_or("in_channels", 3, 1, kMaxWidth);
  const uint64_t out = c.u64_or("out_channels", 3, 1, kMaxWidth);
  const uint64_t lat = c.u64_or("latent_channels", 4, 1, kMaxWidth);
  net->groups = c.u64_or("norm_num_groups", 32, 1, kMaxWidth);
  require_value(c, "act_fn", "silu");
  if (c.has("mid_block_add_attention") && !c.boolean("mid_block_add_attention"))
    fail(code::kUnsupported, c.field("mid_block_add_attention"),
         Message{"error.unet.midAttention", {{"field", c.field("mid_block_add_attention")}}});
  const bool quant = c.boolean_or("use_quant_conv", true);
  const bool post = c.boolean_or("use_post_quant_conv", true);
  net->in_channels = in;
  net->latent_channels = lat;
  net->vae_scale = uint64_t{1} << (boc.size() - 1);
  net->vae_channels = boc;
  net->vae_layers = layers;
  net->sample_size = c.u64_or("sample_size", 512, 1, kMaxWidth);
  Builder b{m, *net};
  b.mod("");
  net->units.push_back(Unit{});  // one unit: the VAE is a frozen part, not a chain
  b.unit = 0;
  vae_coder(b, "encoder", boc, layers, in, 2 * lat, false);
  vae_coder(b, "decoder", boc, layers, lat, out, true);
  if (quant) b.conv("quant_conv", 2 * lat, 2 * lat, 1);
  if (post) b.conv("post_quant_conv", lat, lat, 1);
  m.arch.model_type = "vae";
  m.architecture = "AutoencoderKL";
  m.diffusion = net;
  return m;
}

}  // namespace diffusers
}  // namespace trainmem
