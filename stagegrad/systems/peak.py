"""The compute roof: stage 3's FMA loop on each SIMD path, beside the BLAS libraries' GEMMs."""
import os

from ..measure import seconds_per_call
from .common import has, stage3, titled


@titled("The compute roof: our FMA loop on each SIMD path, beside the BLAS libraries")
def peak(quick, out=None):
    """Stage 3's FMA loop (independent multiply-add chains in registers, no memory traffic)
    on each SIMD path this CPU runs, then float32 GEMMs of stage 3 (its own and OpenBLAS),
    NumPy and PyTorch, all on one thread, each as a share of the widest path's peak. A
    narrower path halves the roof; a BLAS pinned to older kernels (``OPENBLAS_CORETYPE``)
    stays below it."""
    sg = stage3()
    K = sg.backend.K
    seconds = 0.05 if quick else 0.2
    roofs, here = {}, K.isa()
    try:
        for path in K.supported_paths():
            K.set_path(path)
            roofs[path] = max(K.fma_peak_gflops(seconds) for _ in range(3))
    finally:
        K.set_path(here)
    top = max(roofs.values())
    rows = [[f"stage 3 FMA loop, {path}", f"{g:.1f}", f"{g / top:.0%}"] for path, g in roofs.items()]
    n = 512 if quick else 1024
    from .. import workloads
    gemm_rows, previous = [], sg.backends.gemm
    for gemm in workloads.gemms("stage3_simd"):
        sg.backends.gemm = gemm
        gemm_rows.append((f"stage 3 GEMM ({gemm})", workloads.build_matmul(workloads.Impl("stage3_simd"), n)))
    sg.backends.gemm = previous
    for peer in ("numpy", "torch"):
        if has(peer):
            gemm_rows.append((f"{peer} GEMM", workloads.build_matmul(workloads.Impl(peer), n)))
    for label, fn in gemm_rows:
        g = 2 * n ** 3 / seconds_per_call(fn, 3 if quick else 10) / 1e9
        rows.append([f"{label}, {n}x{n}", f"{g:.1f}", f"{g / top:.0%}"])
    unpinned = os.environ.get("STAGEGRAD_UNPINNED")
    pins = os.environ.get("OPENBLAS_CORETYPE")
    note = ("one thread each; " + (f"the run unset {unpinned} for the BLAS peers" if unpinned else
            f"OPENBLAS_CORETYPE={pins} pins OpenBLAS to older kernels" if pins else "no OpenBLAS pin set"))
    return {"head": ["what", "GFLOP/s", "of the widest peak"], "rows": rows, "note": note}
