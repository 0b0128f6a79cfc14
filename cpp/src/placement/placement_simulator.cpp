// The one simulator of checkpoint placement: every strategy's plan (single-level segments or a
// multi-level schedule) is executed here op by op, and its memory and cost are read off.
//
// Memory model (bytes live at each step; docs/placement.md states it for users):
// - a[k] is the activation entering layer k (a[0] = chain input, a[k+1] = output of layer k,
//   outputBytes); abar[k+1] is what layer k keeps for its backward when run with autograd
//   (savedBytes, its output included); d[k] is the gradient of a[k] (same size as a[k]).
// - The chain input a[0] is live from start to end.
// - F_all(i) (forward with autograd): needs a[i]; peak = live + savedBytes_i + forwardTemp_i;
//   afterwards abar[i+1] stays until B(i). The input a[i] stays too (B(i) needs it).
// - F_ck(i) / F_n(i) (forward without autograd, torch.no_grad): peak = live + outputBytes_i +
//   forwardTemp_i; a[i+1] is kept as a standalone buffer. F_n frees its input a[i] (a transient
//   of the previous no-grad step); F_ck keeps it (the input of a checkpointed segment).
//   So a checkpointed segment keeps its input and, until the following part of the chain has
//   been back-propagated, its output: that output is the input of the next layer (for a plain
//   next layer, the tensor its backward reads; for a checkpointed one, its checkpoint).
//   A selective layer (op-level selective checkpointing) also keeps selectiveKeptBytes from
//   F_ck / F_n until its F_all, where those tensors become part of what it saves; that F_all
//   costs selectiveRecomputeCost (torch/utils/checkpoint.py, create_selective_checkpoint_contexts:
//   the cached outputs are returned instead of running their ops again).
// - loss: needs a[n]; its gradient d[n] is live afterwards (a standalone a[n] is freed).
// - B(i): needs abar[i+1], d[i+1] and a[i]; peak = live + backwardTemp_i; afterwards abar[i+1]
//   and d[i+1] are freed, a standalone a[i] is freed, and d[i] is live. The gradient B(i)
//   writes is charged from the next step on: Rotor's accounting (Beaumont et al. 2019, as in
//   ColossalAI ckpt_solver_rotor.py: a stage's backward needs x[i+1] + xbar[i+1] + btmp[i]).
// - Skip connections (Layer::skips of layer c, each from layer p: c reads a[p+1] too). a[p+1] is
//   pinned from the start until c has run with autograd (F_all, in the forward or in its
//   recomputation); when c runs inside a checkpointed segment that also holds p, the pin ends at
//   that no-grad forward (the recomputation makes a[p+1] again). A standalone a[p+1] that the
//   chain would free (F_n of p+1, or a next layer that keeps nothing of its input) stays while
//   pinned. B(c) leaves the skip's gradient (grad_bytes) live until B(p+1), where the gradient of
//   a[p+1] is summed (the sum x(p+1) at that moment too). A concatenating layer's input
//   gradient d[c] is a view of the same storage: it stays with the skip's until then. A
//   concatenating layer that starts a checkpointed segment keeps the concatenation (a new
//   tensor, x(c) plus the skips) as the checkpoint's input, frees a[c] and needs the skips no
//   more; its recomputation saves that same tensor.
// - A layer that keeps nothing of its input (inputSaved false) frees a[i] when it has run with
//   autograd: out of abar[i] (the previous layer's savedBytes) or, standalone, in the first
//   forward (and in a recomputation only when it concatenates: the concatenation replaces the
//   checkpoint's kept input). Its backward does not need a[i].
// - Costs: every forward op costs forwardCost, every backward op backwardCost; recompute is
//   the forward work beyond one forward per layer.
#include <algorithm>
#include <limits>
#include <string>

#include "trainmem/error.hpp"
#include "trainmem/placement.hpp"

