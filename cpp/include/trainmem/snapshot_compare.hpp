// A measured run (a snapshot's summary, memory_stats(), or the figures a user has) beside
// trainmem's prediction of the same run (peak::compute): the difference per category and the
// likely causes, named. Rules and thresholds: docs/snapshot.md, "Comparison" and "Causes".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/peak_memory.hpp"
#include "trainmem/snapshot.hpp"

namespace trainmem {
namespace snapshot {

// The three figures users often have in hand (0 = not given).
struct Figures {
  uint64_t max_allocated_bytes = 0;    // torch.cuda.max_memory_allocated()
  uint64_t max_reserved_bytes = 0;     // torch.cuda.max_memory_reserved()
  uint64_t nvidia_smi_used_bytes = 0;  // nvidia-smi "Memory-Usage" used, process total
};

struct CategoryRow {
  std::string category;  // weights gradients optimizerState activations temporaries
                         // cacheFragmentation unattributed
  uint64_t measured_bytes = 0;
  uint64_t predicted_bytes = 0;
  bool measured = false, predicted = false;  // whether each side has the figure
};

struct PredictedPoint {
  double x = 0;  // on the measured series' axis
  uint64_t allocated_bytes = 0;
  std::string phase;
};

struct Totals {
  std::string what;  // allocatedPeak | reservedPeak | nvidiaSmiUsed
  uint64_t measured_bytes = 0, predicted_bytes = 0;
  bool predicted = false;
  std::string measured_source;
};

struct Comparison {
  bool has_summary = false;
  Summary summary;
  peak::Result predicted;
  std::vector<CategoryRow> rows;
  std::vector<Totals> totals;
  std::vector<PredictedPoint> predicted_series;
  std::vector<Cause> causes;
  std::vector<std::string> notes;
};

// `summary` may be null (figures only). Throws RequestError when nothing measured is given.
Comparison compare(const Summary* summary, const Figures& figures, const peak::Request& request);

}  // namespace snapshot
}  // namespace trainmem
