"""Facts about the machine the numbers were measured on, and its measured roofline.

The roofline has two measured roofs: the FMA peak (stage 3's own loop of independent
multiply-adds in registers, on the widest SIMD path it runs here, per thread count) and
the memory bandwidth (a copy far larger than the last-level cache). Both are measured,
not taken from a datasheet, so the ceiling is one this machine actually reaches. The
best GEMM of NumPy's and PyTorch's BLAS is recorded beside the peak, never as it: a BLAS
may run narrower kernels than the CPU has (``OPENBLAS_CORETYPE`` pins OpenBLAS to an
older core's).
"""
import os
import platform
import threading
import time

# the ISA extensions that matter to SIMD kernels, in the order a reader expects them
ISA_OF_INTEREST = ("sse2", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq",
                   "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile",
                   "neon", "asimd", "sve")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _cpuinfo():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return {}
    info = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block is enough
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_model():
    info = _cpuinfo()
    name = info.get("model name") or info.get("Model") or platform.processor() or platform.machine()
    return name or "unknown"


def isa_flags():
    """All CPU feature flags the OS reports (Linux: /proc/cpuinfo; empty elsewhere)."""
    info = _cpuinfo()
    return sorted((info.get("flags") or info.get("Features") or "").split())


def isa_summary(flags=None):
    """The SIMD-relevant subset of ``isa_flags``, in a readable order."""
    flags = set(isa_flags() if flags is None else flags)
    return [f for f in ISA_OF_INTEREST if f in flags]


def cores():
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"logical": os.cpu_count(), "usable": usable}


def thread_settings():
    """The thread variables as the environment holds them, and PyTorch's count."""
    out = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    try:
        import torch
        out["torch.get_num_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    return out


def describe():
    """Everything about the machine that needs no measurement."""
    info = _cpuinfo()
    flags = isa_flags()
    return {
        "cpu_model": cpu_model(),
        "cpu_mhz": float(info["cpu MHz"]) if "cpu MHz" in info else None,
        "isa": isa_summary(flags),
        "isa_flags": flags,
        "cores": cores(),
        "threads": thread_settings(),
        # pins OpenBLAS (NumPy's and stage 3's) to an older core's kernels, if set
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
        # what the command unset for this run, as the host had set it (cli.OPENBLAS_PINS)
        "openblas_unpinned": os.environ.get("STAGEGRAD_UNPINNED"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
    }


def _version(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def best_time(fn, repeats):
    """The fastest of ``repeats`` timed calls of ``fn``, in seconds, after one untimed call."""
    fn()  # warm-up: page faults, thread-pool start
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


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
            each[n] = _fma_on_threads(K, n, seconds, calls)
    finally:
        K.set_path(path)
    where = "on one thread" if threads == 1 else f"on one thread and on {threads} at once"
    return {"gflops": each[threads], "per_core": each[1], "threads": threads, "each": each,
            "by": f"stage 3's FMA loop, {widest}",
            "method": f"best of {5 * calls} runs of 12 independent {widest} multiply-add chains in "
                      f"registers (no memory traffic) per thread, {where}"}


def _fma_on_threads(K, n, seconds, calls):
    """GFLOP/s of ``n`` threads running the FMA loop together: the sum of their rates."""
    rates = [0.0] * n
    start = threading.Barrier(n)

    def one(i):
        start.wait()
        rates[i] = max(K.fma_peak_gflops(seconds) for _ in range(calls))
    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(rates)


def measure_gemm_gflops(n=1024, repeats=10):
    """The best float32 ``n x n`` GEMM of NumPy's and PyTorch's BLAS, in GFLOP/s: a figure
    beside the peak, never the peak itself (a BLAS may run narrower kernels than the CPU has).

    Returns ``{"gflops", "by", "each", "method"}``; ``gflops`` is None when neither library
    is installed.
    """
    flops = 2.0 * n ** 3
    found = {}
    try:
        import numpy as np
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = a.T.copy()
        found["numpy"] = flops / best_time(lambda: a @ b, repeats) / 1e9
    except ImportError:
        pass
    try:
        import torch
        g = torch.Generator().manual_seed(0)
        a = torch.randn(n, n, generator=g)
        b = torch.randn(n, n, generator=g)
        found["torch"] = flops / best_time(lambda: torch.mm(a, b), repeats) / 1e9
    except ImportError:
        pass
    by = max(found, key=found.get) if found else None
    return {"gflops": found.get(by), "by": by, "each": found,
            "method": f"best of {repeats} float32 {n}x{n} matmuls (2n^3 FLOPs) after a warm-up, "
                      "under the run's thread settings"}


def measure_bandwidth_gbs(mib=64, repeats=10):
    """Memory bandwidth: the best copy of a ``mib``-MiB float32 array (bytes read + written).

    64 MiB is twice the largest last-level cache we expect, so the copy streams from DRAM.
    Write-allocate traffic is not counted, so this is a slight underestimate.
    """
    found = {}
    nbytes = mib * 2 ** 20
    try:
        import numpy as np
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        found["numpy"] = 2 * nbytes / best_time(lambda: np.copyto(dst, src), repeats) / 1e9
    except ImportError:
        pass
    try:
        import torch
        src = torch.ones(nbytes // 4)
        dst = torch.empty_like(src)
        found["torch"] = 2 * nbytes / best_time(lambda: dst.copy_(src), repeats) / 1e9
    except ImportError:
        pass
    by = max(found, key=found.get) if found else None
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
    found = {}
    nbytes = kib * 2 ** 10

    def loop(copy):
        def run():
            for _ in range(copies):
                copy()
        return run
    try:
        import numpy as np
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        found["numpy"] = 2 * nbytes * copies / best_time(loop(lambda: np.copyto(dst, src)), repeats) / 1e9
    except ImportError:
        pass
    try:
        import torch
        src = torch.ones(nbytes // 4)
        dst = torch.empty_like(src)
        found["torch"] = 2 * nbytes * copies / best_time(loop(lambda: dst.copy_(src)), repeats) / 1e9
    except ImportError:
        pass
    by = max(found, key=found.get) if found else None
    return {"gbs": found.get(by), "by": by, "each": found,
            "method": f"best of {repeats} runs of {copies} copies of a {kib} KiB float32 array "
                      "(cache-resident) after a warm-up; GB/s counts the bytes read plus the bytes written"}


def roofline(peak_gflops, bandwidth_gbs, intensity):
    """Attainable GFLOP/s at ``intensity`` FLOP/byte: min(peak, bandwidth x intensity)."""
    return min(peak_gflops, bandwidth_gbs * intensity)


def banner():
    """One line naming the CPU and its SIMD extensions."""
    c = cores()
    return (f"{cpu_model()}, {c['usable']} usable core(s); SIMD: {' '.join(isa_summary()) or 'unknown'}")
