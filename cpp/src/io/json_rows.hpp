// An array of JSON objects, one per item of a list (tensors, saved entries, timeline events).
#pragma once
#include <utility>

#include <nlohmann/json.hpp>

namespace trainmem {

// [row(item_0), row(item_1), ...]: `row(item, object)` writes the fields of one item's object.
template <class Items, class Row>
nlohmann::json object_rows(const Items& items, Row&& row) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items) {
    nlohmann::json o = nlohmann::json::object();
    row(item, o);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace trainmem
