// A parameter count with optional shape hints (the `model` field's params form).
#pragma once
#include <initializer_list>

#include "io/request.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// layers, hidden, heads, vocab, intermediate: the keys a parameter count may carry.
const std::initializer_list<const char*>& count_hint_keys();
// With layers, hidden and heads: a generic decoder's architecture of that size (vocab derived
// from the count unless given), marked approximate in m->assumptions. Without them: nothing.
void read_count_hints(const Obj& model, ModelDescription* m);

}  // namespace trainmem
