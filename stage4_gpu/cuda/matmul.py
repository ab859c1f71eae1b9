"""The CUDA driver's products. Dense float32 goes to cuBLAS (CuPy's matmul), chosen by the
measured ladder: on an H100 and an H200 our best SGEMM tier (``warptile``,
``kernels/sgemm_ladder.cu``) reached 65-67% of cuBLAS at 4096 (``docs/hardware``);
``STAGEGRAD_CUDA_MATMUL=warptile`` (or another tier) runs ours in a whole program, the
register-blocked tier where K or N is not a multiple of 4. float16 and bfloat16 go to our
tensor-core kernel (``kernels/hgemm.cu``; CuPy has no bfloat16 for cuBLAS), every other
dtype to ``kernels/matmul.cu``'s tiled kernel, which reads its operands through their
strides.
"""
import os

from .kernels import CTYPE
from .ladder import cublas, fits, hgemm, sgemm
from .runtime import BLOCK, runtime

ENGINE = os.environ.get("STAGEGRAD_CUDA_MATMUL", "cublas")
FALLBACK = "blocktile_2d"  # any sizes: scalar, bounds-checked loads
_TILE = 16  # matmul.cu's MM_TILE


def _dense(x, shape):
    """The contiguous buffer x's elements as a CuPy array of ``shape`` (a view)."""
    return x.array[x.offset:x.offset + x.numel].reshape(shape)


class MatmulKernels:
    """The CUDA driver's product hooks (see ``gpu.driver.Driver``)."""

    dense_dtypes = frozenset({"float32", "float16", "bfloat16"})

    def matmul(self, out, a, b, sizes, layout):
        """matmul.cu's tiled kernel, one block per 16x16 tile of C."""
        n, k, m, count = sizes
        rt = runtime()
        tiles = count * -(-n // _TILE) * -(-m // _TILE)
        rt.launch("matmul", f"matmul<{a.ctype}>", tiles, BLOCK,
                  [[n, k, m, count, *layout], out.storage.ptr, a.storage.ptr, b.storage.ptr])

    def dense(self, out, a, b, sizes):
        """Contiguous operands: the tensor-core kernel for the 2-byte floats; for float32,
        cuBLAS or the ladder's tier ``ENGINE`` names."""
        n, k, m, count = sizes
        da, db, dc = _dense(a, (count, n, k)), _dense(b, (count, k, m)), _dense(out, (count, n, m))
        if a.dtype.name != "float32":
            hgemm(da, db, dc, a.ctype)
        elif ENGINE == "cublas":
            cublas(da, db, dc)
        else:
            sgemm(ENGINE if fits(ENGINE, n, m, k, da, db, dc) else FALLBACK, da, db, dc)


def instances():
    """The generic matmul's and the tensor-core kernel's instantiations."""
    return ([("matmul", f"matmul<{CTYPE[n]}>")
             for n in ("int32", "int64", "float32", "float64", "uint8", "int8", "int16")]
            + [("hgemm", f"hgemm<{CTYPE[n]}>") for n in ("float16", "bfloat16")])
