"""``sg.autocast``: mixed precision, as ``torch.autocast``.

Design: inside the context, the operations whose cost is products (``matmul`` and the
functions built on it, ``linear``, the convolutions) cast their floating inputs to the
lower-precision dtype (bfloat16 by default on the CPU, float16 on CUDA), and the ones
that lose accuracy there (the losses; on CUDA also softmax, log_softmax, layer_norm and
group_norm) cast theirs to float32. Every other operation runs in the dtype its inputs
have. Each cast is an ordinary differentiable ``to``: a float32 parameter used by a
bfloat16 product still gets a float32 gradient. float64 tensors are never cast, and the
state is per thread, both as in PyTorch.
"""
import functools
import importlib
import threading
import warnings

from . import dtypes as D
from .capabilities import lacking

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "webgpu": "float16"}
# the operations that run in float32 under autocast, per device type (the others: none)
FLOAT32_OPS = {"cpu": frozenset({"loss"}),
               "cuda": frozenset({"loss", "softmax", "log_softmax", "layer_norm", "group_norm"})}


class _State(threading.local):
    def __init__(self):
        self.active = {}  # device type -> the lower-precision dtype, while autocast is on


_STATE = _State()


def _stage_module(name):
    """This stage's submodule ``name`` (``cuda``, ``webgpu``), or None where it has none."""
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        return None


class autocast:
    """See torch.autocast: ``with sg.autocast("cpu"):`` (or as a decorator) runs the
    products in bfloat16 (``dtype=`` picks float16) and the losses in float32. A stage
    that lacks the dtype raises CapabilityError; PyTorch's warnings where it disables
    itself (CUDA absent, a dtype autocast does not take) are kept."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in DEFAULT_DTYPE:
            raise RuntimeError(f"autocast: unsupported device_type {device_type!r}; expected one of "
                               f"{', '.join(DEFAULT_DTYPE)}")
        self.device = device_type
        self.fast_dtype = D.BY_NAME[DEFAULT_DTYPE[device_type]] if dtype is None else dtype
        self._enabled = bool(enabled)
        if not self._enabled:
            return
        device = _stage_module(device_type) if device_type != "cpu" else None
        if device_type != "cpu" and (device is None or not device.is_available()):
            warnings.warn(f"User provided device_type of '{device_type}', but {device_type} is not "
                          f"available. Disabling")
            self._enabled = False
        elif self.fast_dtype.name not in D.HALF_NAMES:
            warnings.warn(f"In {device_type} autocast, but the target dtype is not supported. Disabling "
                          f"autocast. Autocast only supports dtype of bfloat16, float16 currently.")
            self._enabled = False
        elif self.fast_dtype.name in D.LACKING:
            raise lacking(__name__, self.fast_dtype.name, f"autocast: cannot compute in {self.fast_dtype.name}")
        elif self.fast_dtype.name in getattr(device, "LACKS", ()):
            raise lacking(__name__, self.fast_dtype.name, f"autocast: the {device_type} device cannot hold "
                          f"{self.fast_dtype.name} tensors")

    def __enter__(self):
        active = _STATE.active
        self._previous = active.get(self.device)
        if self._enabled:
            active[self.device] = self.fast_dtype
        else:
            active.pop(self.device, None)
        return self

    def __exit__(self, *exc):
        if self._previous is None:
            _STATE.active.pop(self.device, None)
        else:
            _STATE.active[self.device] = self._previous
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return func(*args, **kwargs)
        return wrapped


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on for ``device_type`` in this thread (PyTorch's default: CUDA)."""
    return device_type in _STATE.active


def get_autocast_dtype(device_type):
    """The dtype autocast casts products to on ``device_type`` (its default when off)."""
    return _STATE.active.get(device_type) or D.BY_NAME[DEFAULT_DTYPE[device_type]]


def _cast(tensors, pick):
    out = []
    for t in tensors:
        dtype = getattr(t, "dtype", None)
        if dtype is not None and dtype.is_floating_point and dtype is not D.float64:
            target = pick(t.device.type)
            if target is not None and target is not dtype:
                t = t.to(target)
        out.append(t)
    return out


def lower(*tensors):
    """``tensors`` as an autocast product takes them: floating ones (not float64) in the
    lower-precision dtype of their device type, where autocast is on for it."""
    active = _STATE.active
    return _cast(tensors, active.get) if active else tensors


def float32(op, *tensors):
    """``tensors`` as the autocast float32 operation ``op`` (see ``FLOAT32_OPS``) takes them."""
    active = _STATE.active
    if not active:
        return tensors
    return _cast(tensors, lambda dev: D.float32 if dev in active and op in FLOAT32_OPS.get(dev, ()) else None)
