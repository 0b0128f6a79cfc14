"""trace(): record the step at several sizes, check that they share one structure, fit every
size, and write the trace trainmem reads (format documented in docs/trace.md)."""
import copy
import json
import sys

import torch
import torch.nn as nn

from . import __version__, compat, fit
from .chain import find_chain
from .inputs import LOSSES, Input, apply_loss, main_output, target_for
from .record import FallbackError, dtype_name, record_step

FORMAT = "trainmem-trace"
VERSION = 1


class TraceError(ValueError):
    """The model could not be traced as asked (the message says why)."""


class Trace(dict):
    """The trace: a dict of plain JSON values; save() writes it."""

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self, f, separators=(",", ":"))
            f.write("\n")

    def dumps(self):
        return json.dumps(self, separators=(",", ":"))


def _meta_copy(model):
    """The model on the meta device, the caller's left untouched (no weight is copied)."""
    memo = {}
    for _, _, _, p in compat.named_parameters_all(model):
        if id(p) not in memo:
            memo[id(p)] = nn.Parameter(torch.empty_like(p, device="meta"),
                                       requires_grad=p.requires_grad)
    for _, _, _, b, _ in compat.named_buffers_all(model):
        if id(b) not in memo:
            memo[id(b)] = torch.empty_like(b, device="meta")
    return copy.deepcopy(model, memo)


def _on_device(model, device):
    params = [p for _, _, _, p in compat.named_parameters_all(model)]
    if device == "meta":
        if all(p.device.type == "meta" for p in params):
            return model
        return _meta_copy(model)
    if any(p.device.type == "meta" for p in params):
        raise TraceError("the model is on the meta device: build it on the CPU for device='cpu'")
    return model


