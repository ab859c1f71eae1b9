"""Loop order and blocking, measured: the same typed Cython matmul in i-j-k and i-k-j
order, next to stage 2's blocked kernel and NumPy's BLAS, single thread.

    .venv/bin/python tools/matmul_loop_order.py [--sizes 128 512]

The two naive kernels are compiled here, into a temporary folder, with stage 2's
directives and flags (so a C compiler and Cython are needed, as for building stage 2).
Only the loop order differs: i-j-k reads a column of B (stride m) per multiply-add; i-k-j
streams a row of B and a row of C, which the compiler vectorises. Prints a Markdown table
of GFLOP/s.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

KERNELS = '''
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True

def ijk(float[:, ::1] A, float[:, ::1] B, float[:, ::1] C):
    cdef Py_ssize_t n = A.shape[0], k = A.shape[1], m = B.shape[1], i, j, p
    cdef float s
    with nogil:
        for i in range(n):
            for j in range(m):
                s = 0
                for p in range(k):
                    s = s + A[i, p] * B[p, j]
                C[i, j] = s


def ikj(float[:, ::1] A, float[:, ::1] B, float[:, ::1] C):
    cdef Py_ssize_t n = A.shape[0], k = A.shape[1], m = B.shape[1], i, j, p
    cdef float a
    with nogil:
        for i in range(n):
            for j in range(m):
                C[i, j] = 0
            for p in range(k):
                a = A[i, p]
                for j in range(m):
                    C[i, j] = C[i, j] + a * B[p, j]
'''


def build():
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    folder = Path(tempfile.mkdtemp(prefix="loop-order-"))
    (folder / "loop_order.pyx").write_text(KERNELS)
    ext = Extension("loop_order", [str(folder / "loop_order.pyx")],
                    extra_compile_args=["-O3", "-fwrapv", "-ffp-contract=off"])
    dist = Distribution({"ext_modules": cythonize([ext], quiet=True)})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(folder), str(folder / "tmp")
    dist.run_command("build_ext")
    sys.path.insert(0, str(folder))
    import loop_order
    return loop_order


def best(fn, seconds=0.5):
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 3:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 512])
    args = p.parse_args()
    lo = build()
    import stage2_cython as sg
    print("| n | i-j-k (typed) | i-k-j (typed) | stage 2 (blocked, packed) | NumPy (BLAS) |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        c = np.empty_like(a)
        x, y = sg.tensor(a.tolist()), sg.tensor(b.tolist())
        rates = [2 * n ** 3 / best(f) / 1e9 for f in
                 (lambda: lo.ijk(a, b, c), lambda: lo.ikj(a, b, c), lambda: x @ y, lambda: a @ b)]
        print(f"| {n} | " + " | ".join(f"{r:.1f} GFLOP/s" for r in rates) + " |")


if __name__ == "__main__":
    main()