namespace trainmem {
namespace placement {
namespace {

// why: a phrase of the catalog (error.internal.schedule.*)
[[noreturn]] void bad_schedule(Message why) {
  fail(code::kInternal, "", Message{"error.internal.schedule", {}}.with("why", {std::move(why)}));
}

}  // namespace

const char* op_name(OpKind k) {
  // In OpKind's order.
  static const char* const kNames[] = {"forward-all", "forward-check", "forward-nograd", "loss",
                                       "backward"};
  const size_t i = static_cast<size_t>(k);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "?";
}

std::vector<Op> single_level_ops(const Chain& chain, const std::vector<Segment>& checkpointed) {
  const uint32_t n = static_cast<uint32_t>(chain.layers.size());
  std::vector<Op> ops;
  ops.reserve(4 * static_cast<size_t>(n) + 1);
  // Units in order: a checkpointed segment or one plain layer.
  struct Unit {
    uint32_t first, last;
    bool ckpt;
  };
  std::vector<Unit> units;
  size_t s = 0;
  for (uint32_t i = 0; i < n;) {
    if (s < checkpointed.size() && checkpointed[s].first == i) {
      units.push_back({i, checkpointed[s].last, true});
      i = checkpointed[s].last + 1;
      ++s;
    } else {
      units.push_back({i, i, false});
      ++i;
    }
  }
  for (const auto& u : units) {
    if (!u.ckpt) {
      ops.push_back({OpKind::kForwardAll, u.first});
      continue;
    }
    ops.push_back({OpKind::kForwardCheck, u.first});
    for (uint32_t p = u.first + 1; p <= u.last; ++p) ops.push_back({OpKind::kForwardNoGrad, p});
  }
  ops.push_back({OpKind::kLoss, n});
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    // torch.utils.checkpoint: recompute the segment with autograd, then back-propagate it.
    if (it->ckpt)
      for (uint32_t p = it->first; p <= it->last; ++p) ops.push_back({OpKind::kForwardAll, p});
    for (uint32_t p = it->last + 1; p-- > it->first;) ops.push_back({OpKind::kBackward, p});
  }
  return ops;
}

namespace {

// One run of a schedule: which tensors are live (a, abar, d as in the memory model above), the
// bytes they hold, and the result read off so far.
// The skip connections' state (empty vectors for a chain without skips).
struct Skips {
  std::vector<uint32_t> pins;     // per a[k]: consumers still to read it
  std::vector<uint8_t> held;      // a release of a[k] waits for its pins
  std::vector<uint8_t> dropped;   // x(k) already out of abar[k] (its reader keeps nothing)
  std::vector<uint8_t> consumed;  // per layer: its pins released
  std::vector<uint32_t> segment;  // per layer: the checkpointed segment's first layer, or n
  std::vector<uint64_t> pending;  // per a[k]: skip gradients waiting for B(k)
  std::vector<uint32_t> grad_in;  // per d[k]: the skip gradient d[k] is part of (0: none)
  std::vector<uint64_t> cat;      // per layer: the concatenation its checkpoint keeps
};

struct Simulation {
  const Chain& chain;
  const uint32_t n;
  std::vector<uint8_t> a, abar, d, done, kept;
  uint64_t live;
  bool loss_done = false;
  bool any_skip = false;
  uint32_t seg_first = 0;  // first layer of the segment the first forward is in
  double forward_work = 0;
  Skips sk;
  PlanResult r;

