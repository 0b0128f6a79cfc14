// The `vocabulary` function: every table of trainmem/vocabulary.hpp and every limit of
// trainmem/limits.hpp, so that the wrapper, the CLI and the page list what the core accepts.
#include "io/calculators.hpp"
#include "io/json_fields.hpp"
#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/limits.hpp"
#include "trainmem/snapshot.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

json list(const std::vector<std::string>& names) {
  json a = json::array();
  for (const auto& n : names) a.push_back(n);
  return a;
}

json limits_json() {
  json l = json::object();
  put(l, "microBatch", limits::kMaxMicroBatch);
  put(l, "accumulationSteps", limits::kMaxAccumulationSteps);
  put(l, "globalBatch", limits::kMaxGlobalBatch);
  put(l, "seqLen", limits::kMaxSeqLen);
  put(l, "ranks", limits::kMaxRanks);
  put(l, "chainLayers", limits::kMaxChainLayers);
  put(l, "timelineEvents", limits::kMaxTimelineEvents);
  put(l, "snapshotBytes", snapshot::kMaxFileBytes);
  put(l, "exactJsonInteger", limits::kMaxExactJson);
  put(l, "requestBytes", limits::kMaxRequestBytes);
  put(l, "requestDepth", limits::kMaxRequestDepth);
  put(l, "requestValues", limits::kMaxRequestValues);
  return l;
}

// Per strategy: whether placement runs it, its budget rule and the parameters it takes.
json strategies_json() {
  static const char* const kBudget[] = {"none", "optional", "required"};
  json out = json::object();
  for (const vocab::StrategyTerm& t : vocab::kStrategies) {
    json params = json::array();
    for (const vocab::StrategyParamTerm& p : vocab::kStrategyParams)
      if (t.params & p.value) params.push_back(p.name);
    json s = json::object();
    put(s, "placement", t.placement);
    put(s, "budget", kBudget[static_cast<int>(t.budget)]);
    put(s, "parameters", std::move(params));
    put(out, t.name, std::move(s));
  }
  return out;
}

}  // namespace

json vocabulary_json(const json& request) {
  Obj req(request, "");
  req.finish();
  json out = json::object();
  put(out, "functions", list(function_names()));
  put(out, "optimizers", list(vocab::names(vocab::kOptimizers)));
  json layouts = json::object();
  for (const auto& t : vocab::kOptimizers)
    put(layouts, t.name, vocab::name_for(vocab::kOptimizers, t.value));
  put(out, "optimizerLayouts", std::move(layouts));
  put(out, "dtypes", list(dtype_names()));
  put(out, "dtypeSpellings", list(vocab::names(vocab::kDTypes)));
  put(out, "checkpointing", list(vocab::names(vocab::kStrategies)));
  put(out, "accumulationCheckpointing", vocab::kAccumulationAutoCheckpointing);
  put(out, "placementStrategies",
      list(vocab::names_if(vocab::kStrategies,
                           [](const vocab::StrategyTerm& t) { return t.placement; })));
  put(out, "budgetStrategies",
      list(vocab::names_if(vocab::kStrategies, [](const vocab::StrategyTerm& t) {
        return t.budget != vocab::Budget::none;
      })));
  put(out, "strategies", strategies_json());
  put(out, "precisions", list(vocab::names(vocab::kPrecisions)));
  put(out, "attention", list(vocab::names(vocab::kAttention)));
  put(out, "placementAttention",
      list(vocab::names_if(vocab::kAttention,
                           [](const vocab::AttentionTerm& t) { return t.placement; })));
  put(out, "runtimes", list(vocab::names(vocab::kRuntimes)));
  put(out, "optimizerImplementations", list(vocab::names(vocab::kOptimizerImpls)));
  put(out, "losses", list(vocab::names(vocab::kLosses)));
  put(out, "pipelineSchedules", list(vocab::names(vocab::kPipelineSchedules)));
  put(out, "checkpointFormats", list(vocab::names(vocab::kCheckpointFormats)));
  put(out, "mlpActivations", list(vocab::names(vocab::kMlpActivations)));
  put(out, "saveOps", list(vocab::names(vocab::kSaveOps)));
  put(out, "fsdpStrategies", list(vocab::names(vocab::kFsdpStrategies)));
  put(out, "float8Recipes", list(vocab::names(vocab::kFloat8Recipes)));
  put(out, "zeroMixedPrecision", list(vocab::names(vocab::kZeroMixedPrecision)));
  json codes = json::array();
  for (const auto& t : vocab::kErrorCodes) {
    json c = json::object();
    put(c, "code", t.name);
    put(c, "meaning", t.meaning);
    codes.push_back(std::move(c));
  }
  put(out, "errorCodes", std::move(codes));
  put(out, "limits", limits_json());
  return out;
}

}  // namespace trainmem
