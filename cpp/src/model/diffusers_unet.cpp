// The tensor recipes of diffusers' UNet2DConditionModel (Stable Diffusion 1.x / 2.x / XL) and
// AutoencoderKL (model/diffusers_recipes.hpp): the exact parameter tensor list (names and order of
// state_dict()) and the chain of units. Sources: huggingface/diffusers@
// 58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/unets/unet_2d_condition.py
// (__init__: conv_in, time_proj, time_embedding, add_time_proj / add_embedding for
// addition_embed_type "text_time", down_blocks, up_blocks, mid_block, conv_norm_out, conv_act,
// conv_out), unets/unet_2d_blocks.py (CrossAttnDownBlock2D, DownBlock2D, UNetMidBlock2DCrossAttn,
// CrossAttnUpBlock2D, UpBlock2D, DownEncoderBlock2D, UpDecoderBlock2D, UNetMidBlock2D),
// resnet.py ResnetBlock2D, transformers/transformer_2d.py Transformer2DModel, attention.py
// BasicTransformerBlock, autoencoders/autoencoder_kl.py, autoencoders/vae.py Encoder / Decoder.
// Checked: tools/dump_diffusers.py -> tests/fixtures/diffusers_tensors.json.
#include <memory>
#include <string>
#include <vector>

#include "model/diffusers_builder.hpp"
#include "model/diffusers_recipes.hpp"

namespace trainmem {
namespace diffusers {
namespace {

using diffusion::Unit;
using diffusion::UnitKind;

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
Plan plan_unet(const UNetRecipe& u, diffusion::Net& net) {
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

void emit_unet(Builder& b, const UNetRecipe& u, const Plan& p) {
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

// ------------------------------------------------------------------- AutoencoderKL
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

ModelDescription build_unet(const UNetRecipe& u, std::shared_ptr<diffusion::Net> net) {
  ModelDescription m;
  const Plan p = plan_unet(u, *net);
  Builder b{m, *net};
  emit_unet(b, u, p);
  m.arch.model_type = "unet";
  m.architecture = "UNet2DConditionModel";
  m.diffusion = net;
  return m;
}

ModelDescription build_vae(const VaeRecipe& r, std::shared_ptr<diffusion::Net> net) {
  ModelDescription m;
  const std::vector<uint64_t>& boc = r.block_out_channels;
  const uint64_t lat = r.latent;
  Builder b{m, *net};
  b.mod("");
  net->units.push_back(Unit{});  // one unit: the VAE is a frozen part, not a chain
  b.unit = 0;
  vae_coder(b, "encoder", boc, r.layers, r.in, 2 * lat, false);
  vae_coder(b, "decoder", boc, r.layers, lat, r.out, true);
  if (r.quant_conv) b.conv("quant_conv", 2 * lat, 2 * lat, 1);
  if (r.post_quant_conv) b.conv("post_quant_conv", lat, lat, 1);
  m.arch.model_type = "vae";
  m.architecture = "AutoencoderKL";
  m.diffusion = net;
  return m;
}

}  // namespace diffusers
}  // namespace trainmem
