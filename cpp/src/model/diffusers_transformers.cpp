// The tensor recipes of diffusers' SD3, Flux, DiT and PixArt transformers
// (model/diffusers_recipes.hpp). Sources:
// huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951 src/diffusers/models/
// transformers/transformer_sd3.py, transformer_flux.py, dit_transformer_2d.py,
// pixart_transformer_2d.py; attention.py JointTransformerBlock, BasicTransformerBlock;
// normalization.py AdaLayerNormZero, SD35AdaLayerNormZeroX, AdaLayerNormZeroSingle,
// AdaLayerNormContinuous, AdaLayerNormSingle; embeddings.py PatchEmbed, CombinedTimestep*.
// Checked: tools/dump_diffusers.py -> tests/fixtures/diffusers_tensors.json.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/diffusers_builder.hpp"
#include "model/diffusers_recipes.hpp"

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

// The head: AdaLayerNormContinuous norm_out, proj_out.
void head(Builder& b, uint64_t dim, uint64_t out, uint64_t in) {
  start(b, UnitKind::head, dim, out);
  ada_norm(b, "norm_out", dim, 2, dim);
  b.linear("proj_out", dim, in);
}

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

// The finished description: the chain, the class and trainmem's model type for it.
void finish(ModelDescription& m, std::shared_ptr<diffusion::Net> net, const char* type) {
  m.arch.model_type = type;
  m.architecture = net->cls;
  m.diffusion = std::move(net);
}

// Starts Flux's block i of the module list `list` (a unit of `kind`, RMS-normed q and k): the
// block's module path.
std::string start_flux_block(Builder& b, UnitKind kind, const char* list, uint64_t i, uint64_t hd,
                             uint64_t heads) {
  Unit u = block_unit(kind, heads * hd, heads, hd);
  u.qk_norm = true;
  b.start(u);
  std::string p = std::string(list) + "." + std::to_string(i);
  b.mod(p);
  return p;
}

}  // namespace

ModelDescription build_sd3(const Sd3Recipe& r, std::shared_ptr<diffusion::Net> net) {
  ModelDescription m;
  const uint64_t heads = r.heads, hd = r.head_dim, dim = heads * hd, out = r.out;
  Builder b{m, *net};
  start(b, UnitKind::stem, r.in, dim);
  b.mod("");
  patch_embed(b, r.in, dim, r.patch, r.pos_embed_max, true);
  time_text_embed(b, dim, net->pooled_dim, false);
  b.linear("context_embedder", net->text_dim, r.caption);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < r.layers; ++i) {
    const bool dual = r.dual_attention[i];
    Unit u = block_unit(UnitKind::joint, dim, heads, hd);
    u.context_pre_only = i + 1 == r.layers;
    u.cross = dual ? 1 : 0;  // (a joint unit marks SD3.5's second attention here)
    u.qk_norm = r.qk_norm;
    b.start(u);
    const std::string p = "transformer_blocks." + std::to_string(i);
    b.mod(p);
    ada_norm(b, p + ".norm1", dim, dual ? 9 : 6, dim);
    ada_norm(b, p + ".norm1_context", dim, u.context_pre_only ? 2 : 6, dim);
    joint_attention(b, p + ".attn", {dim, hd, r.qk_norm, true, !u.context_pre_only, false, false});
    if (dual) joint_attention(b, p + ".attn2", {dim, hd, r.qk_norm, false, false, false, false});
    b.mod(p + ".norm2");
    gelu_ff(b, p + ".ff", dim);
    if (!u.context_pre_only) {
      b.mod(p + ".norm2_context");
      gelu_ff(b, p + ".ff_context", dim);
    }
  }
  head(b, dim, out, r.patch * r.patch * out);
  finish(m, std::move(net), "sd3");
  return m;
}

