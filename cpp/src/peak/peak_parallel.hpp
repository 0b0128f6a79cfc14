// Internal to peak memory: what a result says of context and expert parallelism (Request::
// context, Request::expert; docs/parallelism.md).
#pragma once
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"

namespace trainmem {
namespace peak {

// The assumptions of context and expert parallelism for this request (none when both are off).
std::vector<Text> parallel_assumptions(const Request& rq);

}  // namespace peak
}  // namespace trainmem
