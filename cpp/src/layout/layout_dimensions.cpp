// The layout planner's extra parallel dimensions (layout_planner.hpp Dimension): each is one
// line giving its peakMemory request field and how a candidate sets it. The planner enumerates
// a dimension only when its line is here and the request's `explore` allows it a size above 1
// (e.g. explore: { contextParallel: 8 }).
#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {

const std::vector<Dimension>& extra_dimensions() {
  // (context and expert parallelism join here once peakMemory models them:
  //  {"contextParallel", [](peak::Request* r, uint64_t n) { r->context_parallel = n; }, true,
  //   false},
  //  {"expertParallel", [](peak::Request* r, uint64_t n) { r->expert_parallel = n; }, false,
  //   true},)
  static const std::vector<Dimension> kDimensions = {};
  return kDimensions;
}

}  // namespace layout
}  // namespace trainmem
