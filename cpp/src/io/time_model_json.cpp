// The JSON of the step-time model (field meanings: time_model.hpp, docs/accumulation.md).
#include "io/time_model_json.hpp"

#include <utility>

#include "io/json_fields.hpp"

namespace trainmem {
namespace time_model {
namespace {

template <class T>
using Fields = std::pair<const char*, double T::*>;

// StepTime's members under their JSON names.
constexpr Fields<StepTime> kStepTimeFields[] = {
    {"stepSeconds", &StepTime::step_seconds},
    {"microStepSeconds", &StepTime::micro_step_seconds},
    {"computeSecondsPerMicroStep", &StepTime::compute_seconds_per_micro_step},
    {"overheadSecondsPerMicroStep", &StepTime::overhead_seconds_per_micro_step},
    {"optimizerSeconds", &StepTime::optimizer_seconds},
    {"allReduceSeconds", &StepTime::allreduce_seconds},
    {"samplesPerSecond", &StepTime::samples_per_second},
    {"tokensPerSecond", &StepTime::tokens_per_second},
    {"flopsPerMicroStep", &StepTime::useful_flops_per_micro_step},
    {"recomputeFlopsPerMicroStep", &StepTime::recompute_flops_per_micro_step},
    {"modelFlopsUtilization", &StepTime::model_flops_utilization},
    {"hardwareFlopsUtilization", &StepTime::hardware_flops_utilization}};

// ForwardFlops' per-token FLOP counts under their JSON names.
constexpr Fields<ForwardFlops> kFlopsFields[] = {
    {"forwardPerToken", &ForwardFlops::total},
    {"blockMatmulPerToken", &ForwardFlops::block_matmul},
    {"attentionPerToken", &ForwardFlops::attention},
    {"headPerToken", &ForwardFlops::head}};

template <class T, size_t N>
nlohmann::json put_fields(const T& value, const Fields<T> (&fields)[N]) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, member] : fields) put(j, key, value.*member);
  return j;
}

}  // namespace

nlohmann::json to_json(const StepTime& t) { return put_fields(t, kStepTimeFields); }

nlohmann::json to_json(const ForwardFlops& f) {
  nlohmann::json j = put_fields(f, kFlopsFields);
  // training = forward + backward (2 x forward): Kaplan et al. 2020 sec. 2.1
  put(j, "trainingPerToken", 3.0 * f.total);
  put(j, "method", f.method);
  put(j, "layers", f.layers);
  put(j, "assumptions", f.assumptions);
  return j;
}

}  // namespace time_model
}  // namespace trainmem