  Simulation(const Chain& c, size_t ops)
      : chain(c),
        n(static_cast<uint32_t>(c.layers.size())),
        a(n + 1, 0),
        abar(n + 1, 0),
        d(n + 1, 0),
        done(n, 0),
        kept(n, 0),
        live(c.input_bytes) {
    a[0] = 1;
    r.timeline.reserve(ops);
    for (const Layer& L : c.layers) any_skip = any_skip || !L.skips.empty() || !L.input_saved;
    if (!any_skip) return;
    sk.pins.assign(n + 1, 0);
    sk.held.assign(n + 1, 0);
    sk.dropped.assign(n + 1, 0);
    sk.consumed.assign(n, 0);
    sk.segment.assign(n, n);
    sk.pending.assign(n + 1, 0);
    sk.grad_in.assign(n + 1, 0);
    sk.cat.assign(n, 0);
    for (const Layer& L : c.layers)
      for (const auto& s : L.skips) ++sk.pins[s.from + 1];
  }
  uint64_t concat_bytes(uint32_t i) const {
    uint64_t b = x(i);
    for (const auto& s : chain.layers[i].skips) b += x(s.from + 1);
    return b;
  }
  // a[k] is no longer needed by the layer reading it: freed, or (pinned by a skip) later.
  void release(uint32_t k) {
    if (k == 0) return;
    if (a[k]) {
      if (any_skip && sk.pins[k]) {
        sk.held[k] = 1;
        return;
      }
      a[k] = 0;
      live -= x(k);
    } else if (abar[k] && any_skip && !sk.dropped[k]) {
      if (sk.pins[k]) {
        sk.held[k] = 1;
        return;
      }
      sk.dropped[k] = 1;
      live -= x(k);
    }
  }
  void unpin(uint32_t k) {
    if (--sk.pins[k] > 0 || !sk.held[k]) return;
    sk.held[k] = 0;
    release(k);
  }
  // The pins layer i's reads hold: released when it runs with autograd, or at a no-grad forward
  // inside a segment that recomputes the producer (from >= the segment's first layer).
  void read_skips(uint32_t i, bool with_grad) {
    if (!any_skip || sk.consumed[i]) return;
    const Layer& L = chain.layers[i];
    for (const auto& s : L.skips)
      if (with_grad ? (s.from < sk.segment[i]) : (s.from >= sk.segment[i])) unpin(s.from + 1);
    if (with_grad) sk.consumed[i] = 1;
  }
  uint64_t x(uint32_t k) const {
    return k == 0 ? chain.input_bytes : chain.layers[k - 1].output_bytes;
  }
  uint64_t xbar(uint32_t k) const { return chain.layers[k - 1].saved_bytes; }
  bool have(uint32_t k) const { return a[k] || (k > 0 && abar[k]); }
  void free_input(uint32_t i) {  // a standalone a[i] (never the chain input)
    if (i > 0 && a[i]) release(i);
  }

  void event(const Op& op, uint64_t peak) {
    StepEvent e;
    e.op = op_name(op.kind);
    e.layer = op.kind == OpKind::kLoss ? -1 : static_cast<int32_t>(op.layer);
    if (op.kind == OpKind::kLoss)
      e.phase = "loss";
    else if (op.kind == OpKind::kBackward)
      e.phase = "backward";
    else
      e.phase = loss_done ? "recompute" : "forward";
    e.live_bytes = peak;
    if (peak > r.peak_bytes || r.timeline.empty()) {
      r.peak_bytes = peak;
      r.peak_phase = e.phase;
      r.peak_layer = e.layer;
    }
    r.timeline.push_back(std::move(e));
  }

  void forward_all(const Op& op) {
    const uint32_t i = op.layer;
    const Layer& L = chain.layers[i];
    if (!have(i) && !(any_skip && sk.cat[i]))
      bad_schedule({"error.internal.schedule.fAllInput", {}});
    if (abar[i + 1]) bad_schedule({"error.internal.schedule.fAllTwice", {}});
    const bool replay = kept[i] != 0;
    if (replay) {  // the kept outputs are handed to the recomputed graph
      live -= L.selective_kept_bytes;
      kept[i] = 0;
    }
    if (any_skip && sk.cat[i]) {  // the kept concatenation becomes the first saved tensor
      live -= sk.cat[i];
      sk.cat[i] = 0;
    }
    event(op, live + L.saved_bytes + L.forward_temp_bytes);
    live += L.saved_bytes;
    abar[i + 1] = 1;
    forward_work += replay ? L.selective_recompute_cost : L.forward_cost;
    read_skips(i, true);
    // a layer that keeps nothing of its input frees it (in a recomputation, a standalone input is
    // the checkpoint's, kept, unless the concatenation replaced it)
    if (!L.input_saved && (abar[i] || !loss_done || L.concat_input)) release(i);
  }

