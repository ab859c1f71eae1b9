"""Stage 4's device layer: ``cpu``, ``webgpu`` and ``cuda`` devices, and the moves between
them.

Stage 0's ``device.py`` rewritten: the ``device`` class and ``DeviceError`` are the
vocabulary's (one for every stage); what stage 4 rewrites is which devices a tensor may
live on (``check_device``, and so the default device), where a buffer lives
(``device_of``), the move (``place``), host memory the cuda device copies from and into
without the host waiting (``pin``, ``is_pinned``), and which fused kernels a device offers
(``fused``).
"""
from stage0_python.device import CPU, DefaultDevice
from stage0_python.vocabulary import DeviceError, device

WEBGPU = device("webgpu", 0)
CUDA = device("cuda", 0)


def check_device(dev, op):
    """``dev`` (a device, a string, or None for the default device) made a device this stage
    can put a tensor on; a DeviceError naming ``op``, the device and why otherwise."""
    if dev is None:
        return _DEFAULT.device
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return d
    if d.type == "webgpu":
        if d.index not in (None, 0):
            raise DeviceError(f"{op}: device {str(d)!r} does not exist: there is one webgpu "
                              f"device, 'webgpu' (or 'webgpu:0')")
        from .webgpu.runtime import runtime
        try:
            runtime()
        except DeviceError as e:
            raise DeviceError(f"{op}: device 'webgpu' is not available: {e}") from None
        return WEBGPU
    if d.type == "cuda":
        from .cuda.runtime import runtime as cuda_runtime
        try:
            cuda_runtime()
        except DeviceError as e:
            raise DeviceError(
                f"{op}: device {str(d)!r} is not available: no CUDA GPU: {e}; this stage runs on "
                f"the CPU, and on 'webgpu' where it is available") from None
        if d.index not in (None, 0):
            raise DeviceError(
                f"{op}: device {str(d)!r} does not exist: this stage uses one CUDA GPU, 'cuda' "
                f"(or 'cuda:0')")
        return CUDA
    raise DeviceError(f"{op}: device {str(d)!r} is not available: this stage runs on the CPU, "
                      f"on 'webgpu' and on 'cuda' (see sg.webgpu.is_available(), "
                      f"sg.cuda.is_available())")


_DEFAULT = DefaultDevice(check_device)
get_default_device, set_default_device = _DEFAULT.get, _DEFAULT.set


def device_of(buf):
    """The device a backend buffer lives on."""
    return getattr(buf, "device", CPU)  # host buffers have no such attribute


def _buffer_type(kind):
    """The buffer class of the device type ``kind`` (``webgpu`` or ``cuda``): it makes that
    device's buffers (``empty``, ``upload``) and names its driver."""
    if kind == "cuda":
        from .cuda.buffer import Buffer
    else:
        from .webgpu.buffer import Buffer
    return Buffer


def _to_host(buf, non_blocking=False):
    """A device buffer's contents in a new host buffer: ordinary (pageable) memory, waited
    for; with ``non_blocking`` from the cuda device, page-locked memory and a copy that is
    only queued (PyTorch's ``to("cpu", non_blocking=True)``: read it after a synchronize)."""
    pinned = non_blocking and buf.device.type == "cuda"
    if pinned:
        from .cuda.memory import pinned_empty
        out = pinned_empty(buf.shape, buf.dtype)
    else:
        out = _host_empty(tuple(buf.shape), buf.dtype)  # no fill: every byte is written next
    buf.driver.download_into(buf, out, pinned)
    return out


def place(buf, dev, non_blocking=False):
    """``buf`` on ``dev``: itself when it is there already, else a copy there (between two
    devices, through the host). ``non_blocking`` as PyTorch's: a copy from page-locked host
    memory to the cuda device, or from it into new page-locked memory, is queued and not
    waited for (see ``_to_host``); any other copy waits as it would without it."""
    src = device_of(buf)
    if src.type == dev.type:
        return buf
    if src.type != "cpu":
        buf = _to_host(buf, non_blocking and dev.type == "cpu")
    return buf if dev.type == "cpu" else _buffer_type(dev.type).upload(buf, non_blocking)


_NO_ACCELERATOR = "Cannot access accelerator device when none is available."  # PyTorch's words


def pin(buf):
    """``buf`` (a host buffer) in page-locked memory: itself when it is there already, else a
    contiguous copy in a block of CuPy's pinned pool. Page-locked memory belongs to the cuda
    device here: without one, a RuntimeError with PyTorch's message and the reason."""
    from .cuda.runtime import is_available, unavailable_reason
    if not is_available():
        raise RuntimeError(f"{_NO_ACCELERATOR} (pin_memory: page-locked memory is the cuda device's, and "
                           f"{unavailable_reason()})")
    if is_pinned(buf):
        return buf
    from .backend import cpu
    from .cuda.memory import pinned_empty
    out = pinned_empty(tuple(buf.shape), buf.dtype)
    cpu.set_data(out, buf)
    out.version = 0  # a new tensor: it has not been written in place
    return out


def is_pinned(buf):
    """Whether ``buf``'s elements lie in page-locked host memory. False on a device, and
    where the cuda device has not been opened: nothing can be pinned before it is (asking
    the driver would open it)."""
    if device_of(buf).type != "cpu":
        return False
    from .cuda.runtime import OPENING
    if not OPENING.opened:
        return False
    from .cuda.memory import is_pinned as pinned
    return pinned(buf)


def max_buffer_bytes(dev):
    """The largest buffer one kernel can bind on ``dev`` (WebGPU's storage-binding limit),
    or None on the CPU."""
    if dev.type != "webgpu":
        return None
    from .webgpu.runtime import runtime
    return runtime().max_binding


def fused(name, *bufs):
    """Whether the fused kernel ``name`` takes these buffers: stage 3's on the CPU, the
    shared device layer's (``gpu/fused.py``) for a device's buffers; none that the
    backend's ``FUSED`` leaves out (emptied, every device runs the composites too)."""
    kinds = {b.device.type for b in bufs if hasattr(b, "device")}
    if len(kinds) > 1:  # two devices: the routed primitive will name both
        return False
    if kinds:
        from .gpu.fused import takes
        return name in _B.FUSED and takes(name, _buffer_type(kinds.pop()).driver, bufs)
    return name in _B.FUSED


from stage2_cython._buffer import empty as _host_empty  # noqa: E402  (the host's buffers are stage 2's)

from . import backend as _B  # noqa: E402  (last: the backend imports this module)
