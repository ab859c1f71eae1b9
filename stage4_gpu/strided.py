"""What the two devices' buffers share: a strided view (shape, strides and offset in
elements) of a storage that lives on the device, and the movement primitives that only
make new views (laid out by stage 0's ``view_layout`` exactly as on the host). Each
device's ``buffer.py`` names the driver its buffers reach their memory and kernels
through (``gpu/driver.py``); reading values back is the one place the host waits for the
device."""
from stage0_python import layout
from stage0_python.layout import VersionOnStorage, nested, prod, row_major, view_layout

from ._strided import StridedCore, contiguous_strides


class StridedBuffer(StridedCore, VersionOnStorage):
    """A strided view of a device storage; a device's Buffer sets ``driver`` (its
    ``gpu.driver.Driver``), which also names the device. Its storage, shape, strides,
    offset, dtype and numel are C fields (``_strided.pyx``), as a host buffer's, which
    stage 4's compiled frontend reads; its ``version`` is the storage's."""
    __slots__ = ()
    driver = None

    def __reduce__(self):
        # the view's fields, as copy and pickle took them from __slots__ before the C base
        return type(self), (self.storage, self.shape, self.strides, self.offset, self.dtype)

    @property
    def device(self):
        """The device the storage lives on."""
        return self.driver.device

    @property
    def nbytes(self):
        return self.numel * self.dtype.itemsize

    @property
    def itemsize(self):
        """Bytes per element on the device."""
        return self.driver.itemsize(self.dtype)

    # ---------------------------------------------------------------- new buffers

    @classmethod
    def empty(cls, shape, dtype):
        """A new contiguous buffer on this device (contents undefined)."""
        return cls(cls.driver.allocate(prod(shape), dtype), tuple(shape), contiguous_strides(shape), 0, dtype)

    @classmethod
    def full(cls, shape, value, dtype):
        """A new contiguous buffer with every element ``value``."""
        out = cls.empty(shape, dtype)
        cls.driver.fill(out, value)
        return out

    @classmethod
    def upload(cls, host_buf, non_blocking=False):
        """A host buffer's contents on this device (a new buffer), in row-major order; with
        ``non_blocking``, a copy the host need not wait for where the driver can (see
        ``Driver.upload_buffer``)."""
        cls.driver.check_dtype(host_buf.dtype, f"to(device='{cls.driver.name}')")
        storage = cls.driver.upload_buffer(host_buf, non_blocking)
        return cls(storage, tuple(host_buf.shape), contiguous_strides(host_buf.shape), 0, host_buf.dtype)

    def is_contiguous(self):
        return row_major(self.shape, self.strides)

    # ---------------------------------------------------------------- reading back

    def _downloaded(self):
        from .gpu.movement import contiguous  # the movement kernels build on this module
        return self.driver.download(contiguous(self))

    def values(self):
        """The elements as Python numbers, row-major (a download)."""
        vals = self._downloaded()
        if self.dtype.name == "bfloat16":  # held as its bits (NumPy has no bfloat16): widen them
            vals = (vals.astype("uint32") << 16).view("float32")
        vals = vals.tolist()
        return [bool(v) for v in vals] if self.dtype.name == "bool" else vals

    def host_bytes(self):
        """The elements, row-major, as bytes in the host's layout (a download); a bool is
        one byte there, whatever its width on the device."""
        host = self._downloaded()
        return bytes(host.tolist()) if self.dtype.name == "bool" else host.tobytes()

    def item(self):
        return self.values()[0]

    def tolist(self):
        return nested(self.values(), self.shape)

    def __repr__(self):
        return f"{self.device.type}.Buffer(shape={self.shape}, dtype={self.dtype.name})"


# ---------------------------------------------------------------- views (no kernel runs)

def _view(x, op, *args):
    layout = view_layout((x.shape, x.strides, x.offset), op, args)
    if layout is None:  # a reshape the strides do not allow: copy, as PyTorch does
        from .gpu.movement import copy  # the movement kernels build on this module
        return _view(copy(x), op, *args)
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


strides, storage_offset, storage_id = layout.strides, layout.storage_offset, layout.storage_id  # read off the view


def shares_storage(a, b):
    return getattr(b, "storage", None) is a.storage
