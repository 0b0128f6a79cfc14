// libFuzzer harness over the trace reader (model.trace, io/trace_json.cpp) and what reads a
// traced model (traced_activations.cpp, the calculators). Input: the first byte picks the
// calculator and the micro-batch, the rest is the trace file's text, handed to the core as
// model.trace (the text form, parsed as strictly as a request). The envelope keeps the rules of
// tests/fuzz/envelope.hpp: bad traces are errors naming a field, never a crash or "internal".
// TRAINMEM_FUZZ_TRACE_READER=1 sends every input to describeModel (the reader and the trace's
// description, ~10x more inputs a second than with the calculators): the million-run check.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "envelope.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // (the accumulation planner evaluates tens of steps: one input in 32 goes to it)
  static const char* const kFunctions[] = {"peakMemory", "placement", "checkpointSize",
                                           "describeModel"};
  static const bool reader_only = std::getenv("TRAINMEM_FUZZ_TRACE_READER") != nullptr;
  const char* function = reader_only            ? "describeModel"
                         : (data[0] & 31) == 31 ? "accumulation"
                                                : kFunctions[data[0] % 4];
  const uint64_t micro = 1 + (data[0] >> 3) % 9;
  trainmem::json req = trainmem::json::object();
  req["model"] = {{"trace", std::string(reinterpret_cast<const char*>(data + 1), size - 1)}};
  const std::string f = function;
  if (f == "peakMemory") {
    req["microBatch"] = micro;
    req["runtime"] = (data[0] & 4) ? "pytorch-cpu" : "pytorch-2.5-cuda";
    req["timeline"] = false;
    req["optimizer"] = "adamw";
    if (data[0] & 2) req["checkpointing"] = "full";
  } else if (f == "placement") {
    req["microBatch"] = micro;
    req["strategy"] = (data[0] & 4) ? "sqrt" : "optimal";
    req["budgetBytes"] = 1ULL << 30;
    if (!(data[0] & 4)) req["slots"] = 20;
  } else if (f == "accumulation") {
    req["gpu"] = "a100-80gb";
    req["targetGlobalBatch"] = 32;
  }
  const std::string request = req.dump(-1, ' ', false, trainmem::json::error_handler_t::replace);
  fuzz_envelope::check(function, request, trainmem::call(function, request));
  return 0;
}
