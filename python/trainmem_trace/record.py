"""One training step (forward, loss, backward) recorded at one input size.

Every aten op goes through a TorchDispatchMode, below autograd: the recorder sees each op, the
storages its outputs make, and (through weak references to the tensors that view them) the moment
each storage is freed. autograd's saved-tensor hooks say which storages the forward keeps for the
backward; pre-hooks on the autograd graph's nodes say which forward op each part of the backward
belongs to. Global module hooks give the module boundaries.

On the meta device an op without a meta kernel runs on CPU tensors of the same shapes and its
outputs come back as meta tensors ("fallback"); nothing else changes.
"""
import contextlib
import weakref
from collections import Counter

import torch

from . import compat, flops

_DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool", torch.complex64: "complex64",
}


# Ops whose output is dropout's random draw: CPU and meta run F.dropout as
# empty_like(x).bernoulli_(1 - p) then x * noise (aten/src/ATen/native/Dropout.cpp _dropout_impl)
# and keep the float noise; CUDA runs native_dropout and keeps a bool mask of the same numel.
_MASK_OPS = {"aten.bernoulli_", "aten.bernoulli"}


class FallbackError(RuntimeError):
    """An op without a meta kernel that failed on CPU tensors too."""

    def __init__(self, op, meta_error, cpu_error):
        super().__init__(f"{op} has no meta kernel ({meta_error[:200]}) and failed on CPU "
                         f"tensors too: {cpu_error[:200]}")
        self.op = op


def dtype_name(dt):
    return _DTYPE_NAMES.get(dt, str(dt).replace("torch.", ""))


def _tensors(x, out):
    """Tensors in a nested argument or result, in order."""
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors(y, out)
    return out


class _Mode(compat.dispatch_mode_base()):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.rec.on_op(func, args, kwargs or {})


