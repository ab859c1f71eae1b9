"""Tensors' memory on the CUDA device: a ``Storage`` owns one CuPy array (memory from
CuPy's pool, back to it when the array dies); a ``Buffer`` is a strided view of it
(shape, strides and offset in elements), as the host's and the webgpu device's are, so
every view is free here too.

Element types: bool (one byte, as on the host), int32, int64, float32 and float64, each
the C type ``kernels.CTYPE`` names: unlike WGSL, CUDA has 64-bit floats, so float64
tensors live on this device.
"""
from ..capabilities import CapabilityError
from ..device import device as _device
from ..strided import StridedBuffer, contiguous_strides
from .kernels import CTYPE
from .runtime import runtime

DEVICE = _device("cuda", 0)
_NUMPY = {"bool": "bool", "int32": "int32", "int64": "int64", "float32": "float32",
          "float64": "float64"}


def check_dtype(dtype, op):
    """Refuse a dtype the device cannot hold, naming it."""
    if dtype.name not in CTYPE:
        raise CapabilityError(f"{op}: {dtype.name} tensors are not supported on the cuda device (the "
                              f"cuda device lacks {dtype.name}: its LACKS names it)")


def numpy_dtype(dtype):
    """The NumPy dtype of ``dtype``'s elements (CuPy arrays are typed by it)."""
    return runtime().np.dtype(_NUMPY[dtype.name])


class Storage:
    """One CuPy array, shared by every view of it. ``version`` counts in-place writes, as on
    the host."""
    __slots__ = ("array", "version", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.version = 0


class Buffer(StridedBuffer):
    """A strided view of a Storage on the cuda device (see the module's docstring)."""
    __slots__ = ()
    device = DEVICE

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def ctype(self):
        """The C type of the elements, as the kernels' name expressions write it."""
        return CTYPE[self.dtype.name]

    @property
    def array(self):
        """The storage's CuPy array (kernels take it with the view's offset in ``p``)."""
        return self.storage.array

    def _download(self):
        return to_numpy(self)

    def _copied(self):
        from .movement import copy  # the movement kernels build on this module
        return copy(self)


def empty(shape, dtype):
    """A new contiguous buffer (contents undefined)."""
    n = 1
    for s in shape:
        n *= s
    arr = runtime().alloc(n, numpy_dtype(dtype))
    return Buffer(Storage(arr), tuple(shape), contiguous_strides(shape), 0, dtype)


def from_bytes(raw, shape, dtype):
    """Upload ``raw`` (the elements' bytes in the host's layout, row-major) as a new buffer."""
    check_dtype(dtype, "to(device='cuda')")
    rt = runtime()
    host = rt.np.frombuffer(raw, dtype=numpy_dtype(dtype))
    arr = rt.upload(host, numpy_dtype(dtype))
    return Buffer(Storage(arr), tuple(shape), contiguous_strides(shape), 0, dtype)


def to_numpy(x):
    """The elements of ``x``, row-major, as a flat NumPy array (a download; NumPy is the
    transfer format here, never the engine)."""
    from .movement import contiguous  # the movement kernels build on this module
    c = x if x.is_contiguous() else contiguous(x)
    return runtime().download(c.storage.array, c.offset, c.numel)
