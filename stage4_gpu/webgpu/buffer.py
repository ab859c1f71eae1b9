"""Tensors' memory on the WebGPU device: a ``Storage`` owns one GPU buffer; a ``Buffer`` is
a strided view of it (shape, strides and offset in elements), as stage 1's and stage 2's
are over host memory, so every view is free here too.

Element types: WGSL has 32-bit integers and floats in its core, 64-bit integers where the
adapter offers ``shader-int64`` (nearly every desktop GPU, and Mesa's software driver),
and no 64-bit floats at all, so float64 tensors stay on the CPU. A bool is one 32-bit word
on the device (WGSL has no byte-sized storage) and one byte on the host.
"""
import array
import itertools

from ..capabilities import CapabilityError
from ..device import device as _device
from ..dtypes import float64, int64
from ..strided import StridedBuffer, contiguous_strides
from .runtime import runtime

DEVICE = _device("webgpu", 0)
# dtype name -> (WGSL type, bytes per element on the device)
WGSL = {"bool": ("u32", 4), "int32": ("i32", 4), "int64": ("i64", 8), "float32": ("f32", 4)}
_HOST_CODE = {"bool": "I", "int32": "i", "int64": "q", "float32": "f"}  # the device's layout


def check_dtype(dtype, op):
    """Refuse a dtype the device cannot hold, naming it and why."""
    if dtype is float64:
        raise CapabilityError(f"{op}: float64 tensors cannot live on the webgpu device: WGSL has "
                              f"no 64-bit floats (use float32, or keep this tensor on the CPU)")
    if dtype is int64 and not runtime().int64:
        raise CapabilityError(f"{op}: int64 tensors need the shader-int64 feature, which "
                              f"{runtime().name} lacks")
    if dtype.name in ("float16", "bfloat16"):
        raise CapabilityError(f"{op}: {dtype.name} tensors cannot live on the webgpu device: its kernels "
                              f"address 32-bit words; keep this tensor on the CPU, or use float32 (the "
                              f"webgpu device lacks {dtype.name}: its LACKS names it)")
    if dtype.name not in WGSL:
        raise CapabilityError(f"{op}: {dtype.name} tensors are not supported on the webgpu device")


class Storage:
    """One GPU buffer, shared by every view of it; back to the pool when the last view dies.
    ``version`` counts in-place writes, as on the host.

    The storage holds the buffer's key in the runtime's table, not the buffer: a tensor
    can die in a reference cycle (autograd makes them), and the collector finalises every
    object of a cycle in any order, so a buffer held here could be released by wgpu before
    this storage hands it back to the pool."""
    __slots__ = ("key", "version", "__weakref__")

    def __init__(self, key):
        self.key = key
        self.version = 0

    @property
    def gbuf(self):
        return _OWNED[self.key]

    def __del__(self):
        _RT[0].release(_OWNED.pop(self.key))

    def __deepcopy__(self, memo):
        """A storage of its own holding the same bytes (``copy.deepcopy`` of a tensor): the
        default copy would share the key, so two storages would alias one GPU buffer and
        both hand it back to the pool."""
        src, rt = self.gbuf, runtime()
        key = next(_KEYS)
        _OWNED[key] = rt.alloc(src.size)
        rt.copy(src, 0, _OWNED[key], 0, src.size)
        twin = memo[id(self)] = Storage(key)
        return twin


_RT = []  # the runtime, for Storage.__del__
_OWNED = {}  # key -> the GPU buffer of a live Storage
_KEYS = itertools.count()


class Buffer(StridedBuffer):
    """A strided view of a Storage on the webgpu device (see the module's docstring)."""
    __slots__ = ()
    device = DEVICE

    @property
    def itemsize(self):
        return WGSL[self.dtype.name][1]

    @property
    def wgsl(self):
        return WGSL[self.dtype.name][0]

    def _download(self):
        return to_host_array(self)

    def _copied(self):
        from .movement import copy  # the movement kernels build on this module
        return copy(self)


def empty(shape, dtype):
    """A new contiguous buffer (contents undefined)."""
    rt = runtime()
    if not _RT:
        _RT.append(rt)
    n = 1
    for s in shape:
        n *= s
    key = next(_KEYS)
    _OWNED[key] = rt.alloc(n * WGSL[dtype.name][1])
    return Buffer(Storage(key), tuple(shape), contiguous_strides(shape), 0, dtype)


def from_host(data, shape, dtype):
    """Upload ``data`` (an array in the device's layout for ``dtype``) as a new buffer."""
    check_dtype(dtype, "to(device='webgpu')")
    out = empty(shape, dtype)
    if out.numel:
        runtime().queue.write_buffer(out.storage.gbuf, 0, _padded(data))
    return out


def _padded(data):
    raw = memoryview(data).cast("B")
    return raw if len(raw) % 4 == 0 else bytes(raw) + bytes(4 - len(raw) % 4)


def host_array(values, dtype):
    """An array in the device's layout holding ``values`` (Python numbers or an array)."""
    return array.array(_HOST_CODE[dtype.name], values)


def to_host_array(x):
    """The elements of ``x``, row-major, as an array in the device's layout (a download)."""
    from .movement import contiguous  # the movement kernels build on this module
    c = x if x.is_contiguous() else contiguous(x)
    size = WGSL[c.dtype.name][1]
    raw = runtime().download(c.storage.gbuf, c.offset * size, c.numel * size)
    out = array.array(_HOST_CODE[c.dtype.name])
    out.frombytes(raw)
    return out

