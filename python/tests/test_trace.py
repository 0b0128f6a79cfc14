"""Tests of trainmem_trace (run: PYTHONPATH=python python3 -m unittest discover -s python/tests).
They need torch (Debian's python3-torch 1.13 in CI); torchvision where a test says so."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import trainmem_trace as tt  # noqa: E402
from trainmem_trace import fit  # noqa: E402
from trainmem_trace.inputs import parse_input  # noqa: E402
import tm_custom_models as cm  # noqa: E402

try:
    import torchvision
except ImportError:  # pragma: no cover
    torchvision = None


def without_device(trace):
    """What a meta and a CPU trace must share: everything but where they ran. (Their bfloat16
    steps differ where meta kernels follow CUDA: LayerNorm and BatchNorm keep fp32 statistics
    for 16-bit inputs on meta and CUDA, 16-bit ones on torch 1.13's CPU.)"""
    t = json.loads(trace.dumps())
    for k in ("device", "fallbacks", "notes", "variants"):
        t.pop(k, None)
    for op in t["ops"]:
        op.pop("fallback", None)
    return t


class MetaAgreesWithCpu(unittest.TestCase):
    """The meta trace (ops without a meta kernel run on CPU tensors of their shapes) and a trace
    with real CPU tensors are the same trace: same ops, storages, sizes, frees, backward."""

    def check(self, build, inputs, loss, **kw):
        torch.manual_seed(0)
        meta = tt.trace(build(), inputs, loss, device="meta", **kw)
        torch.manual_seed(0)
        cpu = tt.trace(build(), inputs, loss, device="cpu", **kw)
        self.assertEqual(meta["device"], "meta")
        self.assertEqual(without_device(meta), without_device(cpu))
        return meta

    def test_unet_with_skips_and_in_place_ops(self):
        t = self.check(lambda: cm.UNetish(ch=8), [tt.Input(("b", 3, 32, 32))], "cross_entropy",
                       batch=2)
        self.assertIn("aten.convolution_backward", t["fallbacks"])  # no meta kernel in 1.13

    def test_shared_module_detached_branch_frozen_and_unused(self):
        t = self.check(lambda: cm.SharedTwice(d_in=32, h=64), [tt.Input(("b", 32))],
                       "cross_entropy", batch=4)
        params = {p["name"]: p for p in t["parameters"]}
        self.assertFalse(params["frozen.weight"]["requiresGrad"])
        self.assertFalse(params["unused"]["gradient"])
        self.assertTrue(params["block.fc1.weight"]["gradient"])
        # the block applied twice: its ops appear twice, under the same module
        fc1 = [i for i, (n, _) in enumerate(t["modules"]) if n == "block.fc1"][0]
        self.assertEqual(sum(1 for op in t["ops"] if op["module"] == fc1 and
                             op["op"] == "aten.addmm"), 2)

    def test_language_model_with_sequence_length(self):
        t = self.check(lambda: cm.TinyLM(vocab=100, h=32, heads=2, layers=2, positions=64),
                       [tt.Input(("b", "s"), torch.int64, 100)], "cross_entropy", batch=2,
                       seq=16)
        self.assertEqual(t["sizes"], {"batch": 2, "seq": 16,
                                      "probes": {"batch": [2, 3, 5], "seq": [16, 8, 4, 12]}})
        # the attention scores: b * heads * s * s float32 = 8 b s^2 bytes
        self.assertTrue(any(x["bytes"] == {"bss": 8} for x in t["tensors"]))
        # the tied output embedding is stored once
        tied = [p for p in t["parameters"] if "tiedTo" in p]
        self.assertEqual([(p["name"], p["tiedTo"]) for p in tied], [("lm_head.weight", "tok.weight")])

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_torchvision_resnet18(self):
        t = self.check(lambda: torchvision.models.resnet18(num_classes=10),
                       [tt.Input(("b", 3, 32, 32))], "cross_entropy", batch=2)
        names = [l["name"] for l in t["layers"]]
        self.assertEqual(names[0], "stem: conv1, bn1, relu, maxpool")
        self.assertEqual(names[1:-1], ["layer1.0", "layer1.1", "layer2.0", "layer2.1",
                                       "layer3.0", "layer3.1", "layer4.0", "layer4.1"])
        self.assertEqual(names[-1], "head: avgpool, fc")


class SizesAreFitted(unittest.TestCase):
    def test_fit_recovers_polynomials_exactly(self):
        pts = fit.fit_points(True, [2, 3], [16, 8, 4])
        poly = {"1": 7, "b": 5, "s": 3, "bs": 11, "ss": 2, "bss": 13}
        vals = [fit.evaluate(poly, b, s) for b, s in pts]
        self.assertEqual({k: v for k, v in fit.fit(True, pts, vals).items()}, poly)
        self.assertEqual(fit.to_json({"1": 0, "b": 4}), {"b": 4})
        self.assertEqual(fit.to_json({"1": 12, "b": 0}), 12)

    def test_the_trace_at_one_size_gives_the_sizes_of_another(self):
        spec = [tt.Input(("b", "s"), torch.int64, 100)]

        def build():
            torch.manual_seed(0)
            return cm.TinyLM(vocab=100, h=32, heads=2, layers=1, positions=64)

        a = tt.trace(build(), spec, "cross_entropy", batch=2, seq=16)
        b = tt.trace(build(), spec, "cross_entropy", batch=7, seq=40)
        for x, y in zip(a["tensors"], b["tensors"]):
            self.assertEqual(x["bytes"], y["bytes"])
        self.assertEqual(a["inexact"], [])

    def test_a_size_that_is_not_polynomial_is_reported(self):
        class Halves(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = nn.Linear(8, 8)

            def forward(self, x):
                return self.l(x[: (x.shape[0] + 1) // 2])  # ceil(b / 2) rows

        t = tt.trace(Halves(), [tt.Input(("b", 8))], "sum", batch=2)
        self.assertTrue(t["inexact"])


class Inputs(unittest.TestCase):
    def test_shapes(self):
        x = parse_input("8x3x224x224")
        self.assertEqual((x.shape, x.batch_hint), (("b", 3, 224, 224), 8))
        y = parse_input("b,s:int64:50257")
        self.assertEqual((y.shape, y.dtype, y.high), (("b", "s"), torch.int64, 50257))
        with self.assertRaises(ValueError):
            parse_input("b,q")
        with self.assertRaises(ValueError):
            parse_input("b:complex32")

    def test_refusals(self):
        with self.assertRaisesRegex(tt.TraceError, "no input shape has an 's'"):
            tt.trace(nn.Linear(4, 4), [tt.Input(("b", 4))], "sum", seq=8)
        with self.assertRaisesRegex(tt.TraceError, "give seq"):
            tt.trace(nn.Linear(4, 4), [tt.Input(("b", "s"))], "sum")
        with self.assertRaisesRegex(tt.TraceError, "not a scalar"):
            tt.trace(nn.Linear(4, 4), [tt.Input(("b", 4))], None)

    def test_the_callers_model_is_left_alone(self):
        m = nn.Linear(4, 3)
        w = m.weight.detach().clone()
        tt.trace(m, [tt.Input(("b", 4))], "sum")
        self.assertEqual(m.weight.device.type, "cpu")
        self.assertTrue(torch.equal(m.weight.detach(), w))


class CommandLine(unittest.TestCase):
    def test_writes_a_trace(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.trace.json")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [os.path.join(ROOT, "python"), os.path.join(ROOT, "tools")]))
            r = subprocess.run([sys.executable, "-m", "trainmem_trace",
                                "tm_custom_models:SharedTwice", "--kwargs",
                                '{"d_in": 16, "h": 32}', "--input", "4x16", "--loss",
                                "cross_entropy", "--out", out], env=env, capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                t = json.load(f)
            self.assertEqual((t["format"], t["version"], t["sizes"]["batch"]),
                             ("trainmem-trace", 1, 4))
            bad = subprocess.run([sys.executable, "-m", "trainmem_trace", "nope:Model", "--input",
                                  "b,4", "--out", out], env=env, capture_output=True, text=True)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("cannot import", bad.stderr)


if __name__ == "__main__":
    unittest.main()
