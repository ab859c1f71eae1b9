"""What the two devices' buffers share: a strided view (shape, strides and offset in
elements) of a storage that lives on the device, and the movement primitives that only
make new views (laid out by stage 0's ``view_layout`` exactly as on the host). Each
device's ``buffer.py`` adds its storage, ``_download`` (the one place the host waits for
the device) and ``_copied`` (a contiguous copy, by its own kernel)."""
from stage0_python.backend import view_layout


def contiguous_strides(shape):
    """Row-major strides of ``shape`` (a size-0 dim counts as 1, as in PyTorch)."""
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


class StridedBuffer:
    """A strided view of a device storage; a device's Buffer sets ``device`` and defines
    ``_download()`` (the elements row-major in a host array) and ``_copied()``."""
    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "numel", "__weakref__")

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
    def nbytes(self):
        return self.numel * self.dtype.itemsize

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
        vals = self._download().tolist()
        return [bool(v) for v in vals] if self.dtype.name == "bool" else vals

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
        return f"{self.device.type}.Buffer(shape={self.shape}, dtype={self.dtype.name})"


# ---------------------------------------------------------------- views (no kernel runs)

def _view(x, op, *args):
    layout = view_layout((x.shape, x.strides, x.offset), op, args)
    if layout is None:  # a reshape the strides do not allow: copy, as PyTorch does
        return _view(x._copied(), op, *args)
    shape, strides, offset = layout
    return type(x)(x.storage, tuple(shape), tuple(strides), offset, x.dtype)


def reshape(x, shape):
    return _view(x, "reshape", shape)


def permute(x, dims):
    return _view(x, "permute", dims)


def expand(x, shape):
    return _view(x, "expand", shape)


def slice(x, starts, steps, counts):  # noqa: A001  (the primitive's name at every stage)
    return _view(x, "slice", starts, steps, counts)


def diagonal(x, offset, dim1, dim2):
    return _view(x, "diagonal", offset, dim1, dim2)


def windows(x, dim, size, step):
    return _view(x, "windows", dim, size, step)


def alias(x):
    return type(x)(x.storage, x.shape, x.strides, x.offset, x.dtype)


def is_contiguous(x):
    return x.is_contiguous()


def strides(x):
    return x.strides


def storage_offset(x):
    return x.offset


def storage_id(x):
    return id(x.storage)


def shares_storage(a, b):
    return getattr(b, "storage", None) is a.storage
