// The request field imageSize (pixels): one reader for every network that reads images
// (vision networks, diffusion networks).
#pragma once
#include <cstdint>

#include "io/request.hpp"

namespace trainmem {

struct ImageSize {
  uint64_t height = 0;
  uint64_t width = 0;
};

// imageSize as a side (a square image) or [height, width], each side from min_side to
// max_side; errors name imageSize (or imageSize[i]). The caller checks req.has("imageSize").
ImageSize read_image_size(const Obj& req, uint64_t min_side, uint64_t max_side);

}  // namespace trainmem
