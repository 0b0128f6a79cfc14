// The layout planner's candidates (layout_planner.hpp): factorisations of the GPUs into
// tensor x pipeline x data (x the extra dimensions), then schedules, micro-batches,
// checkpointing and sharding.
#include <string>
#include <vector>

#include "trainmem/error.hpp"
#include "trainmem/layout_planner.hpp"

namespace trainmem {
namespace layout {
namespace {

std::vector<uint64_t> divisors(uint64_t n) {
  std::vector<uint64_t> low, high;
  for (uint64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Megatron-Core requires the attention heads and the query groups (KV heads) to divide over the
// tensor-parallel ranks (transformer_config.py: num_attention_heads % tp, num_query_groups % tp),
// and keeps tensor parallelism inside a node (NVLink; Narayanan et al. 2021 §3.3).
bool tp_valid(const Inputs& in, uint64_t tp) {
  const Architecture& a = in.base.model.description().arch;
  const uint64_t kv = a.kv_heads ? a.kv_heads : a.heads;
  return in.gpus_per_node % tp == 0 && a.heads % tp == 0 && kv % tp == 0;
}

// Every way to give the extra dimensions sizes (powers of the divisors up to their maxima).
void extra_sizes(const Inputs& in, size_t i, uint64_t left, std::vector<uint64_t>* cur,
                 std::vector<std::pair<std::vector<uint64_t>, uint64_t>>* out) {
  if (i == extra_dimensions().size()) {
    out->emplace_back(*cur, left);
    return;
  }
  const uint64_t most = i < in.extra_sizes_max.size() ? in.extra_sizes_max[i] : 1;
  if (extra_dimensions()[i].within_dp) {  // sized once DP is known (within_dp_sizes)
    cur->push_back(1);
    extra_sizes(in, i + 1, left, cur, out);
    cur->pop_back();
    return;
  }
  for (uint64_t d : divisors(left)) {
    if (d > most) break;
    if (d > 1 && !extra_dimensions()[i].admits(in.base, d)) continue;
    cur->push_back(d);
    extra_sizes(in, i + 1, left / d, cur, out);
    cur->pop_back();
  }
}

// The dimensions carved out of the data x token-splitting x tensor-parallel ranks: every size
// dividing them up to their maxima.
void within_dp_sizes(const Inputs& in, size_t i, Layout* l, std::vector<Layout>* out) {
  if (i == extra_dimensions().size()) {
    out->push_back(*l);
    return;
  }
  const uint64_t most = i < in.extra_sizes_max.size() ? in.extra_sizes_max[i] : 1;
  if (!extra_dimensions()[i].within_dp || most <= 1) {
    within_dp_sizes(in, i + 1, l, out);
    return;
  }
  for (uint64_t d : divisors(l->dp * token_split(*l) * l->tp)) {
    if (d > most) break;
    if (d > 1 && !extra_dimensions()[i].admits(in.base, d)) continue;
    l->extra[i] = d;
    within_dp_sizes(in, i + 1, l, out);
  }
  l->extra[i] = 1;
}

}  // namespace

const char* sharding_name(Sharding s) { return s == Sharding::fsdp ? "fsdp" : "zero1"; }

uint64_t token_split(const Layout& l) {
  uint64_t s = 1;
  for (size_t i = 0; i < l.extra.size() && i < extra_dimensions().size(); ++i)
    if (extra_dimensions()[i].splits_tokens) s *= l.extra[i];
  return s;
}

uint64_t shard_ranks(const Layout& l) { return l.dp * token_split(l); }

uint64_t expert_ranks(const Layout& l) {
  uint64_t s = 1;
  for (size_t i = 0; i < l.extra.size() && i < extra_dimensions().size(); ++i)
    if (extra_dimensions()[i].within_dp) s *= l.extra[i];
  return s;
}

std::vector<Layout> factorizations(const Inputs& in, uint64_t blocks) {
  std::vector<std::pair<std::vector<uint64_t>, uint64_t>> extras;
  std::vector<uint64_t> cur;
  extra_sizes(in, 0, in.gpus, &cur, &extras);
  std::vector<Layout> out;
  for (const auto& [sizes, left] : extras) {
    for (uint64_t tp : divisors(left)) {
      if (!tp_valid(in, tp)) continue;
      for (uint64_t pp : divisors(left / tp)) {
        if (pp > blocks) break;  // a stage needs one block at least
        Layout l;
        l.tp = tp;
        l.pp = pp;
        l.dp = left / tp / pp;
        l.extra = sizes;
        l.pipelined = pp > 1;
        within_dp_sizes(in, 0, &l, &out);
      }
    }
  }
  return out;
}

namespace {

// Schedules of one factorisation: none without a pipeline; the request's list with one; an
// interleaved or V schedule needs 2 chunks of at least one block per rank.
std::vector<Layout> scheduled(const Inputs& in, const Layout& f, uint64_t blocks) {
  if (!f.pipelined) return {f};
  std::vector<Layout> out;
  for (vocab::PipelineSchedule s : in.schedules) {
    Layout l = f;
    l.schedule = s;
    l.virtual_stages = parallel::chunks_per_rank(s, 2);
    if (l.virtual_stages * l.pp > blocks) continue;
    out.push_back(l);
  }
  return out;
}

void add_checked(std::vector<Layout>* out, const Layout& l) {
  if (out->size() >= kMaxCandidates)
    fail(code::kTooLarge, "gpus",
         Message{"error.layout.tooMany", {{"n", std::to_string(kMaxCandidates)}}});
  out->push_back(l);
}

}  // namespace

std::vector<Layout> candidates(const Inputs& in) {
  const uint64_t blocks = in.base.model.description().arch.layers;
  std::vector<Layout> out;
  for (const Layout& f : factorizations(in, blocks)) {
    if (in.global_batch % f.dp) continue;  // every data-parallel rank takes equal samples
    const uint64_t per_rank = in.global_batch / f.dp;
    for (const Layout& s : scheduled(in, f, blocks)) {
      for (uint64_t mb : divisors(per_rank)) {
        Layout l = s;
        l.micro_batch = mb;
        l.micro_batches = per_rank / mb;
        // Megatron's interleaved schedule needs the micro-batches in groups of pp
        // (schedules.py: "number of microbatches ... must be divisible by pipeline size")
        if (l.schedule == vocab::PipelineSchedule::interleaved && l.pipelined &&
            l.micro_batches % l.pp)
          continue;
        for (const vocab::Strategy ck : in.checkpointing) {
          l.checkpointing = ck;
          // (one data-parallel rank shards nothing: one sharding stands for all)
          for (size_t k = 0; k < (shard_ranks(f) > 1 ? in.shardings.size() : 1); ++k) {
            l.sharding = in.shardings[k];
            add_checked(&out, l);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace layout
}  // namespace trainmem
