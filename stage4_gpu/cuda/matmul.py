"""The CUDA driver's products, each dtype's engine an explicit choice that an environment
variable overrides for a whole program:

- float32: ``STAGEGRAD_CUDA_MATMUL``, default ``cublas`` (CuPy's matmul). The measured
  ladder chose it: on an H100 and an H200 our best tier then (``warptile``,
  ``kernels/sgemm_ladder.cu``) reached 65-67% of cuBLAS at 4096 (``docs/hardware``).
  ``best`` names our best tier (``BEST``, the autotuned one), any tier name that tier;
  where K or N is not a multiple of 4 the register-blocked tier runs instead.
- float16 and bfloat16: ``STAGEGRAD_CUDA_HALF_MATMUL``, default ``best``, our best
  tensor-core tier (``BEST_HALF``, ``kernels/hgemm_ladder.cu``; every tier takes any
  sizes), so that autocast's products do not fall back to float32 speed; any tier of
  ``ladder.TENSOR_TIERS`` by name, or ``cublas`` for float16 (CuPy has no bfloat16, which
  then stays on ``BEST_HALF``). Whether that default beats float32's cuBLAS is a GPU
  measurement (``stagegrad cuda-ladder``).

These take contiguous operands (``gpu/matmul.py`` copies strided ones first). Every other
dtype goes to ``kernels/matmul.cu``'s tiled kernel, which reads its operands through their
strides.
"""
import os

from .kernels import CTYPE
from .ladder import cublas, fits, sgemm, tensor_core
from .runtime import BLOCK, runtime

BEST = "autotuned"  # the float32 ladder's best tier
BEST_HALF = "wide"  # the tensor-core ladder's
ENGINE = os.environ.get("STAGEGRAD_CUDA_MATMUL", "cublas")
HALF_ENGINE = os.environ.get("STAGEGRAD_CUDA_HALF_MATMUL", "best")
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
        """Contiguous operands: each dtype's engine (see the module's note)."""
        n, k, m, count = sizes
        da, db, dc = _dense(a, (count, n, k)), _dense(b, (count, k, m)), _dense(out, (count, n, m))
        if a.dtype.name != "float32":
            if HALF_ENGINE == "cublas" and a.dtype.name == "float16":
                cublas(da, db, dc)
            else:
                tier = BEST_HALF if HALF_ENGINE in ("best", "cublas") else HALF_ENGINE
                tensor_core(tier, da, db, dc, a.ctype)
        elif ENGINE == "cublas":
            cublas(da, db, dc)
        else:
            tier = BEST if ENGINE == "best" else ENGINE
            sgemm(tier if fits(tier, n, m, k, da, db, dc) else FALLBACK, da, db, dc)


def instances():
    """The generic matmul's and the first tensor-core kernel's instantiations."""
    return ([("matmul", f"matmul<{CTYPE[n]}>")
             for n in ("int32", "int64", "float32", "float64", "uint8", "int8", "int16")]
            + [("hgemm", f"hgemm<{CTYPE[n]}>") for n in ("float16", "bfloat16")])
