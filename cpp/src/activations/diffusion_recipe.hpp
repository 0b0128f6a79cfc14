// Internal to the diffusion activation recipes (diffusion_activations.cpp, diffusion_mmdit.cpp):
// element widths by precision, the shapes one unit sees, and a recorder of saved tensors and
// transients that fills a LayerActivations.
#pragma once
#include <cstdint>
#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/diffusion.hpp"
#include "util/checked.hpp"

namespace trainmem {
namespace activations {
namespace dif {

// Bytes per element of one precision (PyTorch's CUDA autocast op lists for amp-*:
// aten/src/ATen/autocast_mode.cpp: conv2d, linear, baddbmm, bmm, matmul run in 16-bit (their
// inputs cast, the copy kept for the backward); group_norm, layer_norm, mse_loss in fp32;
// softmax in fp32 (fp32_set_opt_dtype); silu, gelu, add, mul, cat, interpolate as their inputs).
struct Widths {
  uint64_t act = 4;   // conv / linear outputs: the stream between units
  uint64_t norm = 4;  // GroupNorm / LayerNorm input copy and output (fp32 under autocast)
  uint64_t sm = 4;    // softmax output
  uint64_t ln_stats = 4, gn_stats = 4;
  bool amp = false;
};
Widths widths(const Settings& s);

// What one unit sees: batch, latent (or token grid) side at its level, text tokens.
struct Shape {
  uint64_t b = 1, h = 1, w = 1, text = 0;
  uint64_t hw() const { return h * w; }
};

// Records one unit's saved tensors (creation order, output last) and transients.
class Rec {
 public:
  Rec(const Settings& s, LayerActivations* l) : s_(s), l_(l) {}
  uint64_t mul(std::initializer_list<uint64_t> xs) const {
    uint64_t r = 1;
    for (uint64_t x : xs) r = checked_mul(r, x, "imageSize");
    return r;
  }
  void save(const char* name, uint64_t bytes, const char* source, uint64_t n = 1);
  void output(const char* name, uint64_t bytes, const char* source);
  // A transient of `bytes` (in `pieces`) that lives while the tensor about to be saved next is
  // created (forward), or while the backward walks back to that point (backward).
  void forward_temp(uint64_t bytes, uint64_t pieces = 1);
  void backward_temp(uint64_t bytes, uint64_t pieces = 1);
  // Sets the layer's forward and backward transient bytes from the groups recorded.
  void finish();
  LayerActivations& layer() { return *l_; }
  const Settings& settings() const { return s_; }

 private:
  const Settings& s_;
  LayerActivations* l_;
};

// What every unit recipe reads.
struct Ctx {
  const diffusion::Net& net;
  const Settings& s;
  const Widths& w;
  bool eager;
  uint64_t b, H, W;  // batch; the latent (UNet) or token grid (transformers) side
  uint64_t text;     // text tokens (encoder_hidden_states)
};

// The input a linear or conv keeps: under autocast a 16-bit copy of an fp32 tensor per reader
// (`readers` linears reading one tensor), otherwise the tensor itself (once).
void matmul_input(Rec& r, const Ctx& c, uint64_t elements, const char* what, uint64_t readers = 1);

// A LayerNorm over `rows` rows of `elements` in all: its input kept (under autocast the fp32
// copy; otherwise only when `input_here`: a tensor this unit made) and its mean and rstd.
void layer_norm(Rec& r, const Ctx& c, uint64_t elements, uint64_t rows, bool input_here,
                const char* what);

// The transformer units (SD3 joint blocks, Flux double and single blocks, DiT / PixArt blocks,
// their stems and heads): diffusion_mmdit.cpp.
void transformer_unit(Rec& r, const Ctx& c, size_t index);
double transformer_flops(const Ctx& c, const diffusion::Unit& u);

// An attention core over tq query and tk key tokens per sample (eager: diffusers' AttnProcessor,
// baddbmm scores, softmax, bmm; sdpa: AttnProcessor2_0 / the joint processors' kept q, k, v,
// output and fp32 logsumexp) and its output projection's input. `q_separate`: q, k, v are
// separate tensors (self-attention of one stream: k and v come from the same input).
void attention_core(Rec& r, const Widths& w, bool eager, uint64_t b, uint64_t heads, uint64_t inner,
                    uint64_t tq, uint64_t tk);

// The bytes kept for the backward without checkpointing: the saved inputs, every layer's saves,
// less the outputs no later layer keeps (the next one has input_saved false and no skip reads
// them). Checked with checked_add under `field`.
uint64_t kept_total(const ModelActivations& a, const char* field);

// Sets the unit's LayerActivations::tokens and module_rows (diffusion_rows.cpp).
void set_rows(const Ctx& c, const diffusion::Unit& u, LayerActivations* l);

}  // namespace dif

// The diffusion recipes (one LayerActivations per unit of model.diffusion).
ModelActivations diffusion_activations(const ModelDescription& m, const Settings& s);

}  // namespace activations
}  // namespace trainmem
