"""stagegrad, stage 3: kernels in C++ on xsimd, BLAS and our own GEMM, threads.

``import stage3_simd as sg``. This folder holds only what stage 3 rewrites: the kernels
(``csrc/``, compiled once per ISA into ``_isa_sse2``, ``_isa_avx2``, ``_isa_avx512``),
fused kernels among them, their bindings (``_kernels.pyx``: the ISA dispatch, threads,
OpenBLAS), the backend that routes the primitives to them (``backend.py``, with its
``FUSED`` set), and the C types with which it compiles stage 0's two frontend files, the
hot half of every operation: ``tensor_core.pxd`` (the Tensor's fields and operators) and
``graph.pxd`` (grad mode, ``Function.apply``, the backward engine), each augmenting the one
Python source (Cython's pure-Python mode). Storage is stage 2's:
64-byte aligned, pooled, exported through the buffer protocol; it did not limit the
kernels. Every other module is inherited: ``__path__`` lists the compiled modules, then stage 2's,
1's and 0's folders (``stage0_python/stages.py``). ``STAGEGRAD_FRONTEND=python`` runs
stage 0's two files as Python instead of compiled (``stagegrad profile`` measures
both).

float16 and bfloat16 are stored in 2 bytes and computed in float32 (``backend.py``'s last
section, ``csrc/half.hpp``); stages 0 to 2 lack them.

``simd_info()`` tells which SIMD path runs (``STAGEGRAD_SIMD=sse2|avx2|avx512`` forces a
lower one); ``sg.backends.gemm = "blas" | "own"`` (or ``STAGEGRAD_GEMM``) picks the
matrix product.
"""
import os

# OpenBLAS's idle threads spin for 2**28 cycles (about 0.1 s) before they sleep; on a
# machine with as many threads as cores they then take the core from the OpenMP thread of
# the next kernel, which waits a scheduler time slice: an MLP step took 8 ms on two
# threads instead of 0.45. 2**4 cycles makes them sleep at once. Read when the library
# loads, so set before it does; a user's own setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# OpenBLAS first: importing its wheel loads the library, by name, into the process, and
# the kernels' extension (linked against that name, with no rpath) finds it there
import scipy_openblas32  # noqa: E402, F401

from stage0_python.stages import frontend_is_python, inherit  # noqa: E402

inherit(__name__, __path__, python_frontend=frontend_is_python())

from ._kernels import simd_info  # noqa: E402, F401
from .api import *  # noqa: E402, F403  (stage 0's api.py, as this stage's module)
from .api import __getattr__, dtypes  # noqa: E402, F401

dtypes.compute_in(*dtypes.HALF_NAMES)  # stored in 2 bytes, computed in float32 (backend.py)
LACKS = dtypes.LACKING | {"devices"}  # stage 4 brings devices
