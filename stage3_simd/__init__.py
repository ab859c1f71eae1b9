"""stagegrad, stage 3: kernels in C++ on xsimd, BLAS and our own GEMM, threads.

``import stage3_simd as sg``. This folder holds only what stage 3 rewrites: the kernels
(``csrc/``, compiled once per ISA into ``_isa_sse2``, ``_isa_avx2``, ``_isa_avx512``),
fused kernels among them, their bindings (``_kernels.pyx``: the ISA dispatch, threads,
OpenBLAS), the backend that routes the primitives to them (``backend.py``, with its
``FUSED`` set), and two frontend files compiled: ``tensor_core.pyx`` (rewrites stage 0's
``tensor_core.py``: the Tensor's fields and operators) and ``graph.pyx`` (rewrites
``graph.py``: grad mode, ``Function.apply``, the backward engine). Storage is stage 2's:
64-byte aligned, pooled, exported through the buffer protocol; it did not limit the
kernels. Every other module is inherited: ``__path__`` lists stage 2's folder after this
one, and stage 2's ``__init__`` (run here) adds stage 1's and stage 0's.
``STAGEGRAD_FRONTEND=python`` loads stage 0's two Python files in place of the compiled
ones (``stagegrad profile`` measures both).

float16 and bfloat16 are stored in 2 bytes and computed in float32 (``backend.py``'s last
section, ``csrc/half.hpp``); stages 0 to 2 lack them.

``simd_info()`` tells which SIMD path runs (``STAGEGRAD_SIMD=sse2|avx2|avx512`` forces a
lower one); ``sg.backends.gemm = "blas" | "own"`` (or ``STAGEGRAD_GEMM``) picks the
matrix product.
"""
import importlib.util
import os
import sys

# OpenBLAS's idle threads spin for 2**28 cycles (about 0.1 s) before they sleep; on a
# machine with as many threads as cores they then take the core from the OpenMP thread of
# the next kernel, which waits a scheduler time slice: an MLP step took 8 ms on two
# threads instead of 0.45. 2**4 cycles makes them sleep at once. Read when the library
# loads, so set before it does; a user's own setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# OpenBLAS first: importing its wheel loads the library, by name, into the process, and
# the kernels' extension (linked against that name, with no rpath) finds it there
import scipy_openblas32  # noqa: E402, F401

_STAGE3_DOC = __doc__
_FRONTEND = os.environ.get("STAGEGRAD_FRONTEND", "compiled")
if _FRONTEND not in ("compiled", "python"):
    raise ValueError(f"STAGEGRAD_FRONTEND={_FRONTEND!r}: expected 'compiled' or 'python'")


class _PythonFrontend:
    """``STAGEGRAD_FRONTEND=python``: stage 0's ``tensor_core.py`` and ``graph.py`` stand in
    for the compiled ones, so ``stagegrad profile`` can show what compiling them bought."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != __name__ or name not in ("tensor_core", "graph"):
            return None
        stage0 = importlib.util.find_spec("stage0_python").submodule_search_locations[0]
        return importlib.util.spec_from_file_location(fullname, os.path.join(stage0, name + ".py"))


if _FRONTEND == "python":
    sys.meta_path.insert(0, _PythonFrontend)
_PREVIOUS = importlib.util.find_spec("stage2_cython").submodule_search_locations[0]
# the compiled modules: in a checkout, build/ext/stage3_simd (setup.py's BuildExt); in an
# installed wheel, this folder. Named, not derived from __name__: stage 4 runs this file too
__path__.append(os.path.join(os.path.dirname(_PREVIOUS), "build", "ext", "stage3_simd"))
__path__.append(_PREVIOUS)

# Stage 2's __init__ extends __path__ with stage 1's and stage 0's folders and runs
# stage 0's __init__, which defines the public names
with open(os.path.join(_PREVIOUS, "__init__.py"), encoding="utf-8") as _stage2_init:
    exec(compile(_stage2_init.read(), _stage2_init.name, "exec"))  # noqa: S102
del _stage2_init
__doc__ = _STAGE3_DOC

from ._kernels import simd_info  # noqa: E402

dtypes.compute_in(*dtypes.HALF_NAMES)  # stored in 2 bytes, computed in float32 (backend.py)
LACKS = dtypes.LACKING | {"dtype_views", "devices"}  # stage 4 brings devices