  void forward_no_grad(const Op& op) {  // F_ck or F_n
    const uint32_t i = op.layer;
    const Layer& L = chain.layers[i];
    if (!have(i)) bad_schedule({"error.internal.schedule.forwardInput", {}});
    if (have(i + 1)) bad_schedule({"error.internal.schedule.outputTwice", {}});
    const uint64_t keep = L.selective && !kept[i] ? L.selective_kept_bytes : 0;
    // a concatenating segment start keeps the concatenation (its input and skips copied)
    const uint64_t cat =
        any_skip && L.concat_input && op.kind == OpKind::kForwardCheck ? concat_bytes(i) : 0;
    event(op, live + L.output_bytes + keep + cat + L.forward_temp_bytes);
    live += L.output_bytes + keep + cat;
    if (L.selective) kept[i] = 1;
    a[i + 1] = 1;
    if (any_skip && !loss_done) {
      if (op.kind == OpKind::kForwardCheck) seg_first = i;
      sk.segment[i] = seg_first;
      read_skips(i, false);
      if (cat) {  // the recomputation starts from the concatenation: neither input is needed
        sk.cat[i] = cat;
        for (const auto& s : L.skips)
          if (s.from < sk.segment[i]) unpin(s.from + 1);
        sk.consumed[i] = 1;
        release(i);
      }
    }
    if (op.kind == OpKind::kForwardNoGrad) free_input(i);
    forward_work += L.forward_cost;
  }

  void loss(const Op& op) {
    if (loss_done || op.layer != n) bad_schedule({"error.internal.schedule.lossPlace", {}});
    if (!have(n)) bad_schedule({"error.internal.schedule.lossInput", {}});
    r.stored_bytes = live;  // what the forward pass leaves behind
    event(op, live);
    if (a[n]) {
      a[n] = 0;
      live -= x(n);
    }
    d[n] = 1;
    live += x(n);
    loss_done = true;
  }

  void backward(const Op& op) {
    const uint32_t i = op.layer;
    const Layer& L = chain.layers[i];
    if (!abar[i + 1] || !d[i + 1] || (L.input_saved && !have(i)))
      bad_schedule({"error.internal.schedule.backwardInputs", {}});
    const uint64_t before = live + L.backward_temp_bytes;
    live -= xbar(i + 1);
    if (any_skip && sk.dropped[i + 1]) live += x(i + 1);  // already out of abar[i + 1]
    if (any_skip && sk.grad_in[i + 1])
      sk.pending[sk.grad_in[i + 1]] += x(i + 1);  // d[i + 1]: part of a skip's gradient
    else
      live -= x(i + 1);
    abar[i + 1] = 0;
    d[i + 1] = 0;
    if (any_skip) sk.dropped[i + 1] = sk.grad_in[i + 1] = 0;
    free_input(i);
    if (i > 0) {
      d[i] = 1;
      live += x(i);
    }
    uint64_t peak = before;
    if (any_skip) {
      if (i > 0 && sk.pending[i]) {  // the skip gradients summed with d[i]
        peak = std::max(peak, live + x(i));
        live -= sk.pending[i];
        sk.pending[i] = 0;
      }
      for (const auto& s : L.skips) {
        sk.pending[s.from + 1] += s.grad_bytes;
        live += s.grad_bytes;
        if (L.concat_input && i > 0) sk.grad_in[i] = s.from + 1;
      }
    }
    event(op, peak);
    done[i] = 1;
    r.backward_cost += L.backward_cost;
  }

