// imageSize: a number (height = width) or [height, width].
#include "io/image_size.hpp"

#include "trainmem/error.hpp"

namespace trainmem {

ImageSize read_image_size(const Obj& req, uint64_t min_side, uint64_t max_side) {
  ImageSize s;
  const json& v = req.raw("imageSize");
  if (v.is_array()) {
    const json& a = req.array("imageSize", 2);
    if (a.size() != 2) fail(code::kInvalidType, "imageSize", Message{"error.imageSize.type", {}});
    s.height = read_u64(a[0], "imageSize[0]", min_side, max_side);
    s.width = read_u64(a[1], "imageSize[1]", min_side, max_side);
  } else {
    s.height = s.width = req.u64("imageSize", min_side, max_side);
  }
  return s;
}

}  // namespace trainmem
