"""The chain of layers trainmem plans checkpoints on, found in the module calls of one step.

A cut between two module calls is clean when the only activation that requires grad and crosses
it (made before it, read after it) is one tensor: the output of what comes before. Such cuts are
where torch.utils.checkpoint_sequential could split the model. Starting from the root module's
call, a call whose children can be cut cleanly into two or more parts is replaced by those parts,
recursively; a part that makes no new storage (an in-place or view-only module such as
ReLU(inplace=True) or Flatten) joins the part before it. Leading parts that call one module
without submodules form the stem (chain layer 0), trailing ones the head (the last layer, which
also holds the loss); the parts in between are the blocks.

With `blocks` (a regular expression), the calls of modules whose names match it are the blocks
instead: everything before the first is the stem, everything after the last the head.
"""
import re


class ChainError(ValueError):
    pass


def _crossing(rec, n_ops):
    """crossing[p]: activations requiring grad made before op p and read at op p or later."""
    last_read = {}
    for k, op in enumerate(rec.ops):
        for i in op["ins"]:
            last_read[i] = k
    starts = [0] * (n_ops + 2)
    for i, k in last_read.items():
        t = rec.tensors[i]
        if t["role"] != "activation" or not t["rg"] or t["op"] is None or t["op"] < 0:
            continue
        # crosses every cut p with op < p <= last read
        starts[t["op"] + 1] += 1
        starts[k + 1] -= 1
    out, run = [], 0
    for p in range(n_ops + 1):
        run += starts[p]
        out.append(run)
    return out


def _children(rec, call_index):
    """Calls made directly by one call that ran at least one op."""
    return [j for j, c in enumerate(rec.calls)
            if c["parent"] == call_index and c["end"] is not None and c["end"] > c["start"]]


def _split(rec, call_index, crossing, ranges):
    """Appends the parts of one call's op range to `ranges` ((start, end) pairs)."""
    c = rec.calls[call_index]
    kids = _children(rec, call_index)
    cuts = [rec.calls[j]["start"] for j in kids[1:] if crossing[rec.calls[j]["start"]] <= 1]
    cuts = sorted(set(p for p in cuts if c["start"] < p < c["end"]))
    if not cuts or _repeated(rec, c["module"]):
        ranges.append((c["start"], c["end"]))
        return
    bounds = [c["start"]] + cuts + [c["end"]]
    for a, b in zip(bounds[:-1], bounds[1:]):
        inside = [j for j in kids if a <= rec.calls[j]["start"] and rec.calls[j]["end"] <= b]
        if len(inside) != 1:
            ranges.append((a, b))
            continue
        # one call and ops of this module around it: the call's parts, those ops joining the
        # first and the last part
        sub = []
        _split(rec, inside[0], crossing, sub)
        sub[0] = (a, sub[0][1])
        sub[-1] = (sub[-1][0], b)
        ranges.extend(sub)


def _repeated(rec, module):
    """A block of a stack: an element of a Sequential / ModuleList whose siblings include
    modules of its type (GPT-2's h.3, ResNet's layer1.0, Swin's features.1.0). Blocks are
    chain layers as they are; their halves are not split apart."""
    name, typ = rec.modules[module]
    if not name or module in rec.containers:
        return False  # containers are always split
    parent = name.rsplit(".", 1)[0] if "." in name else ""
    index = getattr(rec, "_module_index_by_name", None)
    if index is None:
        index = {n: i for i, (n, _) in enumerate(rec.modules)}
        rec._module_index_by_name = index
    if index.get(parent) not in rec.containers:
        return False
    prefix = parent + "." if parent else ""
    same = [n for n, t in rec.modules if t == typ and n.startswith(prefix) and
            "." not in n[len(prefix):]]
    return len(same) >= 2


def _makes_storage(rec, k):
    made = getattr(rec, "_ops_making_storage", None)
    if made is None:
        made = {t["op"] for t in rec.tensors if t["role"] == "activation" and
                t["phase"] == "forward"}
        rec._ops_making_storage = made
    return k in made


def _leaf_calls(rec, a, b):
    """Calls of modules without submodules inside [a, b)."""
    parents = {c["parent"] for c in rec.calls}
    return [j for j, c in enumerate(rec.calls)
            if c["end"] is not None and a <= c["start"] and c["end"] <= b and j not in parents]


