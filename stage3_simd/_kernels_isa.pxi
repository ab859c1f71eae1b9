# The ISA path (which compiled module's table T the entry points call) and the thread count;
# included by _kernels.pyx (csrc/table.hpp's entries, through T).

# ---------------------------------------------------------------- the ISA path

cdef const sg3_table* T = NULL
cdef sg3_cpu CPU = sg3_detect_cpu()
cdef int NTHREADS = 1
_module = None
_forced = None


def supported_paths():
    """The SIMD paths this CPU and OS can run, lowest first."""
    if CPU.neon:
        return ["neon"]
    paths = ["sse2"] if CPU.sse2 else []
    if sg3_has_avx2(CPU):
        paths.append("avx2")
    if sg3_has_avx512(CPU):
        paths.append("avx512")
    return paths


def set_path(str path):
    """Send every kernel to the module of ``path`` (one of ``supported_paths()``) from now
    on; returns the path in use before. For measuring one kernel on each ISA in one
    process; ``STAGEGRAD_SIMD`` chooses at import."""
    global T, _module
    supported = supported_paths()
    if path not in supported:
        raise ValueError(f"set_path: this CPU runs {', '.join(supported)}, not {path!r}")
    before = T.isa.decode() if T != NULL else None
    module = importlib.import_module(f"stage3_simd._isa_{path}")
    T = <const sg3_table*>PyCapsule_GetPointer(module.table, b"stage3_simd.sg3_table")
    _module = module
    return before


def _select():
    global _forced
    supported = supported_paths()
    if not supported:
        raise ImportError("stage3_simd: this CPU has none of the SIMD paths stage 3 is built for "
                          "(SSE2 on x86-64, NEON on arm64)")
    wanted = os.environ.get("STAGEGRAD_SIMD", "").strip().lower() or None
    if wanted is not None and wanted not in supported:
        raise ImportError(f"stage3_simd: STAGEGRAD_SIMD={wanted!r}, but this CPU runs only "
                          f"{', '.join(supported)}")
    set_path(wanted or supported[len(supported) - 1])
    _forced = wanted


_select()


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def simd_info():
    """The CPU, its SIMD features, the paths it can run and the one in use."""
    features = {"sse2": CPU.sse2, "avx": CPU.avx, "fma": CPU.fma, "f16c": CPU.f16c, "avx2": CPU.avx2,
                "avx512f": CPU.avx512f, "avx512dq": CPU.avx512dq, "avx512bw": CPU.avx512bw,
                "avx512vl": CPU.avx512vl, "os_saves_ymm": CPU.os_ymm, "os_saves_zmm": CPU.os_zmm,
                "neon": CPU.neon}
    return {"cpu": _cpu_name(), "features": sorted(k for k, v in features.items() if v),
            "supported": supported_paths(), "path": T.isa.decode(), "forced": _forced,
            "vector_bits": 8 * T.vector_bytes, "openblas_core": scipy_openblas_get_corename().decode()}


def isa():
    return T.isa.decode()


# ---------------------------------------------------------------- threads

def set_num_threads(int n):
    """Threads for the kernels (OpenMP) and for OpenBLAS alike."""
    global NTHREADS
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive count, got {n}")
    NTHREADS = n
    scipy_openblas_set_num_threads(n)


def get_num_threads():
    return NTHREADS


def _default_threads():
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


set_num_threads(_default_threads())