ModelDescription build_flux(const FluxRecipe& r, std::shared_ptr<diffusion::Net> net) {
  ModelDescription m;
  const uint64_t heads = r.heads, hd = r.head_dim, dim = heads * hd, in = r.in;
  Builder b{m, *net};
  start(b, UnitKind::stem, in, dim);
  b.mod("");
  b.mod("pos_embed");
  time_text_embed(b, dim, net->pooled_dim, net->guidance);
  b.linear("context_embedder", net->text_dim, dim);
  b.linear("x_embedder", in, dim);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < r.double_layers; ++i) {
    const std::string p =
        start_flux_block(b, UnitKind::flux_double, "transformer_blocks", i, hd, heads);
    ada_norm(b, p + ".norm1", dim, 6, dim);
    ada_norm(b, p + ".norm1_context", dim, 6, dim);
    joint_attention(b, p + ".attn", {dim, hd, true, true, true, false, true});
    b.mod(p + ".norm2");
    gelu_ff(b, p + ".ff", dim);
    b.mod(p + ".norm2_context");
    gelu_ff(b, p + ".ff_context", dim);
  }
  b.mod("single_transformer_blocks");
  for (uint64_t i = 0; i < r.single_layers; ++i) {
    const std::string p =
        start_flux_block(b, UnitKind::flux_single, "single_transformer_blocks", i, hd, heads);
    ada_norm(b, p + ".norm", dim, 3, dim);
    b.linear(p + ".proj_mlp", dim, 4 * dim);
    b.mod(p + ".act_mlp");
    b.linear(p + ".proj_out", 5 * dim, dim);
    joint_attention(b, p + ".attn", {dim, hd, true, false, false, true, true});
  }
  head(b, dim, r.out, r.out);
  finish(m, std::move(net), "flux");
  return m;
}

namespace {

// PixArt's adaln_single (AdaLayerNormSingle with PixArtAlphaCombinedTimestepSizeEmbeddings)
// and caption_projection: they run before the blocks, so their tensors are the stem's
// (embedding flag), though registered after proj_out.
void pixart_conditioning(Builder& b, const DitRecipe& r, uint64_t dim) {
  ModelDescription& m = b.m;
  const size_t first = m.tensors.size();
  b.mod("adaln_single");
  b.mod("adaln_single.emb");
  b.mod("adaln_single.emb.time_proj");
  b.timestep_embedding("adaln_single.emb.timestep_embedder", 256, dim);
  if (r.additional_conditions) {
    b.mod("adaln_single.emb.additional_condition_proj");
    b.timestep_embedding("adaln_single.emb.resolution_embedder", 256, dim / 3);
    b.timestep_embedding("adaln_single.emb.aspect_ratio_embedder", 256, dim / 3);
  }
  b.mod("adaln_single.silu");
  b.linear("adaln_single.linear", dim, 6 * dim);
  if (r.caption) text_projection(b, "caption_projection", r.caption, dim);
  for (size_t k = first; k < m.tensors.size(); ++k) {
    m.tensors[k].block = -1;
    m.tensors[k].embedding = true;
  }
}

}  // namespace

ModelDescription build_dit(const DitRecipe& r, std::shared_ptr<diffusion::Net> net) {
  ModelDescription m;
  const uint64_t heads = r.heads, hd = r.head_dim, dim = heads * hd;
  const uint64_t patch = r.patch, out = r.out;
  Builder b{m, *net};
  start(b, UnitKind::stem, r.in, dim);
  b.mod("");
  if (r.pixart) b.param("scale_shift_table", {2, dim});
  patch_embed(b, r.in, dim, patch, r.sample / patch, false);
  b.mod("transformer_blocks");
  for (uint64_t i = 0; i < r.layers; ++i) {
    Unit u = block_unit(UnitKind::dit_block, dim, heads, hd);
    u.cross = r.cross;
    b.start(u);
    dit_block(b, "transformer_blocks." + std::to_string(i), dim, hd, r.pixart, r.cross, r.classes,
              r.affine);
  }
  start(b, UnitKind::head, dim, out);
  b.mod("norm_out");
  if (!r.pixart) {
    b.linear("proj_out_1", dim, 2 * dim);
    b.linear("proj_out_2", dim, patch * patch * out);
  } else {
    b.linear("proj_out", dim, patch * patch * out);
    pixart_conditioning(b, r, dim);
  }
  finish(m, std::move(net), r.pixart ? "pixart" : "dit");
  return m;
}

}  // namespace diffusers
}  // namespace trainmem
