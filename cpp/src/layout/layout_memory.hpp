// The layout planner's memory model: a layout's binding rank (layout_memory.cpp).
#pragma once
#include <cstdint>

#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {

struct Memory {
  uint64_t bytes = 0;  // device memory of the binding rank (deviceUsedBytes when simulated)
  uint32_t stage = 0;  // that rank
  bool fits = false;
  uint64_t evaluations = 0;  // peak evaluations spent
};

// replay false: the allocated bytes only (a lower bound of the replay's, so its "does not
// fit" is final). Throws RequestError when peakMemory refuses the layout.
Memory memory_of(const peak::Request& rq, bool replay);

}  // namespace layout
}  // namespace trainmem
