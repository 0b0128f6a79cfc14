// Helpers the checkpoint container formats share (checkpoint_format_*.cpp).
#pragma once
#include <cstdint>

namespace trainmem {

// Decimal digits of v (its length as text: a zip record's key, a JSON number).
uint64_t decimal_digits(uint64_t v);

}  // namespace trainmem
