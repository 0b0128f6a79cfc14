// The request fields of vision and speech networks: imageSize (the input's height = width) and
// numClasses (the classification head's outputs) change the network a shared description was
// built for, so the request gets its own rebuilt copy; seqLen is the token count of the
// network (set here, for LoRA's activations and the time model), not a request field.
#include "io/net_request.hpp"

#include "io/image_size.hpp"
#include "io/net_config.hpp"
#include "net/net_model.hpp"
#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"

namespace trainmem {

namespace {
constexpr uint64_t kMaxImage = 1u << 14;
constexpr uint64_t kMaxClasses = 1u << 24;
}  // namespace

bool read_net_fields(const Obj& req, std::shared_ptr<const ModelDescription>* model,
                     uint64_t* seq_len, uint64_t* target_len) {
  const ModelDescription& m = **model;
  if (!m.arch.net) {
    for (const char* k : {"imageSize", "numClasses"})
      if (req.has(k)) fail(code::kInconsistent, k, Message{"error.net.visionOnly", {{"field", k}}});
    return false;
  }
  const NetSpec& n = *m.arch.net;
  NetSpec changed = n;
  if (req.has("imageSize") && !n.vision)
    fail(code::kInconsistent, "imageSize",
         Message{"error.net.imageText", {{"architecture", m.architecture}}});
  if (req.has("imageSize")) {
    const ImageSize px = read_image_size(req, 1, kMaxImage);
    if (px.height != px.width)
      fail(code::kUnsupported, "imageSize",
           Message{"error.net.imageSquare", {{"architecture", m.architecture}}});
    changed.image_size = px.height;
    changed.image_size_set = true;
  }
  if (req.has("numClasses")) {
    if (n.num_classes == 0)
      fail(code::kInconsistent, "numClasses",
           Message{"error.net.numClasses", {{"architecture", m.architecture}}});
    changed.num_classes = req.u64("numClasses", 1, kMaxClasses);
  }
  if (req.has("seqLen") && !n.text && !n.audio)
    fail(code::kInconsistent, "seqLen", Message{"error.net.seqLen", {}});
  if (req.has("seqLen") && n.text) {  // a text tower (CLIP, SigLIP): at most its positions
    changed.seq = req.u64("seqLen", 1, n.text_positions);
  } else if (req.has("seqLen") && n.family == "whisper") {
    // WhisperEncoder.forward refuses any other length than 2 x max_source_positions
    const uint64_t frames = req.u64("seqLen", 1, 1u << 24);
    if (frames != n.image_size)
      fail(code::kInconsistent, "seqLen",
           Message{"error.net.whisperFrames",
                   {{"need", std::to_string(n.image_size)}, {"frames", std::to_string(frames)}}});
  } else if (req.has("seqLen")) {  // wav2vec2: audio samples
    changed.image_size = req.u64("seqLen", 400, 1u << 26);
  }
  if (changed.image_size != n.image_size || changed.num_classes != n.num_classes ||
      changed.seq != n.seq) {
    auto copy = std::make_shared<ModelDescription>(m);
    rebuild_net(std::make_shared<const NetSpec>(changed), copy.get());
    *model = std::move(copy);
  }
  *seq_len = net::sequence_tokens(*(*model)->arch.net);
  if (req.has("targetLen")) {
    // Whisper: the decoder's tokens; wav2vec2: the CTC labels per sample
    if (n.family != "whisper" && n.family != "wav2vec2")
      fail(code::kInconsistent, "targetLen", Message{"error.net.targetLen", {}});
    const uint64_t most = n.family == "whisper" ? n.target_positions : *seq_len;
    *target_len = req.u64("targetLen", 1, most);
  }
  return true;
}

}  // namespace trainmem