def _probe_sizes(batch, seq):
    """(batch probes, length probes): fitted on the first two (three), checked on the last.
    Sizes of 1 are probed as 2: broadcasting over a dimension of 1 takes other paths (a view
    instead of a copy, no reduction in the backward), which larger sizes do not share."""
    if batch < 1:
        raise TraceError("batch must be at least 1")
    batch = max(batch, 2)
    bs = [batch, batch + 1, batch + 3]
    if seq is None:
        return bs, None
    seq = max(seq, 2)
    if seq % 4 == 0 and seq // 4 >= 2:
        ss = [seq, seq // 2, seq // 4, 3 * seq // 4]
    elif seq >= 5:
        ss = [seq, seq - 1, seq - 2, seq - 3]
    else:
        ss = [seq, seq + 1, seq + 2, seq + 3]
    return bs, ss


def _points(bs, ss):
    fit_pts = fit.fit_points(ss is not None, bs, ss or [])
    checks = [(bs[2], None)] if ss is None else [(bs[2], ss[3])]
    return fit_pts, checks


def _one_run(model, specs, b, s, loss, target_spec, device):
    inputs = [spec.make(b, s, device) for spec in specs]

    def loss_fn(out, rec):
        if loss is None:
            t = main_output(out) if not isinstance(out, torch.Tensor) else out
            if t.numel() != 1:
                raise TraceError("the model's output is not a scalar: give a loss "
                                 f"({', '.join(LOSSES)}) or loss_fn")
            return t.reshape(())
        if callable(loss):
            return loss(out)
        logits = main_output(out)
        with rec.unrecorded():
            target = target_for(loss, logits, target_spec, b, s)
        if target is not None:
            rec.register_external(target, "input")
            rec.target_shape = tuple(target.shape)
            rec.target_dtype = target.dtype
        return apply_loss(loss, logits, target)

    for p in model.parameters():
        p.grad = None
    rec = record_step(model, inputs, loss_fn, device == "meta")
    for p in model.parameters():
        p.grad = None
    return rec


def _layer_outputs(rec, layers):
    """The tensor each chain layer hands to the next (the loss for the last)."""
    last_read = {}
    for k, op in enumerate(rec.ops):
        for i in op["ins"]:
            last_read[i] = k
    outs = []
    for name, a, b in layers[:-1]:
        best = None
        for i, k in last_read.items():
            t = rec.tensors[i]
            if t["role"] == "activation" and t["phase"] == "forward" and t["op"] < b <= k:
                key = (t["rg"], t["op"])
                if best is None or key > best[0]:
                    best = (key, i)
        if best is None:
            made = [i for i, t in enumerate(rec.tensors) if t["role"] == "activation" and
                    t["phase"] == "forward" and a <= t["op"] < b]
            if not made:
                raise TraceError(f"chain layer {name!r} makes no tensor")
            best = (None, made[-1])
        outs.append(best[1])
    outs.append(rec.loss_index)
    return outs


def _events(rec, index):
    """The backward as [kind, index] pairs; node markers without events after them dropped."""
    out = []
    for kind, i in rec.backward:
        if kind == "n":
            if out and out[-1][0] == "n":
                out.pop()
            out.append(["n", -1 if i is None else i])
        elif i in index:
            out.append([kind, index[i]])
    while out and out[-1][0] == "n":
        out.pop()
    return out


def _param_rows(model, rec, layer_of_op):
    """Every registration of a parameter; a second name for one storage is tiedTo the first."""
    first_use = {}
    for k, op in enumerate(rec.ops):
        for i in op["ins"]:
            first_use.setdefault(i, k)
    rows, owner = [], {}
    for name, mod, local, p in compat.named_parameters_all(model):
        sid = rec._live.get(compat.storage_key(p))
        row = {"name": name, "shape": list(p.shape), "dtype": dtype_name(p.dtype),
               "requiresGrad": bool(p.requires_grad), "module": rec._mod_index.get(id(mod), -1)}
        if sid in owner:
            row["tiedTo"] = owner[sid]
        else:
            owner[sid] = name
        use = first_use.get(sid)
        row["layer"] = layer_of_op(use) if use is not None else -1
        row["gradient"] = id(p) in rec.has_grad
        if local == "weight" and isinstance(mod, nn.Linear):
            row["kind"] = "linear"
        elif local == "weight" and type(mod).__name__ == "Conv1D":
            row["kind"] = "conv1d"
        elif local == "weight" and isinstance(mod, nn.Embedding):
            row["kind"] = "embedding"
        rows.append(row)
    return rows


def _buffer_rows(model):
    return [{"name": n, "shape": list(b.shape), "dtype": dtype_name(b.dtype), "persistent": pers}
            for n, _, _, b, pers in compat.named_buffers_all(model)]


def _skeleton(rec, layers):
    """(structure, numbers) of one run: runs at other sizes must have the same structure."""
    act = [i for i, t in enumerate(rec.tensors) if t["role"] == "activation"]
    index = {i: k for k, i in enumerate(act)}
    ins = [i for i, t in enumerate(rec.tensors) if t["role"] == "input"]
    outs = _layer_outputs(rec, layers)
    rows = []
    for i in act:
        t = rec.tensors[i]
        row = {"dtype": t["dtype"]}
        if t.get("mask"):
            row["mask"] = True
        if t["phase"] == "forward":
            row["op"] = t["op"]
            if t["free"] is not None:
                row["free"] = t["free"]
            if t["saved"]:
                row["saved"] = True
        else:
            row["backward"] = True
        rows.append(row)
    ops = [{"op": o["op"], "module": o["module"]} for o in rec.ops]
    for o, r in zip(rec.ops, ops):
        if o["fallback"]:
            r["fallback"] = True
    lay = [{"name": n, "start": a, "end": b, "output": index[o]}
           for (n, a, b), o in zip(layers, outs)]
    structure = {"ops": ops, "tensors": rows, "backward": _events(rec, index), "layers": lay,
                 "inputs": [rec.tensors[i]["dtype"] for i in ins],
                 "inputs_saved": [rec.tensors[i]["saved"] for i in ins]}
    numbers = ([rec.tensors[i]["bytes"] for i in ins] + [rec.tensors[i]["bytes"] for i in act] +
               [o["flops"] for o in rec.ops])
    return structure, numbers


def _first_difference(a, b, path="trace"):
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}"
            d = _first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else path


def _check_and_fit(runs, points, checks, with_seq):
    """Fitted numbers, and the ones a check point contradicts."""
    n_fit = len(points)
    fitted, inexact = [], []
    for j in range(len(runs[0][1])):
        vals = [r[1][j] for r in runs[:n_fit]]
        poly = fit.fit(with_seq, points, vals)
        for (b, s), run in zip(checks, runs[n_fit:]):
            got = fit.evaluate(poly, b, s)
            if got != run[1][j]:
                inexact.append((j, b, s, run[1][j], float(got)))
        fitted.append(poly)
    return fitted, inexact


