#pragma once
// sorted_order: the positions 0..n-1 of a caller's sequence, sorted by a strict total order.
// Size: every std::sort instantiation is a separate 2-10 KB of WebAssembly (its partition and
// its __sort3/4/5 and insertion helpers inlined for that element type); the sorts that are not
// hot and whose order has no ties share this one instead (bench/RESULTS.md, "Core diet").
#include <cstddef>
#include <vector>

namespace trainmem {
namespace util {

// before(ctx, a, b): position a comes first. Must be a strict total order on the positions
// (break ties by position, a < b, to get std::stable_sort's order): the result is then the one
// permutation that order defines, whatever algorithm sorts.
std::vector<size_t> sorted_order(size_t n, bool (*before)(const void* ctx, size_t a, size_t b),
                                 const void* ctx);

template <class Before>
std::vector<size_t> sorted_order(size_t n, const Before& before) {
  return sorted_order(
      n,
      [](const void* ctx, size_t a, size_t b) { return (*static_cast<const Before*>(ctx))(a, b); },
      &before);
}

}  // namespace util
}  // namespace trainmem
