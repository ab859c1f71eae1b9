"""``matmul`` on the CUDA device over a batch of products (batch dims already equal, as
the primitive's contract says).

The choice, made once here: float32 goes to our own SGEMM ladder's best tier
(``ENGINE = "warptile"``, ``kernels/sgemm_ladder.cu``; the register-blocked tier where
K or N is not a multiple of 4), after making the operands contiguous; every other dtype
(and strided float32 where a copy would not pay) to ``kernels/matmul.cu``'s tiled kernel.
cuBLAS is the peer we measure against, not the engine: ``STAGEGRAD_CUDA_MATMUL=cublas``
switches float32 to it (CuPy's matmul) for a comparison in a whole program. The default
stays ours until a measured run on hardware shows cuBLAS clearly ahead.
"""
import os

from .buffer import empty
from .elementwise import fill_contiguous
from .kernels import CTYPE
from .ladder import fits, sgemm
from .movement import contiguous
from .runtime import BLOCK, runtime

ENGINE = os.environ.get("STAGEGRAD_CUDA_MATMUL", "warptile")
FALLBACK = "blocktile_2d"  # any sizes: scalar, bounds-checked loads
_TILE = 16  # matmul.cu's MM_TILE


def _batched(x):
    """``x`` and the one stride that steps through its batch dims; a contiguous copy where
    the batch dims cannot be walked with one stride."""
    dims = [(n, s) for n, s in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    if all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(dims, dims[1:])):
        return x, dims[-1][1] if dims else 0
    x = contiguous(x)
    return x, x.shape[-2] * x.shape[-1]


def _dense(x):
    """x's elements as a contiguous CuPy array shaped like x (a view when x is contiguous)."""
    x = contiguous(x)
    return x.array[x.offset:x.offset + x.numel].reshape(x.shape)


def matmul(a, b):
    *batch, n, k = a.shape
    m = b.shape[-1]
    out = empty(tuple(batch) + (n, m), a.dtype)
    if out.numel == 0:
        return out
    if k == 0:  # every entry is an empty sum
        return fill_contiguous(out, 0)
    count = out.numel // (n * m)
    if a.ctype == "float":
        return _sgemm(a, b, out, count, n, k, m)
    a, sa = _batched(a)
    b, sb = _batched(b)
    params = [n, k, m, count, a.offset, sa, a.strides[-2], a.strides[-1],
              b.offset, sb, b.strides[-2], b.strides[-1]]
    rt = runtime()
    tiles = count * -(-n // _TILE) * -(-m // _TILE)
    rt.launch("matmul", f"matmul<{a.ctype}>", tiles, BLOCK,
              [rt.params(params), out.array, a.array, b.array])
    return out


def _sgemm(a, b, out, count, n, k, m):
    """float32: our ladder's tier (or cuBLAS, when chosen) on contiguous operands."""
    shape_a, shape_b = (count, n, k), (count, k, m)
    da, db = _dense(a).reshape(shape_a), _dense(b).reshape(shape_b)
    dc = out.array[:out.numel].reshape(count, n, m)
    if ENGINE == "cublas":
        from .ladder import cublas
        dc[...] = cublas(da, db)
        return out
    tier = ENGINE if fits(ENGINE, n, m, k, da, db, dc) else FALLBACK
    sgemm(tier, da, db, dc)
    return out


def instances():
    """The generic matmul's instantiations (float32 runs the ladder's kernels)."""
    return [("matmul", f"matmul<{CTYPE[n]}>") for n in ("int32", "int64", "float32", "float64")]
