"""Movement on the CUDA device: every view (reshape where the strides allow, permute,
expand, slice, diagonal, windows) is new metadata over the same Storage, the same on
every device (``../strided.py``); copies (``contiguous``, ``copy``, ``cat``, the
in-place writes) run the strided copy (``unary`` with ``Identity``, ``kernels/elementwise.cu``)."""
from stage0_python.backend import refuse_overlapping_write

from ..strided import (  # noqa: F401  (the views: the same on every device)
    alias, diagonal, expand, is_contiguous, permute, reshape, shares_storage, slice, storage_id,
    storage_offset, strides, windows)
from .buffer import empty
from .elementwise import copy_into, unary_into


def copy(x):
    return unary_into("Identity", empty(x.shape, x.dtype), x)


def contiguous(x):
    return x if x.is_contiguous() else copy(x)


def data_ptr(x):
    """The element's device address (CuPy's pointer into the pool), as PyTorch's data_ptr."""
    return x.array.data.ptr + x.offset * x.itemsize


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
            unary_into("Identity", slice(out, starts, [1] * len(shape), counts), x)
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
