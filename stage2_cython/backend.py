"""Stage 2's backend: storage and kernels compiled from Cython.

The primitive set is stage 0's, under the same names and signatures (see
``stage0_python/backend.py``); the semantics of views, aliasing and in-place writes are
stage 1's. What changes is where the work happens:

- ``Buffer`` (``_buffer.pyx``) is a Cython type: shape, strides and offset over a
  ``Storage`` (``_storage.pyx``), 64-byte-aligned memory from a pool of size classes,
  with the version counter. Both export the buffer protocol: ``np.asarray(buf)`` and
  ``memoryview(buf)`` see the elements in place.
- ``to_dlpack``/``from_dlpack`` (``_dlpack.pyx``) share a storage with NumPy, PyTorch or
  any DLPack library without a copy, both ways; an imported one wraps foreign memory
  that the pool never takes.
- every primitive is a typed C loop over strides (``_elementwise``, ``_convert``,
  ``_reduce``, ``_matmul``, ``_conv``, ``_index``, ``_random``, ``_sort``) that runs without the GIL
  and touches no Python object per element.

This module only routes: it picks result dtypes and converts arguments, then calls the
compiled kernel. The compiled modules never import the frontend (a compiled module is
shared by every stage that reaches it); they receive the frontend's dtype objects and
carry them along.
"""
import math

from stage0_python import backend as _s0
from stage0_python import dtypes as _s0_dtypes
from stage0_python.backend import (  # noqa: F401  (re-exported: the frontend uses some)
    BOOL_RESULT, _to_int, _wrap_int, diagonal_layout, refuse_overlapping_write, windows_layout)
from stage2_cython import (_buffer, _conv, _convert, _dlpack, _elementwise, _index, _matmul, _random,
                           _reduce, _sort)
from stage2_cython._buffer import (  # noqa: F401  (primitives that are the compiled functions)
    Buffer, alias, broadcast_shapes, contiguous, contiguous_strides, copy, data_ptr, is_contiguous,
    permute, prod, reshape, shares_storage, slice, storage_id, storage_offset, strides)

from . import dtypes
from .capabilities import lacking
from .dtypes import bool_, int64

FUSED = frozenset()
VIEWS = True  # movement results alias their input

# stage 0's packing helper compares dtypes by identity: hand it stage 0's objects
_TO_S0 = {d.name: _s0_dtypes.BY_NAME[d.name] for d in dtypes.ALL}
# on bool operands arithmetic is logic, as in stage 0
_BOOL_OPS = {"add": "logical_or", "mul": "logical_and", "maximum": "logical_or",
             "minimum": "logical_and"}


# ---------------------------------------------------------------- creation

def from_list(values, shape, dtype):
    return _convert.from_array(_s0._pack(values, _TO_S0[dtype.name]), tuple(shape), dtype)


def full(shape, value, dtype):
    if dtype is bool_:
        value = bool(value)
    elif dtype.is_floating_point:
        value = float(value)
    else:
        value = _wrap_int(_to_int(value), dtype)
    return _convert.full(tuple(shape), value, dtype)


def arange(start, stop, step, dtype):
    n = max(0, math.ceil((stop - start) / step))
    return _convert.arange(start, step, n, dtype)


def uniform(shape, low, high, dtype, generator):
    return _random.uniform(tuple(shape), low, high, dtype, generator)


def normal(shape, mean, std, dtype, generator):
    return _random.normal(tuple(shape), mean, std, dtype, generator)


def randint(shape, low, high, dtype, generator):
    if -2**63 <= low < high <= 2**63:
        return _random.randint(tuple(shape), low, high, dtype, generator)
    # beyond int64 the draws are still stage 0's; only the kernel's arithmetic is 64-bit
    return from_list(generator.randint(low, high, prod(shape)), shape, dtype)


def cast(x, dtype):
    return alias(x) if dtype is x.dtype else _convert.cast(x, dtype)


# ---------------------------------------------------------------- elementwise

def unary(op, x, dtype=None):
    out = _elementwise.unary(op, x, bool_ if op in BOOL_RESULT else x.dtype)
    return out if dtype is None or dtype is out.dtype else cast(out, dtype)


