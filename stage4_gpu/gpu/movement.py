"""Movement on a device: every view (reshape where the strides allow, permute, expand,
slice, diagonal, windows) is new metadata over the same storage (``../strided.py``);
copies (``contiguous``, ``copy``, ``cat``, the in-place writes) run the driver's strided
copy, its elementwise kernel with no operation."""
from stage0_python.layout import refuse_overlapping_write

from ..strided import slice
from .elementwise import convert, copy_into, run


def copy(x):
    """A contiguous copy of x, in a storage of its own."""
    return convert(x, x.dtype)


def contiguous(x):
    """x itself where it is contiguous, else a contiguous copy."""
    return x if x.is_contiguous() else copy(x)


def data_ptr(x):
    """The number ``data_ptr()`` reports: the driver's (an address where it has one)."""
    return x.driver.data_ptr(x)


def cat(xs, axis):
    """``xs`` joined along ``axis``: each copied into its slice of one new buffer."""
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = type(xs[0]).empty(tuple(shape), xs[0].dtype)
    start = 0
    for x in xs:
        n = x.shape[axis]
        if n and x.numel:
            starts = [0] * len(shape)
            starts[axis] = start
            counts = list(shape)
            counts[axis] = n
            run(None, slice(out, starts, [1] * len(shape), counts), [x])
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
