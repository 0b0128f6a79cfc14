// diffusers SD3Transformer2DModel, FluxTransformer2DModel, DiTTransformer2DModel and
// PixArtTransformer2DModel config.json -> the exact parameter tensor list (state_dict() order:
// a module's own parameters, then its buffers, then its children in registration order) and the
// chain of units (stem, one unit per transformer block, head). Sources:
// huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/
// transformers/transformer_sd3.py, transformer_flux.py, dit_transformer_2d.py,
// pixart_transformer_2d.py; attention.py JointTransformerBlock, BasicTransformerBlock;
// normalization.py AdaLayerNormZero, SD35AdaLayerNormZeroX, AdaLayerNormZeroSingle,
// AdaLayerNormContinuous, AdaLayerNormSingle; embeddings.py PatchEmbed, CombinedTimestep*.
// Checked: tools/dump_diffusers.py -> tests/fixtures/diffusers_tensors.json.
#include <string>
#include <vector>

#include "io/diffusers_build.hpp"

namespace trainmem {
namespace diffusers {
namespace {

using diffusion::Unit;
using diffusion::UnitKind;

Unit block_unit(UnitKind k, uint64_t dim, uint64_t heads, uint64_t hd) {
  Unit u;
  u.kind = k;
  u.cin = u.cout = dim;
  u.heads = heads;
  u.head_dim = hd;
  u.checkpointable = true;  // the models' gradient_checkpointing wraps each block
  return u;
}

void start(Builder& b, UnitKind k, uint64_t cin, uint64_t cout) {
  Unit u;
  u.kind = k;
  u.cin = cin;
  u.cout = cout;
  b.start(u);
}

// AdaLayerNormZero / SD35AdaLayerNormZeroX / AdaLayerNormZeroSingle / AdaLayerNormContinuous:
// silu, linear(cond -> k x dim), norm (no affine parameters).
void ada_norm(Builder& b, const std::string& base, uint64_t dim, uint64_t k, uint64_t cond) {
  b.mod(base);
  b.mod(base + ".silu");
  b.linear(base + ".linear", cond, k * dim);
  b.mod(base + ".norm");
}

// PatchEmbed: proj (conv patch x patch, stride patch) and the sin-cos table buffer (persistent
// only with pos_embed_max_size, SD3).
void patch_embed(Builder& b, uint64_t cin, uint64_t dim, uint64_t patch, uint64_t grid,
                 bool persistent) {
  b.mod("pos_embed");
  b.conv("pos_embed.proj", cin, dim, patch);
  BufferSpec buf;
  buf.name = "pos_embed.pos_embed";
  buf.shape = {1, grid * grid, dim};
  buf.persistent = persistent;
  b.m.buffers.push_back(buf);
}

// The text projection of pooled embeddings (PixArtAlphaTextProjection: linear_1, act_1, linear_2).
void text_projection(Builder& b, const std::string& base, uint64_t in, uint64_t dim) {
  b.mod(base);
  b.linear(base + ".linear_1", in, dim);
  b.mod(base + ".act_1");
  b.linear(base + ".linear_2", dim, dim);
}

// Attention of SD3 / Flux: norm_q/norm_k (RMSNorm(head_dim) when qk_norm), to_q/k/v, the added
// (context) projections, to_out / to_add_out, norm_added_q/k.
struct AttnShape {
  uint64_t dim, hd;
  bool qk_norm, added, context_out, pre_only, flux;
};
void joint_attention(Builder& b, const std::string& base, const AttnShape& s) {
  b.mod(base);
  if (s.qk_norm) {
    b.rms_norm(base + ".norm_q", s.hd);
    b.rms_norm(base + ".norm_k", s.hd);
  }
  b.linear(base + ".to_q", s.dim, s.dim);
  b.linear(base + ".to_k", s.dim, s.dim);
  b.linear(base + ".to_v", s.dim, s.dim);
  auto to_out = [&] {
    if (s.pre_only) return;
    b.mod(base + ".to_out");
    b.linear(base + ".to_out.0", s.dim, s.dim);
    b.mod(base + ".to_out.1");
  };
  if (s.flux) {  // FluxAttention: to_out, then norm_added_q/k and the added projections
    to_out();
    if (!s.added) return;
    b.rms_norm(base + ".norm_added_q", s.hd);
    b.rms_norm(base + ".norm_added_k", s.hd);
    for (const char* p : {".add_q_proj", ".add_k_proj", ".add_v_proj"})
      b.linear(base + p, s.dim, s.dim);
    b.linear(base + ".to_add_out", s.dim, s.dim);
    return;
  }
  // Attention: add_k_proj, add_v_proj, add_q_proj, to_out, to_add_out, norm_added_q/k
  if (s.added)
    for (const char* p : {".add_k_proj", ".add_v_proj", ".add_q_proj"})
      b.linear(base + p, s.dim, s.dim);
  to_out();
  if (s.added && s.context_out) b.linear(base + ".to_add_out", s.dim, s.dim);
  if (s.added && s.qk_norm) {
    b.rms_norm(base + ".norm_added_q", s.hd);
    b.rms_norm(base + ".norm_added_k", s.hd);
  }
}

void gelu_ff(Builder& b, const std::string& base, uint64_t dim) {
  b.feed_forward(base, dim, 4 * dim, false, dim);
}

// The time (+ guidance) + pooled-text embedding of SD3 and Flux (CombinedTimestep*TextProj*).
void time_text_embed(Builder& b, uint64_t dim, uint64_t pooled, bool guidance) {
  b.mod("time_text_embed");
  b.mod("time_text_embed.time_proj");
  b.timestep_embedding("time_text_embed.timestep_embedder", 256, dim);
  if (guidance) b.timestep_embedding("time_text_embed.guidance_embedder", 256, dim);
  text_projection(b, "time_text_embed.text_embedder", pooled, dim);
}

void head(Builder& b, uint64_t dim, uint64_t out, uint64_t in) {
  start(b, UnitKind::head, dim, out);
  ada_norm(b, "norm_out", dim, 2, dim);
  b.linear("proj_out", dim, in);
}

}  // namespace

ModelDescription sd3_from_config(const Obj& c) {
  ModelDescription m;
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "SD3Transformer2DModel";
  const uint64_t heads = c.u64_or("num_attention_heads", 18, 1, kMaxWidth);
  const uint64_t hd = c.u64_or("attention_head_dim", 64, 1, kMaxWidth);
  const uint64_t dim = heads * hd, layers = c.u64_or("num_layers", 18, 1, kMaxUnits);
  const uint64_t patch = c.u64_or("patch_size", 2, 1, 64);
  const uint64_t in = c.u64_or("in_channels", 16, 1, kMaxWidth);
  const uint64_t out = c.u64_or("out_channels", in, 1, kMaxWidth);
  const uint64_t caption = c.u64_or("caption_projection_dim", 1152, 1, kMaxWidth);
  if (caption != dim)
    fail(code::kInconsistent, c.field("caption_projection_dim"),
         Message{"error.diffusers.caption",
                 {{"field", c.field("caption_projection_dim")},
                  {"caption", std::to_string(caption)},
                  {"dim", std::to_string(dim)}}});
  const uint64_t pos_max = c.u64_or("pos_embed_max_size", 96, 1, 1 << 14);
  std::string qk = c.str_or("qk_norm", "", 32);
  if (c.has("qk_norm") && c.raw("qk_norm").is_null()) qk.clear();
  if (!qk.empty() && qk != "rms_norm")
    fail(code::kUnsupported, c.field("qk_norm"),
         Message{"error.diffusers.qkNorm",
                 {{"field", c.field("qk_norm")}, {"qk", qk.substr(0, 32)}}});
  std::vector<bool> dual(layers, false);
  if (c.has("dual_attention_layers")) {
    const json& a = c.array("dual_attention_layers", kMaxUnits);
    for (size_t i = 0; i < a.size(); ++i)
      dual[read_u64(a[i], index_path(c.field("dual_attention_layers"), i), 0, layers - 1)] = true;
  }
  net->in_channels = net->latent_channels = in;
  net->out_channels = out;
  net->patch = patch;
  net->sample_size = c.u64_or("sample_size", 128, 1, kMaxWidth);
  net->text_dim = c.u64_or("joint_attention_dim", 4096, 1, kMaxWidth);
  net->pooled_dim = c.u64_or("pooled_projection_dim", 2048, 1, kMaxWidth);
  net->default_text_len = 333;  // CLIP-L/G's 77 tokens + T5's 256 (StableDiffusion3Pipeline)
  net->caption_dim = caption;
  Builder b{m, *net};
  start(b, UnitKind::stem, in, dim);
  b.mod("");
  patch_embed(b, in, dim, patch, pos_max, true);
  time_text_embed(b, dim, net->pooled_dim, false);
  b.linear("context_embedder", net->text_dim, caption);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < layers; ++i) {
    Unit u = block_unit(UnitKind::joint, dim, heads, hd);
    u.context_pre_only = i + 1 == layers;
    u.cross = dual[i] ? 1 : 0;  // (a joint unit marks SD3.5's second attention here)
    u.qk_norm = !qk.empty();
    b.start(u);
    const std::string p = "transformer_blocks." + std::to_string(i);
    b.mod(p);
    ada_norm(b, p + ".norm1", dim, dual[i] ? 9 : 6, dim);
    ada_norm(b, p + ".norm1_context", dim, u.context_pre_only ? 2 : 6, dim);
    joint_attention(b, p + ".attn",
                    {dim, hd, !qk.empty(), true, !u.context_pre_only, false, false});
    if (dual[i])
      joint_attention(b, p + ".attn2", {dim, hd, !qk.empty(), false, false, false, false});
    b.mod(p + ".norm2");
    gelu_ff(b, p + ".ff", dim);
    if (!u.context_pre_only) {
      b.mod(p + ".norm2_context");
      gelu_ff(b, p + ".ff_context", dim);
    }
  }
  head(b, dim, out, patch * patch * out);
  m.arch.model_type = "sd3";
  m.architecture = net->cls;
  m.diffusion = net;
  return m;
}

ModelDescription flux_from_config(const Obj& c) {
  ModelDescription m;
  auto net = std::make_shared<diffusion::Net>();
  net->cls = "FluxTransformer2DModel";
  const uint64_t heads = c.u64_or("num_attention_heads", 24, 1, kMaxWidth);
  const uint64_t hd = c.u64_or("attention_head_dim", 128, 1, kMaxWidth);
  const uint64_t dim = heads * hd;
  const uint64_t doubles = c.u64_or("num_layers", 19, 0, kMaxUnits);
  const uint64_t singles = c.u64_or("num_single_layers", 38, 0, kMaxUnits);
  const uint64_t patch = c.u64_or("patch_size", 1, 1, 64);
  const uint64_t in = c.u64_or("in_channels", 64, 1, kMaxWidth);
  const uint64_t out = c.u64_or("out_channels", in, 1, kMaxWidth);
  if (patch != 1)
    fail(code::kUnsupported, c.field("patch_size"),
         Message{"error.diffusers.fluxPatch",
                 {{"field", c.field("patch_size")}, {"patch", std::to_string(patch)}}});
  if (in % 4 != 0)
    fail(code::kInconsistent, c.field("in_channels"),
         Message{"error.diffusers.inChannels", {{"field", c.field("in_channels")}}});
  net->guidance = c.boolean_or("guidance_embeds", false);
  net->in_channels = in;
  net->out_channels = out;
  net->latent_channels = in / 4;
  net->patch = 2;  // FluxPipeline._pack_latents: 2x2 latent pixels per token
  net->sample_size = 128;
  net->text_dim = c.u64_or("joint_attention_dim", 4096, 1, kMaxWidth);
  net->pooled_dim = c.u64_or("pooled_projection_dim", 768, 1, kMaxWidth);
  net->default_text_len = 512;  // FluxPipeline max_sequence_length (T5)
  c.mark_used("axes_dims_rope");
  Builder b{m, *net};
  start(b, UnitKind::stem, in, dim);
  b.mod("");
  b.mod("pos_embed");
  time_text_embed(b, dim, net->pooled_dim, net->guidance);
  b.linear("context_embedder", net->text_dim, dim);
  b.linear("x_embedder", in, dim);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < doubles; ++i) {
    Unit u = block_unit(UnitKind::flux_double, dim, heads, hd);
    u.qk_norm = true;
    b.start(u);
    const std::string p = "transformer_blocks." + std::to_string(i);
    b.mod(p);
    ada_norm(b, p + ".norm1", dim, 6, dim);
    ada_norm(b, p + ".norm1_context", dim, 6, dim);
    joint_attention(b, p + ".attn", {dim, hd, true, true, true, false, true});
    b.mod(p + ".norm2");
    gelu_ff(b, p + ".ff", dim);
    b.mod(p + ".norm2_context");
    gelu_ff(b, p + ".ff_context", dim);
  }
  b.mod("single_transformer_blocks");
  for (uint64_t i = 0; i < singles; ++i) {
    Unit u = block_unit(UnitKind::flux_single, dim, heads, hd);
    u.qk_norm = true;
    b.start(u);
    const std::string p = "single_transformer_blocks." + std::to_string(i);
    b.mod(p);
    ada_norm(b, p + ".norm", dim, 3, dim);
    b.linear(p + ".proj_mlp", dim, 4 * dim);
    b.mod(p + ".act_mlp");
    b.linear(p + ".proj_out", 5 * dim, dim);
    joint_attention(b, p + ".attn", {dim, hd, true, false, false, true, true});
  }
  head(b, dim, out, out);
  m.arch.model_type = "flux";
  m.architecture = net->cls;
  m.diffusion = net;
  return m;
}

