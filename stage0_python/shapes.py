"""Shape validation: the one place that decides whether a shape can exist.

Every path that makes a shape (creation, views, broadcasts, matmul, padding,
convolution and pooling, on every stage) asks ``check`` before any memory is touched:

- every size is an integer and not negative;
- the element count (and so every stride) fits in int64, PyTorch's limit. Counted in a
  machine word instead, ``2**32 * 2**32`` wraps to 0 and a tiny block would back an
  enormous shape;
- when the caller will allocate (it passes the dtype), the bytes must fit in this
  machine's memory. Refusing at once, with the operation named, beats a kernel that
  runs for minutes (or a pure-Python stage that fills memory) before the allocator
  gives up.

Errors: ``ShapeError`` (a ``ValueError``) for a shape that cannot exist or shapes that do
not fit together, ``MemoryError`` for one that could exist but not here; both name the
operation, the shape and the dtype.
"""
import operator
import os

from stage0_python.layout import broadcast_shapes
from stage0_python.layout import prod as numel  # the exact element count (Python integers never wrap)

MAX_NUMEL = 2**63 - 1
_memory = []


class ShapeError(ValueError, RuntimeError):
    """Shapes that cannot exist or do not fit the operation. A ``ValueError``, the
    project's error for shapes, and a ``RuntimeError``, PyTorch's for the same mistakes,
    so that ``except RuntimeError`` written for PyTorch catches it too."""


def out_of_range(index, low, high):
    """The first value (in row-major order) of the integer tensor ``index`` outside
    ``[low, high)``, or None. The frontend's checks of index values ask through here, so
    that the ONNX exporter, whose graph cannot branch on values, can run them on its
    example without taking them for the model's own reads."""
    if not index.numel():
        return None
    if low <= index.min().item() and index.max().item() < high:
        return None
    return next(v for v in index.reshape(-1).tolist() if not low <= v < high)


def checked_on_device(index):
    """Whether the kernels that read the integer tensor ``index`` check its values on its
    device (a driver's ``checks_indices``: the cuda device's, which raise at the next
    synchronization), so that a frontend check before them, reading the values back, would
    only make the host wait."""
    return getattr(getattr(index._data, "driver", None), "checks_indices", False)


class IndexRangeError(IndexError, RuntimeError):
    """An index outside the dim it selects along (gather, scatter, index_* ops). An
    ``IndexError``, the project's error for indices, and a ``RuntimeError``, PyTorch's for
    the same mistake there."""


def memory_bytes():
    """Physical memory of this machine in bytes (the address space where unknown)."""
    if not _memory:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = 0
        _memory.append(total if total > 0 else 2**48)
    return _memory[0]


def _human(n):
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        n /= 1024
        if n < 1024 or unit == "EiB":
            return f"{n:.1f} {unit}"


def check(shape, op, dtype=None):
    """``shape`` as a tuple of ints, or a clear error naming ``op``. With ``dtype``, the
    caller is about to allocate: the bytes must fit in memory as well."""
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{op}: sizes must be integers, got {list(shape)}") from None
    for s in shape:
        if s < 0:
            raise ShapeError(f"{op}: negative dimension {s} in shape {list(shape)}")
    n = numel(shape)
    what = f" of dtype {dtype.name}" if dtype is not None else ""
    # the sizes other than 0 multiply into the strides, which must fit as well
    if numel(max(s, 1) for s in shape) > MAX_NUMEL:
        raise ShapeError(f"{op}: shape {list(shape)}{what} has more elements than an int64 can "
                         f"count (2**63 - 1)")
    if dtype is not None:
        nbytes = n * dtype.itemsize
        if nbytes > memory_bytes():
            raise MemoryError(f"{op}: a tensor of shape {list(shape)}{what} needs {_human(nbytes)}, "
                              f"more than this machine's memory ({_human(memory_bytes())})")
    return shape


def broadcast(op, *shapes, dtype=None):
    """The shape NumPy's rule gives ``shapes`` (dims align from the right; each is 1 or
    the common size), checked as ``check`` does; a ShapeError naming ``op`` when they
    do not broadcast."""
    out = broadcast_shapes(*shapes)
    if out is None:
        dim, size, other = _clash(shapes)
        listed = " and ".join(str(list(s)) for s in shapes)
        what = f", dtype {dtype.name}" if dtype is not None else ""
        raise ShapeError(f"{op}: shapes {listed} cannot be broadcast together (size {other} "
                         f"against {size} at dim {dim} of the result{what})")
    return check(out, op, dtype)


def _clash(shapes):
    """Where ``shapes`` first fail to broadcast: the dim of the result, the size the shapes
    before give it, and the first other size (1s aside) that meets it."""
    ndim = max(len(s) for s in shapes)
    for dim in range(ndim):
        sizes = [s[dim - ndim] for s in shapes if dim - ndim >= -len(s) and s[dim - ndim] != 1]
        other = next((n for n in sizes if n != sizes[0]), None)
        if other is not None:
            return dim, sizes[0], other
