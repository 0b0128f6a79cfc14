// Reading the `trace` form of the `model` field (io/trace_json.cpp).
#pragma once

#include "io/request.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/model.hpp"

namespace trainmem {

// The model of a trace (model.trace: the trace object, or its JSON text): parameters and buffers
// as a ModelDescription whose `trace` holds the step. Throws RequestError naming the field.
ModelDescription model_from_trace(const Obj& model);

// describeModel's `trace` section: the trace's sizes, its chain layers (name and parameters),
// its ops and what the tracer noted.
nlohmann::json trace_description_json(const traced::Trace& t);

// The `trace` section of a result about a traced model: what the trace is, and what its step
// keeps for the backward at the request's sizes (traced::step_summary).
nlohmann::json trace_summary_json(const traced::Trace& t, const activations::Settings& s);

}  // namespace trainmem
