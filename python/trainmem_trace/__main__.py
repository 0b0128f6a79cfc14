"""python3 -m trainmem_trace MODULE:CALLABLE --input SHAPE[:DTYPE[:HIGH]] ... --out FILE

Traces one training step of the model MODULE:CALLABLE() returns (for example
torchvision.models:resnet50) on the meta device (no memory, no GPU) and writes the trace
trainmem reads: trainmem peak-memory --trace FILE --micro-batch 32 --gpu a100-80gb ...
"""
import argparse
import importlib
import json
import sys

from . import __version__
from .build import TraceError, trace
from .inputs import LOSSES, parse_input


def _callable(spec):
    if ":" not in spec:
        raise SystemExit(f"{spec!r}: expected MODULE:CALLABLE, e.g. torchvision.models:resnet50")
    mod, _, name = spec.partition(":")
    try:
        obj = importlib.import_module(mod)
    except ImportError as e:
        raise SystemExit(f"cannot import {mod!r}: {e}")
    for part in name.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"{mod!r} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SystemExit(f"{spec!r} is not callable")
    return obj


def parser():
    p = argparse.ArgumentParser(
        prog="python3 -m trainmem_trace",
        description="Trace one training step of a PyTorch model for trainmem (no GPU needed).")
    p.add_argument("model", help="MODULE:CALLABLE returning the nn.Module, "
                                 "e.g. torchvision.models:resnet50")
    p.add_argument("--input", action="append", required=True, metavar="SHAPE[:DTYPE[:HIGH]]",
                   help="one example input per flag, in forward()'s order: sizes or b (the batch) "
                        "and s (the sequence length), e.g. b,3,224,224 or b,s:int64:50257 "
                        "(HIGH: integer values below it). Without b or s the first size is the "
                        "batch")
    p.add_argument("--batch", type=int, default=None, help="the batch to trace at (default 2, or "
                                                           "the first size of --input)")
    p.add_argument("--seq", type=int, default=None, help="the sequence length s to trace at")
    p.add_argument("--loss", choices=LOSSES, default=None,
                   help="the loss of the output (default: the model returns its loss)")
    p.add_argument("--target", default=None, metavar="SHAPE[:DTYPE[:HIGH]]",
                   help="the loss's target (default: made from the output's shape)")
    p.add_argument("--device", choices=("meta", "cpu"), default="meta",
                   help="meta: no memory (ops without a meta kernel run on CPU tensors of their "
                        "shapes); cpu: real tensors")
    p.add_argument("--blocks", default=None, metavar="REGEX",
                   help="module names that are the chain's blocks (default: found from the "
                        "module calls)")
    p.add_argument("--kwargs", default="{}", help="JSON keyword arguments for CALLABLE")
    p.add_argument("--name", default=None, help="the model's name in the trace")
    p.add_argument("--out", required=True, help="the trace file to write")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--version", action="version", version=f"trainmem_trace {__version__}")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr))
    try:
        specs = [parse_input(s) for s in args.input]
        target = parse_input(args.target) if args.target else None
        kwargs = json.loads(args.kwargs)
    except (ValueError, json.JSONDecodeError) as e:
        raise SystemExit(str(e))
    batch = args.batch or getattr(specs[0], "batch_hint", None) or 2
    factory = _callable(args.model)
    from .compat import meta_construction
    if args.device == "meta":
        with meta_construction():  # no memory for the weights, whatever the model's size
            model = factory(**kwargs)
    else:
        model = factory(**kwargs)
    try:
        t = trace(model, specs, args.loss, batch=batch, seq=args.seq, target=target,
                  device=args.device, blocks=args.blocks, name=args.name or args.model, log=log)
    except (TraceError, ValueError) as e:
        raise SystemExit(f"trainmem_trace: {e}")
    t.save(args.out)
    if log:
        params = sum(1 for p in t["parameters"] if "tiedTo" not in p)
        log(f"wrote {args.out}: {len(t['layers'])} chain layers, {len(t['ops'])} ops, "
            f"{params} parameter tensors" +
            (f"; CPU fallback for {', '.join(t['fallbacks'])}" if t["fallbacks"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
