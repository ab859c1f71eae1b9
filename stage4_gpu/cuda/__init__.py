"""``sg.cuda``: ``torch.cuda``'s questions and controls for the CUDA device, and the
device's driver of the shared device layer (``../gpu/``): its runtime (``runtime.py``),
its memory (``memory.py``) and its kernels (``kernels/*.cu``, compiled at run time by
NVRTC through CuPy and launched by the modules beside them, each the peer of the webgpu
driver's module of the same name, gathered in ``driver.py``); and CUDA graphs
(``graphs.py``).

Where CuPy is missing or no GPU answers, this module answers as a CPU-only PyTorch build
does (not available, no devices, the calls that need a GPU refused with
``CudaUnavailableError``), and ``unavailable_reason()`` says why. One GPU is used: device
0, written ``"cuda"`` or ``"cuda:0"``.
"""
import importlib

from stage0_python.cuda import sync_debug_mode_number

from ..device import DeviceError
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables
from .runtime import Runtime, is_available, runtime, unavailable_reason

# what a program cannot do with tensors on this device (a stage's LACKS, per device): read
# its memory as another dtype (not implemented), or share them through DLPack (not
# implemented here) or the buffer protocol (device memory). Every dtype of the CPU stages
# lives here, the 1- and 2-byte integers as C's char and short (kernels.CTYPE).
LACKS = frozenset({"dtype_views", "dlpack", "buffer_protocol"})


class CudaUnavailableError(DeviceError, AssertionError):
    """Raised by the calls that need a GPU where none is usable. An AssertionError, as
    PyTorch's CPU build raises, and a RuntimeError."""


def _gpu(op):
    """The runtime, or CudaUnavailableError naming ``op`` and the reason."""
    try:
        return runtime()
    except DeviceError as e:
        raise CudaUnavailableError(f"cuda.{op}: no CUDA device: {e}; this stage runs on the CPU "
                                   f"(and on 'webgpu' where it is available)") from None


def device_count():
    """1 where a GPU is usable (this stage uses one, device 0), else 0."""
    return 1 if is_available() else 0


def is_initialized():
    """Whether the GPU has been opened."""
    from .runtime import OPENING
    return OPENING.opened


def init():
    """Open the GPU now (it opens on first use otherwise)."""
    _gpu("init")


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 runs here: on any usable GPU (computed in float32), and on its
    tensor cores from compute capability 8.0, which ``including_emulation=False`` asks for."""
    if not is_available():
        return False
    return including_emulation or runtime().capability >= (8, 0)


def get_arch_list():
    """``[]``: the kernels are compiled at run time for the GPU found, not ahead for a list."""
    return []


def manual_seed(seed):
    """Accepted and ignored: every tensor is drawn on the host by the one generator every
    device shares (``sg.manual_seed``), then moved."""


def manual_seed_all(seed):
    """Accepted and ignored, as ``manual_seed``."""


def seed():
    """Accepted and ignored: there are no GPU generators."""


def seed_all():
    """Accepted and ignored: there are no GPU generators."""


def synchronize(device=None):
    """Wait until every kernel queued on the device has finished, and raise what a
    device-side check found meanwhile (an index out of range: IndexError). Counted in
    ``_sync_count()``; the sync debug mode does not flag it, as PyTorch's does not flag
    ``torch.cuda.synchronize()``."""
    _gpu("synchronize").synchronize()


def set_sync_debug_mode(debug_mode):
    """How operations that make the host wait for the device are reported, as PyTorch's:
    "default" (0) silently, "warn" (1) with a UserWarning, "error" (2) refused with a
    RuntimeError, each naming the operation (a read back such as ``item()`` or ``tolist()``,
    a blocking copy to the host or from page-locked memory to the device) before it waits.
    An explicit ``synchronize()`` is not flagged. Kept until changed, also before the GPU
    opens and where there is none (nothing then waits)."""
    Runtime.sync_debug_mode = sync_debug_mode_number(debug_mode)


def get_sync_debug_mode():
    """The sync debug mode, as its number (0 "default", 1 "warn", 2 "error")."""
    return Runtime.sync_debug_mode


def empty_cache():
    """Return the memory pool's unused blocks to the driver (nothing to do without a GPU)."""
    if is_available():
        runtime().empty_cache()


