// imageSize / numClasses of a request whose model is a vision or speech network.
#pragma once
#include <memory>

#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// When the model is a network: applies imageSize / numClasses (a rebuilt copy replaces *model
// when they change it), refuses seqLen and sets *seq_len to the network's tokens per sample;
// reads targetLen (Whisper's decoder tokens, wav2vec2's CTC labels); returns true. Otherwise
// refuses imageSize / numClasses and returns false.
bool read_net_fields(const Obj& req, std::shared_ptr<const ModelDescription>* model,
                     uint64_t* seq_len, uint64_t* target_len);

}  // namespace trainmem