class Recorder:
    """Records one step; read the lists it fills after step() returns."""

    def __init__(self, model, meta):
        self.meta = meta
        self.phase = "forward"
        self.ops = []  # forward and loss ops: dict(op, module, flops, ins, fallback)
        self.tensors = []  # storages: dict(bytes, dtype, op, phase, saved, free, role, ...)
        self.calls = []  # module calls: dict(module, start, end, outs)
        self.backward = []  # ("n", op) node markers, ("a", t) allocations, ("f", t) frees
        self.fallbacks = Counter()
        self.notes = []
        self._live = {}  # storage key -> tensor index
        self._refs = []  # tensor index -> live tracked tensor objects
        self._objs = {}  # id(tensor object) -> tensor index
        self._producer = {}  # id(tensor object) -> forward op that last wrote it
        self._node_op = {}  # id(autograd node) -> forward op
        self._nodes = []  # the nodes (kept so that their ids stay theirs)
        self._stack = []  # module call stack (module indices)
        self._open = []  # calls not yet returned (call indices)
        self._in_op = False
        self._paused = False
        self._loss_start = None
        self.modules = []  # (name, type) of each distinct module, in named_modules() order
        self.containers = set()  # Sequential / ModuleList / ModuleDict (subclasses included)
        self._mod_index = {}
        containers = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
        for name, mod in model.named_modules():
            self._mod_index[id(mod)] = len(self.modules)
            if isinstance(mod, containers):
                self.containers.add(len(self.modules))
            self.modules.append((name, type(mod).__name__))

    # ---- storages
    def _new_storage(self, t, role, op):
        idx = len(self.tensors)
        self.tensors.append({
            "bytes": compat.storage_nbytes(t), "dtype": dtype_name(t.dtype),
            "elem": t.element_size(), "op": op, "phase": self.phase, "saved": False, "free": None,
            "role": role, "rg": False, "shape": tuple(t.shape), "key": compat.storage_key(t),
        })
        self._refs.append(0)
        self._live[self.tensors[idx]["key"]] = idx
        return idx

    def _track(self, t, idx):
        oid = id(t)
        if oid in self._objs:
            return
        self._objs[oid] = idx
        self._refs[idx] += 1
        weakref.finalize(t, self._dead, oid)

    def _dead(self, oid):
        idx = self._objs.pop(oid, None)
        self._producer.pop(oid, None)
        if idx is None:
            return
        self._refs[idx] -= 1
        if self._refs[idx] > 0:
            return
        rec = self.tensors[idx]
        if self._live.get(rec["key"]) == idx:
            del self._live[rec["key"]]
        if self.phase == "backward":
            self.backward.append(("f", idx))
        elif self.phase == "forward" and rec["free"] is None:
            rec["free"] = len(self.ops) + (1 if self._in_op else 0)

    def index_of(self, t, role="external"):
        """The tensor index of t's storage, registering it when unknown."""
        key = compat.storage_key(t)
        idx = self._live.get(key)
        if idx is None:
            idx = self._new_storage(t, role, -1)
        self._track(t, idx)
        return idx

    def register_external(self, t, role):
        idx = self.index_of(t, role)
        self.tensors[idx]["role"] = role
        return idx

    @contextlib.contextmanager
    def unrecorded(self):
        """Ops that are not the model's (the loss target, made as the batch is)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    # ---- ops
    def on_op(self, func, args, kwargs):
        if self._paused:
            return func(*args, **kwargs)
        ins = []
        for t in _tensors((args, kwargs), []):
            idx = self.index_of(t)
            ins.append(idx)
            if t.requires_grad:
                self.tensors[idx]["rg"] = True
            self._map_node(t)
        self._in_op = True
        try:
            out, fell_back = self._execute(func, args, kwargs)
        finally:
            self._in_op = False
        if isinstance(out, (bool, int, float, complex)) and _returns_tensor(func):
            # torch 1.13 hands a wrapped number (a Python scalar autograd saved as a 0-dim tensor,
            # e.g. the 0.5 of x * 0.5) back from __torch_dispatch__ as a Python number, then
            # refuses it: return it as the 0-dim tensor it was
            src = _tensors(args, [])
            out = torch.tensor(out, dtype=src[0].dtype if src else None,
                               device=src[0].device if src else None)
        forward = self.phase != "backward"
        k = len(self.ops) if forward else None
        name = flops.op_name(func)
        for t in _tensors(out, []):
            key = compat.storage_key(t)
            idx = self._live.get(key)
            if idx is None:
                idx = self._new_storage(t, "activation", k)
                if not forward:
                    self.backward.append(("a", idx))
            self._track(t, idx)
            if forward:
                self._producer[id(t)] = k
            if name in _MASK_OPS:  # dropout's random draw: a bool mask on CUDA (native_dropout)
                self.tensors[idx]["mask"] = True
        if forward:
            self.ops.append({
                "op": name, "module": self._stack[-1] if self._stack else -1,
                "flops": flops.count(func, args, kwargs, out), "ins": ins, "fallback": fell_back,
                "loss": self._loss_start is not None,
            })
        return out

    def _execute(self, func, args, kwargs):
        if not self.meta:
            return func(*args, **kwargs), False
        try:
            return func(*args, **kwargs), False
        except (NotImplementedError, RuntimeError) as e:
            # keep the message only: the exception's traceback would hold this frame (and the
            # op's tensors) in a reference cycle, freeing them late
            first = f"{type(e).__name__}: {e}"
        try:
            out = _cpu_fallback(func, args, kwargs)
        except Exception as e:
            raise FallbackError(flops.op_name(func), first.splitlines()[0],
                                str(e).splitlines()[0] if str(e) else type(e).__name__) from None
        self.fallbacks[flops.op_name(func)] += 1
        return out, True

    def _map_node(self, t):
        node = t.grad_fn
        if node is None or id(node) in self._node_op:
            return
        op = self._producer.get(id(t))
        if op is not None:
            self._node_op[id(node)] = op
            self._nodes.append(node)

    # ---- module hooks
    def _pre(self, mod, inp):
        i = self._mod_index.get(id(mod))
        if i is not None:
            self._stack.append(i)
            parent = self._open[-1] if self._open else -1
            self.calls.append({"module": i, "start": len(self.ops), "end": None, "outs": [],
                               "parent": parent})
            self._open.append(len(self.calls) - 1)

    def _post(self, mod, inp, out):
        i = self._mod_index.get(id(mod))
        if i is None or not self._open:
            return
        c = self.calls[self._open.pop()]
        self._stack.pop()
        c["end"] = len(self.ops)
        c["outs"] = [self.index_of(t) for t in _tensors(out, [])]

    # ---- saved tensors
    def _pack(self, t):
        if self.phase != "backward":
            idx = self.index_of(t)
            rec = self.tensors[idx]
            if rec["role"] == "external" and rec["op"] == -1:
                # made outside the ops: a Python number autograd keeps as a 0-dim tensor
                # (the 0.5 of x * 0.5): an activation of the op that saves it
                rec["role"], rec["op"] = "activation", len(self.ops) - 1
            if not rec["saved"]:
                rec["saved"] = True
                rec["saved_by"] = len(self.ops) - 1
        return t


def _returns_tensor(func):
    schema = getattr(func, "_schema", None)
    return schema is not None and len(schema.returns) == 1 and \
        str(schema.returns[0].type) == "Tensor"


def _cpu_fallback(func, args, kwargs):
    """Runs func on zero-filled CPU tensors of the same shapes; outputs back on meta. Outputs that
    alias an argument (in-place, out=, views) are that argument, as the schema says."""

    def to_cpu(x):
        if isinstance(x, torch.Tensor) and x.device.type == "meta":
            # (not zeros_like: torch 1.13's zeros_like of a meta tensor onto the CPU leaves the
            # memory uninitialised)
            return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="cpu").zero_()
        if isinstance(x, (list, tuple)):
            return type(x)(to_cpu(y) for y in x)
        if isinstance(x, torch.device) and x.type == "meta":
            return torch.device("cpu")
        return x

    cargs = to_cpu(args)
    ckwargs = {k: to_cpu(v) for k, v in kwargs.items()}
    if "device" in ckwargs and str(ckwargs["device"]) == "meta":
        ckwargs["device"] = "cpu"
    out = func(*cargs, **ckwargs)
    aliases = _alias_map(func, args, kwargs)

    def to_meta(o, i):
        if not isinstance(o, torch.Tensor):
            return o
        src = aliases.get(i)
        if src is not None:
            if src[1]:
                return src[0]
            return src[0].as_strided(o.size(), o.stride(), o.storage_offset())
        return torch.empty_strided(o.size(), o.stride(), dtype=o.dtype, device="meta")

    if isinstance(out, (list, tuple)):
        return type(out)(to_meta(o, i) for i, o in enumerate(out))
    return to_meta(out, 0)


def _alias_map(func, args, kwargs):
    """return index -> (the argument it aliases, written in place?)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return {}
    by_set = {}
    for i, a in enumerate(schema.arguments):
        ai = a.alias_info
        if ai is None:
            continue
        val = args[i] if i < len(args) else kwargs.get(a.name)
        if isinstance(val, torch.Tensor):
            for s in ai.before_set:
                by_set[s] = (val, bool(ai.is_write))
    out = {}
    for i, r in enumerate(schema.returns):
        ai = r.alias_info
        if ai is None:
            continue
        for s in ai.before_set:
            if s in by_set:
                out[i] = by_set[s]
    return out


