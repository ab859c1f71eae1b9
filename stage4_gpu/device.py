"""Stage 4's device layer: ``cpu``, ``webgpu`` and ``cuda`` devices, and the moves between
them.

Stage 0's ``device.py`` rewritten: the ``device`` class and ``DeviceError`` are the
vocabulary's (one for every stage); what stage 4 rewrites is which devices a tensor may
live on (``check_device``, and so the default device), where a buffer lives
(``device_of``), the move (``place``), and which fused kernels a device offers
(``fused``).
"""
from stage0_python.vocabulary import DeviceError, device

CPU = device("cpu")
WEBGPU = device("webgpu", 0)
CUDA = device("cuda", 0)
_DEFAULT = [CPU]


def get_default_device():
    """The device creation functions use when given none (the CPU unless set)."""
    return _DEFAULT[0]


def set_default_device(dev):
    """Make ``dev`` (None: the CPU) the device creation functions use when given none, as
    ``torch.set_default_device``; a device the stage cannot use raises DeviceError."""
    _DEFAULT[0] = CPU if dev is None else check_device(dev, "set_default_device")


def check_device(dev, op):
    """``dev`` (a device, a string, or None for the default device) made a device this stage
    can put a tensor on; a DeviceError naming ``op``, the device and why otherwise."""
    if dev is None:
        return _DEFAULT[0]
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


def _to_host(buf):
    """A device buffer's contents in a new host buffer."""
    from .backend import cpu
    out = cpu.full(buf.shape, 0, buf.dtype)
    memoryview(out).cast("B")[:] = buf.host_bytes()
    return out


def place(buf, dev):
    """``buf`` on ``dev``: itself when it is there already, else a copy there (between two
    devices, through the host)."""
    src = device_of(buf)
    if src.type == dev.type:
        return buf
    if src.type != "cpu":
        buf = _to_host(buf)
    return buf if dev.type == "cpu" else _buffer_type(dev.type).upload(buf)


def max_buffer_bytes(dev):
    """The largest buffer one kernel can bind on ``dev`` (WebGPU's storage-binding limit),
    or None on the CPU."""
    if dev.type != "webgpu":
        return None
    from .webgpu.runtime import runtime
    return runtime().max_binding


def fused(name, *bufs):
    """Whether the fused kernel ``name`` takes these buffers: stage 3's on the CPU, the
    shared device layer's (``gpu/fused.py``) for a device's buffers."""
    kinds = {b.device.type for b in bufs if hasattr(b, "device")}
    if len(kinds) > 1:  # two devices: the routed primitive will name both
        return False
    if kinds:
        from .gpu.fused import takes
        return takes(name, _buffer_type(kinds.pop()).driver, bufs)
    return name in _B.FUSED


from . import backend as _B  # noqa: E402  (last: the backend imports this module)