  void run(const Op& op) {
    if (op.kind != OpKind::kLoss && op.layer >= n)
      bad_schedule({"error.internal.schedule.layerRange", {}});
    switch (op.kind) {
      case OpKind::kForwardAll:
        return forward_all(op);
      case OpKind::kForwardCheck:
      case OpKind::kForwardNoGrad:
        return forward_no_grad(op);
      case OpKind::kLoss:
        return loss(op);
      case OpKind::kBackward:
        return backward(op);
    }
  }

  // Checks the schedule was complete, then fills in the costs.
  void finish() {
    if (!loss_done) bad_schedule({"error.internal.schedule.noLoss", {}});
    for (uint32_t i = 0; i < n; ++i)
      if (!done[i])
        bad_schedule({"error.internal.schedule.notBackward", {{"layer", std::to_string(i)}}});
    for (const Layer& L : chain.layers) r.forward_cost += L.forward_cost;
    r.recompute_cost = std::max(0.0, forward_work - r.forward_cost);
    r.total_cost = r.forward_cost + r.backward_cost + r.recompute_cost;
    const double base = r.forward_cost + r.backward_cost;
    r.overhead_fraction = base > 0 ? r.recompute_cost / base : 0.0;
  }
};

// The checkpointed segments of the first forward pass: an F_ck and the F_n that follow it.
void read_plan(const std::vector<Op>& ops, uint32_t n, PlanResult* r) {
  r->plan.assign(n, "store");
  for (size_t k = 0; k < ops.size() && ops[k].kind != OpKind::kLoss; ++k) {
    if (ops[k].kind == OpKind::kForwardNoGrad) r->plan[ops[k].layer] = "drop";
    if (ops[k].kind == OpKind::kForwardCheck) {
      r->plan[ops[k].layer] = "checkpoint";
      Segment s{ops[k].layer, ops[k].layer};
      while (k + 1 < ops.size() && ops[k + 1].kind == OpKind::kForwardNoGrad) {
        s.last = ops[++k].layer;
        r->plan[s.last] = "drop";
      }
      r->checkpointed.push_back(s);
    }
  }
}

}  // namespace

PlanResult simulate(const Chain& chain, const std::vector<Op>& ops) {
  if (chain.layers.empty()) bad_schedule({"error.internal.schedule.emptyChain", {}});
  Simulation sim(chain, ops.size());
  for (const Op& op : ops) sim.run(op);
  sim.finish();
  read_plan(ops, sim.n, &sim.r);
  return std::move(sim.r);
}

PlanResult evaluate(const Chain& chain, const std::vector<Segment>& checkpointed) {
  const size_t n = chain.layers.size();
  for (size_t s = 0; s < checkpointed.size(); ++s) {
    const Segment& g = checkpointed[s];
    if (g.first > g.last || g.last >= n || (s > 0 && g.first <= checkpointed[s - 1].last))
      fail(code::kInconsistent, "checkpointed", Message{"error.segments.order", {}});
  }
  return simulate(chain, single_level_ops(chain, checkpointed));
}

namespace {
Fact keyed(const char* key, Fact::Kind kind) {
  Fact f;
  f.key = key;
  f.kind = kind;
  return f;
}
}  // namespace

Fact count_fact(const char* key, uint64_t v) {
  Fact f = keyed(key, Fact::Kind::kCount);
  f.count = v;
  return f;
}
Fact real_fact(const char* key, double v) {
  Fact f = keyed(key, Fact::Kind::kReal);
  f.real = v;
  return f;
}
Fact flag_fact(const char* key, bool v) {
  Fact f = keyed(key, Fact::Kind::kFlag);
  f.flag = v;
  return f;
}
double fact_value(const std::vector<Fact>& facts, const std::string& key) {
  for (const Fact& f : facts) {
    if (f.key != key) continue;
    if (f.kind == Fact::Kind::kCount) return static_cast<double>(f.count);
    if (f.kind == Fact::Kind::kReal) return f.real;
    return f.flag ? 1 : 0;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace placement
}  // namespace trainmem
