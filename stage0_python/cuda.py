"""``sg.cuda``: ``torch.cuda``'s questions, answered truthfully for a stage that runs on
the CPU only, the way a CPU-only PyTorch build answers them: CUDA is not available,
there are no devices, and the calls a program makes unconditionally (seeding, emptying
the cache, reading memory counters) succeed and do nothing, while the ones that need a
GPU raise ``CudaUnavailableError``.
"""
import sys

from . import cuda_amp as amp
from .device import DeviceError

sys.modules[__name__ + ".amp"] = amp  # `from torch.cuda.amp import autocast` finds it

__all__ = ["CudaUnavailableError", "is_available", "device_count", "is_initialized", "is_bf16_supported",
           "get_arch_list", "manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache",
           "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "synchronize",
           "current_device", "set_device", "get_device_name", "get_device_capability", "get_device_properties",
           "mem_get_info", "init", "amp", "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables", "set_sync_debug_mode", "get_sync_debug_mode"]

# PyTorch's names of the sync debug modes, and their numbers
SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_sync_debug_mode = [0]  # the mode set here: nothing on this stage synchronizes


class CudaUnavailableError(DeviceError, AssertionError):
    """Raised by the calls that need a GPU. An AssertionError, as PyTorch's CPU build raises
    (so ``except AssertionError`` written for it still catches it), and a RuntimeError."""


def _unavailable(op):
    raise CudaUnavailableError(f"cuda.{op}: no CUDA device: this stage runs on the CPU only "
                               f"(sg.cuda.is_available() is False)")


def is_available():
    """False: this stage has no GPU."""
    return False


def device_count():
    """0: this stage has no GPU."""
    return 0


def is_initialized():
    """False: there is nothing to initialise."""
    return False


def is_bf16_supported(including_emulation=True):
    """False, as on a PyTorch build without CUDA."""
    return False


def get_arch_list():
    """``[]``: no CUDA architectures are compiled in."""
    return []


def manual_seed(seed):
    """Accepted and ignored (there are no GPU generators to seed), as PyTorch does without a
    GPU; ``sg.manual_seed`` seeds the CPU generator every tensor here is drawn from."""


def manual_seed_all(seed):
    """Accepted and ignored, as ``manual_seed``."""


def seed():
    """Accepted and ignored: there are no GPU generators."""


def seed_all():
    """Accepted and ignored: there are no GPU generators."""


def empty_cache():
    """Accepted and ignored: there is no GPU memory cache. (Stages with a buffer pool empty it
    with ``sg.memory``.)"""


def memory_allocated(device=None):
    """0 bytes: nothing is allocated on a GPU."""
    return 0


def max_memory_allocated(device=None):
    """0 bytes: nothing is allocated on a GPU."""
    return 0


def reset_peak_memory_stats(device=None):
    """Nothing to reset: nothing is allocated on a GPU."""


def memory_reserved(device=None):
    """0 bytes: nothing is reserved on a GPU."""
    return 0


def synchronize(device=None):
    """Refused, as without a GPU in PyTorch: there is no device to wait for."""
    _unavailable("synchronize")


def current_device():
    """Refused: there is no current GPU."""
    _unavailable("current_device")


def set_device(device):
    """Refused: there is no GPU to select."""
    _unavailable("set_device")


def get_device_name(device=None):
    """Refused: there is no GPU to name."""
    _unavailable("get_device_name")


def get_device_capability(device=None):
    """Refused: there is no GPU to query."""
    _unavailable("get_device_capability")


def get_device_properties(device=None):
    """Refused: there is no GPU to query."""
    _unavailable("get_device_properties")


def mem_get_info(device=None):
    """Refused: there is no GPU memory."""
    _unavailable("mem_get_info")


def init():
    """Refused: there is no CUDA to initialise."""
    _unavailable("init")


def sync_debug_mode_number(debug_mode):
    """``debug_mode`` ("default", "warn", "error", or 0, 1, 2) as its number; RuntimeError for
    anything else, in PyTorch's words."""
    if isinstance(debug_mode, str):
        if debug_mode not in SYNC_DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        return SYNC_DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise RuntimeError(  # noqa: TRY004  (PyTorch's type for it)
            f"invalid argument to set_sync_debug_mode, debug_mode type is {type(debug_mode).__name__}")
    if debug_mode not in SYNC_DEBUG_MODES.values():
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
    return debug_mode


def set_sync_debug_mode(debug_mode):
    """Set how operations that make the host wait for a GPU are reported: "default" (0)
    silently, "warn" (1) with a warning, "error" (2) refused. Accepted and kept (PyTorch's
    CPU build refuses the call): on this stage no operation waits for a GPU, so no mode
    ever reports one."""
    _sync_debug_mode[0] = sync_debug_mode_number(debug_mode)


def get_sync_debug_mode():
    """The mode ``set_sync_debug_mode`` set, as its number (0 until set)."""
    return _sync_debug_mode[0]
def is_current_stream_capturing():
    """False: there is no CUDA stream, so no CUDA graph is being captured."""
    return False


class CUDAGraph:
    """Refused when made: CUDA graphs record a GPU's work, and this stage has no GPU."""

    def __init__(self, *args, **kwargs):
        _unavailable("CUDAGraph")


class graph:
    """Refused when made, as ``CUDAGraph``: there is no GPU work to capture."""

    def __init__(self, *args, **kwargs):
        _unavailable("graph")


def graph_pool_handle():
    """Refused: there is no GPU memory to pool for CUDA graphs."""
    _unavailable("graph_pool_handle")


def make_graphed_callables(callables, sample_args, *args, **kwargs):
    """Refused: CUDA graphs need a GPU."""
    _unavailable("make_graphed_callables")