namespace {

// TimestepEmbedding pair of PixArtAlphaCombinedTimestepSizeEmbeddings / the DiT label embedder.
void dit_block(Builder& b, const std::string& p, uint64_t dim, uint64_t hd, bool pixart,
               uint64_t cross, uint64_t classes, bool affine) {
  b.mod(p);
  if (pixart)  // BasicTransformerBlock registers its own scale_shift_table last, but a module's
    b.param(p + ".scale_shift_table", {6, dim});  // parameters come first in state_dict()
  if (pixart) {
    b.layer_norm(p + ".norm1", dim, affine);
  } else {  // AdaLayerNormZero(dim, num_embeds_ada_norm): emb, silu, linear, norm
    b.mod(p + ".norm1");
    b.mod(p + ".norm1.emb");
    b.mod(p + ".norm1.emb.time_proj");
    b.timestep_embedding(p + ".norm1.emb.timestep_embedder", 256, dim);
    b.mod(p + ".norm1.emb.class_embedder");
    b.mod(p + ".norm1.emb.class_embedder.embedding_table");
    b.param(p + ".norm1.emb.class_embedder.embedding_table.weight", {classes + 1, dim});
    b.mod(p + ".norm1.silu");
    b.linear(p + ".norm1.linear", dim, 6 * dim);
    b.mod(p + ".norm1.norm");
  }
  b.attention(p + ".attn1", dim, dim, dim, true, dim);
  if (cross) {
    b.layer_norm(p + ".norm2", dim, affine);
    b.attention(p + ".attn2", dim, cross, dim, true, dim);
  } else if (pixart) {
    b.layer_norm(p + ".norm2", dim, affine);
  }
  if (!pixart) b.layer_norm(p + ".norm3", dim, affine);
  gelu_ff(b, p + ".ff", dim);
  (void)hd;
}

}  // namespace

