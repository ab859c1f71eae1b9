"""``stagegrad gemm-ladder``: stage 3's GEMM built up one idea at a time, measured here.

Each rung is the one before plus one idea (``stage3_simd/csrc/gemm_ladder.hpp``):

1. naive i-j-k loops;
2. loop order i-k-j: the inner loop runs along rows, and the compiler vectorises it;
3. packing A and B into contiguous panels;
4. the register-blocked micro-kernel (xsimd) on the panels;
5. cache blocking, MC/KC/NC sized from the caches: this is the real GEMM on one thread;
6. threads.

Then the blocked GEMM on each SIMD path the CPU runs (the same source compiled for SSE2,
AVX2 and AVX-512: what the register width buys), and OpenBLAS on one and on every thread.
Every figure is GFLOP/s and its fraction of one core's measured FMA peak (independent
multiply-add chains in registers on the best path: the arithmetic ceiling, with no memory
traffic at all), all from this one run.

Writes ``gemm_ladder.json``, ``gemm_ladder.md`` and ``gemm_ladder.png`` to the output folder.
"""
import time
from pathlib import Path

from .formatting import markdown_table, pyplot, write_tables
from .measure import seconds_per_call

RUNGS = {1: "naive i-j-k loops", 2: "loop order i-k-j", 3: "+ packing", 4: "+ register micro-kernel",
         5: "+ cache blocking (one thread)", 6: "+ threads"}


def add_arguments(p):
    p.add_argument("--size", type=int, default=1024, help="the square matrices' size (default 1024)")
    p.add_argument("--budget", type=float, default=4.0, help="seconds per rung at most (default 4)")
    p.add_argument("--out", default="out/gemm-ladder", help="output folder (default out/gemm-ladder)")
    p.add_argument("--no-plot", action="store_true", help="skip the figure")


def _best(fn, budget):
    """Best of up to five calls, as many as fit in ``budget`` seconds (at least one)."""
    return seconds_per_call(fn, 5, "best", warmup=0, budget=budget)


def measure(size=1024, budget=4.0, stream=None):
    """Every rung, each SIMD path and OpenBLAS: a JSON-ready dict."""
    from . import load_stage, machine
    from .progress import Progress
    sg = load_stage("3")
    K = sg.backend.K
    cores = machine.cores()["usable"]
    peak = {"gflops": K.fma_peak_gflops(), "by": f"register-only FMA chains, {K.isa()}"}
    a = sg.randn(size, size)._data
    b = sg.randn(size, size)._data
    flops = 2.0 * size ** 3
    paths = K.supported_paths()
    steps = len(RUNGS) + len(paths) + 2
    bar = Progress(steps, "gemm-ladder", stream=stream)
    rows, done = [], 0

    def record(kind, label, seconds, threads, **extra):
        nonlocal done
        gflops = flops / seconds / 1e9
        rows.append(dict(kind=kind, label=label, seconds=seconds, gflops=gflops, threads=threads,
                         of_peak=gflops / peak["gflops"] if peak["gflops"] else None, **extra))
        done += 1
        bar.update(done, now=label)

    previous = K.get_num_threads()
    try:
        for rung, label in RUNGS.items():
            threads = cores if rung == 6 else 1
            record("rung", f"{rung}. {label}", _best(lambda: K.gemm_rung(rung, a, b, threads), budget),
                   threads, rung=rung)
        best_path = K.isa()
        for path in paths:
            K.set_path(path)
            record("isa", f"blocked GEMM, {path}", _best(lambda: K.gemm_rung(5, a, b, 1), budget), 1, isa=path)
        K.set_path(best_path)
        for threads in (1, cores):
            K.set_num_threads(threads)
            record("blas", f"OpenBLAS, {threads} thread{'s' * (threads > 1)}",
                   _best(lambda: K.matmul(a, b, "blas"), budget), threads)
    finally:
        K.set_num_threads(previous)
    blas1 = next(r["gflops"] for r in rows if r["kind"] == "blas" and r["threads"] == 1)
    for r in rows:
        r["of_blas"] = r["gflops"] / blas1
    return {"size": size, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "peak": peak, "cores": cores,
            "path": K.isa(), "blocking": K.gemm_blocking(), "simd": sg.simd_info(), "rows": rows}


def markdown(report):
    lines = [f"GEMM ladder, float32 {report['size']}x{report['size']}, {report['created']}; "
             f"SIMD path {report['path']}; blocking "
             + ", ".join(f"{k}={v}" for k, v in report["blocking"].items() if not k.endswith("bytes"))
             + "; caches " + ", ".join(f"{k[:-6]} {v // 1024} KiB" for k, v in report["blocking"].items()
                                      if k.endswith("bytes")) + ".",
             ""]
    peak = report["peak"]["gflops"]
    head = ["step", "threads", "time", "GFLOP/s", "of peak", "of OpenBLAS (1 thread)"]
    body = [[r["label"], str(r["threads"]), f"{r['seconds'] * 1e3:.3g} ms", f"{r['gflops']:.3g}",
             f"{r['of_peak']:.0%}" if r["of_peak"] else "—", f"{r['of_blas']:.0%}"] for r in report["rows"]]
    lines += markdown_table(head, body)
    if peak:
        lines += ["", f"Peak: {peak:.1f} GFLOP/s ({report['peak']['by']}, one thread)."]
    return "\n".join(lines)


def plot(report, path):
    plt = pyplot()
    rows = report["rows"]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    colors = {"rung": "tab:blue", "isa": "tab:green", "blas": "tab:grey"}
    ax.barh(range(len(rows)), [r["gflops"] for r in rows], color=[colors[r["kind"]] for r in rows])
    ax.set_yticks(range(len(rows)), [r["label"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    if report["peak"]["gflops"]:
        ax.axvline(report["peak"]["gflops"], color="black", linestyle="--", linewidth=1,
                   label=f"measured FMA peak, one thread ({report['peak']['gflops']:.0f} GFLOP/s)")
        ax.legend(loc="lower right", fontsize=8)
    for i, r in enumerate(rows):
        ax.text(r["gflops"] * 1.05, i, f"{r['gflops']:.3g}", va="center", fontsize=8)
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.set_title(f"The GEMM ladder: float32 {report['size']}x{report['size']} on {report['simd']['cpu']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run(args):
    if args.size < 1 or args.budget <= 0:
        raise ValueError("--size and --budget must be positive")
    report = measure(args.size, args.budget)
    text = markdown(report)
    written = list(write_tables(args.out, "gemm_ladder", report, text))
    print()
    print(text)
    if not args.no_plot:
        written.append(plot(report, Path(args.out) / "gemm_ladder.png"))
    print("wrote " + ", ".join(map(str, written)))
    return report
