// Reading contextParallel / expertParallel (parallel_request.hpp).
#include "io/parallel_request.hpp"

#include <string>

#include "peak/peak_parallel.hpp"
#include "trainmem/error.hpp"

namespace trainmem {
namespace peak {

void read_context_parallel(const Obj& req, Request* out) {
  Request& r = *out;
  ContextParallel& c = r.parallelism.context;
  c.size = req.u64_or("contextParallel", 1, 1, 1024);
  if (req.has("contextParallelism")) {
    const Obj o = req.obj("contextParallelism");
    c.zigzag = o.one_of_or("loadBalance", {"zigzag", "none"}, "zigzag") == "zigzag";
    c.all_gather = o.one_of_or("rotate", {"allgather", "alltoall"}, "allgather") == "allgather";
    o.finish();
    if (c.size == 1)
      fail(code::kInconsistent, "contextParallelism", Message{"error.cp.options", {}});
  }
  if (c.size == 1) return;
  apply_context_parallel(&r);
}

void read_expert_parallel(const Obj& req, Request* out) {
  Request& r = *out;
  ExpertParallel& e = r.parallelism.expert;
  e.size = req.u64_or("expertParallel", 1, 1, 4096);
  e.tensor = req.u64_or("expertTensorParallel", 1, 1, 4096);
  const bool on = e.size > 1 || e.tensor > 1;
  if (req.has("expertParallelism")) {
    Obj o = req.obj("expertParallelism");
    o.null_as_absent();
    if (o.has("capacityFactor")) e.capacity_factor = o.num("capacityFactor", 0.01, 1024.0);
    e.imbalance = o.num_or("routingImbalance", 1.0, 1.0, 1024.0);
    if (o.has("capacityFactor") && o.has("routingImbalance"))
      fail(code::kInconsistent, "expertParallelism.routingImbalance", Message{"error.ep.both", {}});
    o.finish();
    if (!on) fail(code::kInconsistent, "expertParallelism", Message{"error.ep.options", {}});
  }
  if (!on) return;
  apply_expert_parallel(&r);
}

}  // namespace peak
}  // namespace trainmem
