"""Tensors' memory on the CUDA device: a ``Storage`` owns one CuPy array (memory from
CuPy's caching pool, back to it when the array dies), shared by every view of it;
``Memory`` is the driver's part that allocates, uploads and downloads
(``gpu/driver.py``).

Element types: bool (one byte, as on the host), int32, int64, float16, bfloat16, float32
and float64, each the C type ``kernels.CTYPE`` names: unlike WGSL, CUDA has 64-bit floats,
so float64 tensors live on this device, and the 2-byte floats are stored as their bits.
NumPy is the transfer format, never the engine.
"""
from ..capabilities import CapabilityError
from .kernels import CTYPE
from .runtime import runtime


class Storage:
    """One CuPy array, shared by every view of it, and ``ptr``, the device address of its
    first element (what a launch passes). ``version`` counts in-place writes, as on the
    host."""
    __slots__ = ("array", "ptr", "version", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.ptr = array.data.ptr
        self.version = 0


_NUMPY = {}  # dtype -> its NumPy dtype (see _numpy)


def _numpy(dtype):
    """The NumPy dtype of ``dtype``'s elements (CuPy arrays are typed by it): a bfloat16
    array holds its bits as uint16, NumPy having no bfloat16."""
    found = _NUMPY.get(dtype)
    if found is None:
        found = _NUMPY[dtype] = runtime().np.dtype("uint16" if dtype.name == "bfloat16" else dtype.name)
    return found


def bfloat16_bits(np, values):
    """float32 ``values`` narrowed to bfloat16 bits, as common.cuh's float_to_bf16_bits
    does on the device (to nearest even, a NaN kept quiet)."""
    u = np.asarray(values, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, ((u >> 16) | 0x40).astype(np.uint16), rounded)


class Memory:
    """The CUDA driver's memory hooks (see ``gpu.driver.Driver``)."""

    def check_dtype(self, dtype, op):
        """Refuse a dtype the device cannot hold, naming it."""
        if dtype.name not in CTYPE:
            raise CapabilityError(f"{op}: {dtype.name} tensors are not supported on the cuda device (the "
                                  f"cuda device lacks {dtype.name}: its LACKS names it)")

    def itemsize(self, dtype):
        """Bytes per element: the host's."""
        return dtype.itemsize

    def allocate(self, n, dtype):
        """A storage for ``n`` elements, from CuPy's pool."""
        return Storage(runtime().alloc(n, _numpy(dtype)))

    def upload(self, raw, dtype):
        """A storage holding ``raw``, copied on the runtime's stream."""
        rt = runtime()
        return Storage(rt.upload(rt.np.frombuffer(raw, dtype=_numpy(dtype)), _numpy(dtype)))

    def download(self, x):
        """The elements of the contiguous view x, as a NumPy array."""
        return runtime().download(x.storage.array, x.offset, x.numel)

    def data_ptr(self, x):
        """The element's device address (CuPy's pointer into the pool), as PyTorch's data_ptr."""
        return x.address
