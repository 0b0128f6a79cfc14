// Internal to the diffusers config readers (diffusers_unet.cpp, diffusers_transformers.cpp): the
// config fields they share. The tensor builder is the core's (model/diffusers_builder.hpp).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "io/request.hpp"
#include "model/diffusers_builder.hpp"
#include "trainmem/diffusion.hpp"
#include "trainmem/model.hpp"

namespace trainmem {
namespace diffusers {

constexpr uint64_t kMaxWidth = 1ULL << 20;  // channels, widths, heads
constexpr uint64_t kMaxUnits = 2000;        // blocks, layers per block, transformer layers

// Reads an int or a list of `n` ints (diffusers' `int | tuple[int]` config fields).
std::vector<uint64_t> int_or_list(const Obj& c, const char* key, uint64_t fallback, size_t n,
                                  uint64_t min, uint64_t max);
// A key that must be absent or null (a feature trainmem does not model): names it when set, by
// `what` (a phrase of the catalog, error.diffusers.*) or by its key.
void require_null(const Obj& c, const char* key, const char* what = nullptr);
// A string key that must equal `expected` when present.
void require_value(const Obj& c, const char* key, const char* expected);

ModelDescription unet_from_config(const Obj& c);
ModelDescription vae_from_config(const Obj& c);
ModelDescription sd3_from_config(const Obj& c);
ModelDescription flux_from_config(const Obj& c);
ModelDescription dit_from_config(const Obj& c, bool pixart);

}  // namespace diffusers
}  // namespace trainmem