ModelDescription dit_from_config(const Obj& c, bool pixart) {
  ModelDescription m;
  auto net = std::make_shared<diffusion::Net>();
  net->cls = pixart ? "PixArtTransformer2DModel" : "DiTTransformer2DModel";
  const uint64_t heads = c.u64_or("num_attention_heads", 16, 1, kMaxWidth);
  const uint64_t hd = c.u64_or("attention_head_dim", 72, 1, kMaxWidth);
  const uint64_t dim = heads * hd, layers = c.u64_or("num_layers", 28, 1, kMaxUnits);
  const uint64_t patch = c.u64_or("patch_size", 2, 1, 64);
  const uint64_t in = c.u64_or("in_channels", 4, 1, kMaxWidth);
  const uint64_t out = c.u64_or("out_channels", pixart ? 8 : in, 1, kMaxWidth);
  const uint64_t sample = c.u64_or("sample_size", pixart ? 128 : 32, 1, kMaxWidth);
  const bool affine = c.boolean_or("norm_elementwise_affine", false);
  const uint64_t classes = pixart ? 0 : c.u64_or("num_embeds_ada_norm", 1000, 1, 1 << 24);
  if (pixart) c.mark_used("num_embeds_ada_norm");
  require_value(c, "norm_type", pixart ? "ada_norm_single" : "ada_norm_zero");
  require_value(c, "activation_fn", "gelu-approximate");
  if (!c.boolean_or("attention_bias", true))
    fail(code::kUnsupported, c.field("attention_bias"),
         Message{"error.diffusers.bias", {{"field", c.field("attention_bias")}}});
  const uint64_t cross = pixart ? c.u64_or("cross_attention_dim", 1152, 1, kMaxWidth) : 0;
  const uint64_t caption = pixart ? c.u64_or("caption_channels", 0, 0, kMaxWidth) : 0;
  bool extra = sample == 128;  // PixArt: use_additional_conditions defaults to sample_size == 128
  if (c.has("use_additional_conditions") && !c.raw("use_additional_conditions").is_null())
    extra = c.boolean("use_additional_conditions");
  c.mark_used("use_additional_conditions");
  net->in_channels = net->latent_channels = in;
  net->out_channels = out;
  net->patch = patch;
  net->sample_size = sample;
  net->text_dim = caption ? caption : cross;
  net->caption_dim = caption;
  net->default_text_len = pixart ? 120 : 0;  // PixArtAlphaPipeline max_sequence_length (T5)
  Builder b{m, *net};
  start(b, UnitKind::stem, in, dim);
  b.mod("");
  if (pixart) b.param("scale_shift_table", {2, dim});
  patch_embed(b, in, dim, patch, sample / patch, false);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < layers; ++i) {
    Unit u = block_unit(UnitKind::dit_block, dim, heads, hd);
    u.cross = cross;
    b.start(u);
    dit_block(b, "transformer_blocks." + std::to_string(i), dim, hd, pixart, cross, classes,
              affine);
  }
  start(b, UnitKind::head, dim, out);
  b.mod("norm_out");
  if (!pixart) {
    b.linear("proj_out_1", dim, 2 * dim);
    b.linear("proj_out_2", dim, patch * patch * out);
  } else {
    b.linear("proj_out", dim, patch * patch * out);
    // adaln_single and caption_projection run before the blocks: the stem's (embedding flag)
    const size_t first = m.tensors.size();
    b.mod("adaln_single");
    b.mod("adaln_single.emb");
    b.mod("adaln_single.emb.time_proj");
    b.timestep_embedding("adaln_single.emb.timestep_embedder", 256, dim);
    if (extra) {
      b.mod("adaln_single.emb.additional_condition_proj");
      b.timestep_embedding("adaln_single.emb.resolution_embedder", 256, dim / 3);
      b.timestep_embedding("adaln_single.emb.aspect_ratio_embedder", 256, dim / 3);
    }
    b.mod("adaln_single.silu");
    b.linear("adaln_single.linear", dim, 6 * dim);
    if (caption) text_projection(b, "caption_projection", caption, dim);
    for (size_t k = first; k < m.tensors.size(); ++k) {
      m.tensors[k].block = -1;
      m.tensors[k].embedding = true;
    }
  }
  m.arch.model_type = pixart ? "pixart" : "dit";
  m.architecture = net->cls;
  m.diffusion = net;
  return m;
}

}  // namespace diffusers
}  // namespace trainmem
