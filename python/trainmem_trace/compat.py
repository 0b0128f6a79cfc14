"""What differs between torch 1.13 and current 2.x, in one place.

- Storage identity: ``Tensor.untyped_storage()`` (2.0+) or ``Tensor.storage()`` (1.13, a
  TypedStorage); both expose ``_cdata``, the address of the C++ StorageImpl, which identifies a
  storage on every device, meta included (a meta tensor's ``data_ptr()`` is always 0).
- Building a model without memory: ``torch.device("meta")`` is a context manager from 2.0 on; on
  1.13 a TorchFunctionMode moves every factory call to the meta device (the same thing 2.x's
  ``torch.utils._device.DeviceContext`` does).
- Module hooks for every module: ``torch.nn.modules.module.register_module_forward_pre_hook``
  and ``register_module_forward_hook`` exist in both.
- ``TorchDispatchMode`` lives in ``torch.utils._python_dispatch`` in both.
"""
import contextlib

import torch

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())


def storage_of(t):
    """The tensor's storage object (untyped where torch has it)."""
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()
    return t.storage()


def storage_key(t):
    """An id for the storage the tensor views: equal for all views of one storage."""
    return storage_of(t)._cdata


def storage_nbytes(t):
    """Bytes of the whole storage (what stays allocated while any view lives)."""
    st = storage_of(t)
    n = st.nbytes()
    return int(n)


# Factory functions that take a device (the list torch.utils._device uses in 2.x).
def _factories():
    names = [
        "empty", "empty_strided", "empty_quantized", "ones", "arange", "bartlett_window",
        "blackman_window", "eye", "fft.fftfreq", "fft.rfftfreq", "full", "fill", "hamming_window",
        "hann_window", "kaiser_window", "linspace", "logspace", "nested.nested_tensor", "rand",
        "randn", "randint", "randperm", "range", "sparse_coo_tensor", "sparse_compressed_tensor",
        "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor",
        "tril_indices", "triu_indices", "vander", "zeros", "asarray", "tensor", "scalar_tensor",
    ]
    out = set()
    for n in names:
        obj = torch
        for part in n.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            out.add(obj)
    return out


@contextlib.contextmanager
def meta_construction():
    """Builds modules on the meta device: no memory, whatever the model's size."""
    if TORCH_VERSION >= (2, 0):
        with torch.device("meta"):
            yield
        return
    from torch.overrides import TorchFunctionMode

    factories = _factories()

    class _Meta(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in factories and kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    with _Meta():
        yield


def register_global_module_hooks(pre, post):
    """Forward pre-hook and hook on every module call; returns the handles."""
    from torch.nn.modules import module as m

    return [m.register_module_forward_pre_hook(pre), m.register_module_forward_hook(post)]


def dispatch_mode_base():
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def named_parameters_all(model):
    """(name, module, local name, parameter) for every registration, shared ones repeated."""
    out = []
    for mname, mod in model.named_modules(remove_duplicate=False):
        for pname, p in mod._parameters.items():
            if p is not None:
                out.append((f"{mname}.{pname}" if mname else pname, mod, pname, p))
    return out


def named_buffers_all(model):
    """(name, module, local name, buffer, persistent) for every registration."""
    out = []
    for mname, mod in model.named_modules(remove_duplicate=False):
        non_persistent = getattr(mod, "_non_persistent_buffers_set", set())
        for bname, b in mod._buffers.items():
            if b is not None:
                full = f"{mname}.{bname}" if mname else bname
                out.append((full, mod, bname, b, bname not in non_persistent))
    return out