def memory_allocated(device=None):
    """Bytes of device memory held by live tensors (the caching allocator's blocks in use,
    outside CUDA graphs' pools); 0 without a GPU."""
    return runtime().memory.allocated_bytes if is_available() else 0


def max_memory_allocated(device=None):
    """The most ``memory_allocated()`` has been since the device opened or
    ``reset_peak_memory_stats()``; 0 without a GPU."""
    return runtime().memory.peak_bytes if is_available() else 0


def reset_peak_memory_stats(device=None):
    """Start ``max_memory_allocated()`` again from what is allocated now."""
    if is_available():
        runtime().memory.reset_peak()


def memory_reserved(device=None):
    """Bytes the memory pool holds, in use or cached for reuse; 0 without a GPU."""
    return runtime().pool.total_bytes() if is_available() else 0


def current_device():
    """0: the one GPU this stage uses."""
    _gpu("current_device")
    return 0


def set_device(device):
    """Select the GPU: only device 0 exists for this stage."""
    _gpu("set_device")
    index = device if isinstance(device, int) else getattr(device, "index", None)
    if index not in (None, 0):
        raise DeviceError(f"cuda.set_device: device {device!r} does not exist: this stage uses one "
                          f"GPU, 'cuda:0'")


def _set_launch_mode(mode):
    """How the cuda device launches kernels (a stagegrad extension): ``"driver"`` (the
    default) runs them; ``"null"`` counts each launch and runs nothing (a read back gives
    zeros), so that the host's own cost per operation can be measured on any machine
    (``stagegrad devices`` does, on the host emulation). ``STAGEGRAD_CUDA_LAUNCH`` sets it
    when the device opens."""
    _gpu("_set_launch_mode").set_launch_mode(mode)


def _launch_count():
    """Kernels the cuda device has launched so far, null launches and library calls
    (cuBLAS) included (a stagegrad extension): the difference across a training step is
    the step's launches. 0 without a GPU."""
    return runtime().launches if is_available() else 0


def _sync_count():
    """Times the host has waited for the cuda device so far (a stagegrad extension), every
    synchronization counted, flagged by the sync debug mode or not: the difference across a
    training step is the step's, as ``_launch_count()``'s is its launches. 0 without a GPU."""
    return runtime().syncs if is_available() else 0


def get_device_name(device=None):
    """The GPU's name, as the driver reports it."""
    return _gpu("get_device_name").name


def get_device_capability(device=None):
    """The GPU's compute capability, (major, minor)."""
    return _gpu("get_device_capability").capability


def get_device_properties(device=None):
    """The driver's properties of the GPU (a dict, as CuPy reports them)."""
    _gpu("get_device_properties")
    import cupy
    return cupy.cuda.runtime.getDeviceProperties(0)


def mem_get_info(device=None):
    """(free, total) bytes of device memory."""
    _gpu("mem_get_info")
    import cupy
    return cupy.cuda.runtime.memGetInfo()


__all__ = ["LACKS", "CudaUnavailableError", "is_available", "unavailable_reason", "device_count",
           "is_initialized", "init", "is_bf16_supported", "get_arch_list", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "current_device", "set_device",
           "get_device_name", "get_device_capability", "get_device_properties", "mem_get_info", "amp",
           "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables",
           "set_sync_debug_mode", "get_sync_debug_mode"]


def __getattr__(name):
    """``sg.cuda.amp`` (``amp.py``), imported on first use: it builds on the tensor, which
    imports this package."""
    if name == "amp":
        return importlib.import_module(__name__ + ".amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
