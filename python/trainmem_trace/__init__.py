"""trainmem_trace: trace one training step of a PyTorch model, without a GPU, for trainmem.

    import trainmem_trace
    t = trainmem_trace.trace(model, [trainmem_trace.Input(("b", 3, 224, 224))],
                             "cross_entropy", batch=8)
    t.save("model.trace.json")

then `trainmem peak-memory --trace model.trace.json --micro-batch 32 --gpu a100-80gb ...`.
"""
__version__ = "0.1.0"

from .build import Trace, TraceError, trace  # noqa: E402
from .inputs import Input  # noqa: E402

__all__ = ["Input", "Trace", "TraceError", "trace", "__version__"]
