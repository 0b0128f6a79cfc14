// chain.layers of a placement request in columnar form: one array per field instead of one
// object per layer, { forwardCost: [...], backwardCost: [...], outputBytes: [...],
// savedBytes: [...], forwardTempBytes?, backwardTempBytes?, name? }, every array one value per
// layer. A numeric column is a JSON array of numbers, or (the JS wrapper's typed arrays, passed
// beside the request text: attach_columns) a binary value of float64s, which JSON text can
// never produce. The checks are the array form's; a value is named by its column
// (chain.layers.savedBytes[3]).
#pragma once
#include <string>
#include <vector>

#include "io/request.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {

// Reads chain.layers in columnar form (an object) into chain->layers.
void columnar_layers(const Obj& layers, placement::Chain* chain);

// Puts the float64 columns `names` into request.chain.layers (an object) as binary values:
// `values` holds names.size() columns of equal length, one after another. Errors (as
// RequestError): no chain.layers object, a name that is not a numeric column, a column given
// twice.
void attach_columns(json& request, const std::vector<std::string>& names,
                    const std::vector<double>& values);

}  // namespace trainmem
