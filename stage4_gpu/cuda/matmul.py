"""The CUDA driver's products: float32 goes to our own SGEMM ladder's best tier
(``ENGINE = "warptile"``, ``kernels/sgemm_ladder.cu``; the register-blocked tier where
K or N is not a multiple of 4), every other dtype to ``kernels/matmul.cu``'s tiled
kernel, which reads its operands through their strides. cuBLAS is the peer we measure
against, not the engine: ``STAGEGRAD_CUDA_MATMUL=cublas`` switches float32 to it (CuPy's
matmul) for a comparison in a whole program. The default stays ours until a measured
run on hardware shows cuBLAS clearly ahead.
"""
import os

from .kernels import CTYPE
from .ladder import cublas, fits, sgemm
from .runtime import BLOCK, runtime

ENGINE = os.environ.get("STAGEGRAD_CUDA_MATMUL", "warptile")
FALLBACK = "blocktile_2d"  # any sizes: scalar, bounds-checked loads
_TILE = 16  # matmul.cu's MM_TILE


def _dense(x, shape):
    """The contiguous buffer x's elements as a CuPy array of ``shape`` (a view)."""
    return x.array[x.offset:x.offset + x.numel].reshape(shape)


class MatmulKernels:
    """The CUDA driver's product hooks (see ``gpu.driver.Driver``)."""

    has_sgemm = True

    def matmul(self, out, a, b, sizes, layout):
        """matmul.cu's tiled kernel, one block per 16x16 tile of C."""
        n, k, m, count = sizes
        rt = runtime()
        tiles = count * -(-n // _TILE) * -(-m // _TILE)
        rt.launch("matmul", f"matmul<{a.ctype}>", tiles, BLOCK,
                  [rt.params([n, k, m, count, *layout]), out.array, a.array, b.array])

    def sgemm(self, out, a, b, sizes):
        """The ladder's tier (or cuBLAS, when chosen) on contiguous float32 operands."""
        n, k, m, count = sizes
        da, db, dc = _dense(a, (count, n, k)), _dense(b, (count, k, m)), _dense(out, (count, n, m))
        if ENGINE == "cublas":
            dc[...] = cublas(da, db)
        else:
            sgemm(ENGINE if fits(ENGINE, n, m, k, da, db, dc) else FALLBACK, da, db, dc)


def instances():
    """The generic matmul's instantiations (float32 runs the ladder's kernels)."""
    return [("matmul", f"matmul<{CTYPE[n]}>") for n in ("int32", "int64", "float32", "float64")]