def trace(model, example_inputs, loss_fn=None, *, batch=None, seq=None, target=None,
          device="meta", blocks=None, name=None, log=None, sixteen_bit=True):
    """Trace one training step of `model`: what it keeps for the backward, what it allocates and
    frees, per module, as functions of the batch (and the sequence length).

    example_inputs: Input specs, or tensors (their first dimension is the batch). loss_fn: None
    (the model returns its loss), "cross_entropy", "mse", "sum", or a callable(output) -> scalar.
    batch / seq: the traced sizes (default: the first tensor's batch; no sequence length).
    target: an Input for the loss's target (default: made from the output's shape).
    device: "meta" (no memory; ops without a meta kernel run on CPU, listed in "fallbacks") or
    "cpu". blocks: a regular expression naming the modules that are the chain's blocks.
    sixteen_bit: also trace the step with the model in bfloat16 (the trace's variants.bfloat16,
    which trainmem uses for precision bf16 and fp16).
    Returns a Trace (a dict; .save(path) writes it)."""
    specs = []
    for x in example_inputs:
        if isinstance(x, Input):
            specs.append(x)
        elif isinstance(x, torch.Tensor):
            batch = batch or x.shape[0]
            specs.append(Input(("b",) + tuple(x.shape[1:]), x.dtype,
                               int(x.max()) + 1 if not x.dtype.is_floating_point and
                               x.device.type != "meta" and x.numel() else None))
        else:
            raise TraceError(f"example inputs are Input specs or tensors, got {type(x).__name__}")
    if isinstance(loss_fn, str) and loss_fn not in LOSSES:
        raise TraceError(f"loss_fn {loss_fn!r}: one of {', '.join(LOSSES)}, a callable, or None")
    if seq is not None and not any(sp.uses_seq for sp in specs):
        raise TraceError("seq is given but no input shape has an 's'")
    if seq is None and any(sp.uses_seq for sp in specs):
        raise TraceError("an input shape has an 's': give seq (the traced sequence length)")
    batch = max(batch or 2, 2)  # (see _probe_sizes)
    seq = max(seq, 2) if seq is not None else None
    model = _on_device(model, device)
    model.train()
    step = _probe(model, specs, loss_fn, target, device, blocks, batch, seq, log)
    out = _assemble(model, specs, step, loss_fn, batch, seq, device, name)
    if sixteen_bit:
        _add_16bit_variant(out, model, specs, loss_fn, target, device, blocks, batch, seq, log)
    return out


def _probe(model, specs, loss_fn, target, device, blocks, batch, seq, log):
    """The step at the traced size and at the probes: (recorder, layers, structure, fitted
    sizes, contradicted sizes, batch probes, length probes)."""
    bs, ss = _probe_sizes(batch, seq)
    points, checks = _points(bs, ss)
    runs, recs = [], []
    for b, s in points + checks:
        if log:
            log(f"tracing at batch {b}" + (f", length {s}" if s is not None else ""))
        rec = _one_run(model, specs, b, s, loss_fn, target, device)
        layers = find_chain(rec, blocks) if not recs else recs[0][1]
        runs.append(_skeleton(rec, layers))
        recs.append((rec, layers))
        if len(runs) > 1:
            diff = _first_difference(runs[0][0], runs[-1][0])
            if diff:
                raise TraceError(
                    f"the step at batch {b}" + (f", length {s}" if s is not None else "") +
                    f" differs from the one at batch {points[0][0]} ({diff}): the model's "
                    "ops depend on the size, and a trace cannot follow it")
    fitted, inexact = _check_and_fit(runs, points, checks, seq is not None)
    return recs[0][0], recs[0][1], runs[0][0], fitted, inexact, bs, ss


def _note(code, **params):
    """A note of the trace as data: a code of trainmem's message catalog (cpp/data/messages.json,
    trace.note.*) and its parameters as strings, which trainmem's page says in its language."""
    return {"code": code, "params": params}


