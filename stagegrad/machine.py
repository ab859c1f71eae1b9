"""Facts about the machine the numbers were measured on, none of which needs a measurement:
the CPU, its SIMD extensions, the cores, the thread settings and the libraries' versions. Its
measured ceilings are ``roofline``'s.
"""
import os
import platform

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
    """The CPU's model name, as the OS reports it ("unknown" where it reports none)."""
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
    """``{"logical", "usable"}``: the CPUs the OS has, and those this process may run on."""
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


def banner():
    """One line naming the CPU and its SIMD extensions."""
    c = cores()
    return (f"{cpu_model()}, {c['usable']} usable core(s); SIMD: {' '.join(isa_summary()) or 'unknown'}")
