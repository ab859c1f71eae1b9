"""The environment of the suite's subprocesses that stand in for another machine.

A subprocess inherits the caller's variables, and some of them choose a CPU path: a host
that sets ``OPENBLAS_CORETYPE=Haswell`` (as some do where older OpenBLAS builds misdetect
the CPU) makes OpenBLAS run AVX2 code even inside an emulated CPU without AVX, which then
dies with SIGILL. A process that emulates another CPU, or forces a path of its own, starts
without them.
"""
import os

# variables that pin a library to one CPU's code path or change its blocking (the OpenBLAS
# names are those its library reads)
CPU_FORCING = ("STAGEGRAD_SIMD", "STAGEGRAD_GEMM", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
               "OPENBLAS_BLOCK_FACTOR", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES",
               "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "MKL_CBWR",
               "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "GLIBC_TUNABLES", "QEMU_CPU")


def cpu_neutral_env(**overrides):
    """The caller's environment without ``CPU_FORCING``, then ``overrides`` (which may set
    one of them on purpose, as a test forcing ``STAGEGRAD_SIMD`` does)."""
    env = {k: v for k, v in os.environ.items() if k not in CPU_FORCING}
    env.update(overrides)
    return env
