// Context and expert parallelism's assumptions (peak_parallel.hpp).
#include "peak/peak_parallel.hpp"

#include <cstdio>

namespace trainmem {
namespace peak {
namespace {

std::string number(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

// Catalog peak.assume.cp, .cp.ring, .cp.group (cpp/data/messages.json).
Text context_assumption(const Request& rq) {
  const Request::Context& c = rq.context;
  Text t("peak.assume.cp", {{"ranks", std::to_string(c.size)},
                            {"rankTokens", std::to_string(rq.seq_len)},
                            {"tokens", std::to_string(c.full_seq_len)}});
  t.then({"peak.assume.cp.ring", {}});
  t.then({"peak.assume.cp.group", {{"group", std::to_string(rq.data_parallel)}}});
  return t;
}

// Catalog peak.assume.ep, .ep.buffers, then .ep.capacity or .ep.dropless.
Text expert_assumption(const Request& rq) {
  const Request::Expert& e = rq.expert;
  const Architecture& a = rq.model().arch;
  Text t("peak.assume.ep", {{"ranks", std::to_string(e.size)},
                            {"tensor", std::to_string(e.tensor)},
                            {"local", std::to_string(a.num_experts / e.size)},
                            {"experts", std::to_string(a.num_experts)}});
  t.then({"peak.assume.ep.buffers", {{"topK", std::to_string(a.experts_per_token)}}});
  if (e.capacity_factor > 0)
    t.then({"peak.assume.ep.capacity", {{"factor", number(e.capacity_factor)}}});
  else
    t.then({"peak.assume.ep.dropless", {{"imbalance", number(e.imbalance)}}});
  return t;
}

}  // namespace

std::vector<Text> parallel_assumptions(const Request& rq) {
  std::vector<Text> out;
  if (rq.context.size > 1) out.push_back(context_assumption(rq));
  if (rq.expert.size > 1 || rq.expert.tensor > 1) out.push_back(expert_assumption(rq));
  return out;
}

}  // namespace peak
}  // namespace trainmem
