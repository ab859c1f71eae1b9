"""``stagegrad simd-paths``: stage 3's kernels on every SIMD path and thread count here.

Stage 3 compiles one source per ISA (SSE2, AVX2 + FMA, AVX-512); this command runs the
same kernels through each module the CPU can run, and through 1..n threads on the best
one, so the chapter shows what the register width buys and where threads stop helping.
Times are medians of repeated calls, next to NumPy and PyTorch on one thread in the same
run. Writes ``simd.json`` and ``simd.md`` to the output folder.
"""
import os
import time

from .formatting import markdown_table, publish
from .machine import THREAD_VARIABLES
from .measure import calls_lasting, seconds_per_call

KERNELS = {  # name: (what it computes, call(sg, a, b, m))
    "add": ("a + b", lambda sg, a, b, m: a + b),
    "exp": ("a.exp()", lambda sg, a, b, m: a.exp()),
    "tanh": ("a.tanh()", lambda sg, a, b, m: a.tanh()),
    "sum": ("a.sum()", lambda sg, a, b, m: a.sum()),
    "softmax rows": ("m.softmax(1)", lambda sg, a, b, m: m.softmax(1)),
    "matmul": ("m @ m (own GEMM)", lambda sg, a, b, m: m @ m),
}


def add_arguments(p):
    p.add_argument("--n", type=int, default=1_000_000, help="elements of the vector operands (default 1e6)")
    p.add_argument("--side", type=int, default=512, help="side of the square matrix (default 512)")
    p.add_argument("--out", default="out/simd", help="output folder (default out/simd)")


def _median(fn, target=0.3):
    """Median seconds per call of five samples of about ``target / 5`` seconds each, after a warm-up."""
    number = calls_lasting(fn, target / 5)
    return seconds_per_call(fn, 5, "median", number=number, warmup=0)


def measure(n=1_000_000, side=512, stream=None):
    import numpy as np

    from . import load_stage, machine
    from .progress import Progress
    sg = load_stage("3")
    K = sg.backend.K
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    w = rng.standard_normal((side, side), dtype=np.float32)
    a, b, m = sg.from_numpy(x), sg.from_numpy(y), sg.from_numpy(w)
    paths, cores = K.supported_paths(), machine.cores()["usable"]
    threads = sorted({1, 2, cores})
    bar = Progress(len(KERNELS) * (len(paths) + len(threads)), "simd-paths", stream=stream)
    before_path, before_threads, before_gemm = K.isa(), K.get_num_threads(), sg.backends.gemm
    done, cells = 0, {}
    try:
        sg.backends.gemm = "own"
        for kind, settings in (("path", paths), ("threads", threads)):
            for setting in settings:
                K.set_path(setting if kind == "path" else before_path)
                K.set_num_threads(1 if kind == "path" else setting)
                for name, (_, call) in KERNELS.items():
                    cells[(kind, setting, name)] = _median(lambda: call(sg, a, b, m))
                    done += 1
                    bar.update(done, now=f"{name}, {kind} {setting}")
    finally:
        K.set_path(before_path)
        K.set_num_threads(before_threads)
        sg.backends.gemm = before_gemm
    peers = _peers(x, y, w)
    return {"n": n, "side": side, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "simd": sg.simd_info(),
            "paths": paths, "threads": threads, "kernels": {k: v[0] for k, v in KERNELS.items()},
            "cells": [{"kind": k, "setting": s, "kernel": name, "seconds": t} for (k, s, name), t in cells.items()],
            "peers": peers}


def _peers(x, y, w):
    """NumPy and PyTorch, one thread, on the same data."""
    import numpy as np
    out = {"numpy": {"add": _median(lambda: x + y), "exp": _median(lambda: np.exp(x)),
                     "tanh": _median(lambda: np.tanh(x)), "sum": _median(lambda: x.sum()),
                     "matmul": _median(lambda: w @ w)}}
    try:
        import torch
    except ImportError:
        return out
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    tx, ty, tw = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(w)
    out["torch"] = {"add": _median(lambda: tx + ty), "exp": _median(lambda: tx.exp()),
                    "tanh": _median(lambda: tx.tanh()), "sum": _median(lambda: tx.sum()),
                    "softmax rows": _median(lambda: tw.softmax(1)), "matmul": _median(lambda: tw @ tw)}
    torch.set_num_threads(before)
    return out


def _fmt(t):
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms"


def markdown(report):
    def cell(kind, setting, name):
        return next(c["seconds"] for c in report["cells"]
                    if c["kind"] == kind and c["setting"] == setting and c["kernel"] == name)

    names = list(report["kernels"])
    first = report["paths"][0]
    head = ["kernel"] + [f"{p} (one thread)" for p in report["paths"]] + [
        f"{t} thread{'s' * (t > 1)}" for t in report["threads"]] + ["NumPy", "PyTorch"]
    rows = []
    for name in names:
        row = [f"{name}: `{report['kernels'][name]}`"]
        for p in report["paths"]:
            t = cell("path", p, name)
            row.append(_fmt(t) + ("" if p == first else f" ({cell('path', first, name) / t:.2g}x)"))
        base = cell("threads", 1, name)
        for k in report["threads"]:
            t = cell("threads", k, name)
            row.append(_fmt(t) + ("" if k == 1 else f" ({base / t:.2g}x)"))
        for peer in ("numpy", "torch"):
            t = report["peers"].get(peer, {}).get(name)
            row.append(_fmt(t) if t else "—")
        rows.append(row)
    lines = [f"Stage 3's kernels per SIMD path and thread count: n = {report['n']:,} float32 elements, "
             f"{report['side']}x{report['side']} matrices; {report['simd']['cpu']}, {report['created']}. "
             "In brackets: the speed-up over the first column of its group.", ""]
    return "\n".join(lines + markdown_table(head, rows))


def run(args):
    if args.n < 1 or args.side < 1:
        raise ValueError("--n and --side must be positive")
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"  # the peers on one thread, like the paths' column
    report = measure(args.n, args.side)
    publish(args.out, "simd", report, markdown(report))
    return report