def _graph_nodes(root):
    """Every node of the autograd graph under root, each once (parents before children)."""
    seen, order, todo = set(), [], [(root, None)]
    while todo:
        node, parent = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        order.append((node, parent))
        for nxt, _ in node.next_functions:
            todo.append((nxt, node))
    return order


def record_step(model, inputs, loss_fn, meta):
    """Runs forward, loss and backward of `model` on `inputs` (tensors on the model's device)
    under the recorder; returns it. loss_fn(output, recorder) returns the scalar loss (it makes
    its target under recorder.unrecorded() and registers it with register_external)."""
    rec = Recorder(model, meta)
    for name, _, _, p in compat.named_parameters_all(model):
        rec.register_external(p, "param")
    for name, _, _, b, _ in compat.named_buffers_all(model):
        rec.register_external(b, "buffer")
    for t in inputs:
        if isinstance(t, torch.Tensor):
            rec.register_external(t, "input")
    handles = compat.register_global_module_hooks(rec._pre, rec._post)
    mode = _Mode(rec)
    try:
        with torch.autograd.graph.saved_tensors_hooks(rec._pack, lambda t: t):
            with mode:
                out = model(*inputs)
                rec._loss_start = len(rec.ops)
                loss = loss_fn(out, rec)
            rec.forward_ops = rec._loss_start
            rec.loss_ops = len(rec.ops)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or loss.grad_fn is None:
                raise ValueError("the loss must be a scalar tensor that requires grad")
            rec.loss_index = rec.index_of(loss)
            _hook_graph(rec, model, loss)
            rec.phase = "backward"
            with mode:
                loss.backward()
            rec.phase = "after"
    finally:
        for h in handles:
            h.remove()
    _mark_grads(rec, model)
    rec._nodes.clear()
    del out, loss
    rec.kept_after = [i for i, n in enumerate(rec._refs)
                      if n > 0 and rec.tensors[i]["role"] == "activation"]
    return rec


def _hook_graph(rec, model, loss):
    """A pre-hook on every node: the backward events that follow belong to its forward op."""
    rec._map_node(loss)
    first_use = {}
    for k, op in enumerate(rec.ops):
        for i in op["ins"]:
            first_use.setdefault(i, k)
    op_of = {}
    for node, parent in _graph_nodes(loss.grad_fn):
        op = rec._node_op.get(id(node))
        if op is None and hasattr(node, "variable"):  # AccumulateGrad: the parameter's first use
            op = first_use.get(rec._live.get(compat.storage_key(node.variable)))
        if op is None and parent is not None:
            op = op_of.get(id(parent))
        op_of[id(node)] = op
        rec._nodes.append(node)
        node.register_prehook(lambda grads, op=op: rec.backward.append(("n", op)))


def _mark_grads(rec, model):
    rec.has_grad = set()
    for _, _, _, p in compat.named_parameters_all(model):
        if p.grad is not None:
            rec.has_grad.add(id(p))
            idx = rec._live.get(compat.storage_key(p.grad))
            if idx is not None:
                rec.tensors[idx]["role"] = "grad"
