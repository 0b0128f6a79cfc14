// diffusers UNet2DConditionModel (Stable Diffusion 1.x / 2.x / XL) and AutoencoderKL config.json
// -> the typed recipes of model/diffusers_recipes.hpp (the core builds the tensor list and the
// chain of units). This file reads the keys: the defaults of UNet2DConditionModel.__init__ and
// AutoencoderKL.__init__ (huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951
// src/diffusers/models/unets/unet_2d_condition.py: `num_attention_heads or attention_head_dim`;
// autoencoders/autoencoder_kl.py), the settings not modelled (refused), limits and errors.
#include <memory>
#include <string>
#include <vector>

#include "io/diffusers_build.hpp"
#include "model/diffusers_recipes.hpp"

namespace trainmem {
namespace diffusers {
namespace {

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

UNetRecipe read_unet(const Obj& c) {
  UNetRecipe u;
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

}  // namespace

ModelDescription unet_from_config(const Obj& c) {
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "UNet2DConditionModel";
  const UNetRecipe u = read_unet(c);
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
  return build_unet(u, net);
}

ModelDescription vae_from_config(const Obj& c) {
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "AutoencoderKL";
  net->vae = true;
  VaeRecipe r;
  std::vector<uint64_t>& boc = r.block_out_channels;
  const json& a = c.has("block_out_channels") ? c.array("block_out_channels", 16) : json::array();
  for (size_t i = 0; i < a.size(); ++i)
    boc.push_back(read_u64(a[i], index_path(c.field("block_out_channels"), i), 1, kMaxWidth));
  if (boc.empty()) boc = {64};  // AutoencoderKL default
  r.layers = c.u64_or("layers_per_block", 1, 1, kMaxUnits);
  r.in = c.u64_or("in_channels", 3, 1, kMaxWidth);
  r.out = c.u64_or("out_channels", 3, 1, kMaxWidth);
  r.latent = c.u64_or("latent_channels", 4, 1, kMaxWidth);
  net->groups = c.u64_or("norm_num_groups", 32, 1, kMaxWidth);
  require_value(c, "act_fn", "silu");
  if (c.has("mid_block_add_attention") && !c.boolean("mid_block_add_attention"))
    fail(code::kUnsupported, c.field("mid_block_add_attention"),
         Message{"error.unet.midAttention", {{"field", c.field("mid_block_add_attention")}}});
  r.quant_conv = c.boolean_or("use_quant_conv", true);
  r.post_quant_conv = c.boolean_or("use_post_quant_conv", true);
  net->in_channels = r.in;
  net->latent_channels = r.latent;
  net->vae_scale = uint64_t{1} << (boc.size() - 1);
  net->vae_channels = boc;
  net->vae_layers = r.layers;
  net->sample_size = c.u64_or("sample_size", 512, 1, kMaxWidth);
  return build_vae(r, net);
}

}  // namespace diffusers
}  // namespace trainmem
