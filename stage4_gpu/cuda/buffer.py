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
from ..dtypes import bool_
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


class Buffer:
    """A strided view of a Storage on the cuda device (see the module's docstring)."""
    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "numel", "__weakref__")
    device = DEVICE

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage = storage
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        n = 1
        for s in shape:
            n *= s
        self.numel = n

    @property
    def version(self):
        return self.storage.version

    @version.setter
    def version(self, value):
        self.storage.version = value

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.numel * self.dtype.itemsize

    @property
    def ctype(self):
        """The C type of the elements, as the kernels' name expressions write it."""
        return CTYPE[self.dtype.name]

    @property
    def array(self):
        """The storage's CuPy array (kernels take it with the view's offset in ``p``)."""
        return self.storage.array

    def is_contiguous(self):
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    # reading a value back is where the host waits for the device
    def values(self):
        """The elements as Python numbers, row-major (a download)."""
        vals = to_numpy(self).tolist()
        return [bool(v) for v in vals] if self.dtype is bool_ else vals

    def item(self):
        return self.values()[0]

    def tolist(self):
        vals = self.values()
        if not self.shape:
            return vals[0]

        def build(off, dims):
            if len(dims) == 1:
                return vals[off:off + dims[0]]
            step = 1
            for d in dims[1:]:
                step *= d
            return [build(off + i * step, dims[1:]) for i in range(dims[0])]
        return build(0, list(self.shape))

    def __repr__(self):
        return f"cuda.Buffer(shape={self.shape}, dtype={self.dtype.name})"


def contiguous_strides(shape):
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


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
