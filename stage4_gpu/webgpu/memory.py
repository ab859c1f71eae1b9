"""Tensors' memory on the WebGPU device: a ``Storage`` owns one GPU buffer, shared by every
view of it, and goes back to the caching allocator when the last view dies; ``Memory``
is the driver's part that allocates, uploads and downloads (``gpu/driver.py``).

float64 tensors stay on the CPU: WGSL has no 64-bit floats (``kernels.py``).
"""
import array
import itertools

from ..capabilities import CapabilityError
from ..dtypes import bool_, float64, int64
from .kernels import WGSL
from .runtime import runtime

_HOST_CODE = {"bool": "I", "int32": "i", "int64": "q", "float32": "f"}  # the device's layout
_RT = []  # the runtime, for Storage.__del__
_OWNED = {}  # key -> the GPU buffer of a live Storage
_KEYS = itertools.count()


class Storage:
    """One GPU buffer, shared by every view of it; back to the pool when the last view dies.
    ``version`` counts in-place writes, as on the host.

    The storage holds the buffer's key in a table, not the buffer: a tensor can die in a
    reference cycle (autograd makes them), and the collector finalises every object of a
    cycle in any order, so a buffer held here could be released by wgpu before this
    storage hands it back to the pool."""
    __slots__ = ("key", "version", "__weakref__")

    def __init__(self, gbuf):
        if not _RT:
            _RT.append(runtime())
        self.key = next(_KEYS)
        _OWNED[self.key] = gbuf
        self.version = 0

    @property
    def gbuf(self):
        """The GPU buffer."""
        return _OWNED[self.key]

    def __del__(self):
        _RT[0].release(_OWNED.pop(self.key))

    def __deepcopy__(self, memo):
        """A storage of its own holding the same bytes (``copy.deepcopy`` of a tensor): the
        default copy would share the key, so two storages would alias one GPU buffer and
        both hand it back to the pool."""
        src, rt = self.gbuf, runtime()
        twin = memo[id(self)] = Storage(rt.alloc(src.size))
        rt.copy(src, 0, twin.gbuf, 0, src.size)
        return twin


def _padded(data):
    raw = memoryview(data).cast("B")
    return raw if len(raw) % 4 == 0 else bytes(raw) + bytes(4 - len(raw) % 4)


class Memory:
    """The WebGPU driver's memory hooks (see ``gpu.driver.Driver``)."""

    def check_dtype(self, dtype, op):
        """Refuse a dtype the device cannot hold, naming it and why."""
        if dtype is float64:
            raise CapabilityError(f"{op}: float64 tensors cannot live on the webgpu device: WGSL has "
                                  f"no 64-bit floats (use float32, or keep this tensor on the CPU)")
        if dtype is int64 and not runtime().int64:
            raise CapabilityError(f"{op}: int64 tensors need the shader-int64 feature, which "
                                  f"{runtime().name} lacks")
        if dtype.name in ("float16", "bfloat16", "uint8", "int8", "int16"):
            raise CapabilityError(f"{op}: {dtype.name} tensors cannot live on the webgpu device: its "
                                  f"kernels address 32-bit words; keep this tensor on the CPU, or use "
                                  f"float32 (the webgpu device lacks {dtype.name}: its LACKS names it)")
        if dtype.name not in WGSL:
            raise CapabilityError(f"{op}: {dtype.name} tensors are not supported on the webgpu device")

    def itemsize(self, dtype):
        """Bytes per element on the device (a bool is a 32-bit word)."""
        return WGSL[dtype.name][1]

    def allocate(self, n, dtype):
        """A storage for ``n`` elements, from the caching allocator."""
        return Storage(runtime().alloc(n * WGSL[dtype.name][1]))

    def upload(self, raw, dtype):
        """A storage holding ``raw`` (a bool byte widens to the device's word)."""
        n = len(raw) // dtype.itemsize
        storage = self.allocate(n, dtype)
        if n:
            data = array.array(_HOST_CODE["bool"], list(raw)) if dtype is bool_ else raw
            runtime().queue.write_buffer(storage.gbuf, 0, _padded(data))
        return storage

    def download(self, x):
        """The elements of the contiguous view x, as an array in the device's layout."""
        size = WGSL[x.dtype.name][1]
        out = array.array(_HOST_CODE[x.dtype.name])
        out.frombytes(runtime().download(x.storage.gbuf, x.offset * size, x.numel * size))
        return out

    def data_ptr(self, x):
        """An identity, not an address: WebGPU gives no host pointer."""
        return id(x.storage) + x.offset * WGSL[x.dtype.name][1]