def _add_16bit_variant(out, model, specs, loss_fn, target, device, blocks, batch, seq, log):
    """The same step with the model and its floating inputs in bfloat16 (model.to(bfloat16)):
    explicit casts in the model's code (logits.float(), softmax in fp32) make its sizes differ
    from the float32 step's halved. Recorded under variants.bfloat16 when every op ran."""
    half = _meta_copy(model) if device == "meta" else copy.deepcopy(model)
    half.to(torch.bfloat16)
    half.train()
    hspecs = [Input(sp.shape, torch.bfloat16 if sp.dtype.is_floating_point else sp.dtype, sp.high)
              for sp in specs]
    try:
        step = _probe(half, hspecs, loss_fn, target, device, blocks, batch, seq, log)
    except FallbackError as e:  # no meta kernel, and on the CPU no bfloat16 kernel
        out["notes"].append(_note("trace.note.noBf16.cpu", op=e.op))
        return
    except Exception as e:  # an op without a bfloat16 kernel
        out["notes"].append(_note("trace.note.noBf16.error", error=str(e).splitlines()[0][:200]))
        return
    v = _assemble(half, hspecs, step, loss_fn, batch, seq, device, None)
    if len(v["layers"]) != len(out["layers"]):
        out["notes"].append(_note("trace.note.noBf16.chain"))
        return
    out["variants"] = {"bfloat16": {k: v[k] for k in VARIANT_KEYS}}


def _layer_finder(layers):
    bounds = [(a, b) for _, a, b in layers]

    def layer_of_op(k):
        for i, (a, b) in enumerate(bounds):
            if a <= k < b:
                return i
        return len(bounds) - 1

    return layer_of_op


# What a dtype variant of the step holds (the rest is the float32 step's).
VARIANT_KEYS = ("inputs", "ops", "tensors", "layers", "backward", "fallbacks", "inexact")


def _assemble(model, specs, step, loss, batch, seq, device, name):
    rec, layers, structure, fitted, inexact, bs, ss = step
    n_in, n_t = len(structure["inputs"]), len(structure["tensors"])
    polys = [fit.to_json(p) for p in fitted]
    inputs = []
    for k, dt in enumerate(structure["inputs"]):
        row = specs[k].describe() if k < len(specs) else {
            "shape": list(getattr(rec, "target_shape", ())), "dtype": dt, "target": True}
        row["bytes"] = polys[k]
        if structure["inputs_saved"][k]:
            row["saved"] = True  # a layer keeps the batch tensor itself for the backward
        inputs.append(row)
    tensors = []
    for row, p in zip(structure["tensors"], polys[n_in:n_in + n_t]):
        tensors.append(dict({"bytes": p}, **row))
    ops = []
    for row, p in zip(structure["ops"], polys[n_in + n_t:]):
        ops.append(dict(row, flops=p) if p != 0 else dict(row))
    notes = []
    if rec.fallbacks:
        notes.append(_note("trace.note.fallbacks",
                          ops=", ".join(f"{k} ({v})" for k, v in sorted(rec.fallbacks.items()))))
    if rec.kept_after:
        notes.append(_note("trace.note.keptAfter", count=str(len(rec.kept_after))))
    labels = ["inputs[%d].bytes" % k for k in range(n_in)] + \
        ["tensors[%d].bytes" % k for k in range(n_t)] + \
        ["ops[%d].flops" % k for k in range(len(ops))]
    out = Trace()
    out.update({
        "format": FORMAT, "version": VERSION, "producer": f"trainmem_trace {__version__}",
        "torch": torch.__version__, "device": device,
        "name": name or type(model).__name__,
        "sizes": dict({"batch": batch, "probes": {"batch": bs}},
                      **({"seq": seq} if seq is not None else {})),
        "loss": loss if isinstance(loss, str) else ("model" if loss is None else "custom"),
        "inputs": inputs,
        "modules": [[n, t] for n, t in rec.modules],
        "parameters": _param_rows(model, rec, _layer_finder(layers)),
        "buffers": _buffer_rows(model),
        "ops": ops, "tensors": tensors, "layers": structure["layers"],
        "backward": structure["backward"],
        "fallbacks": dict(sorted(rec.fallbacks.items())),
        "notes": notes,
        "inexact": [{"value": labels[j], "batch": b, "seq": s, "measured": v, "fitted": f}
                    for j, b, s, v, f in inexact][:100],
    })
    if ss is not None:
        out["sizes"]["probes"]["seq"] = ss
    return out
