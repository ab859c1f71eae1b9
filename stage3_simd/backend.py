"""Stage 3's backend: stage 2's routing, with the hot primitives sent to the SIMD kernels.

The primitive set is stage 0's (see ``stage0_python/backend.py``), on stage 2's storage.
What stage 3 rewrites, for float32 and float64 (integers and bool keep stage 2's typed
loops, which the compiler already vectorises at the baseline):

- ``unary``, ``binary`` (with broadcasting) and ``where``: xsimd kernels, one per ISA;
- ``reduce`` (sum, prod, max, min) and ``arg_reduce``: registers across rows or down
  columns, pairwise float32 sums;
- ``matmul``: OpenBLAS or our own GEMM (``GEMMS``; ``sg.backends.gemm`` chooses), batched
  on one thread with each product threaded; convolution and pooling reach them through
  ``unfold`` and the reductions.

Stage 2's ``backend.py`` is run here as this module's first part, so its relative
imports reach this stage's dtypes; the definitions below replace what stage 3 rewrites.
"""
import importlib.util as _util
import os as _os
import time as _time

_STAGE3_DOC = __doc__
with open(_util.find_spec("stage2_cython.backend").origin, encoding="utf-8") as _f:
    exec(compile(_f.read(), _f.name, "exec"))  # noqa: S102
del _f
__doc__ = _STAGE3_DOC  # the source run above set stage 2's

from stage3_simd import _kernels as K  # noqa: E402

_s2_unary, _s2_binary, _s2_where = unary, binary, where  # noqa: F821  (stage 2's, from the run above)
_s2_reduce, _s2_arg_reduce, _s2_matmul = reduce, arg_reduce, matmul  # noqa: F821

_FLOATS = (3, 4)  # the Buffer codes of float32 and float64
GEMMS = ("blas", "own")
_gemm = [_os.environ.get("STAGEGRAD_GEMM") or None]
if _gemm[0] is not None and _gemm[0] not in GEMMS:
    raise ImportError(f"stage3_simd: STAGEGRAD_GEMM={_gemm[0]!r}; expected one of {', '.join(GEMMS)}")

set_num_threads = K.set_num_threads
get_num_threads = K.get_num_threads


# ---------------------------------------------------------------- which GEMM

def _calibrate():
    """The faster GEMM on this machine: both timed on a 256 x 256 float32 product."""
    a = full((256, 256), 1.0, dtypes.float32)  # noqa: F821
    best = {}
    for name in GEMMS:
        K.matmul(a, a, name)
        t0 = _time.perf_counter()
        for _ in range(3):
            K.matmul(a, a, name)
        best[name] = _time.perf_counter() - t0
    return min(GEMMS, key=best.get)


def get_gemm():
    """The GEMM in use: ``STAGEGRAD_GEMM``, or the faster on this machine, or the last
    ``set_gemm``."""
    if _gemm[0] is None:
        _gemm[0] = _calibrate()
    return _gemm[0]


def set_gemm(name):
    if name not in GEMMS:
        raise ValueError(f"set_gemm: expected one of {', '.join(GEMMS)}, got {name!r}")
    _gemm[0] = name


# ---------------------------------------------------------------- elementwise

def unary(op, x, dtype=None):
    if x.code not in _FLOATS or op not in K.UNARY_OPS:
        return _s2_unary(op, x, dtype)
    out = K.unary(op, x)
    return out if dtype is None or dtype is out.dtype else cast(out, dtype)  # noqa: F821


def binary(op, a, b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype``
    (comparisons return bool)."""
    if not dtype.is_floating_point or op not in K.BINARY_OPS:
        return _s2_binary(op, a, b, dtype)
    if a.dtype is not dtype:
        a = cast(a, dtype)  # noqa: F821
    if b.dtype is not dtype:
        b = cast(b, dtype)  # noqa: F821
    shape = broadcast_shapes(a.shape, b.shape)  # noqa: F821
    if shape is None:
        raise ValueError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast")
    return K.binary(op, a, b, shape, bool_)  # noqa: F821


def where(cond, a, b):
    """``a`` where ``cond`` (bool) holds, else ``b`` (``a``'s dtype), all broadcast."""
    if a.code not in _FLOATS or b.code != a.code or cond.dtype is not bool_:  # noqa: F821
        return _s2_where(cond, a, b)
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)  # noqa: F821
    if shape is None:
        raise ValueError(f"where: shapes {list(cond.shape)}, {list(a.shape)} and {list(b.shape)} "
                         f"cannot be broadcast")
    return K.where(cond, a, b, shape)


# ---------------------------------------------------------------- reductions

def reduce(op, x, axes, keepdim, dtype=None):
    """Reduce over ``axes`` (non-negative ints); an empty group gives 0 for sum, 1 for
    prod (max/min of one are rejected by the frontend)."""
    out = dtype or (bool_ if op in ("any", "all") else x.dtype)  # noqa: F821
    if x.code not in _FLOATS or op not in K.REDUCE_OPS or not out.is_floating_point:
        return _s2_reduce(op, x, axes, keepdim, dtype)
    acc, shape = K.reduce(op, x, axes, keepdim)
    if acc.dtype is not out:
        acc = cast(acc, out)  # noqa: F821
    return reshape(acc, shape)  # noqa: F821


def arg_reduce(op, x, axis, keepdim):
    if x.code not in _FLOATS:
        return _s2_arg_reduce(op, x, axis, keepdim)
    return K.arg_reduce(op, x, axis, keepdim, int64)  # noqa: F821


# ---------------------------------------------------------------- matmul

def matmul(a, b):
    """``a`` (..., n, k) @ ``b`` (..., k, m); the batch dims of both are equal."""
    if a.code not in _FLOATS or b.code != a.code:
        return _s2_matmul(a, b)
    return K.matmul(a, b, get_gemm())
