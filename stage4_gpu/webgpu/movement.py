"""Movement on the WebGPU device: every view (reshape where the strides allow, permute,
expand, slice, diagonal, windows) is new metadata over the same Storage, laid out by stage
0's ``view_layout`` exactly as on the host; copies (``contiguous``, ``copy``, ``cat``, the
in-place writes) run the strided copy kernel."""
from stage0_python.backend import refuse_overlapping_write, view_layout

from .buffer import Buffer, empty
from .elementwise import copy_into, run


def _view(x, op, *args):
    layout = view_layout((x.shape, x.strides, x.offset), op, args)
    if layout is None:  # a reshape the strides do not allow: copy, as PyTorch does
        return _view(contiguous(x), op, *args)
    shape, strides, offset = layout
    return Buffer(x.storage, tuple(shape), tuple(strides), offset, x.dtype)


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
    return Buffer(x.storage, x.shape, x.strides, x.offset, x.dtype)


def copy(x):
    return run("v1", empty(x.shape, x.dtype), [x])


def contiguous(x):
    return x if x.is_contiguous() else copy(x)


def is_contiguous(x):
    return x.is_contiguous()


def strides(x):
    return x.strides


def storage_offset(x):
    return x.offset


def storage_id(x):
    return id(x.storage)


def data_ptr(x):
    return id(x.storage) + x.offset * x.itemsize  # an identity, not an address: no host pointer


def shares_storage(a, b):
    return getattr(b, "storage", None) is a.storage


def cat(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = empty(tuple(shape), xs[0].dtype)
    start = 0
    for x in xs:
        n = x.shape[axis]
        if n and x.numel:
            starts = [0] * len(shape)
            starts[axis] = start
            counts = list(shape)
            counts[axis] = n
            run("v1", slice(out, starts, [1] * len(shape), counts), [x])
        start += n
    return out


def assign(dst, starts, steps, counts, src):
    """Write ``src`` (broadcast to ``counts``) into the basic-slice region of ``dst``;
    RuntimeError where two elements of the region share memory (as on the CPU)."""
    region = slice(dst, starts, steps, counts)
    refuse_overlapping_write(region)
    copy_into(region, src)


def set_data(dst, src):
    """Replace the contents of ``dst`` with ``src`` (same shape and dtype)."""
    copy_into(dst, src)