def _root_call(rec):
    for j, c in enumerate(rec.calls):
        if c["parent"] == -1 and c["module"] == 0:
            return j
    raise ChainError("the model's forward was not called as a module")


def find_chain(rec, blocks=None):
    """Chain layers as [(name, start op, end op)]: op ranges covering the forward and the loss."""
    n = rec.forward_ops
    crossing = _crossing(rec, len(rec.ops))
    root = _root_call(rec)
    if blocks:
        parts = _block_parts(rec, blocks, crossing)
    else:
        parts = []
        _split(rec, root, crossing, parts)
    parts = _merge_storage_free(rec, parts)
    if rec.calls[root]["start"] > 0:  # ops before the root call (none in practice)
        parts[0] = (0, parts[0][1])
    layers = _stem_blocks_head(rec, parts, blocks is not None)
    # the loss (and anything after the model's call) belongs to the head
    name, a, _ = layers[-1]
    layers[-1] = (name, a, len(rec.ops))
    if layers[-1][1] > n:
        raise ChainError("the loss ops are not after the model's forward")
    return layers


def _block_parts(rec, pattern, crossing):
    rx = re.compile(pattern)
    names = [m[0] for m in rec.modules]
    calls = [c for c in rec.calls if c["end"] is not None and rx.fullmatch(names[c["module"]])]
    # outermost matches only
    ids = {id(c) for c in calls}
    by_index = {j: c for j, c in enumerate(rec.calls)}

    def nested(c):  # inside another matching call
        j = c["parent"]
        while j != -1:
            if id(by_index[j]) in ids:
                return True
            j = by_index[j]["parent"]
        return False

    calls = [c for c in calls if not nested(c)]
    if not calls:
        raise ChainError(f"no module name matches blocks={pattern!r}")
    calls.sort(key=lambda c: c["start"])
    starts = [c["start"] for c in calls]
    bad = [names[c["module"]] for c in calls[1:] if crossing[c["start"]] > 1]
    if bad:
        raise ChainError(f"blocks={pattern!r}: more than one tensor that requires grad flows into "
                         f"{bad[0]!r} (a skip connection around it); pick modules the model "
                         "runs one after another")
    root = rec.calls[_root_call(rec)]
    rec._explicit_ends = (starts[0] > root["start"], calls[-1]["end"] < root["end"])
    bounds = sorted(set([root["start"]] + starts + [calls[-1]["end"], root["end"]]))
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def _merge_storage_free(rec, parts):
    out = []
    for a, b in parts:
        if out and not any(_makes_storage(rec, k) for k in range(a, b)):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _stem_blocks_head(rec, parts, explicit):
    names = [m[0] for m in rec.modules]

    def single(p):  # one module call that makes storage (others are in place or views)
        made = [j for j in _leaf_calls(rec, *p)
                if any(_makes_storage(rec, k) for k in range(rec.calls[j]["start"],
                                                             rec.calls[j]["end"]))]
        return len(made) <= 1

    def label(p):
        inside = {j for j, c in enumerate(rec.calls) if c["end"] is not None and
                  p[0] <= c["start"] and c["end"] <= p[1]}
        top = [j for j in sorted(inside) if rec.calls[j]["parent"] not in inside]
        return ", ".join(names[rec.calls[j]["module"]] or "(root)" for j in top) or "(ops)"

    if explicit:
        has_stem, has_head = rec._explicit_ends
        first = 1 if has_stem else 0
        last = len(parts) - 2 if has_head else len(parts) - 1
    else:
        first = 0
        while first < len(parts) - 1 and single(parts[first]):
            first += 1
        last = len(parts) - 1
        while last > first and single(parts[last]):
            last -= 1
        if first == len(parts) - 1:  # no part holds more than one module: each is a layer
            first, last = 1, len(parts) - 2
        first = max(first, 1) if len(parts) >= 3 else 0
        last = min(last, len(parts) - 2) if len(parts) >= 3 else len(parts) - 1
    layers = []
    if first > 0:
        layers.append(("stem: " + label((parts[0][0], parts[first - 1][1])), parts[0][0],
                       parts[first - 1][1]))
    for p in parts[first:last + 1]:
        layers.append((label(p), p[0], p[1]))
    if last < len(parts) - 1:
        layers.append(("head: " + label((parts[last + 1][0], parts[-1][1])), parts[last + 1][0],
                       parts[-1][1]))
    return layers