def binary(op, a, b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype``
    (comparisons return bool)."""
    if dtype is bool_ and op in _BOOL_OPS:
        op = _BOOL_OPS[op]
    if a.dtype is not dtype:
        a = cast(a, dtype)
    if b.dtype is not dtype:
        b = cast(b, dtype)
    return _elementwise.binary(op, a, b, bool_ if op in BOOL_RESULT else dtype)


where = _elementwise.where


# ---------------------------------------------------------------- reductions

def reduce(op, x, axes, keepdim, dtype=None):
    """Reduce over ``axes`` (non-negative ints); an empty group gives 0 for sum, 1 for
    prod (max/min of one are rejected by the frontend)."""
    out = dtype or (bool_ if op in ("any", "all") else x.dtype)
    return _reduce.reduce(op, x, axes, keepdim, out)


def arg_reduce(op, x, axis, keepdim):
    return _reduce.arg_reduce(op, x, axis, keepdim, int64)


# ---------------------------------------------------------------- sort and scan along an axis

def sort(x, axis, descending):
    """(values, int64 indices) along ``axis``: a stable merge sort, NaN largest."""
    return _sort.sort(x, axis, descending, int64)


def scan(op, x, axis):
    """Running sum, prod, max, min or logsumexp along ``axis``: (values, indices of the
    running extreme for max/min, else None)."""
    return _sort.scan(op, x, axis, int64)


# ---------------------------------------------------------------- movement: views and copies

def expand(x, shape):
    """Broadcast to ``shape``: expanded dims get stride 0 (PyTorch's strides)."""
    return _buffer.expand(x, tuple(shape))


def diagonal(x, offset, dim1, dim2):
    return _buffer.view(x, *diagonal_layout(x.shape, x.strides, x.offset, offset, dim1, dim2))


def windows(x, dim, size, step):
    shape, strides_ = windows_layout(x.shape, x.strides, dim, size, step)
    return _buffer.view(x, shape, strides_, x.offset)


def cat(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = _buffer.empty(shape, xs[0].dtype)
    ndim = len(shape)
    start = 0
    for x in xs:
        n = x.shape[axis]
        if n and x.numel:
            starts = [start if d == axis else 0 for d in range(ndim)]
            counts = [n if d == axis else shape[d] for d in range(ndim)]
            _buffer.write(slice(out, starts, [1] * ndim, counts), x)
        start += n
    return out


# ---------------------------------------------------------------- indexing, matmul, convolution

take = _index.take
gather = _index.gather
matmul = _matmul.matmul
unfold = _conv.unfold
fold = _conv.fold


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    return _index.scatter_add(tuple(shape), axis, index, src)


# ---------------------------------------------------------------- in-place

def _source(src, dst_dtype):
    src = cast(src, dst_dtype)
    return reshape(src, ()) if src.numel == 1 and src.ndim else src


def _write(dst, src):
    """Store ``src`` (broadcast to ``dst``'s shape) into ``dst``'s elements, in row-major
    order: where elements share memory the last write wins, as in stage 1 (callers refuse
    writes where that matters)."""
    if src.storage is dst.storage:  # overlapping source: read it all before writing
        src = copy(src)
    if dst.numel:
        _buffer.write(dst, src)


def assign(dst, starts, steps, counts, src):
    """Write ``src`` (broadcast to ``counts``) into the basic-slice region of ``dst``."""
    region = slice(dst, starts, steps, counts)
    refuse_overlapping_write(region)
    _write(region, _source(src, dst.dtype))
    dst.version += 1


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``, ``flat`` being dst's row-major order whatever its
    strides; ``accumulate`` as stage 0's (True or "sum", "prod", "amax", "amin"); ``src`` is
    broadcast to ``index``'s shape."""
    _index.put(dst, index, _source(src, dst.dtype), accumulate)
    dst.version += 1


def set_data(dst, src):
    """Write the contents of ``src`` (same shape and dtype) into ``dst``'s elements."""
    _write(dst, src)
    dst.version += 1


# ---------------------------------------------------------------- DLPack (_dlpack.pyx)

def to_dlpack(x, versioned=False):
    """A DLPack capsule over ``x``'s elements in place (its strides, its offset): DLPack
    1.0's ``"dltensor_versioned"`` when ``versioned``, else the legacy ``"dltensor"``;
    ``x``'s storage lives until the consumer is done with it."""
    return _dlpack.to_capsule(x, versioned)


def from_dlpack(obj):
    """A buffer over the memory of ``obj`` (an object with ``__dlpack__``, or a
    ``"dltensor"`` capsule), without a copy: the producer frees it when our storage dies."""
    capsule = obj
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__()  # no max_version: the legacy capsule, which we read
        except BufferError as e:
            # NumPy refuses a read-only array here: the legacy capsule cannot mark it so
            raise BufferError(f"from_dlpack: {type(obj).__name__} would not share its memory ({e}); "
                              f"stagegrad tensors are always writable, so a read-only array cannot "
                              f"be shared: pass a writable copy (NumPy: arr.copy())") from e
    name = _dlpack.capsule_dtype_name(capsule)
    if name in dtypes.LACKING:
        raise lacking(__name__, name, f"from_dlpack: cannot import a tensor of dtype {name}; this stage "
                      f"computes in {', '.join(d.name for d in dtypes.ALL)}")
    dtype = {d.name: d for d in dtypes.ALL}.get(name)
    if dtype is None:
        raise TypeError(f"from_dlpack: unsupported dtype {name}; stagegrad computes in "
                        f"{', '.join(d.name for d in dtypes.ALL)}")
    return _dlpack.from_capsule(capsule, dtype)
