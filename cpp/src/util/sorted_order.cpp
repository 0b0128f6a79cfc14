#include "util/sorted_order.hpp"

#include <algorithm>

namespace trainmem {
namespace util {

std::vector<size_t> sorted_order(size_t n, bool (*before)(const void* ctx, size_t a, size_t b),
                                 const void* ctx) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [before, ctx](size_t a, size_t b) { return before(ctx, a, b); });
  return order;
}

}  // namespace util
}  // namespace trainmem
