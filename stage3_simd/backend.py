"""Stage 3's backend: stage 2's routing, with the hot primitives sent to the SIMD kernels.

The primitive set is stage 0's (see ``stage0_python/backend.py``), on stage 2's storage.
What stage 3 rewrites:

- ``unary``, ``binary`` (with broadcasting), ``where`` and ``cast``: xsimd kernels, one
  module per ISA, for float32 and float64 and for the integer arithmetic of int32 and
  int64; integer division, powers and bool logic keep stage 2's typed loops;
- ``reduce`` (sum, prod, max, min) and ``arg_reduce``: registers across rows or down
  columns, pairwise float32 sums;
- ``matmul``: OpenBLAS or our own GEMM (``GEMMS``; ``sg.backends.gemm`` chooses, and by
  default each product goes to the faster for its shape), batched on one thread with each
  product threaded; convolution and pooling reach them through
  ``unfold`` and the reductions.

Stage 2's ``backend.py`` is run here as this module's first part, so its relative
imports reach this stage's dtypes; the definitions below replace what stage 3 rewrites.
"""
import importlib.util as _util
import os as _os

_STAGE3_DOC = __doc__
with open(_util.find_spec("stage2_cython.backend").origin, encoding="utf-8") as _f:
    exec(compile(_f.read(), _f.name, "exec"))  # noqa: S102
del _f
__doc__ = _STAGE3_DOC  # the source run above set stage 2's

from stage3_simd import _kernels as K  # noqa: E402

_s2_unary, _s2_binary, _s2_where = unary, binary, where  # noqa: F821  (stage 2's, from the run above)
_s2_reduce, _s2_arg_reduce, _s2_matmul = reduce, arg_reduce, matmul  # noqa: F821

_FLOATS = (3, 4)  # the Buffer codes of float32 and float64
_INTS = (1, 2)  # int32 and int64
GEMMS = ("blas", "own")  # the two GEMMs; the default, "auto", sends each product to the faster
_gemm = [_os.environ.get("STAGEGRAD_GEMM") or "auto"]
if _gemm[0] not in GEMMS + ("auto",):
    raise ImportError(f"stage3_simd: STAGEGRAD_GEMM={_gemm[0]!r}; expected auto, blas or own")
# "auto" sends a product to our GEMM when every side is at least this: there its cache
# blocking pays off and it matches or beats OpenBLAS (the journey and `stagegrad
# gemm-ladder` measure both); below, packing costs more than it saves, and OpenBLAS's
# kernels for small and skinny shapes win. A fixed rule, not a timing at import: the
# results of a program must not depend on which GEMM a noisy measurement picked.
OWN_FROM = 512

set_num_threads = K.set_num_threads
get_num_threads = K.get_num_threads


# ---------------------------------------------------------------- which GEMM

def get_gemm():
    """``auto`` (the default: each product on the faster GEMM for its shape), ``blas`` or
    ``own``: ``STAGEGRAD_GEMM``, or the last ``set_gemm``."""
    return _gemm[0]


def set_gemm(name):
    if name not in GEMMS + ("auto",):
        raise ValueError(f"set_gemm: expected auto, blas or own, got {name!r}")
    _gemm[0] = name


def gemm_for(n, k, m):
    """The GEMM a product of (n x k) by (k x m) runs on."""
    if _gemm[0] != "auto":
        return _gemm[0]
    return "own" if min(n, k, m) >= OWN_FROM else "blas"


# ---------------------------------------------------------------- elementwise

def cast(x, dtype):
    return alias(x) if dtype is x.dtype else K.cast(x, dtype)  # noqa: F821


def unary(op, x, dtype=None):
    if not (x.code in _FLOATS and op in K.UNARY_OPS or x.code in _INTS and op in K.INT_UNARY):
        return _s2_unary(op, x, dtype)
    out = K.unary(op, x)
    return out if dtype is None or dtype is out.dtype else cast(out, dtype)  # noqa: F821


def binary(op, a, b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype``
    (comparisons return bool)."""
    compiled = K.BINARY_OPS if dtype.is_floating_point else K.INT_BINARY if dtype.category == 1 else ()
    if op not in compiled:
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
    return K.matmul(a, b, gemm_for(a.shape[-2], a.shape[-1], b.shape[-1]))
