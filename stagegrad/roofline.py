"""The machine's measured roofline: the ceilings every measuring command holds its cells to.

The roofline has two measured roofs: the FMA peak (stage 3's own loop of independent
multiply-adds in registers, on the widest SIMD path it runs here, per thread count) and
the memory bandwidth (a copy far larger than the last-level cache); the cache bandwidth is
a second, higher roof for operands that stay in L2. All are measured, not taken from a
datasheet, so the ceiling is one this machine actually reaches. The best GEMM of NumPy's
and PyTorch's BLAS is recorded beside the peak, never as it: a BLAS may run narrower
kernels than the CPU has (``OPENBLAS_CORETYPE`` pins OpenBLAS to an older core's).
"""
from . import measure

PEERS = ("numpy", "torch")  # the libraries whose GEMM and copies are measured, where installed


def measure_peak_gflops(threads=1, seconds=0.2, calls=3):
    """The FMA peak: stage 3's register-only multiply-add loop on the widest SIMD path this
    CPU runs, on one thread and on ``threads`` at once (each a Python thread that calls the
    loop without the GIL; their rates add up). Each thread takes the best of ``calls``
    calls, each itself the best of five timed runs: a busy machine measures a peak too low,
    and the journey holds every cell to it.

    Returns ``{"gflops", "per_core", "threads", "each", "by", "method"}``: ``gflops`` the
    peak on ``threads`` (the roof of a run on that many), ``per_core`` the peak of one,
    ``each`` the figure per thread count. Without stage 3 (not built here) the best BLAS
    GEMM stands in (see ``measure_gemm_gflops``), and ``by`` says so.
    """
    threads = max(1, int(threads or 1))
    try:
        from . import load_stage
        K = load_stage("3").backend.K
    except RuntimeError:
        gemm = measure_gemm_gflops()
        return {"gflops": gemm["gflops"], "per_core": None, "threads": threads, "each": {}, "by": gemm["by"],
                "method": "stage 3 is not built here: the best BLAS GEMM stands in for the peak ("
                          + gemm["method"] + ")"}
    path = K.isa()
    widest = K.supported_paths()[-1]
    each = {}
    try:
        K.set_path(widest)  # the peak of the CPU, even under STAGEGRAD_SIMD
        for n in sorted({1, threads}):
            each[n] = measure.on_threads(lambda i: max(K.fma_peak_gflops(seconds) for _ in range(calls)), n)
    finally:
        K.set_path(path)
    where = "on one thread" if threads == 1 else f"on one thread and on {threads} at once"
    return {"gflops": each[threads], "per_core": each[1], "threads": threads, "each": each,
            "by": f"stage 3's FMA loop, {widest}",
            "method": f"best of {5 * calls} runs of 12 independent {widest} multiply-add chains in "
                      f"registers (no memory traffic) per thread, {where}"}


def _rates(build, repeats, work):
    """``work`` over the best of ``repeats`` calls (after an untimed one) of ``build(library)``,
    in billions per second, for each library of ``PEERS`` that is installed."""
    found = {}
    for library in PEERS:
        try:
            call = build(library)
        except ImportError:
            continue
        found[library] = work / measure.seconds_per_call(call, repeats) / 1e9
    return found


def _fastest(found):
    """The library with the highest rate of ``found``, or None when it is empty."""
    return max(found, key=found.get) if found else None


def _matmul(library, n):
    """A float32 ``n x n`` matrix product by ``library`` (NumPy or PyTorch), on fixed operands."""
    if library == "numpy":
        import numpy as np
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = a.T.copy()
        return lambda: a @ b
    import torch
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    return lambda: torch.mm(a, b)


def _copy(library, floats, copies=1):
    """``copies`` copies in a row of ``floats`` float32 numbers into another array, by
    ``library`` (NumPy or PyTorch)."""
    if library == "numpy":
        import numpy as np
        src = np.ones(floats, dtype=np.float32)
        dst = np.empty_like(src)
        copy = np.copyto
    else:
        import torch
        src = torch.ones(floats)
        dst = torch.empty_like(src)
        copy = torch.Tensor.copy_

    def run():
        for _ in range(copies):
            copy(dst, src)
    return run


def measure_gemm_gflops(n=1024, repeats=10):
    """The best float32 ``n x n`` GEMM of NumPy's and PyTorch's BLAS, in GFLOP/s: a figure
    beside the peak, never the peak itself (a BLAS may run narrower kernels than the CPU has).

    Returns ``{"gflops", "by", "each", "method"}``; ``gflops`` is None when neither library
    is installed.
    """
    found = _rates(lambda library: _matmul(library, n), repeats, 2.0 * n ** 3)
    by = _fastest(found)
    return {"gflops": found.get(by), "by": by, "each": found,
            "method": f"best of {repeats} float32 {n}x{n} matmuls (2n^3 FLOPs) after a warm-up, "
                      "under the run's thread settings"}


def measure_bandwidth_gbs(mib=64, repeats=10):
    """Memory bandwidth: the best copy of a ``mib``-MiB float32 array (bytes read + written).

    64 MiB is twice the largest last-level cache we expect, so the copy streams from DRAM.
    Write-allocate traffic is not counted, so this is a slight underestimate.
    """
    nbytes = mib * 2 ** 20
    found = _rates(lambda library: _copy(library, nbytes // 4), repeats, 2 * nbytes)
    by = _fastest(found)
    return {"gbs": found.get(by), "by": by, "each": found,
            "method": f"best of {repeats} copies of a {mib} MiB float32 array after a warm-up; "
                      "GB/s counts the bytes read plus the bytes written"}


def measure_cache_bandwidth_gbs(kib=256, copies=200, repeats=10):
    """Cache bandwidth: copies of a ``kib``-KiB float32 array, small enough that source and
    destination stay in the per-core L2 cache. Each timing is ``copies`` copies in a row,
    so the per-call overhead of a library call counts little; the best is reported.

    This is the second roof: a workload whose operands fit in cache can run above the
    memory roof, up to this one.
    """
    nbytes = kib * 2 ** 10
    found = _rates(lambda library: _copy(library, nbytes // 4, copies), repeats, 2 * nbytes * copies)
    by = _fastest(found)
    return {"gbs": found.get(by), "by": by, "each": found,
            "method": f"best of {repeats} runs of {copies} copies of a {kib} KiB float32 array "
                      "(cache-resident) after a warm-up; GB/s counts the bytes read plus the bytes written"}


def roofline(peak_gflops, bandwidth_gbs, intensity):
    """Attainable GFLOP/s at ``intensity`` FLOP/byte: min(peak, bandwidth x intensity)."""
    return min(peak_gflops, bandwidth_gbs * intensity)
